"""Undo of a run on InvenioRDM's records service (issue 37, point 2): records the run created
become RDM tombstones, records it updated are published again with their earlier metadata,
records it deleted are restored from their tombstones under the same pid; the undo of the
undo brings the run's result back, pids included."""

from __future__ import annotations

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import Run, RunStatusEnum
from invenio_rdm_records.services.errors import RecordDeletedException

from oarepo_oaipmh_harvester.models import OAIHarvestedRecord, OAIHarvester
from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service

from .conftest import RDM_TARGET, TRANSFORMER
from .helpers import tracking

ROW_FIELDS = tuple(
    column.name
    for column in OAIHarvestedRecord.__table__.columns
    if column.name not in ("harvester_id", "oai_identifier")
)


def harvest(**arguments) -> Run:
    run = current_harvest_runs_service.harvest_in_process(system_identity, "test", arguments)
    assert run.status == RunStatusEnum.SUCCESS, run.message
    return run


def state(rdm) -> tuple:
    """Tracking rows field by field, each pid's published title (or "tombstone"), and the
    watermarks."""
    rows = {
        identifier: {name: getattr(row, name) for name in ROW_FIELDS}
        for identifier, row in tracking().items()
    }
    published = {}
    for row in rows.values():
        try:
            published[row["local_pid"]] = rdm.read(system_identity, row["local_pid"]).data[
                "metadata"
            ]["title"]
        except RecordDeletedException:
            published[row["local_pid"]] = "tombstone"
    harvester = db.session.get(OAIHarvester, "test")
    return rows, published, (harvester.watermark, harvester.watermarks)


def test_undo_and_its_undo_on_rdm(app, rdm, provider, corpus):
    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER)
    harvest()
    before = state(rdm)
    identifiers = sorted(corpus.live_identifiers())
    corpus.advance_clock(hours=1)
    corpus.add("oai:new:1", {"title": ["A new one"], "creator": ["Nová, Jana"], "date": ["2021"]})
    corpus.update(
        identifiers[0], metadata={**corpus.get(identifiers[0]).metadata, "title": ["Changed"]}
    )
    corpus.delete(identifiers[1])
    run = harvest()
    after = state(rdm)
    created_pid = tracking()["oai:new:1"].local_pid
    assert after[1][created_pid] == "A new one"
    assert after[1][before[0][identifiers[1]]["local_pid"]] == "tombstone"

    undo = current_harvest_runs_service.harvest_in_process(
        system_identity, "test", {"undo": str(run.id)}, title=f"Undo of run {run.id}"
    )
    assert undo.status == RunStatusEnum.SUCCESS, undo.message

    rows, published, watermarks = state(rdm)
    assert rows == before[0] and watermarks == before[2]
    assert published == before[1]  # the deleted one restored under its own pid
    with pytest.raises(RecordDeletedException):
        rdm.read(system_identity, created_pid)  # a tombstone: links to it say it was removed

    redo = current_harvest_runs_service.harvest_in_process(
        system_identity, "test", {"undo": str(undo.id)}, title=f"Undo of run {undo.id}"
    )
    assert redo.status == RunStatusEnum.SUCCESS, redo.message
    assert state(rdm) == after  # the tombstone of the created record restored, same pid


def test_a_record_a_curator_published_again_after_the_run_is_left_alone(app, rdm, provider, corpus):
    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER)
    harvest()
    identifiers = sorted(corpus.live_identifiers())
    corpus.advance_clock(hours=1)
    for identifier in identifiers[:2]:
        metadata = corpus.get(identifier).metadata
        corpus.update(identifier, metadata={**metadata, "title": [f"Changed {identifier}"]})
    run = harvest()
    edited = tracking()[identifiers[0]].local_pid
    draft = rdm.edit(system_identity, edited)
    data = draft.data
    data["metadata"]["title"] = "Corrected by a curator"
    rdm.update_draft(system_identity, edited, data)
    rdm.publish(system_identity, edited)

    undo = current_harvest_runs_service.harvest_in_process(
        system_identity, "test", {"undo": str(run.id)}, title=f"Undo of run {run.id}"
    )

    assert undo.status == RunStatusEnum.SUCCESS, undo.message
    assert rdm.read(system_identity, edited).data["metadata"]["title"] == "Corrected by a curator"
    other = tracking()[identifiers[1]].local_pid
    assert rdm.read(system_identity, other).data["metadata"]["title"] != f"Changed {identifiers[1]}"
    db.session.expire_all()
    message = db.session.get(Run, undo.id).message or ""
    assert "1 updated records written back" in message
    assert f"1 left alone, changed after the run: {identifiers[0]} (record {edited} was " in message
