"""A run that loses its lock stops; a run whose process died is closed, not left RUNNING."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity
from invenio_db import db as db_
from invenio_jobs.models import Run, RunStatusEnum

from oarepo_oaipmh_harvester.harvest.lock import LockLost, lock_key
from oarepo_oaipmh_harvester.models import OAIHarvester
from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service
from oarepo_oaipmh_harvester.services.errors import HarvestRunInProgress

from .helpers import tracking


@pytest.fixture()
def postgresql(db_uri):
    if not db_uri.startswith("postgresql"):
        pytest.skip("The run lock is a PostgreSQL advisory lock.")
    return db_uri


def _lock_holders(harvester_id: str) -> list[int]:
    with db_.engine.connect() as connection:
        return list(
            connection.execute(
                sa.text(
                    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 "
                    "AND ((classid::bigint << 32) | objid::bigint) = :key "
                    # Other suites on the same server hold locks for their harvester "test".
                    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
                ),
                {"key": lock_key(harvester_id)},
            ).scalars()
        )


def test_a_run_whose_lock_connection_is_terminated_stops_before_the_next_batch(
    app, db, clean_index, provider, corpus, postgresql
):
    make_harvester(provider.base_url)  # batches of 10
    terminated = []

    def cut_the_lock_connection(progress):
        if progress.counts.total and not terminated:
            [pid] = _lock_holders("test")
            with db_.engine.connect() as connection:
                connection.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            terminated.append(pid)

    with pytest.raises(LockLost, match="lock of harvester 'test' was lost"):
        run_harvest("test", progress=cut_the_lock_connection)

    assert terminated
    assert len(tracking()) == 10  # the first batch only: nothing written beside another run
    db_.session.expire_all()
    assert db_.session.get(OAIHarvester, "test").watermark is None
    assert _lock_holders("test") == []
    # The harvester is free again, and a new run completes the window.
    assert run_harvest("test").counts.created == 40


@pytest.fixture()
def killed_run(app, db, provider, lock_holder):
    """A run left RUNNING by a worker process that still holds the harvester's lock."""
    make_harvester(provider.base_url)
    job = current_harvest_runs_service.ensure_job(system_identity, "test")
    holder = lock_holder("test")
    started = datetime.now(UTC) - timedelta(minutes=10)
    run = Run(
        id=uuid.uuid4(),
        task_id=uuid.uuid4(),
        job=job,
        title="Scheduled run",
        status=RunStatusEnum.RUNNING,
        started_at=started,
        args={"harvester_id": "test", "since": None},
        queue="celery",
    )
    db_.session.add(run)
    db_.session.commit()
    db_.session.execute(sa.update(Run).where(Run.id == run.id).values(created=started))
    db_.session.commit()
    return holder, run.id


def test_run_now_refuses_while_the_runs_process_lives(killed_run):
    _, run_id = killed_run
    with pytest.raises(HarvestRunInProgress, match=str(run_id)):
        current_harvest_runs_service.start_run(system_identity, "test")


def test_run_now_closes_a_run_whose_process_is_gone(killed_run, clean_index):
    holder, run_id = killed_run
    holder.kill()  # SIGKILL, as an OOM killer or a redeploy does
    holder.wait()

    item = current_harvest_runs_service.start_run(system_identity, "test")

    db_.session.expire_all()
    dead = db_.session.get(Run, run_id)
    assert dead.status == RunStatusEnum.FAILED and dead.finished_at is not None
    assert "Interrupted" in dead.message and "Run now" in dead.message
    assert db_.session.get(Run, item.id).status == RunStatusEnum.SUCCESS


def test_the_next_run_closes_a_run_whose_process_is_gone(killed_run, clean_index):
    holder, run_id = killed_run
    holder.kill()
    holder.wait()

    summary = run_harvest("test")

    assert summary.succeeded
    db_.session.expire_all()
    dead = db_.session.get(Run, run_id)
    assert dead.status == RunStatusEnum.FAILED and "Interrupted" in dead.message
