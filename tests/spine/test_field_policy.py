"""Per-field policies for local edits (issue 38, point 1), on a plain records service: a
curator's change of a field survives a harvest with ``local`` or ``merge`` and is overwritten
with ``source``; a field both sides changed is a conflict, kept on the tracking row, listed
by ``invenio oai records --conflicts`` and shown by a dry run before anything is written; a
no-change rerun still writes nothing."""

from __future__ import annotations

import json

import pytest
from factories import make_harvester
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import RunStatusEnum

from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service, current_harvester_service

from .helpers import tracking


def harvest(**arguments):
    run = current_harvest_runs_service.harvest_in_process(system_identity, "test", arguments)
    assert run.status == RunStatusEnum.SUCCESS, run.message
    return run


def local(service, identifier: str) -> dict:
    db.session.expire_all()
    return service.read(system_identity, tracking()[identifier].local_pid).data["metadata"]


def edit_locally(service, identifier: str, **fields) -> None:
    """A curator's edit through the service, as the site's UI makes it."""
    pid = tracking()[identifier].local_pid
    metadata = {**service.read(system_identity, pid).data["metadata"], **fields}
    service.update(system_identity, pid, {"metadata": metadata})


def change_at_source(corpus, identifier: str, **fields) -> None:
    corpus.update(identifier, metadata={**corpus._records[identifier].metadata, **fields})


@pytest.fixture()
def run_cli(app):
    from oarepo_oaipmh_harvester.cli import oai

    runner = app.test_cli_runner()
    return lambda *args: runner.invoke(oai, list(args))


@pytest.fixture()
def harvested(app, db, clean_index, provider, corpus, sample_service):
    """Harvested with subjects merged and titles kept once a curator changed them; one record
    edited locally (a subject added, the title corrected, the description rewritten), then
    changed at the source in all three fields."""
    make_harvester(
        provider.base_url,
        field_policy={"metadata.subject": "merge", "metadata.title": "local"},
    )
    harvest()
    identifier = sorted(corpus.live_identifiers())[0]
    edit_locally(
        sample_service,
        identifier,
        subject=[*local(sample_service, identifier)["subject"], "curated term"],
        title=["Corrected by a curator"],
        description=["Rewritten by a curator"],
    )
    corpus.advance_clock(hours=1)
    change_at_source(
        corpus,
        identifier,
        subject=["new at the source"],
        title=["Changed at the source"],
        description=["New at the source"],
    )
    return identifier


def test_merge_keeps_local_additions_and_local_keeps_the_curated_value(
    harvested, corpus, provider, sample_service, run_cli
):
    identifier = harvested
    # The dry run shows the policies' effect and both conflicts before anything is written.
    preview = json.loads(run_cli("harvest", "test", "--dry-run", "--json").output)
    (entry,) = [e for e in preview["entries"] if e["identifier"] == identifier]
    assert entry["action"] == "update"
    conflicts = {c["field"]: c for c in entry["conflicts"]}
    assert conflicts["metadata.subject"]["kept"] == "merged"
    assert conflicts["metadata.title"]["kept"] == "local"
    changed = {change["path"] for change in entry["changes"]}
    assert any(path.startswith("/metadata/subject") for path in changed)
    assert not any(path.startswith("/metadata/title") for path in changed)  # kept
    assert local(sample_service, identifier)["title"] == ["Corrected by a curator"]
    text = run_cli("harvest", "test", "--dry-run").output
    assert "conflict metadata.title: changed locally and at the source; local keeps" in text

    harvest()
    metadata = local(sample_service, identifier)
    assert metadata["subject"] == ["new at the source", "curated term"]
    assert metadata["title"] == ["Corrected by a curator"]
    assert metadata["description"] == ["New at the source"]  # no policy: the source's
    row = tracking()[identifier]
    assert {c["field"]: c["kept"] for c in row.conflicts} == {
        "metadata.subject": "merged",
        "metadata.title": "local",
    }
    # What the source sent is kept as the harvest's version: the next comparison's base.
    assert row.transformed["metadata"]["title"] == ["Changed at the source"]
    # Only this record is in conflict, on every listing.
    listed = json.loads(run_cli("records", "test", "--conflicts", "--json").output)
    assert [item["oai_identifier"] for item in listed] == [identifier]
    assert "metadata.title (local kept)" in run_cli("records", "test", "--conflicts").output

    # A later change of the title at the source: the curated title still stands; nothing
    # changed the subjects on either side since, so the merged list stays.
    corpus.advance_clock(hours=1)
    change_at_source(corpus, identifier, title=["Changed at the source again"])
    harvest()
    metadata = local(sample_service, identifier)
    assert metadata["title"] == ["Corrected by a curator"]
    assert metadata["subject"] == ["new at the source", "curated term"]

    # Nothing changed at the source: 2 requests (Identify, ListRecords) and no write.
    provider.requests.clear()
    run = harvest()
    assert (run.inserted_entries, run.updated_entries) == (0, 0)
    assert [r["verb"] for r in provider.requests] == ["Identify", "ListRecords"]


def test_source_overwrites_a_local_edit_and_records_the_conflict(
    harvested, corpus, sample_service, run_cli
):
    identifier = harvested
    current_harvester_service.update(
        system_identity, "test", {"field_policy": "metadata.subject = source"}
    )
    harvest()
    metadata = local(sample_service, identifier)
    assert metadata["subject"] == ["new at the source"]
    assert metadata["title"] == ["Changed at the source"]  # no longer kept
    (conflict,) = tracking()[identifier].conflicts
    assert conflict == {
        "field": "metadata.subject",
        "policy": "source",
        "kept": "source",
        "local": conflict["local"],
        "source": ["new at the source"],
    }
    assert conflict["local"][-1] == "curated term"


def test_a_field_only_a_curator_changed_is_kept_without_a_conflict(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url, field_policy={"metadata.*": "local"})
    harvest()
    identifier = sorted(corpus.live_identifiers())[1]
    edit_locally(sample_service, identifier, title=["Corrected by a curator"])
    corpus.advance_clock(hours=1)
    change_at_source(corpus, identifier, description=["New at the source"])
    harvest()
    metadata = local(sample_service, identifier)
    assert metadata["title"] == ["Corrected by a curator"]
    assert metadata["description"] == ["New at the source"]
    assert tracking()[identifier].conflicts is None


def test_a_bad_field_policy_is_refused_on_every_surface(app, db, provider, run_cli):
    from oarepo_oaipmh_harvester.services.errors import HarvesterValidationError

    with pytest.raises(HarvesterValidationError) as refused:
        make_harvester(provider.base_url, field_policy={"metadata.subject": "newest"})
    assert "'newest' is no field policy" in str(refused.value.messages)
    common = (
        "harvester", "create", "--id", "cli", "--name", "CLI", "--base-url", provider.base_url,
        "--metadata-prefix", "oai_dc", "--target", "oai-sample-records", "--no-check",
    )  # fmt: skip
    result = run_cli(*common, "--field-policy", "metadata..x=local")
    assert result.exit_code != 0 and "is no field path" in result.output
    result = run_cli(
        *common,
        "--field-policy",
        "metadata.subject=merge",
        "--field-policy",
        "custom_fields.*=local",
    )
    assert result.exit_code == 0, result.output
    listed = {h["id"]: h for h in json.loads(run_cli("harvester", "list", "--json").output)}
    assert listed["cli"]["field_policy"] == {
        "metadata.subject": "merge",
        "custom_fields.*": "local",
    }


def test_an_undo_writes_the_earlier_source_data_back_with_the_local_edits_kept(
    harvested, corpus, sample_service, run_cli
):
    identifier = harvested
    before = local(sample_service, identifier)
    harvested_before = tracking()[identifier].transformed["metadata"]
    run = harvest()
    assert local(sample_service, identifier)["description"] == ["New at the source"]

    result = run_cli("undo", str(run.id))

    assert result.exit_code == 0, result.output
    undone = local(sample_service, identifier)
    assert undone["title"] == ["Corrected by a curator"]  # kept, as the run kept it
    assert undone["subject"] == before["subject"]  # the earlier list, the curated term in it
    assert undone["subject"][-1] == "curated term"
    # No policy for it: the run overwrote the curator's text, and the undo writes back what
    # the harvest wrote before (the journal keeps tracking rows, not the local record).
    assert undone["description"] == harvested_before["description"]


def test_a_named_path_decides_over_a_pattern_whatever_their_order():
    """A stored mapping keeps no order (PostgreSQL's JSONB sorts its keys)."""
    from oarepo_oaipmh_harvester.harvest.field_policy import FieldPolicies

    written = {"metadata": {"title": ["T"], "subject": ["a"]}}
    local_version = {"metadata": {"title": ["Curated"], "subject": ["a", "curated"]}}
    incoming = {"metadata": {"title": ["T2"], "subject": ["b"]}}
    for stored in (
        {"metadata.*": "local", "metadata.subject": "source"},
        {"metadata.subject": "source", "metadata.*": "local"},
    ):
        data, conflicts = FieldPolicies.of(stored).resolve(written, local_version, incoming)
        assert data["metadata"] == {"title": ["Curated"], "subject": ["b"]}
        assert {c["field"]: c["kept"] for c in conflicts} == {
            "metadata.subject": "source",
            "metadata.title": "local",
        }
