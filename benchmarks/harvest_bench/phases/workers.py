"""A full harvest whose batches are written by Celery worker processes (phases `workers` and,
into InvenioRDM, `rdm_workers`)."""

from __future__ import annotations

import os
import re
import socket
from collections import Counter
from typing import TYPE_CHECKING, Any

from harvest_bench.phases.shared import create_harvester
from harvest_bench.settings import CELERY_BROKER, HARVESTER_ID, log

if TYPE_CHECKING:
    from harvest_bench.harness.worker import PhaseWorker


def phase_workers(worker: PhaseWorker, params: dict[str, Any]) -> dict[str, Any]:
    """A full harvest whose batches are written by `params["worker_processes"]` Celery workers
    (0: the run writes them itself), solo pool, on the Redis at `CELERY_BROKER` (flushed first).

    With `params["rdm"]` the target is InvenioRDM and the workers' app is rdm_target's.
    The workers consume the site's default queue too, as a site's workers do: the tasks that
    the target's service sends after each commit (InvenioRDM's, for a PID of a remote
    provider; the harvest registers local-only PIDs in its batches) run on the same cores,
    and the clock stops when they are done. With no
    worker (0) nothing runs those tasks: that rate leaves them out. What the indexers'
    queues hold then is indexed by this process, on the clock (a site's beat task has a
    worker do it).
    """
    import redis
    from celery import current_app as current_celery
    from invenio_access.permissions import system_identity
    from invenio_db import db
    from invenio_jobs.models import Job, Run, RunStatusEnum
    from invenio_jobs.tasks import execute_run
    from oaiharvest_test_support.workers import (
        invenio_environment,
        start_celery_workers,
        stop_celery_workers,
    )

    from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service

    count = params["worker_processes"]
    rdm = bool(params.get("rdm"))
    queue = f"oai-bench-{os.getpid()}"
    overrides = {
        "CELERY_TASK_ALWAYS_EAGER": False,
        "CELERY_BROKER_URL": CELERY_BROKER,
        "BROKER_URL": CELERY_BROKER,
        "CELERY_RESULT_BACKEND": None,
        "CELERY_WORKER_PREFETCH_MULTIPLIER": 1,
        "OAI_HARVESTER_WRITE_MODE": "celery" if count else "local",
        "OAI_HARVESTER_WRITE_QUEUE": queue,
        "JOBS_DEFAULT_QUEUE": queue,
        "OAI_HARVESTER_SUBTASK_TIMEOUT": 3600.0,
    }
    redis.Redis.from_url(CELERY_BROKER).flushdb()
    worker.boot(overrides)
    worker.reset_storage()
    if rdm and params.get("parent_indexes"):
        from harvest_bench.phases.rdm_grown import PARENT_ID_INDEXES, run_sql

        run_sql(PARENT_ID_INDEXES)
    create_harvester(params["base_url"], params["batch_size"], rdm=rdm)
    job = current_harvest_runs_service.ensure_job(system_identity, HARVESTER_ID)
    env = {**invenio_environment(worker.config), "OAIHARVEST_BENCH_SEARCH": params["search"]}
    app_module = "invenio_app.celery"
    if rdm:
        import rdm_target

        app_module = rdm_target.CELERY_APP
    site_queue = current_celery.conf.task_default_queue
    processes = (
        start_celery_workers(
            env, f"{queue},{site_queue}", count, name="bench", app_module=app_module
        )
        if count
        else []
    )
    # The step's CPU meter gives the Celery workers a column of their own, and its RSS
    # sampler their memory.
    worker.params["celery_pids"] = [process.pid for process in processes]
    worker.sampler.watch(worker.params["celery_pids"])
    n = params["records"]
    who = f"{count} Celery worker process(es)" if count else "the run's own process"
    log(f"workers: full harvest of {n} records written by {who}")
    try:
        with worker.step({}) as result:
            run = Run.create(
                job=db.session.get(Job, job.id), task_id=None, status=RunStatusEnum.QUEUED
            )
            run.queue = queue
            db.session.add(run)
            db.session.commit()
            execute_run.apply(kwargs={"run_id": run.id, "identity_id": "system"})
            if processes:
                result["site_tasks"] = _wait_for_site_tasks(processes, site_queue)
            if rdm:  # what a site's beat task has its workers do, done here
                result["queued_documents"] = rdm_target.index_queued_documents()
            db.session.expire_all()
            run = db.session.get(Run, run.id)
            result.update(
                run_status=str(getattr(run.status, "name", run.status)),
                run_message=run.message,
                records=run.total_entries,
                inserted_entries=run.inserted_entries,
                errored_entries=run.errored_entries,
            )
        messages = db.session.scalars(
            db.select(Run.message).where(Run.parent_run_id == run.id)
        ).all()
        # A subtask's message starts "Written by <host>:<pid>: <counts>." (harvest/fanout.py).
        writers = Counter(
            match.group(1) if (match := re.match(r"Written by (\S+?): ", message or "")) else "?"
            for message in messages
        )
        own = f"{socket.gethostname()}:{os.getpid()}"
        result["batches"] = len(messages)
        result["batches_written_by_the_run_itself"] = writers.pop(own, 0)
        result["batches_per_worker"] = sorted(writers.values(), reverse=True)
        result["stored"] = worker.stored()
    finally:
        worker.sampler.watch([])
        stop_celery_workers(processes)
    return {"steps": {"full": result}}


_TASK_LINE = re.compile(r"Task ([\w.]+)\[([^\]]+)\] (\w+)")
"""Celery's "Task NAME[ID] received", then "succeeded", "raised", "retry", "ignored"..."""


def _wait_for_site_tasks(processes: list[Any], site_queue: str, timeout: float = 1800.0) -> dict:
    """Wait until no task is queued, unacknowledged or running (twice in a row: Redis hands a
    message over before the worker logs it); the count of each task (by name) that is not a
    harvest subtask."""
    import time

    import redis
    from oaiharvest_test_support.workers import worker_log

    broker = redis.Redis.from_url(CELERY_BROKER)
    deadline = time.monotonic() + timeout
    quiet_polls = 0
    while quiet_polls < 2:
        time.sleep(0.2)
        if any(process.poll() is not None for process in processes):
            raise RuntimeError("a Celery worker ended while the site's tasks ran")
        received: dict[str, str] = {}
        ended: set[str] = set()
        for process in processes:
            text = worker_log(process).read_text(errors="replace")
            for name, task_id, what in _TASK_LINE.findall(text):
                if what == "received":
                    received[task_id] = name
                else:
                    ended.add(task_id)
        idle = (
            broker.llen(site_queue) == 0 and broker.hlen("unacked") == 0 and set(received) <= ended
        )
        quiet_polls = quiet_polls + 1 if idle else 0
        if time.monotonic() > deadline:
            raise RuntimeError(f"the site's tasks did not end within {timeout:.0f} s")
    names = Counter(received[task_id] for task_id in ended if task_id in received)
    return {name: n for name, n in names.items() if not name.startswith("oarepo_oaipmh_harvester.")}
