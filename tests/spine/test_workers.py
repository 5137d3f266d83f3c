"""Fan-out writing with real Celery worker processes on the machine's Redis broker.

Everything is committed for real (the workers are other processes), so this module uses the
`database` fixture directly and cleans up after itself.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from factories import create_job, jobs_of, make_harvester, start_run, wait_until
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import Job, Run, RunStatusEnum
from oaiharvest_test_support.sample_records.records import SampleRecordMetadata
from oaiharvest_test_support.workers import (
    invenio_environment,
    start_celery_workers,
    stop_celery_workers,
)
from search_node import empty_search_indices

from oarepo_oaipmh_harvester.harvest.fanout import worker_name
from oarepo_oaipmh_harvester.models import OAIHarvester
from oarepo_oaipmh_harvester.proxies import current_harvester_service

from .helpers import expected_titles, live_local_count, local_titles

pytestmark = pytest.mark.worker

BROKER = os.environ.get("OAI_HARVESTER_TEST_BROKER", "redis://127.0.0.1:6379/7")
QUEUE = f"oai-harvest-test-{os.getpid()}"  # parallel suites must not take each other's batches
FINISHED = (RunStatusEnum.SUCCESS, RunStatusEnum.FAILED, RunStatusEnum.PARTIAL_SUCCESS)


@pytest.fixture(scope="module")
def celery_config_ext(celery_config_ext):
    celery_config_ext.update(
        CELERY_TASK_ALWAYS_EAGER=False,
        CELERY_BROKER_URL=BROKER,
        CELERY_RESULT_BACKEND=None,
    )
    return celery_config_ext


@pytest.fixture(scope="module")
def app_config(app_config, db_uri):
    if not db_uri.startswith("postgresql"):
        pytest.skip("Worker processes share the database: PostgreSQL only.")
    app_config.update(
        CELERY_TASK_ALWAYS_EAGER=False,
        CELERY_BROKER_URL=BROKER,
        BROKER_URL=BROKER,
        OAI_HARVESTER_WRITE_MODE="celery",
        OAI_HARVESTER_WRITE_QUEUE=QUEUE,
        JOBS_DEFAULT_QUEUE=QUEUE,
        JOBS_QUEUES={QUEUE: {"name": QUEUE, "title": "test", "description": "test"}},
        OAI_HARVESTER_SUBTASK_TAKEOVER_AFTER=10.0,
        OAI_HARVESTER_SUBTASK_TIMEOUT=60.0,
    )
    return app_config


def _reset_celery_connections() -> None:
    """The Celery app is process-wide: drop pools an earlier module opened on another broker."""
    from celery import current_app as celery
    from kombu import pools

    pools.reset()  # kombu's process-wide producer pools, keyed by connection
    celery._pool = None
    celery.amqp._producer_pool = None


@pytest.fixture(scope="module", autouse=True)
def _celery_on_the_test_broker(app):
    from celery import current_app as celery

    celery.conf.broker_url = BROKER
    _reset_celery_connections()
    yield
    _reset_celery_connections()


def _environment(app) -> dict[str, str]:
    keys = (
        "SQLALCHEMY_DATABASE_URI",
        "SEARCH_HOSTS",
        "SEARCH_INDEX_PREFIX",
        "OAI_HARVESTER_SAMPLE_TARGET",
        "OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS",
        "OAI_HARVESTER_WRITE_MODE",
        "OAI_HARVESTER_WRITE_QUEUE",
        "OAI_HARVESTER_SUBTASK_TAKEOVER_AFTER",
        "OAI_HARVESTER_SUBTASK_TIMEOUT",
        "JOBS_DEFAULT_QUEUE",
        "JOBS_LOGGING",
        "CACHE_TYPE",
        "RECORDS_REFRESOLVER_CLS",
        "RECORDS_REFRESOLVER_STORE",
        "SECRET_KEY",
    )
    return invenio_environment(
        {
            **{key: app.config[key] for key in keys},
            "CELERY_BROKER_URL": BROKER,
            "BROKER_URL": BROKER,
            "CELERY_TASK_ALWAYS_EAGER": False,
            # A busy solo worker must not sit on prefetched batch messages (the run would
            # write them itself after OAI_HARVESTER_SUBTASK_TAKEOVER_AFTER, but slower).
            "CELERY_WORKER_PREFETCH_MULTIPLIER": 1,
        }
    )


@pytest.fixture()
def start_workers(app, database):
    """Start N `celery worker` processes (solo pool: one task at a time each, unless a
    prefork `concurrency` is given); they are stopped after the test."""
    started: list[subprocess.Popen] = []

    def start(count: int, concurrency: int | None = None) -> list[subprocess.Popen]:
        pool = {"pool": "prefork", "concurrency": concurrency} if concurrency else {}
        started.extend(start_celery_workers(_environment(app), QUEUE, count, name="oai", **pool))
        return started

    yield start
    stop_celery_workers(started)


@pytest.fixture()
def committed_harvester(app, database, search, provider):

    harvester = make_harvester(provider.base_url, "fan", name="Fan-out", batch_size=5)
    yield harvester
    db.session.rollback()
    jobs = jobs_of("fan")
    current_harvester_service.delete(system_identity, "fan")
    assert all(db.session.get(Job, j.id) is None for j in jobs)
    model = SampleRecordMetadata
    db.session.execute(db.text("DELETE FROM pidstore_pid WHERE pid_type = 'oaismp'"))
    db.session.query(model).delete()
    db.session.commit()
    empty_search_indices()


def _run_parent_in_this_process(job_id, args: dict | None = None) -> Run:
    """The parent run executes here (like a third worker); its batches go to the queue."""
    from invenio_jobs.tasks import execute_run

    run = Run.create(
        job=db.session.get(Job, job_id),
        task_id=None,
        status=RunStatusEnum.QUEUED,
        **({"args": {"job_arg_schema": "OAIHarvestArgsSchema", **args}} if args else {}),
    )
    run.queue = QUEUE
    db.session.add(run)
    db.session.commit()
    execute_run.apply(kwargs={"run_id": run.id, "identity_id": "system"})
    db.session.expire_all()
    return db.session.get(Run, run.id)


def test_two_workers_write_the_batches_of_one_run(
    app, committed_harvester, start_workers, corpus, sample_service
):
    start_workers(2)
    job_id = create_job("fan", title="fan")
    run = _run_parent_in_this_process(job_id)

    assert run.status == RunStatusEnum.SUCCESS, run.message
    assert (run.total_entries, run.inserted_entries, run.errored_entries) == (50, 50, 0)
    subtasks = db.session.scalars(db.select(Run).where(Run.parent_run_id == run.id)).all()
    assert len(subtasks) == 10 and all(s.status == RunStatusEnum.SUCCESS for s in subtasks)
    writers = {s.args["worker"] for s in subtasks}
    assert worker_name() not in writers and len(writers) == 2  # both worker processes wrote
    assert local_titles(sample_service, "fan") == expected_titles(corpus)
    assert live_local_count() == 50
    assert db.session.get(OAIHarvester, "fan").watermark is not None

    # Second run: an edit and a deletion arrive; a later version is never overwritten.
    corpus.advance_clock(hours=1)
    ids = sorted(corpus.live_identifiers())
    corpus.update(ids[0], metadata={"title": ["Edited"]})
    corpus.delete(ids[1])
    again = start_run(job_id)  # queued for the workers this time, parent run included

    def second_run_finished() -> Run | None:
        db.session.expire_all()
        run = db.session.get(Run, again.id)
        return run if run.status in FINISHED else None

    second = wait_until(second_run_finished, timeout=90, interval=0.5)
    assert second.status == RunStatusEnum.SUCCESS, second.message
    assert local_titles(sample_service, "fan") == expected_titles(corpus)
    assert live_local_count() == 49

    # Third run, full, nothing changed: the run recognises every record itself and queues
    # no batch at all.
    third = _run_parent_in_this_process(job_id, {"full": True})
    assert third.status == RunStatusEnum.SUCCESS, third.message
    assert (third.total_entries, third.inserted_entries, third.updated_entries) == (50, 0, 0)
    subtasks = db.session.scalars(db.select(Run).where(Run.parent_run_id == third.id)).all()
    assert subtasks == []
    assert local_titles(sample_service, "fan") == expected_titles(corpus)


def _worker_log() -> str:
    return (Path(tempfile.gettempdir()) / f"oai0-{os.getpid()}.log").read_text(errors="replace")


def _failed_tasks(log: str) -> list[str]:
    """Task failures a worker logged (a task that raised, or a pool process that died)."""
    return [
        line
        for line in log.splitlines()
        if " raised unexpected" in line or "WorkerLostError" in line or "ERROR/" in line
    ]


def test_a_prefork_worker_runs_harvest_batches_and_other_modules_tasks_queued_before_it(
    app, committed_harvester, start_workers, corpus, sample_service
):
    """The first task each forked pool process runs is where a connection inherited from
    boot breaks (both processes would use one socket): everything is queued first."""
    from invenio_accounts.tasks import delete_ips

    job_id = create_job("fan", title="fan")
    queued = start_run(job_id)
    others = 40
    for _ in range(others):
        delete_ips.apply_async(queue=QUEUE)
    start_workers(1, concurrency=2)

    def finished() -> Run | None:
        db.session.expire_all()
        run = db.session.get(Run, queued.id)
        return run if run.status in FINISHED else None

    run = wait_until(finished, timeout=120, interval=0.5)
    assert run.status == RunStatusEnum.SUCCESS, run.message
    assert local_titles(sample_service, "fan") == expected_titles(corpus)

    def ended_tasks() -> list[str]:
        lines = _worker_log().splitlines()
        return [line for line in lines if "delete_ips[" in line and " received" not in line]

    wait_until(lambda: len(ended_tasks()) >= others, timeout=60, message="40 delete_ips ended")
    assert all(" succeeded in " in line for line in ended_tasks())
    assert _failed_tasks(_worker_log()) == []


def test_stop_on_a_prefork_worker_ends_the_run_cancelled_and_the_worker_goes_on(
    app, committed_harvester, start_workers, provider, corpus, sample_service
):
    """Stop in Administration → Jobs: invenio-jobs sets the run CANCELLING and revokes its
    task with terminate (SIGTERM to the pool process that runs it)."""
    from invenio_access.permissions import system_identity
    from invenio_jobs.proxies import current_runs_service

    from oarepo_oaipmh_harvester.models import OAIHarvestedRecord

    start_workers(1, concurrency=2)
    provider.quirks.delay_seconds = 1.0  # a page of 7 records a second: time to press Stop
    job_id = create_job("fan", title="fan")
    queued = start_run(job_id)

    def some_written() -> Run | None:
        db.session.expire_all()
        run = db.session.get(Run, queued.id)
        return run if run.status == RunStatusEnum.RUNNING and run.inserted_entries else None

    running = wait_until(some_written, timeout=60, interval=0.2)
    current_runs_service.stop(system_identity, job_id, str(running.id))

    def ended() -> Run | None:
        db.session.expire_all()
        run = db.session.get(Run, queued.id)
        return run if run.status not in (RunStatusEnum.RUNNING, RunStatusEnum.CANCELLING) else None

    stopped = wait_until(ended, timeout=60, interval=0.2)
    assert stopped.status == RunStatusEnum.CANCELLED, stopped.message
    assert stopped.message.startswith("Stopped (")
    harvester = db.session.get(OAIHarvester, "fan")
    assert harvester.watermark is None
    # What was written is whole: every tracking row has its live record, and no more.
    rows = db.session.scalars(
        db.select(OAIHarvestedRecord).where(OAIHarvestedRecord.harvester_id == "fan")
    ).all()
    assert 0 < len(rows) < 50
    assert all(row.local_pid for row in rows) and live_local_count() == len(rows)

    # The worker is alive and takes the next run, which brings the rest.
    provider.quirks.delay_seconds = 0.0
    again = start_run(job_id)

    def again_finished() -> Run | None:
        db.session.expire_all()
        run = db.session.get(Run, again.id)
        return run if run.status in FINISHED else None

    assert wait_until(again_finished, timeout=90, interval=0.5).status == RunStatusEnum.SUCCESS
    assert local_titles(sample_service, "fan") == expected_titles(corpus)
    assert _failed_tasks(_worker_log()) == []
