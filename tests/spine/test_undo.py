"""Undo of a run (issue 37, point 2), on a plain records service: what one run created,
updated and deleted is taken back - the target, the tracking rows and the watermark compared
field by field with before the run - and the undo can itself be undone; records changed after
the run (by a later run, or locally) are left alone and listed."""

from __future__ import annotations

import json

import pytest
from factories import make_harvester
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import RunStatusEnum

from oarepo_oaipmh_harvester.models import (
    OAIHarvestedRecord,
    OAIHarvester,
    OAIRunChange,
    OAIRunJournal,
)
from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service
from oarepo_oaipmh_harvester.services.errors import HarvesterValidationError

from .helpers import live_local_count, tracking

# Every column of a tracking row; a restored record of a plain target (no tombstones) gets a
# new pid.
ROW_FIELDS = tuple(
    column.name
    for column in OAIHarvestedRecord.__table__.columns
    if column.name not in ("harvester_id", "oai_identifier", "local_pid")
)


def rows() -> dict[str, dict]:
    db.session.expire_all()
    return {
        identifier: {name: getattr(row, name) for name in ROW_FIELDS}
        for identifier, row in tracking().items()
    }


def local_metadata(service) -> dict[str, dict]:
    """OAI identifier -> the metadata of its live local record (read through the service)."""
    db.session.expire_all()
    return {
        identifier: service.read(system_identity, row.local_pid).data["metadata"]
        for identifier, row in tracking().items()
        if row.local_pid and not row.deleted
    }


def watermarks() -> tuple:
    db.session.expire_all()
    harvester = db.session.get(OAIHarvester, "test")
    return harvester.watermark, harvester.watermarks


def harvest(**arguments):
    run = current_harvest_runs_service.harvest_in_process(system_identity, "test", arguments)
    assert run.status == RunStatusEnum.SUCCESS, run.message
    return run


def state(service) -> tuple:
    return rows(), local_metadata(service), watermarks(), live_local_count()


@pytest.fixture()
def run_cli(app):
    from oarepo_oaipmh_harvester.cli import oai

    runner = app.test_cli_runner()
    return lambda *args: runner.invoke(oai, list(args))


@pytest.fixture()
def changing_run(app, db, clean_index, provider, corpus, sample_service):
    """A first harvest, then a run that creates 3 records, updates 4 and deletes 2; the state
    before the second run and the run."""
    make_harvester(provider.base_url)
    harvest()
    before = state(sample_service)
    corpus.advance_clock(hours=1)
    identifiers = sorted(corpus.live_identifiers())
    for number in range(3):
        corpus.add(f"oai:new:{number}", {"title": [f"New {number}"], "creator": ["Nová, Jana"]})
    for identifier in identifiers[:4]:
        corpus.update(identifier, metadata={"title": ["Changed at the source"]})
    for identifier in identifiers[4:6]:
        corpus.delete(identifier)
    run = harvest()
    assert (run.inserted_entries, run.updated_entries) == (3, 4 + 2)  # deletions count as updates
    return before, run, identifiers


def test_undo_takes_back_what_a_run_created_updated_and_deleted_and_can_be_undone(
    changing_run, sample_service, run_cli
):
    before, run, identifiers = changing_run
    after = state(sample_service)
    assert after[3] == 50 + 3 - 2

    planned = json.loads(run_cli("undo", str(run.id), "--dry-run", "--json").output)
    assert {k: planned["counts"][k] for k in ("delete", "revert", "restore", "left")} == {
        "delete": 3,
        "revert": 4,
        "restore": 2,
        "left": 0,
    }
    assert state(sample_service) == after  # a dry run changes nothing

    result = run_cli("undo", str(run.id))
    assert result.exit_code == 0, result.output
    undo = db.session.scalars(
        db.select(type(run)).where(type(run).title == f"Undo of run {run.id}")
    ).one()
    assert undo.status == RunStatusEnum.SUCCESS and undo.job_id == run.job_id

    undone_rows, undone_metadata, undone_watermarks, undone_count = state(sample_service)
    assert undone_rows == before[0]
    assert undone_metadata == before[1]
    assert undone_watermarks == before[2]
    assert undone_count == before[3]

    refused = run_cli("undo", str(run.id))
    assert refused.exit_code != 0 and f"undone already, by run {undo.id}" in refused.output

    # The undo of the undo: the run's result again.
    redo = run_cli("undo", str(undo.id))
    assert redo.exit_code == 0, redo.output
    redone_rows, redone_metadata, redone_watermarks, redone_count = state(sample_service)
    assert redone_rows == after[0]
    assert redone_metadata == after[1]
    assert redone_watermarks == after[2]
    assert redone_count == after[3]


def test_records_changed_after_the_run_are_left_alone_and_listed(
    changing_run, corpus, sample_service, run_cli
):
    before, run, identifiers = changing_run
    # A later run writes one of the run's records again...
    corpus.advance_clock(hours=1)
    corpus.update(identifiers[0], metadata={"title": ["Changed once more"]})
    harvest()
    # ... and a curator edits another one locally.
    edited = tracking()[identifiers[1]].local_pid
    data = sample_service.read(system_identity, edited).data
    data["metadata"]["title"] = ["Corrected by a curator"]
    sample_service.update(system_identity, edited, {"metadata": data["metadata"]})

    planned = json.loads(run_cli("undo", str(run.id), "--dry-run", "--json").output)
    left = {
        step["identifier"]: step["reason"] for step in planned["steps"] if step["action"] == "left"
    }
    assert left[identifiers[0]] == "a later run wrote it again"
    assert left[identifiers[1]].startswith(f"record {edited} was changed locally at ")
    assert len(left) == 2

    result = run_cli("undo", str(run.id))
    assert result.exit_code == 0, result.output
    metadata = local_metadata(sample_service)
    assert metadata[identifiers[0]]["title"] == ["Changed once more"]
    assert metadata[identifiers[1]]["title"] == ["Corrected by a curator"]
    assert metadata[identifiers[2]] == before[1][identifiers[2]]  # undone
    assert "oai:new:0" not in metadata
    db.session.expire_all()
    undo = db.session.scalars(
        db.select(type(run)).where(type(run).title == f"Undo of run {run.id}")
    ).one()
    assert undo.status == RunStatusEnum.SUCCESS
    assert "2 left alone, changed after the run" in result.output


def test_a_run_without_a_journal_or_of_another_harvester_is_refused(
    app, db, clean_index, provider, sample_service, run_cli
):
    make_harvester(provider.base_url)
    make_harvester(provider.base_url, harvester_id="other")
    run = harvest()
    with pytest.raises(HarvesterValidationError) as refused:
        current_harvest_runs_service.harvest_in_process(
            system_identity, "other", {"undo": str(run.id)}
        )
    assert "has no journal" in str(refused.value.messages)
    unknown = run_cli("undo", "8d5ba9c2-0000-4000-8000-000000000000")
    assert unknown.exit_code != 0 and "has no journal" in unknown.output


def test_only_the_newest_runs_keep_a_journal(
    app, db, clean_index, provider, corpus, sample_service, monkeypatch
):
    monkeypatch.setitem(app.config, "OAI_HARVESTER_UNDO_RUNS", 2)
    make_harvester(provider.base_url)
    runs = [harvest(), harvest(), harvest()]
    with pytest.raises(HarvesterValidationError) as refused:
        current_harvest_runs_service.harvest_in_process(
            system_identity, "test", {"undo": str(runs[0].id)}
        )
    assert "OAI_HARVESTER_UNDO_RUNS" in str(refused.value.messages)
    assert len(journals()) == 2

    monkeypatch.setitem(app.config, "OAI_HARVESTER_UNDO_RUNS", 0)  # no journal at all
    corpus.advance_clock(hours=1)
    corpus.update(sorted(corpus.live_identifiers())[0], metadata={"title": ["Changed"]})
    harvest()
    assert len(journals()) == 2 and not db.session.scalars(db.select(OAIRunChange)).all()


def journals() -> list:
    return db.session.scalars(db.select(OAIRunJournal)).all()
