"""A fresh worker process per phase: it boots the Invenio API app, resets storage and measures.

The entry point calls `run_in_fresh_process` for every phase (and every batch size or worker
count); the spawned process runs `phase_process_main`, which hands a `PhaseWorker` to the
phase's function and sends back its outcome, or the traceback.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import resource
import time
import traceback
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Any

from harvest_bench.harness.environment import code_version
from harvest_bench.harness.meters import CpuMeter, QueryCounters, RssSampler
from harvest_bench.harness.profiler import StepProfiler
from harvest_bench.phases import PHASE_FUNCTIONS
from harvest_bench.settings import ACCESS_CACHE_REDIS, INDEX_ALIAS, INDEX_PREFIX, TARGET, log

# Percent of CPU above which the machine counts as busy (other jobs on 2 cores distort every
# number).
QUIET_THRESHOLD = 10.0


def app_config(
    search_hosts: list[dict[str, Any]],
    database_uri: str,
    access_cache: bool = False,
    job_logs: bool = True,
) -> dict[str, Any]:
    """The demo's configuration (demo.py), on the benchmark database."""
    # As invenio-app-rdm configures it: who holds an action, cached in Redis (a database of
    # its own, emptied when a phase boots: see PhaseWorker.boot).
    extra = (
        {
            "ACCESS_CACHE": "invenio_cache:current_cache",
            "CACHE_TYPE": "flask_caching.backends.RedisCache",
            "CACHE_REDIS_URL": ACCESS_CACHE_REDIS,
        }
        if access_cache
        else {}
    )
    return {
        "CACHE_TYPE": "SimpleCache",
        **extra,
        "SQLALCHEMY_DATABASE_URI": database_uri,
        "SEARCH_HOSTS": search_hosts,
        "SEARCH_INDEX_PREFIX": INDEX_PREFIX,
        "OAI_HARVESTER_SAMPLE_TARGET": True,
        "OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS": True,
        # Job logs go to a data stream (from an index template), which osmem lacks.
        "JOBS_LOGGING": job_logs,
        "CELERY_TASK_ALWAYS_EAGER": True,
        "CELERY_TASK_EAGER_PROPAGATES": True,
        "CELERY_BROKER_URL": "memory://",  # the indexer's bulk queue, consumed in-process
        "BROKER_URL": "memory://",
        "CELERY_RESULT_BACKEND": "cache",
        "CELERY_CACHE_BACKEND": "memory",
        "SECRET_KEY": "benchmark-not-secret",
        "RECORDS_REFRESOLVER_CLS": "invenio_records.resolver.InvenioRefResolver",
        "RECORDS_REFRESOLVER_STORE": "invenio_jsonschemas.proxies.current_refresolver_store",
        "TRUSTED_HOSTS": ["localhost", "127.0.0.1"],
        "LOGGING_CONSOLE_LEVEL": "WARNING",
        "MAIL_SUPPRESS_SEND": True,
    }


class PhaseWorker:
    """One phase in one fresh process: boot the app, reset storage, measure.

    `params` are the phase's parameters from the entry point; the workers phase adds the
    Celery workers' pids (`celery_pids`) so that their CPU gets a column of its own.
    """

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params
        self.sampler = RssSampler()
        self.sampler.start()
        self.boot_rss = self.sampler.start_rss
        self.app = None
        self.counters: QueryCounters | None = None

    def boot(self, overrides: dict[str, Any] | None = None) -> None:
        """Create the Invenio API app (the demo's configuration and `overrides`) and push its
        context; the RSS after this is the process's `boot_rss_mb`."""
        import logging

        from invenio_app.factory import create_api

        started = time.perf_counter()
        self.config = {
            **app_config(
                self.params["search_hosts"],
                self.params["database_uri"],
                access_cache=self.params.get("access_cache", False),
                job_logs=self.params.get("search") != "osmem",
            ),
            **(overrides or {}),
        }
        if self.params.get("access_cache"):
            import redis

            redis.Redis.from_url(ACCESS_CACHE_REDIS).flushdb()
        self.code_config = {}  # what INVENIO_* variables cannot carry to a Celery worker
        if self.params.get("rdm"):
            import rdm_target

            self.code_config = rdm_target.overrides(osmem=self.params.get("search") == "osmem")
        self.app = create_api(**self.config, **self.code_config)
        if self.params.get("rdm"):
            from oaiharvest_test_support.rdm import prepare_app

            prepare_app(self.app)
        self.context = self.app.app_context()
        self.context.push()
        logging.getLogger("oarepo_oaipmh_harvester").setLevel(logging.WARNING)
        from invenio_db import db
        from invenio_search.proxies import current_search

        self.counters = QueryCounters(db.engine, current_search.client)
        self.boot_seconds = time.perf_counter() - started
        self.sampler.reset()
        self.boot_rss = self.sampler.start_rss

    def reset_storage(self) -> None:
        """Drop and recreate every table (the whole schema) and every search index."""
        from invenio_db import db
        from invenio_search.proxies import current_search

        db.session.remove()
        with db.engine.begin() as connection:
            if db.engine.name == "postgresql":
                connection.exec_driver_sql("DROP SCHEMA public CASCADE")
                connection.exec_driver_sql("CREATE SCHEMA public")
        if db.engine.name != "postgresql":
            db.drop_all()
        db.create_all()
        list(current_search.delete(ignore=[400, 404]))
        list(current_search.put_index_templates())  # invenio-jobs' job-logs data stream
        list(current_search.create(ignore_existing=True))
        if self.params.get("rdm"):
            from oaiharvest_test_support.rdm import prepare_storage

            prepare_storage()

    def service(self) -> Any:
        """The sample target's records service."""
        from invenio_records_resources.proxies import current_service_registry

        return current_service_registry.get(TARGET)

    def stored(self) -> dict[str, int]:
        """Live local records in the database and documents in the index."""
        if self.params.get("rdm"):
            from oaiharvest_test_support.rdm import count_records

            return count_records()
        from invenio_db import db
        from invenio_search.proxies import current_search, current_search_client
        from oaiharvest_test_support.sample_records.records import SampleRecordMetadata

        current_search.flush_and_refresh(INDEX_ALIAS)
        documents = current_search_client.count(index=INDEX_PREFIX + INDEX_ALIAS)["count"]
        model = SampleRecordMetadata
        rows = db.session.query(model).filter(model.json.is_not(None)).count()
        db.session.rollback()
        return {"db_records": rows, "index_documents": documents}

    @contextlib.contextmanager
    def step(
        self, result: dict[str, Any], profile_path: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """Time the block; record SQL/search counts, CPU and the peak RSS during it in `result`.

        A block that times only part of itself puts its own seconds in `result["_seconds"]`;
        its `records` give the rate.
        """
        profiler = StepProfiler(profile_path, self.params.get("profiler")) if profile_path else None
        if self.counters is not None:
            self.counters.reset()
        self.sampler.reset()
        if profiler is not None:
            profiler.start()
        cpu = CpuMeter(
            self.params.get("provider_pid"),
            self.params.get("search_pid"),
            self.params["database_uri"].rsplit("/", 1)[-1],
            self.params.get("celery_pids"),
        )
        cpu.start()
        started = time.perf_counter()
        yield result
        seconds = result.pop("_seconds", None) or (time.perf_counter() - started)
        result["cpu_seconds"] = cpu.stop()
        if profiler is not None:
            result["profile"] = profiler.stop()
        peak = max(self.sampler.peak, self.sampler.current())
        result["seconds"] = seconds
        records = result.get("records", 0)
        result["records_per_second"] = records / seconds if seconds > 0 else None
        result["rss_start_mb"] = self.sampler.start_rss / 2**20
        result["rss_peak_mb"] = peak / 2**20
        result.update(self.sampler.watched_summary())
        if self.counters is not None:
            result.update(self.counters.snapshot())
            if records:
                result["sql_per_record"] = result["sql_statements"] / records

    def finish(self) -> dict[str, Any]:
        """Stop sampling; the process's boot time and memory (an outcome's `process` key)."""
        self.sampler.stop()
        return {
            "boot_seconds": getattr(self, "boot_seconds", None),
            "boot_rss_mb": self.boot_rss / 2**20,
            "ru_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }


def phase_process_main(phase: str, params: dict[str, Any], connection: Connection) -> None:
    """The spawned process: run one phase, send `{"ok": outcome}` or `{"error": traceback}`."""
    try:
        code = code_version()
        worker = PhaseWorker(params)
        outcome = PHASE_FUNCTIONS[phase](worker, params)
        outcome["code"] = code
        outcome["process"] = worker.finish()
        connection.send({"ok": outcome})
    except BaseException:  # noqa: BLE001 - reported to the orchestrator
        connection.send({"error": traceback.format_exc()})
    finally:
        connection.close()


def wait_until_quiet(max_wait: float) -> None:
    """Wait (at most `max_wait` s) until the machine is idle: other jobs distort every number."""
    import psutil

    deadline = time.monotonic() + max_wait
    while True:
        busy = psutil.cpu_percent(interval=5.0)
        if busy <= QUIET_THRESHOLD or time.monotonic() >= deadline:
            if busy > QUIET_THRESHOLD:
                log(f"machine still busy ({busy:.0f}% CPU); measuring anyway")
            return
        log(f"machine busy ({busy:.0f}% CPU used by other processes); waiting")
        time.sleep(10)


def run_in_fresh_process(phase: str, params: dict[str, Any], quiet_wait: float) -> dict[str, Any]:
    """Run `phase` in a spawned process (after waiting up to `quiet_wait` s for an idle
    machine); its outcome: `steps`, `code` and `process`."""
    if quiet_wait > 0:
        wait_until_quiet(quiet_wait)
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=phase_process_main, args=(phase, params, sender), name=phase)
    process.start()
    sender.close()
    try:
        message = receiver.recv()
    except EOFError:
        message = {"error": f"worker {phase} died (exit code {process.exitcode})"}
    process.join()
    if "error" in message:
        raise RuntimeError(f"phase {phase} failed:\n{message['error']}")
    return message["ok"]
