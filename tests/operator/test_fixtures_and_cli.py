"""Harvesters from a YAML file (`invenio oai harvester load`) and the CLI's --no-check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from invenio_access.permissions import system_identity
from invenio_db import db

from oarepo_oaipmh_harvester.cli import oai
from oarepo_oaipmh_harvester.fixtures import FixtureFileError, load_harvesters
from oarepo_oaipmh_harvester.models import OAIHarvester
from oarepo_oaipmh_harvester.proxies import current_harvester_service


@pytest.fixture()
def run_cli(app):
    runner = app.test_cli_runner()

    def invoke(*args):
        return runner.invoke(oai, list(args), catch_exceptions=False)

    return invoke


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def fixture_text(base_url: str) -> str:
    return f"""
- id: alpha
  name: Alpha
  base_url: {base_url}
  metadata_prefix: oai_dc
  setspecs: [phys, phys]
  target: oai-sample-records
  harvest_managers: [manager@example.org]
- id: beta
  name: Beta
  base_url: {base_url}
  metadata_prefix: oai_dc
  target: oai-sample-records
  batch_size: 7
"""


def test_load_creates_then_updates_then_leaves_alone(users, provider, tmp_path):
    path = write(tmp_path / "harvesters.yaml", fixture_text(provider.base_url))
    result = load_harvesters(path)
    assert (result.created, result.updated, result.errors) == (["alpha", "beta"], [], [])
    alpha = db.session.get(OAIHarvester, "alpha")
    assert alpha.setspecs == ["phys"] and alpha.harvest_managers == [users.manager.user.id]
    assert db.session.get(OAIHarvester, "beta").batch_size == 7

    result = load_harvesters(path)
    assert (result.created, result.updated, result.unchanged) == ([], [], ["alpha", "beta"])

    write(path, fixture_text(provider.base_url).replace("name: Beta", "name: Beta (renamed)"))
    result = load_harvesters(path)
    assert (result.updated, result.unchanged) == (["beta"], ["alpha"])
    assert db.session.get(OAIHarvester, "beta").name == "Beta (renamed)"


def test_errors_name_the_entry_and_the_rest_is_loaded(users, provider, tmp_path):
    path = write(
        tmp_path / "harvesters.yaml",
        f"""
harvesters:
  - id: good
    name: Good
    base_url: {provider.base_url}
    metadata_prefix: oai_dc
    target: oai-sample-records
  - id: bad
    name: Bad
    base_url: ftp://example.org
    metadata_prefix: oai_dc
    target: nowhere
  - name: No id
  - just a string
  - id: stranger
    name: Stranger
    base_url: {provider.base_url}
    metadata_prefix: oai_dc
    target: oai-sample-records
    harvest_managers: [nobody@example.org]
""",
    )
    result = load_harvesters(path)
    assert result.created == ["good"] and not result.ok
    bad, no_id, string, stranger = result.errors
    assert bad.startswith("entry 2 (id 'bad'): Invalid harvester:")
    assert "base_url: Give an http:// or https:// URL" in bad and "target: No record service" in bad
    assert no_id.startswith("entry 3: ") and "id: Missing data" in no_id
    assert string == "entry 4: an entry must be a mapping of fields."
    assert (
        stranger
        == "entry 5 (id 'stranger'): harvest_managers: no user with e-mail address 'nobody@example.org'."
    )
    assert db.session.get(OAIHarvester, "bad") is None


def test_the_preflight_check_applies_unless_disabled(users, provider, tmp_path, set_config):
    set_config(OAI_HARVESTER_PREFLIGHT_CHECK=True)
    path = write(
        tmp_path / "harvesters.yaml",
        fixture_text(provider.base_url).replace("setspecs: [phys, phys]", "setspecs: [chem]"),
    )
    result = load_harvesters(path)
    assert result.created == ["beta"]
    assert result.errors[0].startswith("entry 1 (id 'alpha'): Invalid harvester: setspecs:")
    assert "no set 'chem'" in result.errors[0]
    assert load_harvesters(path, check=False).created == ["alpha"]


@pytest.mark.parametrize(
    "text, message",
    [("{not: [valid", "is not valid YAML"), ("id: lonely", "must hold a list of harvesters")],
)
def test_unreadable_files_are_refused(app, tmp_path, text, message):
    with pytest.raises(FixtureFileError, match=message):
        load_harvesters(write(tmp_path / "broken.yaml", text))
    with pytest.raises(FixtureFileError, match="Cannot read"):
        load_harvesters(tmp_path / "missing.yaml")


def test_cli_load_from_the_app_data_folder_or_a_path(run_cli, app, users, provider, tmp_path):
    default = Path(app.instance_path) / "app_data" / "oai_harvesters.yaml"
    write(default, fixture_text(provider.base_url))
    try:
        result = run_cli("harvester", "load")
    finally:
        default.unlink()
    assert result.exit_code == 0, result.output
    assert "created 2, updated 0, unchanged 0, failed 0" in result.output

    path = write(tmp_path / "more.yaml", "- id: gamma\n  name: Gamma\n")
    result = run_cli("harvester", "load", str(path), "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["created"] == [] and report["errors"][0].startswith("entry 1 (id 'gamma')")
    assert "Error: entry 1 (id 'gamma')" in result.stderr

    result = run_cli("harvester", "load", str(tmp_path / "nope.yaml"))
    assert result.exit_code != 0 and "Cannot read" in result.output


def test_cli_create_and_update_check_the_provider_unless_told_not_to(
    run_cli, users, provider, set_config
):
    set_config(OAI_HARVESTER_PREFLIGHT_CHECK=True)
    args = ["--name", "C", "--base-url", provider.base_url, "--target", "oai-sample-records"]
    result = run_cli("harvester", "create", "--id", "c", "--metadata-prefix", "marc21", *args)
    assert result.exit_code != 0 and "does not offer metadata prefix 'marc21'" in result.output
    result = run_cli(
        "harvester", "create", "--id", "c", "--metadata-prefix", "marc21", "--no-check", *args
    )
    assert result.exit_code == 0, result.output

    # The whole configuration is checked when the endpoint, the prefix or the sets change.
    result = run_cli("harvester", "update", "c", "--set", "chem")
    assert result.exit_code != 0 and "metadata prefix 'marc21'" in result.output
    result = run_cli("harvester", "update", "c", "--set", "chem", "--metadata-prefix", "oai_dc")
    assert result.exit_code != 0 and "no set 'chem'" in result.output
    result = run_cli("harvester", "update", "c", "--set", "chem", "--no-check")
    assert result.exit_code == 0
    assert current_harvester_service.read(system_identity, "c").data["setspecs"] == ["chem"]


def test_target_options_from_the_command_line_and_a_fixture_file(
    users, provider, run_cli, tmp_path
):
    result = run_cli(
        "harvester", "create", "--id", "opts", "--name", "Options",
        "--base-url", provider.base_url, "--metadata-prefix", "oai_dc",
        "--target", "oai-sample-records", "--owner", "manager@example.org",
        "--local-drafts", "local-wins", "--invalid-drafts", "keep",
        "--doi-conflicts", "take-over", "--no-check",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    listed = json.loads(run_cli("harvester", "list", "--json").output)
    options = next(h for h in listed if h["id"] == "opts")
    assert options["owner"] == users.manager.user.id
    assert (options["local_drafts"], options["invalid_drafts"], options["doi_conflicts"]) == (
        "local-wins",
        "keep",
        "take-over",
    )
    assert options["target_adapter"] == "auto" and options["community"] is None

    refused = run_cli("harvester", "update", "opts", "--owner", "nobody@example.org", "--no-check")
    assert refused.exit_code != 0
    assert "owner" in refused.output and "nobody@example.org" in refused.output

    path = write(
        tmp_path / "harvesters.yaml",
        fixture_text(provider.base_url).replace(
            "  batch_size: 7", "  batch_size: 7\n  owner: manager@example.org"
        ),
    )
    load_harvesters(path)
    assert db.session.get(OAIHarvester, "beta").owner == users.manager.user.id
    assert load_harvesters(path).unchanged == ["alpha", "beta"]  # the address compares equal


def test_missing_creator_on_the_command_line_in_a_fixture_and_in_the_list(
    users, provider, run_cli, tmp_path
):
    """What an InvenioRDM transformer makes of a record without a creator: a choice or a
    fixed name, shown with the transformer's default when left empty; refused for a
    transformer that does not take it."""
    result = run_cli(
        "harvester", "create", "--id", "museum", "--name", "Museum",
        "--base-url", provider.base_url, "--metadata-prefix", "oai_dc",
        "--target", "records", "--transformer", "oai_dc_rdm",
        "--missing-creator", "Unknown maker", "--no-check",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    listed = {h["id"]: h for h in json.loads(run_cli("harvester", "list", "--json").output)}
    assert listed["museum"]["missing_creator"] == "Unknown maker"
    assert listed["museum"]["missing_creator_text"] == "Unknown maker"

    result = run_cli("harvester", "update", "museum", "--missing-creator", "FAIL", "--no-check")
    assert result.exit_code == 0, result.output
    assert db.session.get(OAIHarvester, "museum").missing_creator == "fail"

    refused = run_cli("harvester", "update", "museum", "--transformer", "oai_dc", "--no-check")
    assert refused.exit_code != 0
    assert "--missing-creator: Transformer 'oai_dc' has no use for it" in refused.output
    assert "leave --missing-creator empty" in refused.output

    path = write(
        tmp_path / "harvesters.yaml",
        fixture_text(provider.base_url).replace(
            "target: oai-sample-records\n  batch_size: 7",
            "target: records\n  batch_size: 7\n  transformer: lido_rdm\n  missing_creator: holder",
        ),
    )
    assert load_harvesters(path).errors == []
    assert db.session.get(OAIHarvester, "beta").missing_creator == "holder"
    listed = {h["id"]: h for h in json.loads(run_cli("harvester", "list", "--json").output)}
    assert listed["alpha"]["missing_creator"] is None
    assert listed["alpha"]["missing_creator_text"].startswith("not applicable")


def test_files_options_on_the_command_line_in_a_fixture_and_in_the_list(
    users, provider, run_cli, tmp_path
):
    """What becomes of a record's files (issue 36): every option on the command line, shown
    in words; refused into a target that is not InvenioRDM's, and for a host that is none."""
    result = run_cli(
        "harvester", "create", "--id", "mirror", "--name", "Mirror",
        "--base-url", provider.base_url, "--metadata-prefix", "oai_dc",
        "--target", "records", "--transformer", "oai_dc_rdm", "--files", "copy",
        "--files-host", "Files.Example.org", "--files-host", "*.cdn.example.org",
        "--files-max-size", "1000000", "--files-failure", "fail", "--no-check",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    listed = {h["id"]: h for h in json.loads(run_cli("harvester", "list", "--json").output)}
    mirror = listed["mirror"]
    assert (mirror["files"], mirror["files_failure"], mirror["files_changes"]) == (
        "copy",
        "fail",
        "new-version",
    )
    assert mirror["files_hosts"] == ["files.example.org", "*.cdn.example.org"]
    assert mirror["files_max_size"] == 1000000
    assert mirror["files_text"].startswith(
        "copy: files up to 1,000,000 bytes from the provider's host, files.example.org, "
        "*.cdn.example.org; not the files the source marks restricted; a file that cannot be "
        "fetched: fail"
    )

    result = run_cli("harvester", "update", "mirror", "--files", "link", "--no-check")
    assert result.exit_code == 0, result.output
    assert db.session.get(OAIHarvester, "mirror").files == "link"

    refused = run_cli("harvester", "update", "mirror", "--files-host", "a b/c", "--no-check")
    assert refused.exit_code != 0
    assert "--files-host" in refused.output and "*.example.org" in refused.output

    text = (
        fixture_text(provider.base_url)
        .replace(
            "target: oai-sample-records\n  batch_size: 7",
            "target: records\n  batch_size: 7\n  transformer: oai_dc_rdm\n  files: link",
        )
        .replace("  harvest_managers:", "  files: copy\n  harvest_managers:")
    )
    errors = load_harvesters(write(tmp_path / "harvesters.yaml", text)).errors
    assert len(errors) == 1 and "alpha" in str(errors[0])
    assert "needs an InvenioRDM records target" in str(errors[0])
    beta = db.session.get(OAIHarvester, "beta")
    assert (beta.files, beta.files_failure) == ("link", "metadata-only")


def test_match_on_on_the_command_line_and_over_rest(users, provider, run_cli, login):
    """The identifier schemes a new record is matched by (issue 38): in order, duplicates
    dropped, a scheme that is none refused on its option; over REST the same field."""
    result = run_cli(
        "harvester", "create", "--id", "matched", "--name", "Matched",
        "--base-url", provider.base_url, "--metadata-prefix", "oai_dc",
        "--target", "oai-sample-records", "--match-on", "handle", "--match-on", "doi",
        "--match-on", "handle", "--no-check",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    listed = {h["id"]: h for h in json.loads(run_cli("harvester", "list", "--json").output)}
    assert listed["matched"]["match_on"] == ["handle", "doi"]
    refused = run_cli("harvester", "update", "matched", "--match-on", "title", "--no-check")
    assert refused.exit_code != 0 and "--match-on" in refused.output

    client = login(users.admin)
    api = "/api/oai-harvest/harvesters/matched"
    res = client.put(api, query_string={"check": "false"}, json={"match_on": ["pmid", "isbn"]})
    assert res.status_code == 200, res.json
    assert client.get(api).json["match_on"] == ["pmid", "isbn"]
    res = client.put(api, query_string={"check": "false"}, json={"match_on": ["title"]})
    assert res.status_code == 400 and res.json["errors"][0]["field"].startswith("match_on")


def test_field_policy_and_dedupe_over_rest_in_a_fixture_and_on_the_command_line(
    users, provider, run_cli, login, tmp_path
):
    """Per-field policies and dedupe (issue 38): a mapping over REST and in a fixture, text
    lines from the panel's form, PATH=POLICY on the command line; a bad one refused naming it."""
    result = run_cli(
        "harvester", "create", "--id", "policies", "--name", "Policies",
        "--base-url", provider.base_url, "--metadata-prefix", "oai_dc",
        "--target", "oai-sample-records", "--field-policy", "metadata.subjects=merge",
        "--dedupe", "link", "--no-check",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    listed = {h["id"]: h for h in json.loads(run_cli("harvester", "list", "--json").output)}
    assert listed["policies"]["field_policy"] == {"metadata.subjects": "merge"}
    assert listed["policies"]["dedupe"] == "link"
    refused = run_cli("harvester", "update", "policies", "--dedupe", "twice", "--no-check")
    assert refused.exit_code != 0 and "--dedupe" in refused.output

    client = login(users.admin)
    api = "/api/oai-harvest/harvesters/policies"
    body = {"field_policy": {"metadata.title": "local", "custom_fields.*": "merge"}}
    res = client.put(api, query_string={"check": "false"}, json=body)
    assert res.status_code == 200, res.json
    assert client.get(api).json["field_policy"] == body["field_policy"]
    # The panel's form sends the textarea's lines (and gets them back as text).
    form = {"field_policy": "metadata.subjects = merge\nmetadata.title = source"}
    res = client.put(api, query_string={"check": "false"}, json=form)
    assert res.json["field_policy"] == {"metadata.subjects": "merge", "metadata.title": "source"}
    res = client.put(api, query_string={"check": "false"}, json={"field_policy": "a.b = newest"})
    assert res.status_code == 400 and "'newest' is no field policy" in json.dumps(res.json)

    path = write(
        tmp_path / "harvesters.yaml",
        fixture_text(provider.base_url).replace(
            "  batch_size: 7",
            "  batch_size: 7\n  dedupe: merge\n  field_policy:\n    metadata.subjects: merge",
        ),
    )
    load_harvesters(path)
    beta = db.session.get(OAIHarvester, "beta")
    assert (beta.dedupe, beta.field_policy) == ("merge", {"metadata.subjects": "merge"})
