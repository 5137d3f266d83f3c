"""A run that fans out into the real InvenioRDM service (invenio-jobs subtasks, written by
Celery's eager tasks in this process): a subtask carries a harvester's batch, and its writer
commits it in the draft-enabled target's units of work."""

from __future__ import annotations

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import create_job, make_harvester, start_run
from invenio_db import db
from invenio_jobs.models import Run, RunStatusEnum

from oarepo_oaipmh_harvester.harvest.writer import RecordWriter

from .conftest import RDM_TARGET, TRANSFORMER
from .helpers import open_drafts, published_titles, tracking


@pytest.fixture()
def units_written(monkeypatch) -> list[int]:
    """The size of each unit of work the writers commit (the real writer, observed)."""
    sizes: list[int] = []
    write_batch = RecordWriter.write_batch

    def observed(self, records, on_commit=None):
        sizes.append(len(records))
        return write_batch(self, records, on_commit)

    monkeypatch.setattr(RecordWriter, "write_batch", observed)
    return sizes


def test_a_subtask_takes_a_harvesters_batch_written_in_the_targets_units(
    app, rdm, provider, corpus, monkeypatch, units_written
):
    monkeypatch.setitem(app.config, "OAI_HARVESTER_WRITE_MODE", "celery")
    monkeypatch.setitem(app.config, "OAI_HARVESTER_DRAFTS_LARGEST_BATCH", 2)
    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER, batch_size=4)
    db.session.commit()

    run = start_run(create_job("test"))

    assert run.status == RunStatusEnum.SUCCESS, run.message
    subtasks = db.session.scalars(db.select(Run).where(Run.parent_run_id == run.id)).all()
    # Six records: subtasks of the harvester's 4 (4 + 2), each committed 2 at a time.
    assert sorted(s.args["counts"]["created"] for s in subtasks) == [2, 4]
    assert all(s.args["records_per_transaction"] == 2 for s in subtasks)
    assert units_written == [2, 2, 2]
    assert len(published_titles(rdm)) == 6 and len(tracking()) == 6
    assert open_drafts() == 0
