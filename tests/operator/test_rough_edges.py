"""Smaller rough edges a new operator met (issue 39, 6), each through the surface they met it on:
the command line through click's runner, REST through the test client."""

from __future__ import annotations

import json

import pytest
from factories import harvester_data
from invenio_db import db
from invenio_jobs.models import Job
from operator_helpers import track

from oarepo_oaipmh_harvester.cli import oai
from oarepo_oaipmh_harvester.models import OAIHarvestedRecord, OAIHarvester

API = "/api/oai-harvest"


@pytest.fixture()
def cli(app):
    runner = app.test_cli_runner()

    def invoke(*args: str, input: str | None = None):
        return runner.invoke(oai, list(args), input=input)

    return invoke


@pytest.fixture()
def as_admin(login, users):
    return login(users.admin)


def refused(result) -> list[str]:
    """The lines of a clean command-line refusal (Click's own exit, no traceback)."""
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    return result.output.strip().splitlines()


# -- several bad fields: one per line --------------------------------------------------------
def test_several_bad_fields_are_reported_one_per_line_each_naming_its_option(cli, harvesters):
    lines = refused(
        cli(
            "harvester",
            "create",
            "--id",
            "Bad Id",
            "--name",
            "Z",
            "--metadata-prefix",
            "oai_dc",
            "--base-url",
            "ftp://example.org",
            "--target",
            "nowhere",
            "--batch-size",
            "0",
        )  # fmt: skip
    )
    assert lines[0] == "Error: Invalid harvester:"
    problems = lines[1:]
    assert sorted(line.split(":")[0].strip() for line in problems) == [
        "--base-url", "--batch-size", "--id", "--target",
    ]  # fmt: skip
    assert all(line.startswith("  --") for line in problems), lines
    assert not any(".;" in line for line in lines)
    assert db.session.get(OAIHarvester, "Bad Id") is None


def test_one_bad_field_stays_on_one_line(cli, harvesters):
    lines = refused(cli("harvester", "update", "a", "--batch-size", "0"))
    assert lines == [
        "Error: Invalid harvester: --batch-size: Must be greater than or equal to 1 and less "
        "than or equal to 10000."
    ]


# -- since: one ISO 8601 on every surface ----------------------------------------------------
SINCE_FORMS = [
    ("2024-01-01T00:45:00Z", "2024-01-01T00:45:00Z"),
    ("2024-01-01T02:45:00+02:00", "2024-01-01T00:45:00Z"),
    ("2024-01-01", "2024-01-01T00:00:00Z"),
    ("2024-01-01T00:45:00", "2024-01-01T00:45:00Z"),
]


def asked_from(provider) -> str:
    """The `from` of the last list the provider was asked for (its first request)."""
    firsts = [r for r in provider.requests_for("ListRecords") if "resumptionToken" not in r]
    return firsts[-1]["from"]


@pytest.mark.parametrize("since, sent", SINCE_FORMS)
def test_since_is_the_same_iso_8601_on_every_surface(
    cli, as_admin, harvesters, provider, since, sent
):
    result = cli("harvest", "a", "--since", since)
    assert result.exit_code == 0, result.output
    assert asked_from(provider) == sent

    res = as_admin.post(f"{API}/harvesters/a/run", json={"since": since})
    assert res.status_code == 202, res.json
    assert asked_from(provider) == sent

    # invenio-jobs' own run form (Administration -> Jobs) loads the job type's arguments.
    job = db.session.query(Job).filter_by(task="harvest_oaipmh_records_a").one()
    res = as_admin.post(
        f"/api/jobs/{job.id}/runs",
        json={"title": "Since", "args": {"job_arg_schema": "OAIHarvestArgsSchema", "since": since}},
    )
    assert res.status_code in (200, 201), res.json
    assert asked_from(provider) == sent


def test_a_since_that_is_not_iso_8601_is_refused_alike(cli, as_admin, harvesters):
    (line,) = refused(cli("harvest", "a", "--since", "yesterday"))
    assert line.startswith("Error: Refused: --since: Give an ISO 8601 date")
    res = as_admin.post(f"{API}/harvesters/a/run", json={"since": "yesterday"})
    assert res.json["errors"] == [{"field": "since", "messages": [line.split("--since: ")[1]]}]


# -- a user name without a password ----------------------------------------------------------
def create_args(provider, harvester_id: str = "guarded") -> list[str]:
    return [
        "harvester", "create", "--id", harvester_id, "--name", "Guarded",
        "--base-url", provider.base_url, "--metadata-prefix", "oai_dc",
        "--target", "oai-sample-records",
    ]  # fmt: skip


def stored_auth(harvester_id: str) -> dict | None:
    from oarepo_oaipmh_harvester.credentials import unseal

    harvester = db.session.get(OAIHarvester, harvester_id)
    return unseal(harvester.credentials).get("auth") if harvester else None


def test_a_user_name_without_a_password_file_is_refused_on_the_command_line(
    cli, harvesters, provider, tmp_path
):
    (line,) = refused(cli(*create_args(provider), "--auth-user", "harvester"))
    assert line.startswith("Error: --auth-user needs --auth-password-file FILE")
    assert "empty file" in line
    assert db.session.get(OAIHarvester, "guarded") is None
    (line,) = refused(cli("harvester", "update", "a", "--auth-user", "harvester"))
    assert line.startswith("Error: --auth-user needs --auth-password-file")
    assert db.session.get(OAIHarvester, "a").credentials is None

    # Said explicitly, with an empty file: a provider that wants a user name alone.
    empty = tmp_path / "empty"
    empty.write_text("")
    result = cli(*create_args(provider), "--auth-user", "key-1", "--auth-password-file", str(empty))
    assert result.exit_code == 0, result.output
    assert stored_auth("guarded") == {"username": "key-1", "password": ""}


def test_a_user_name_without_a_password_is_refused_over_rest_and_in_the_form(
    as_admin, harvesters, provider
):
    body = harvester_data("guarded", provider.base_url, auth={"username": "harvester"})
    res = as_admin.post(f"{API}/harvesters", json=body)
    assert res.status_code == 400
    assert res.json["errors"] == [
        {
            "field": "auth.password",
            "messages": ['Give the password too ("" for a provider that wants a user name alone).'],
        }
    ]
    form = {"auth_username": "harvester", "auth_password": ""}
    res = as_admin.put(f"{API}/harvesters/a", json=form)
    assert res.status_code == 400
    assert [e["field"] for e in res.json["errors"]] == ["auth_password"]
    assert db.session.get(OAIHarvester, "a").credentials is None

    body["auth"]["password"] = ""
    assert as_admin.post(f"{API}/harvesters", json=body).status_code == 201
    assert stored_auth("guarded") == {"username": "harvester", "password": ""}


# -- messages in the operator's terms --------------------------------------------------------
@pytest.mark.parametrize(
    "arguments, cli_line, body, rest_error",
    [
        (
            ["--errors-only"],
            "--errors-only: Only with --rewrite.",
            {"errors_only": True},
            {"field": "errors_only", "messages": ["Only with rewrite."]},
        ),
        (
            ["--rewrite", "--force"],
            "--force: Only for a run that asks the provider, not with --rewrite.",
            {"rewrite": True, "force": True},
            {
                "field": "force",
                "messages": ["Only for a run that asks the provider, not with rewrite."],
            },
        ),
        (
            ["--reindex", "--rewrite"],
            "--rewrite: One kind of run at a time: not --reindex and --rewrite together.",
            {"reindex": True, "rewrite": True},
            {
                "field": "rewrite",
                "messages": ["One kind of run at a time: not reindex and rewrite together."],
            },
        ),
    ],
)
def test_run_arguments_are_refused_in_the_terms_of_each_surface(
    cli, as_admin, harvesters, arguments, cli_line, body, rest_error
):
    assert refused(cli("harvest", "a", *arguments)) == [f"Error: Refused: {cli_line}"]
    res = as_admin.post(f"{API}/harvesters/a/run", json=body)
    assert res.status_code == 400 and res.json["errors"] == [rest_error]


def test_harvester_fields_are_refused_in_the_terms_of_each_surface(cli, as_admin, harvesters):
    (line,) = refused(cli("harvester", "update", "a", "--set-community", "phys"))
    assert line == (
        "Error: Invalid harvester: --set-community: 'phys' (line 1) is not written as "
        "'physics = physics-community' is."
    )
    (line,) = refused(cli("harvester", "update", "a", "--header", "Authorization: Basic eA=="))
    assert line == (
        "Error: Invalid harvester: --header (Authorization): Set by the harvester itself (for "
        "a login, give the provider's user name and password as "
        "--auth-user/--auth-password-file)."
    )
    res = as_admin.put(f"{API}/harvesters/a", json={"headers": {"Authorization": "Basic eA=="}})
    assert res.json["errors"][0]["messages"] == [
        "Set by the harvester itself (for a login, give the provider's user name and password "
        "as auth)."
    ]
    (line,) = refused(cli("harvest", "a", "--limit", "3"))
    assert line == "Error: --limit and --json work only with --dry-run (a preview)."


# -- harvest managers by id or e-mail address ------------------------------------------------
def managers_of(harvester_id: str) -> list[int]:
    db.session.expire_all()
    return db.session.get(OAIHarvester, harvester_id).harvest_managers


def test_harvest_managers_are_user_ids_or_e_mail_addresses_over_rest(
    as_admin, users, harvesters, provider
):
    manager, admin = users.manager.user.id, users.admin.user.id
    body = harvester_data(
        "c", provider.base_url, harvest_managers=["Manager@Example.org", str(admin)]
    )
    res = as_admin.post(f"{API}/harvesters", json=body)
    assert res.status_code == 201, res.json
    assert res.json["harvest_managers"] == [manager, admin] == managers_of("c")

    # The panel's form sends its choices and additions as text.
    res = as_admin.put(f"{API}/harvesters/c", json={"harvest_managers": "admin@example.org 7"})
    assert res.status_code == 400
    assert res.json["errors"] == [{"field": "harvest_managers", "messages": ["No user with id 7."]}]
    res = as_admin.put(
        f"{API}/harvesters/c", json={"harvest_managers": "nobody@example.org, plain"}
    )
    assert {e["field"]: e["messages"] for e in res.json["errors"]} == {
        "harvest_managers.0": ["No user with e-mail address 'nobody@example.org'."],
        "harvest_managers.1": ["Give a user id or e-mail address."],
    }
    assert managers_of("c") == [manager, admin]
    res = as_admin.put(f"{API}/harvesters/c", json={"harvest_managers": "plain@example.org"})
    assert res.status_code == 200 and managers_of("c") == [users.plain.user.id]


def test_harvest_managers_are_user_ids_or_e_mail_addresses_on_the_command_line(
    cli, users, harvesters, provider
):
    manager, admin = users.manager.user.id, users.admin.user.id
    result = cli(
        *create_args(provider, "c"), "--manager", "manager@example.org", "--manager", str(admin)
    )
    assert result.exit_code == 0, result.output
    assert managers_of("c") == [manager, admin]
    (line,) = refused(cli("harvester", "update", "c", "--manager", "nobody@example.org"))
    assert line == (
        "Error: Invalid harvester: --manager (0): No user with e-mail address 'nobody@example.org'."
    )
    assert managers_of("c") == [manager, admin]


# -- per-record warnings in `invenio oai records` and the records search ----------------------
def test_records_shows_each_rows_warnings_and_filters_by_them(
    cli, as_admin, harvesters, provider, corpus
):
    bad = sorted(corpus.live_identifiers())[4]
    provider.quirks.bad_datestamp_identifiers = {bad}
    assert cli("harvest", "a").exit_code == 0
    track("a", "oai:a:many", warnings=["First warning.", "Second.", "Third."])

    listed = cli("records", "a").output.splitlines()
    assert len(listed) == 51
    (warned,) = [line for line in listed if line.startswith(f"{bad}\t")]
    assert warned.split("\t")[-1].startswith("warnings: 1: ") and "datestamp" in warned
    (many,) = [line for line in listed if line.startswith("oai:a:many\t")]
    assert many.endswith("\twarnings: 3: First warning. (+2 more)")

    only_warned = cli("records", "a", "--warnings").output.splitlines()
    assert [line.split("\t")[0] for line in only_warned] == ["oai:a:many", bad]
    dumped = json.loads(cli("records", "a", "--warnings", "--json").output)
    assert dumped[0]["warnings"] == ["First warning.", "Second.", "Third."]
    assert "datestamp" in dumped[1]["warnings"][0]
    assert json.loads(cli("records", "a", "--warnings", "--errors-only", "--json").output) == []

    res = as_admin.get(f"{API}/records", query_string={"harvester": "a", "has_warnings": "true"})
    assert {hit["oai_identifier"] for hit in res.json["hits"]["hits"]} == {"oai:a:many", bad}
    assert all(hit["has_warnings"] for hit in res.json["hits"]["hits"])
    buckets = {
        b["key"]: b["doc_count"] for b in res.json["aggregations"]["has_warnings"]["buckets"]
    }
    assert buckets == {"true": 2, "false": 49}
    res = as_admin.get(f"{API}/records", query_string={"harvester": "a", "has_warnings": "false"})
    assert res.json["hits"]["total"] == 49


# -- an identifier the provider does not have ------------------------------------------------
def test_an_identifier_the_provider_does_not_have_leaves_no_row_and_no_none(
    cli, harvesters, provider, corpus
):
    result = cli("harvest", "a", "--identifier", "oai:example.org:nope")
    assert result.exit_code == 1
    assert "oai:example.org:nope" in result.output and "'idDoesNotExist'" in result.output
    assert cli("records", "a").output == ""
    assert db.session.get(OAIHarvestedRecord, ("a", "oai:example.org:nope")) is None

    # A record harvested before and gone from the provider keeps the error on its row, with
    # the datestamp it had.
    gone = sorted(corpus.live_identifiers())[0]
    assert cli("harvest", "a", "--identifier", gone).exit_code == 0
    datestamp = db.session.get(OAIHarvestedRecord, ("a", gone)).datestamp
    corpus.purge(gone)
    assert cli("harvest", "a", "--identifier", gone).exit_code == 1
    (line,) = cli("records", "a", "--errors-only").output.splitlines()
    assert line.startswith(f"{gone}\t{datestamp}\t") and "idDoesNotExist" in line

    # A row without a datestamp (an HTTP error for a record never fetched) shows "-".
    track("a", "oai:a:unfetched", datestamp=None, errors=["Not fetched: HTTP 500"])
    (line,) = [x for x in cli("records", "a").output.splitlines() if "unfetched" in x]
    assert line.startswith("oai:a:unfetched\t-\t") and "None" not in line


# -- harvester list ----------------------------------------------------------------------------
def test_harvester_list_says_which_credentials_are_set_and_never_their_values(
    cli, harvesters, tmp_path
):
    secret = tmp_path / "password"
    secret.write_text("s3cret-value\n")
    result = cli(
        "harvester", "update", "b", "--auth-user", "harvester", "--auth-password-file",
        str(secret), "--header", "X-Api-Key: t0ken-value",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    listed = {line.split("\t")[0]: line for line in cli("harvester", "list").output.splitlines()}
    assert "\tcredentials=none" in listed["a"]
    assert "\tcredentials=login,header:X-Api-Key" in listed["b"]
    assert "s3cret" not in listed["b"] and "t0ken" not in listed["b"]


# -- the preflight check's time is bounded ------------------------------------------------------
@pytest.fixture()
def silent_endpoint():
    """A real TCP server that accepts connections (the kernel does, from its backlog) and never
    answers a byte: what a hung provider looks like."""
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield f"http://127.0.0.1:{server.getsockname()[1]}/oai"


def test_a_silent_endpoint_is_refused_within_the_checks_bound(
    cli, as_admin, harvesters, set_config, silent_endpoint, app
):
    import time

    assert app.config["OAI_HARVESTER_PREFLIGHT_TIMEOUT"] == 15.0
    set_config(OAI_HARVESTER_PREFLIGHT_CHECK=True, OAI_HARVESTER_PREFLIGHT_TIMEOUT=2.0)
    started = time.monotonic()
    res = as_admin.post(f"{API}/harvesters", json=harvester_data("c", silent_endpoint))
    took = time.monotonic() - started
    assert res.status_code == 400 and 1.5 < took < 5, (took, res.json)
    (error,) = res.json["errors"]
    assert error["field"] == "base_url"
    assert error["messages"][0].endswith(
        "did not answer Identify: no answer within the 2 s the whole check may take "
        "(OAI_HARVESTER_PREFLIGHT_TIMEOUT)."
    )

    started = time.monotonic()
    result = cli(
        "harvester", "create", "--id", "c", "--name", "C", "--base-url", silent_endpoint,
        "--metadata-prefix", "oai_dc", "--target", "oai-sample-records",
    )  # fmt: skip
    assert time.monotonic() - started < 5
    (line,) = refused(result)
    assert "--base-url: " in line and "within the 2 s the whole check may take" in line
    assert db.session.get(OAIHarvester, "c") is None


# -- a transformer must fit its target ---------------------------------------------------------
RDM_TARGET = "records"
"""InvenioRDM's records service (invenio-rdm-records is installed with the tests)."""


class SiteOwnTransformer:
    """A transformer a site registers itself: neither ours nor an InvenioRDM one."""

    def transform(self, record):
        return {"metadata": {}}


class TitleAdjuster:
    def adjust(self, record, data):
        return data


@pytest.fixture()
def site_transformers(app, monkeypatch):
    """The site's configured transformers, as OAI_HARVESTER_TRANSFORMERS would give them, in
    the UI and the API application alike."""
    from operator_helpers import mounted_api_app

    from oarepo_oaipmh_harvester.transformers import TransformerRegistry

    configured = {
        "site_own": SiteOwnTransformer,
        "rdm_chain": {"chain": ["oai_dc_rdm", TitleAdjuster]},
        "dc_chain": {"chain": ["oai_dc", TitleAdjuster]},
    }
    for application in (app, mounted_api_app(app)):
        extension = application.extensions["oarepo-oaipmh-harvester"]
        monkeypatch.setattr(extension, "transformers", TransformerRegistry(configured))


@pytest.mark.parametrize(
    "prefix, natural",
    [("oai_dc", "oai_dc_rdm"), ("oai_datacite", "oai_datacite_rdm"), ("lido", "lido_rdm")],
)
def test_into_invenio_rdm_without_a_transformer_the_prefixs_rdm_one_is_taken(
    as_admin, harvesters, provider, prefix, natural
):
    body = harvester_data("c", provider.base_url, target=RDM_TARGET, metadata_prefix=prefix)
    res = as_admin.post(f"{API}/harvesters", json=body)
    assert res.status_code == 201, res.json
    assert res.json["transformer"] == natural
    # Into any other target the site's default stays.
    res = as_admin.post(f"{API}/harvesters", json=harvester_data("d", provider.base_url))
    assert res.json["transformer"] == "oai_dc"


def test_a_transformer_that_does_not_fit_the_target_is_refused_everywhere(
    as_admin, cli, harvesters, provider, tmp_path
):
    def refusal(**fields) -> str:
        res = as_admin.post(
            f"{API}/harvesters", json=harvester_data("c", provider.base_url, **fields)
        )
        assert res.status_code == 400, res.json
        (error,) = res.json["errors"]
        assert error["field"] == "transformer"
        return error["messages"][0]

    assert refusal(target=RDM_TARGET, transformer="oai_dc") == (
        "Transformer 'oai_dc' makes plain data that InvenioRDM's records ('records') refuse: "
        "choose oai_dc_rdm, the InvenioRDM transformer for oai_dc (or leave it empty for it)."
    )
    assert refusal(target=RDM_TARGET, metadata_prefix="mods").startswith(
        "InvenioRDM's records ('records') take only what an InvenioRDM transformer makes, and "
        "none is set for metadata prefix 'mods' (OAI_HARVESTER_RDM_TRANSFORMERS): choose one "
        "(lido_rdm, marcxml_rdm, oai_datacite_rdm, oai_dc_rdm, oai_openaire_rdm"
    )
    assert refusal(transformer="oai_datacite_rdm") == (
        "Transformer 'oai_datacite_rdm' makes InvenioRDM records, and 'oai-sample-records' is "
        "not InvenioRDM's records service: choose a transformer for it (such as oai_dc), or "
        "leave it empty."
    )
    res = as_admin.put(f"{API}/harvesters/a", json={"target": RDM_TARGET})
    assert res.status_code == 400 and res.json["errors"][0]["field"] == "transformer"
    assert db.session.get(OAIHarvester, "c") is None

    lines = refused(
        cli(
            "harvester",
            "create",
            "--id",
            "c",
            "--name",
            "C",
            "--base-url",
            provider.base_url,
            "--metadata-prefix",
            "oai_dc",
            "--target",
            RDM_TARGET,
            "--transformer",
            "oai_dc",
        )  # fmt: skip
    )
    assert lines[0].startswith("Error: Invalid harvester: --transformer: Transformer 'oai_dc'")

    from oarepo_oaipmh_harvester.fixtures import load_harvesters

    path = tmp_path / "harvesters.yaml"
    path.write_text(
        f"- {{id: c, name: C, base_url: '{provider.base_url}', metadata_prefix: oai_dc, "
        f"target: {RDM_TARGET}}}\n"
        f"- {{id: e, name: E, base_url: '{provider.base_url}', metadata_prefix: oai_dc, "
        f"target: {RDM_TARGET}, transformer: oai_dc}}\n"
    )
    result = load_harvesters(path)
    assert result.created == ["c"] and db.session.get(OAIHarvester, "c").transformer == "oai_dc_rdm"
    assert "transformer: Transformer 'oai_dc' makes plain data" in result.errors[0]


def test_chains_follow_their_first_step_and_the_sites_own_transformers_go_anywhere(
    as_admin, harvesters, provider, site_transformers
):
    def created(harvester_id: str, **fields) -> int:
        body = harvester_data(harvester_id, provider.base_url, **fields)
        return as_admin.post(f"{API}/harvesters", json=body).status_code

    assert created("c", target=RDM_TARGET, transformer="rdm_chain") == 201
    assert created("d", target=RDM_TARGET, transformer="dc_chain") == 400
    assert created("e", transformer="rdm_chain") == 400
    assert created("f", transformer="dc_chain") == 201
    assert created("g", target=RDM_TARGET, transformer="site_own") == 201
    assert created("h", transformer="site_own") == 201


# -- help texts --------------------------------------------------------------------------------
def commands(group, path=()):
    """Every command under `group`, with its path of names."""
    import click

    for name, command in group.commands.items():
        yield (*path, name), command
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))


def test_every_command_has_an_example_and_names_the_keys_behind_its_defaults(cli, app):
    helps = {}
    for path, _ in [((), oai), *commands(oai)]:
        result = cli(*path, "--help")
        assert result.exit_code == 0, result.output
        helps[" ".join(path)] = " ".join(result.output.split())
        example = "invenio oai " + " ".join(path)
        assert "Example" in result.output and example.strip() in result.output, path
    for key in (
        "OAI_HARVESTER_DEFAULT_BATCH_SIZE",
        "OAI_HARVESTER_REQUEST_DELAY",
        "OAI_HARVESTER_DEFAULT_TRANSFORMER",
        "OAI_HARVESTER_RDM_TRANSFORMERS",
        "OAI_HARVESTER_RDM_MISSING_CREATOR",
        "OAI_HARVESTER_PREFLIGHT_CHECK",
        "OAI_HARVESTER_PREFLIGHT_TIMEOUT",
    ):
        assert key in helps["harvester create"] and key in helps["harvester update"], key
    assert "OAI_HARVESTER_FIXTURES_FILE" in helps["harvester load"]
    for key in (
        "OAI_HARVESTER_PREVIEW_LIMIT",
        "OAI_HARVESTER_PREVIEW_MAX_LIMIT",
        "OAI_HARVESTER_MAX_RUN_IDENTIFIERS",
    ):
        assert key in helps["harvest"], key
