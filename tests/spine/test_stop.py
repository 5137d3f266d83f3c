"""Stop: a run stopped in Administration → Jobs ends CANCELLED between two batches.

The run is started through invenio-jobs' own service, as the Jobs page does; Stop is
stored while a batch is being written (from inside the target's write), so the test also
shows that the batch under way is finished whole. Here Stop is what `RunsService.stop`
stores (the run CANCELLING), written by a statement as another process would: called in the
run's own session, the service's copy of the run would replace the one invenio-jobs is
ending. The service itself, with its revoke (SIGTERM on a prefork pool), is used on real
worker processes in test_workers.py.
"""

from __future__ import annotations

from contextlib import contextmanager

import pytest
import sqlalchemy as sa
from factories import create_job, make_harvester, start_run
from invenio_db import db
from invenio_jobs.models import Run, RunStatusEnum

from oarepo_oaipmh_harvester.models import OAIHarvester

from .helpers import expected_titles, indexed_total, local_titles, tracking


@contextmanager
def stop_pressed_during_write(sample_service, after_records: int):
    """Stop the running run while the target writes the record after `after_records` (a
    real bulk write of the sample service, which goes on afterwards)."""
    original = sample_service.create_or_update_many
    seen = 0

    def write_and_stop(identity, data, **kwargs):
        nonlocal seen
        seen += len(data)
        if seen > after_records:
            db.session.execute(
                sa.update(Run)
                .where(Run.status == RunStatusEnum.RUNNING)
                .values(status=RunStatusEnum.CANCELLING)
            )
        return original(identity, data, **kwargs)

    sample_service.create_or_update_many = write_and_stop
    try:
        yield
    finally:
        sample_service.create_or_update_many = original


@pytest.fixture()
def harvester(app, db, clean_index, provider):
    return make_harvester(provider.base_url, batch_size=5)


def test_a_stopped_run_ends_cancelled_with_whole_batches_and_its_watermark_kept(
    app, harvester, corpus, sample_service
):
    job_id = create_job()
    first = start_run(job_id)
    assert first.status == RunStatusEnum.SUCCESS, first.message
    watermark = db.session.get(OAIHarvester, "test").watermark
    assert watermark is not None

    corpus.advance_clock(hours=1)
    changed = sorted(corpus.live_identifiers())[:23]
    for identifier in changed:
        corpus.update(identifier, metadata={"title": [f"Edited {identifier}"]})

    with stop_pressed_during_write(sample_service, after_records=7):
        stopped = start_run(job_id)

    assert stopped.status == RunStatusEnum.CANCELLED, stopped.message
    assert "Stopped (Stop was requested in Administration → Jobs) after 10 records" in (
        stopped.message
    )
    # The batch being written when Stop came (records 6-10) was finished; none after it.
    assert stopped.updated_entries == 10
    db.session.expire_all()
    assert db.session.get(OAIHarvester, "test").watermark == watermark
    titles = local_titles(sample_service)
    edited = [i for i in changed if titles[i] == [f"Edited {i}"]]
    assert len(edited) == 10
    # Tracking rows and target agree: every row points at a live record with its title.
    assert set(titles) == set(tracking()) and indexed_total(sample_service) == 50

    # The next run starts from the kept watermark and brings the other 13 edits.
    after = start_run(job_id)
    assert after.status == RunStatusEnum.SUCCESS, after.message
    assert after.updated_entries == 13
    assert local_titles(sample_service) == expected_titles(corpus)
