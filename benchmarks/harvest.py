"""Harvest benchmark (issue 5): our harvester next to the fetch limit, the write limit and naive.

    ./run.sh bench [--records 20000] [--page-size 100] [--batch-size 100]
                   [--naive-sample 2000] [--batch-sizes 50,100,200,500] [--batch-records 5000]
                   [--phases fetch,write,naive,ours,batch,workers,rdm,rdm_workers]
                   [--worker-counts 0,1,2]
                   [--worker-records 5000] [--profile DIR] [--json FILE]
                   [--compare FILE] [--rdm-records 300] [--rdm-batch-size 10]
                   [--rdm-worker-counts 1,2]

One run serves N synthetic oai_dc records (`Corpus.generate(N)`) from the bundled provider
(`OAIPMHProvider`) and measures, side by side:

- fetch limit: plain sickle following the token chain, touching every record; next to it our own
  reader (`OAIClient.list_records` + the `oai_dc` transformer, no writes);
- write limit: the transformed records written straight through the sample target service with
  `create_or_update_many` in chunks, in a `UnitOfWork`, bulk indexing through invenio-indexer's
  bulk queue on an in-process `memory://` kombu broker, processed explicitly
  (`indexer.process_bulk_queue()`) after every chunk and included in the time;
- naive: one `service.create` per record (its own commit and its own index request), on a sample;
- ours: a full harvest, an incremental run after 1% of the records changed at the provider, an
  incremental run that finds nothing (OAI-PMH requests and writes counted) and a full re-harvest
  where nothing changed, all through `harvest_in_process` (an invenio-jobs run, as
  `invenio oai harvest` does);
- batch sizes: full-harvest throughput per batch size on a smaller corpus;
- workers: a full harvest (`--worker-records`, default 5000) started as an invenio-jobs run
  whose batches are written by 0, 1 and 2 Celery worker processes (`--worker-counts`; 0: the
  run writes them itself), solo pool, on the Redis at `OAI_BENCH_BROKER`
  (redis://127.0.0.1:6379/9, flushed first); the workers' CPU is its own column.
- rdm (needs the `rdm` extra; `benchmarks/rdm_target.py`): `--rdm-records` (default 300)
  records into InvenioRDM's own records service with `oai_dc_rdm`: a per-record
  `create` + `publish` loop through the same service (records read and transformed before,
  not timed; three records published and wiped first so that neither side runs cold), our
  full harvest into a fresh database, and a full re-harvest where nothing changed;
- rdm_workers: the same full RDM harvest written by 1 and 2 Celery worker processes
  (`--rdm-worker-counts`), whose app is `oarepo_oaipmh_harvester.testing.rdm_celery`.

Processes: the provider runs in its own process (as a remote provider would; in the harvesting
process it would compete for the GIL), osmem-server is its own process, and every phase runs in
a fresh worker process that boots the Invenio API app, drops and recreates the database schema
and the search indices, and reports its own memory. So "peak RSS" is the harvesting process
alone (Invenio app included, provider and search server excluded), sampled every 20 ms with
psutil during each step, next to `ru_maxrss` of the whole worker.

The database is `SQLALCHEMY_DATABASE_URI` (run.sh: PostgreSQL `oaiharvest_bench`), created
fresh for the run and dropped at the end (`--keep-db` keeps it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import platform
import re
import resource
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from datetime import UTC, datetime
from multiprocessing.connection import Client, Listener
from pathlib import Path
from typing import Any

from harvest_bench.report import print_report
from harvest_bench.settings import (
    CELERY_BROKER,
    DEFAULT_DB,
    HARVESTER_ID,
    INDEX_ALIAS,
    INDEX_PREFIX,
    PHASES,
    RDM_PHASES,
    SEPARATE_PROVIDER_PHASES,
    TARGET,
    log,
)
from harvest_bench.summary import build_summary, load_comparison

AUTHKEY = b"oai-harvest-benchmark"


# ==========================================================================================
# The provider process
# ==========================================================================================


def provider_main(records: int, page_size: int, ready) -> None:
    """Serve `records` synthetic oai_dc records; obey commands on a control listener."""
    import random

    from oarepo_oaipmh_harvester.testing.corpus import Corpus, synthetic_metadata
    from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

    corpus = Corpus.generate(records, start=datetime(2023, 1, 1, tzinfo=UTC))
    corpus.set_clock(datetime(2024, 1, 1, tzinfo=UTC))
    provider = OAIPMHProvider(corpus, page_size=page_size)
    provider.start()
    listener = Listener(("127.0.0.1", 0), authkey=AUTHKEY)
    ready.send((provider.base_url, listener.address))
    ready.close()

    def change(fraction: float, seed: int) -> dict[str, Any]:
        # Later clock: the changes are an hour after the last harvest; then a minute passes
        # before the next harvest (so that the changes are strictly before its responseDate).
        rng = random.Random(seed)
        live = sorted(corpus.live_identifiers())
        chosen = rng.sample(live, max(1, round(len(live) * fraction)))
        corpus.advance_clock(hours=1)
        for identifier in chosen:
            index = int(identifier.rsplit(":", 1)[-1])
            corpus.update(identifier, metadata=synthetic_metadata(rng, index, revision=1))
        corpus.advance_clock(minutes=1)
        return {"changed": len(chosen), "clock": corpus.now().isoformat()}

    try:
        while True:
            with listener.accept() as connection:
                command, *args = connection.recv()
                if command == "stop":
                    connection.send("stopped")
                    break
                if command == "requests":
                    with provider._lock:
                        connection.send([dict(item) for item in provider.requests])
                elif command == "change":
                    connection.send(change(*args))
                elif command == "tick":
                    connection.send(corpus.advance_clock(minutes=args[0]).isoformat())
                else:
                    connection.send({"error": f"unknown command {command!r}"})
    finally:
        provider.stop()
        listener.close()


def provider_command(address, *command: Any) -> Any:
    with Client(tuple(address), authkey=AUTHKEY) as connection:
        connection.send(command)
        return connection.recv()


class ProviderProcess:
    def __init__(self, records: int, page_size: int) -> None:
        context = multiprocessing.get_context("spawn")
        receiver, sender = context.Pipe(duplex=False)
        self.process = context.Process(
            target=provider_main, args=(records, page_size, sender), name="oai-provider"
        )
        self.process.start()
        sender.close()
        self.base_url, self.address = receiver.recv()
        receiver.close()

    def command(self, *command: Any) -> Any:
        return provider_command(self.address, *command)

    def stop(self) -> None:
        if self.process.is_alive():
            with contextlib.suppress(OSError, EOFError):
                self.command("stop")
            self.process.join(10)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(5)


# ==========================================================================================
# Measuring inside a worker
# ==========================================================================================


class RssSampler(threading.Thread):
    """Peak RSS of this process, sampled with psutil; `reset` starts a new step."""

    def __init__(self, interval: float = 0.02) -> None:
        super().__init__(daemon=True, name="rss-sampler")
        import psutil

        self._process = psutil.Process()
        self.interval = interval
        self._stop_event = threading.Event()
        self.start_rss = self.peak = self._process.memory_info().rss

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            rss = self._process.memory_info().rss
            if rss > self.peak:
                self.peak = rss

    def reset(self) -> None:
        self.start_rss = self.peak = self._process.memory_info().rss

    def stop(self) -> None:
        self._stop_event.set()


class CpuMeter:
    """CPU seconds used during a step by this process, PostgreSQL, osmem-server and the provider.

    PostgreSQL counts the backends connected to the benchmark database and the shared
    background processes, not the backends of other databases (test suites running
    alongside); those, like every other process, land in "other processes".
    """

    def __init__(
        self,
        provider_pid: int | None,
        search_pid: int | None,
        database: str,
        celery_pids: list[int] | None = None,
    ) -> None:
        import psutil

        self._psutil = psutil
        self.provider_pid = provider_pid
        self.search_pid = search_pid
        self.database = database
        self.celery_pids = set(celery_pids or ())

    def _group(self, process) -> str | None:
        pid = process.info["pid"]
        if pid == os.getpid():
            return "harvesting process"
        if pid == self.provider_pid:
            return "provider process"
        if pid == self.search_pid:
            return "osmem-server"
        if pid in self.celery_pids:
            return "celery workers"
        if (process.info["name"] or "").startswith("postgres"):
            title = " ".join(process.info["cmdline"] or [])
            if f" {self.database} " in title:
                return "postgresql"
            if "127.0.0.1(" in title or "[local]" in title:
                return None  # a backend of another database
            return "postgresql"  # postmaster, checkpointer, walwriter...
        return None

    def _read(self) -> dict[str, float]:
        totals: Counter[str] = Counter()
        for process in self._psutil.process_iter(["pid", "name", "cmdline"]):
            group = self._group(process)
            if group is None:
                continue
            try:
                times = process.cpu_times()
            except (self._psutil.NoSuchProcess, self._psutil.AccessDenied):
                continue
            totals[group] += times.user + times.system
        machine = self._psutil.cpu_times()
        idle = machine.idle + getattr(machine, "iowait", 0.0) + getattr(machine, "steal", 0.0)
        totals["machine (all processes)"] = sum(machine) - idle - getattr(machine, "guest", 0.0)
        return dict(totals)

    def start(self) -> None:
        self._before = self._read()

    def stop(self) -> dict[str, float]:
        after = self._read()
        used = {k: round(v - self._before.get(k, 0.0), 2) for k, v in after.items()}
        known = sum(v for k, v in used.items() if not k.startswith("machine"))
        used["other processes (interference)"] = round(used["machine (all processes)"] - known, 2)
        return used


_TABLE_RE = re.compile(r"^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+\"?(\w+)", re.IGNORECASE)


class Instruments:
    """SQL statements (per verb and per written table) and search requests, per step."""

    def __init__(self, engine, search_client) -> None:
        from sqlalchemy import event

        self.reset()
        event.listen(engine, "before_cursor_execute", self._on_sql)
        transport = search_client.transport
        original = transport.perform_request

        def perform_request(method, url, *args, **kwargs):
            self._on_search(method, url)
            return original(method, url, *args, **kwargs)

        transport.perform_request = perform_request

    def reset(self) -> None:
        self.sql: Counter[str] = Counter()
        self.sql_writes: Counter[str] = Counter()
        self.search: Counter[str] = Counter()
        self.search_endpoints: Counter[str] = Counter()

    def _on_sql(self, conn, cursor, statement, parameters, context, executemany) -> None:
        verb = statement.lstrip().split(None, 1)[0].upper() if statement.strip() else "?"
        self.sql[verb] += 1
        if verb in ("INSERT", "UPDATE", "DELETE"):
            match = _TABLE_RE.match(statement)
            self.sql_writes[match.group(1) if match else "?"] += 1

    def _on_search(self, method: str, url: str) -> None:
        if any(part in url for part in ("/_bulk", "/_doc", "/_create", "/_update")) or (
            method == "DELETE"
        ):
            kind = "write"
        elif "/_refresh" in url or "/_flush" in url:
            kind = "refresh"
        else:
            kind = "read"
        self.search[kind] += 1
        endpoint = "/".join(part for part in url.split("?")[0].split("/") if part.startswith("_"))
        self.search_endpoints[f"{method} {endpoint or '/'}"] += 1

    def snapshot(self) -> dict[str, Any]:
        return {
            "sql_statements": sum(self.sql.values()),
            "sql_by_verb": dict(self.sql.most_common()),
            "sql_writes_by_table": dict(self.sql_writes.most_common()),
            "search_requests": dict(self.search),
            "search_endpoints": dict(self.search_endpoints.most_common()),
        }


def app_config(
    search_hosts: list[dict[str, Any]], database_uri: str, access_cache: bool = False
) -> dict[str, Any]:
    """The demo's configuration (demo.py), on the benchmark database."""
    extra = {"ACCESS_CACHE": "invenio_cache:current_cache"} if access_cache else {}
    return {
        **extra,
        "SQLALCHEMY_DATABASE_URI": database_uri,
        "SEARCH_HOSTS": search_hosts,
        "SEARCH_INDEX_PREFIX": INDEX_PREFIX,
        "OAI_HARVESTER_SAMPLE_TARGET": True,
        "OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS": True,
        "JOBS_LOGGING": False,  # job logs go to a data stream, which osmem lacks
        "CELERY_TASK_ALWAYS_EAGER": True,
        "CELERY_TASK_EAGER_PROPAGATES": True,
        "CELERY_BROKER_URL": "memory://",  # the indexer's bulk queue, consumed in-process
        "BROKER_URL": "memory://",
        "CELERY_RESULT_BACKEND": "cache",
        "CELERY_CACHE_BACKEND": "memory",
        "CACHE_TYPE": "SimpleCache",
        "SECRET_KEY": "benchmark-not-secret",
        "RECORDS_REFRESOLVER_CLS": "invenio_records.resolver.InvenioRefResolver",
        "RECORDS_REFRESOLVER_STORE": "invenio_jsonschemas.proxies.current_refresolver_store",
        "TRUSTED_HOSTS": ["localhost", "127.0.0.1"],
        "LOGGING_CONSOLE_LEVEL": "WARNING",
        "MAIL_SUPPRESS_SEND": True,
    }


class _Profiler:
    """py-spy attached from outside (default when installed), or pyinstrument in-process.

    py-spy samples wall-clock time (`--idle`: waiting on sockets counts) of the main thread at
    100 Hz without stopping the process; pyinstrument costs far more and inflates RSS.
    """

    def __init__(self, path: str, kind: str | None) -> None:
        import shutil

        self.path = path
        py_spy = shutil.which("py-spy", path=os.path.dirname(sys.executable)) or shutil.which(
            "py-spy"
        )
        self.kind = kind or ("py-spy" if py_spy else "pyinstrument")
        self.py_spy = py_spy
        Path(path).parent.mkdir(parents=True, exist_ok=True)

    def start(self) -> None:
        if self.kind == "py-spy":
            if not self.py_spy:
                raise RuntimeError("py-spy is not installed (pip install py-spy)")
            # Two samplers: wall clock (--idle: waiting counts) and on-CPU only.
            self.outputs = {"wall": self.path + ".pyspy.txt", "cpu": self.path + ".cpu.pyspy.txt"}
            self.processes = []
            for kind, output in self.outputs.items():
                command = [
                    self.py_spy, "record", "--pid", str(os.getpid()), "--threads",
                    "--nonblocking", "--rate", "100", "--format", "raw", "--output", output,
                ]  # fmt: skip
                if kind == "wall":
                    command.append("--idle")
                self.processes.append(
                    subprocess.Popen(
                        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
                    )
                )
            time.sleep(1.0)  # let them attach
        else:
            from pyinstrument import Profiler

            self.profiler = Profiler(interval=0.005)
            self.profiler.start()

    def stop(self) -> dict[str, Any]:
        main_thread = f"{threading.main_thread().ident:#x}"
        if self.kind == "py-spy":
            import signal

            logs = []
            for process in self.processes:
                process.send_signal(signal.SIGINT)
                logs.append(process.communicate(timeout=120)[1][-300:])
            return {"kind": "py-spy", **self.outputs, "thread": main_thread, "log": logs}
        self.profiler.stop()
        session = self.profiler.last_session
        output = self.path + ".pyisession"
        session.save(output)
        Path(self.path + ".txt").write_text(
            self.profiler.output_text(unicode=True, color=False, show_all=False)
        )
        return {"kind": "pyinstrument", "file": output}


class Worker:
    """One phase in one fresh process: boot the app, reset storage, measure."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params
        self.sampler = RssSampler()
        self.sampler.start()
        self.boot_rss = self.sampler.start_rss
        self.app = None
        self.instruments: Instruments | None = None

    # -- app ---------------------------------------------------------------------------
    def boot(self, overrides: dict[str, Any] | None = None) -> None:
        import logging

        from invenio_app.factory import create_api

        started = time.perf_counter()
        self.config = {
            **app_config(
                self.params["search_hosts"],
                self.params["database_uri"],
                access_cache=self.params.get("access_cache", False),
            ),
            **(overrides or {}),
        }
        self.code_config = {}  # what INVENIO_* variables cannot carry to a Celery worker
        if self.params.get("rdm"):
            import rdm_target

            self.code_config = rdm_target.overrides()
        self.app = create_api(**self.config, **self.code_config)
        if self.params.get("rdm"):
            from oarepo_oaipmh_harvester.testing.rdm import prepare_app

            prepare_app(self.app)
        self.context = self.app.app_context()
        self.context.push()
        logging.getLogger("oarepo_oaipmh_harvester").setLevel(logging.WARNING)
        from invenio_db import db
        from invenio_search.proxies import current_search

        self.instruments = Instruments(db.engine, current_search.client)
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
        list(current_search.create(ignore_existing=True))
        if self.params.get("rdm"):
            from oarepo_oaipmh_harvester.testing.rdm import prepare_storage

            prepare_storage()

    def service(self):
        from invenio_records_resources.proxies import current_service_registry

        return current_service_registry.get(TARGET)

    def stored(self) -> dict[str, int]:
        """Live local records in the database and documents in the index."""
        if self.params.get("rdm"):
            from oarepo_oaipmh_harvester.testing.rdm import count_records

            return count_records()
        from invenio_db import db
        from invenio_search.proxies import current_search, current_search_client

        from oarepo_oaipmh_harvester.testing.sample_records.records import SampleRecordMetadata

        current_search.flush_and_refresh(INDEX_ALIAS)
        documents = current_search_client.count(index=INDEX_PREFIX + INDEX_ALIAS)["count"]
        model = SampleRecordMetadata
        rows = db.session.query(model).filter(model.json.is_not(None)).count()
        db.session.rollback()
        return {"db_records": rows, "index_documents": documents}

    # -- steps -------------------------------------------------------------------------
    @contextlib.contextmanager
    def step(self, result: dict[str, Any], profile_path: str | None = None):
        """Time the block; record SQL/search counts and the peak RSS during it."""
        profiler = _Profiler(profile_path, self.params.get("profiler")) if profile_path else None
        if self.instruments is not None:
            self.instruments.reset()
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
        peak = max(self.sampler.peak, self.sampler._process.memory_info().rss)
        result["seconds"] = seconds
        records = result.get("records", 0)
        result["records_per_second"] = records / seconds if seconds > 0 else None
        result["rss_start_mb"] = self.sampler.start_rss / 2**20
        result["rss_peak_mb"] = peak / 2**20
        if self.instruments is not None:
            result.update(self.instruments.snapshot())
            if records:
                result["sql_per_record"] = result["sql_statements"] / records

    def finish(self) -> dict[str, Any]:
        self.sampler.stop()
        return {
            "boot_seconds": getattr(self, "boot_seconds", None),
            "boot_rss_mb": self.boot_rss / 2**20,
            "ru_maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }


def read_transformed(base_url: str, limit: int | None = None, transformer: Any = None) -> list[str]:
    """The provider's live records, transformed (by default by the oai_dc transformer), as
    compact JSON."""
    from oarepo_oaipmh_harvester.harvest.transformers import DublinCoreTransformer
    from oarepo_oaipmh_harvester.protocol.client import OAIClient

    transformer = transformer or DublinCoreTransformer()
    out: list[str] = []
    with OAIClient(base_url) as client:
        for record in client.list_records("oai_dc"):
            if record.deleted:
                continue
            out.append(json.dumps(transformer.transform(record), separators=(",", ":")))
            if limit is not None and len(out) >= limit:
                break
    return out


# -- phases -----------------------------------------------------------------------------------


def phase_fetch(worker: Worker, p: dict[str, Any]) -> dict[str, Any]:
    from sickle import Sickle

    from oarepo_oaipmh_harvester.harvest.transformers import DublinCoreTransformer
    from oarepo_oaipmh_harvester.protocol.client import OAIClient

    steps: dict[str, Any] = {}
    with worker.step({}) as result:
        count = touched = 0
        for record in Sickle(p["base_url"]).ListRecords(metadataPrefix="oai_dc"):
            count += 1
            if record.header.identifier and record.metadata.get("title"):
                touched += 1
        result.update(records=count, touched=touched)
    steps["sickle"] = result

    with worker.step({}) as result:
        transformer = DublinCoreTransformer()
        count = fields = 0
        with OAIClient(p["base_url"]) as client:
            for record in client.list_records("oai_dc"):
                count += 1
                if not record.deleted:
                    fields += len(transformer.transform(record)["metadata"])
        result.update(records=count, requests=client.request_count)
    steps["our_reader"] = result
    return {"steps": steps}


def phase_write(worker: Worker, p: dict[str, Any]) -> dict[str, Any]:
    from invenio_access.permissions import system_identity
    from invenio_db import db
    from invenio_db.uow import UnitOfWork

    worker.boot()
    worker.reset_storage()
    log("write limit: reading and transforming the corpus (not timed)")
    prepared = read_transformed(p["base_url"])
    service = worker.service()
    chunk_size = p["write_chunk"]
    errors: list[str] = []
    log(f"write limit: create_or_update_many, {len(prepared)} records in chunks of {chunk_size}")
    with worker.step({}) as result:
        elapsed = 0.0
        last_report = time.perf_counter()
        for start in range(0, len(prepared), chunk_size):
            chunk = [(None, json.loads(item)) for item in prepared[start : start + chunk_size]]
            began = time.perf_counter()  # JSON decoding above is not counted
            with UnitOfWork(db.session) as uow:
                bulk = service.create_or_update_many(system_identity, chunk, uow=uow)
                uow.commit()
            service.indexer.process_bulk_queue()
            elapsed += time.perf_counter() - began
            for item in bulk.results:
                if item.errors or item.exc:
                    errors.append(str(item.errors or item.exc))
            if time.perf_counter() - last_report > 30:
                last_report = time.perf_counter()
                done = start + len(chunk)
                log(f"write limit: {done}/{len(prepared)}, {done / elapsed:.0f} records/s")
        result.update(records=len(prepared), errors=len(errors), _seconds=elapsed)
    result["first_errors"] = errors[:3]
    result["stored"] = worker.stored()
    return {"steps": {"create_or_update_many": result}}


def phase_naive(worker: Worker, p: dict[str, Any]) -> dict[str, Any]:
    from invenio_access.permissions import system_identity

    worker.boot()
    worker.reset_storage()
    prepared = read_transformed(p["base_url"], limit=p["naive_sample"])
    service = worker.service()
    log(f"naive: one service.create per record, {len(prepared)} records")
    with worker.step({}) as result:
        elapsed = 0.0
        for item in prepared:
            data = json.loads(item)
            began = time.perf_counter()
            service.create(system_identity, data)  # its own unit of work: commit + index
            elapsed += time.perf_counter() - began
        result.update(records=len(prepared), _seconds=elapsed)
    result["stored"] = worker.stored()
    return {"steps": {"create_each": result}}


def _create_harvester(base_url: str, batch_size: int, rdm: bool = False) -> None:
    from invenio_access.permissions import system_identity

    from oarepo_oaipmh_harvester.proxies import (
        current_harvester_service,
    )

    data = {
        "id": HARVESTER_ID,
        "name": "Benchmark provider",
        "base_url": base_url,
        "metadata_prefix": "oai_dc",
        "target": TARGET,
        "batch_size": batch_size,
    }
    if rdm:
        import rdm_target

        data.update(target=rdm_target.TARGET, transformer=rdm_target.TRANSFORMER)
    current_harvester_service.create(system_identity, data)


def _harvest(label: str, total_hint: int | None, **kwargs: Any) -> dict[str, Any]:
    """One run through the harvester service, as `invenio oai harvest` does."""
    from invenio_access.permissions import system_identity

    from oarepo_oaipmh_harvester.proxies import (
        current_harvest_runs_service,
    )

    started = time.perf_counter()
    last = [started]

    def progress(update) -> None:
        now = time.perf_counter()
        if now - last[0] >= 30:
            last[0] = now
            done = update.counts.total
            log(f"{label}: {done}/{total_hint or '?'} records, {done / (now - started):.0f}/s")

    run = current_harvest_runs_service.harvest_in_process(
        system_identity, HARVESTER_ID, progress=progress, **kwargs
    )
    return {
        "run_status": str(getattr(run.status, "name", run.status)),
        "run_message": run.message,
        "total_entries": run.total_entries,
        "inserted_entries": run.inserted_entries,
        "updated_entries": run.updated_entries,
        "errored_entries": run.errored_entries,
    }


TARGET_TABLES = ("oai_sample_record_metadata", "pidstore_pid", "transaction")


def _target_writes(result: dict[str, Any]) -> int:
    writes = result.get("sql_writes_by_table", {})
    return sum(count for table, count in writes.items() if table.startswith(TARGET_TABLES))


def phase_ours(worker: Worker, p: dict[str, Any]) -> dict[str, Any]:
    worker.boot()
    worker.reset_storage()
    _create_harvester(p["base_url"], p["batch_size"])
    address = p["provider_address"]
    n = p["records"]
    steps: dict[str, Any] = {}

    log(f"ours: full harvest of {n} records, batch size {p['batch_size']}")

    def profile(name: str) -> str | None:
        return os.path.join(p["profile"], name) if p.get("profile") else None

    before = len(provider_command(address, "requests"))
    with worker.step({}, profile_path=profile("full-harvest")) as result:
        result.update(_harvest("ours full", n))
        result["records"] = result["total_entries"]
    result["requests"] = len(provider_command(address, "requests")) - before
    result["stored"] = worker.stored()
    steps["full"] = result

    changed = provider_command(address, "change", p["change_fraction"], 11)
    log(f"ours: incremental after {changed['changed']} records changed")
    before = len(provider_command(address, "requests"))
    with worker.step({}, profile_path=profile("incremental")) as result:
        result.update(_harvest("ours incremental", changed["changed"]))
        result["records"] = result["total_entries"]
    result["requests"] = len(provider_command(address, "requests")) - before
    result["changed_at_provider"] = changed["changed"]
    steps["incremental"] = result

    provider_command(address, "tick", 1)  # a minute passes; nothing changes
    log("ours: incremental, nothing changed")
    requests_before = provider_command(address, "requests")
    with worker.step({}) as result:
        result.update(_harvest("ours no-change", 0))
        result["records"] = result["total_entries"]
    requests = provider_command(address, "requests")[len(requests_before) :]
    result["requests"] = len(requests)
    result["request_verbs"] = [item.get("verb") for item in requests]
    result["target_sql_writes"] = _target_writes(result)
    result["search_writes"] = result.get("search_requests", {}).get("write", 0)
    steps["no_change_incremental"] = result

    provider_command(address, "tick", 1)
    log(f"ours: full re-harvest of {n} records, nothing changed")
    before = len(provider_command(address, "requests"))
    with worker.step({}, profile_path=profile("full-reharvest")) as result:
        result.update(_harvest("ours re-harvest", n, full=True))
        result["records"] = result["total_entries"]
    result["requests"] = len(provider_command(address, "requests")) - before
    result["target_sql_writes"] = _target_writes(result)
    result["search_writes"] = result.get("search_requests", {}).get("write", 0)
    result["stored"] = worker.stored()
    steps["full_reharvest"] = result
    return {"steps": steps}


def phase_batch(worker: Worker, p: dict[str, Any]) -> dict[str, Any]:
    worker.boot()
    worker.reset_storage()
    _create_harvester(p["base_url"], p["batch_size"])
    log(f"batch size {p['batch_size']}: full harvest of {p['records']} records")
    with worker.step({}) as result:
        result.update(_harvest(f"batch {p['batch_size']}", p["records"]))
        result["records"] = result["total_entries"]
    result["stored"] = worker.stored()
    return {"steps": {"full": result}}


def phase_workers(worker: Worker, p: dict[str, Any]) -> dict[str, Any]:
    """A full harvest whose batches are written by `p["worker_processes"]` Celery workers."""
    import redis
    from invenio_access.permissions import system_identity
    from invenio_db import db
    from invenio_jobs.models import Job, Run, RunStatusEnum
    from invenio_jobs.tasks import execute_run

    from oarepo_oaipmh_harvester.proxies import (
        current_harvest_runs_service,
    )
    from oarepo_oaipmh_harvester.testing.workers import (
        invenio_environment,
        start_celery_workers,
        stop_celery_workers,
    )

    count = p["worker_processes"]
    rdm = bool(p.get("rdm"))
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
    _create_harvester(p["base_url"], p["batch_size"], rdm=rdm)
    job = current_harvest_runs_service.ensure_job(system_identity, HARVESTER_ID)
    env = invenio_environment(worker.config)
    app_module = "invenio_app.celery"
    if rdm:
        import rdm_target

        app_module = rdm_target.CELERY_APP
    processes = (
        start_celery_workers(env, queue, count, name="bench", app_module=app_module)
        if count
        else []
    )
    worker.params["celery_pids"] = [process.pid for process in processes]
    n = p["records"]
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
            match.group(1) if (match := re.match(r"Written by (\S+?): ", m or "")) else "?"
            for m in messages
        )
        own = f"{__import__('socket').gethostname()}:{os.getpid()}"
        result["batches"] = len(messages)
        result["batches_written_by_the_run_itself"] = writers.pop(own, 0)
        result["batches_per_worker"] = sorted(writers.values(), reverse=True)
        result["stored"] = worker.stored()
    finally:
        stop_celery_workers(processes)
    return {"steps": {"full": result}}


def phase_rdm(worker: Worker, p: dict[str, Any]) -> dict[str, Any]:
    """InvenioRDM: a per-record create + publish loop, our full harvest, an unchanged one."""
    import rdm_target

    worker.boot()
    worker.reset_storage()
    n = p["records"]
    log(f"rdm: reading and transforming {n} records with {rdm_target.TRANSFORMER} (not timed)")
    from oarepo_oaipmh_harvester.proxies import current_oai_harvester

    transformer = current_oai_harvester.transformers.get(rdm_target.TRANSFORMER)
    prepared = read_transformed(p["base_url"], transformer=transformer)
    rdm_target.create_and_publish_each(prepared[:3])  # warm-up, wiped below
    worker.reset_storage()
    steps: dict[str, Any] = {}

    log(f"rdm: create + publish, one record at a time, {len(prepared)} records")
    with worker.step({}) as result:
        elapsed, errors = rdm_target.create_and_publish_each(prepared)
        result.update(records=len(prepared), errors=len(errors), _seconds=elapsed)
    result["first_errors"] = errors[:3]
    result["stored"] = worker.stored()
    steps["create_publish_each"] = result

    worker.reset_storage()
    _create_harvester(p["base_url"], p["batch_size"], rdm=True)
    address = p["provider_address"]
    log(f"rdm: our full harvest of {n} records, batch size {p['batch_size']}")
    before = len(provider_command(address, "requests"))
    with worker.step({}) as result:
        result.update(_harvest("rdm full", n))
        result["records"] = result["total_entries"]
    result["requests"] = len(provider_command(address, "requests")) - before
    result["stored"] = worker.stored()
    steps["full"] = result

    provider_command(address, "tick", 1)
    log(f"rdm: full re-harvest of {n} records, nothing changed")
    before = len(provider_command(address, "requests"))
    with worker.step({}) as result:
        result.update(_harvest("rdm re-harvest", n, full=True))
        result["records"] = result["total_entries"]
    result["requests"] = len(provider_command(address, "requests")) - before
    result["search_writes"] = result.get("search_requests", {}).get("write", 0)
    result["stored"] = worker.stored()
    steps["full_reharvest"] = result
    return {"steps": steps}


PHASE_FUNCTIONS = {
    "fetch": phase_fetch,
    "write": phase_write,
    "naive": phase_naive,
    "ours": phase_ours,
    "batch": phase_batch,
    "workers": phase_workers,
    "rdm": phase_rdm,
    "rdm_workers": phase_workers,
}


def _code_version() -> str:
    """HEAD and a digest of the uncommitted changes of the package, as this worker imports it."""
    import hashlib

    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], capture_output=True, text=True, check=True, cwd=root
            ).stdout
        except (OSError, subprocess.CalledProcessError):
            return "?"

    head = git("rev-parse", "--short", "HEAD").strip()
    diff = git("diff", "HEAD", "--", "oarepo_oaipmh_harvester")
    untracked = git("ls-files", "--others", "--exclude-standard", "oarepo_oaipmh_harvester")
    for name in untracked.split():
        with contextlib.suppress(OSError):
            diff += name + (root / name).read_text()
    if not diff.strip():
        return head
    return f"{head}+dirty:{hashlib.sha1(diff.encode()).hexdigest()[:8]}"


def worker_main(phase: str, params: dict[str, Any], connection) -> None:
    try:
        code = _code_version()
        worker = Worker(params)
        outcome = PHASE_FUNCTIONS[phase](worker, params)
        outcome["code"] = code
        outcome["process"] = worker.finish()
        connection.send({"ok": outcome})
    except BaseException:  # noqa: BLE001 - reported to the orchestrator
        connection.send({"error": traceback.format_exc()})
    finally:
        connection.close()


QUIET = {"max_wait": 0.0, "threshold": 10.0}


def wait_until_quiet() -> None:
    """Wait (bounded) until the machine is idle: other jobs on 2 cores distort every number."""
    import psutil

    deadline = time.monotonic() + QUIET["max_wait"]
    while True:
        busy = psutil.cpu_percent(interval=5.0)
        if busy <= QUIET["threshold"] or time.monotonic() >= deadline:
            if busy > QUIET["threshold"]:
                log(f"machine still busy ({busy:.0f}% CPU); measuring anyway")
            return
        log(f"machine busy ({busy:.0f}% CPU used by other processes); waiting")
        time.sleep(10)


def run_worker(phase: str, params: dict[str, Any]) -> dict[str, Any]:
    if QUIET["max_wait"] > 0:
        wait_until_quiet()
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=worker_main, args=(phase, params, sender), name=phase)
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


# ==========================================================================================
# Orchestration (the report: harvest_bench.report)
# ==========================================================================================


def _environment() -> dict[str, Any]:
    from importlib.metadata import version

    def git(*args: str) -> str:
        try:
            return subprocess.run(
                ["git", *args], capture_output=True, text=True, check=True,
                cwd=Path(__file__).resolve().parent.parent,
            ).stdout.strip()  # fmt: skip
        except (OSError, subprocess.CalledProcessError):
            return "?"

    packages = (
        "invenio-records-resources", "invenio-indexer", "invenio-jobs", "SQLAlchemy",
        "SQLAlchemy-Continuum", "sickle", "lxml", "osmem-server",
    )  # fmt: skip
    return {
        "commit": git("rev-parse", "--short", "HEAD"),
        "dirty_files": [line[3:] for line in git("status", "--porcelain").splitlines()],
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "packages": {name: _safe_version(version, name) for name in packages},
    }


def _safe_version(version, name: str) -> str:
    try:
        return version(name)
    except Exception:  # noqa: BLE001
        return "?"


@contextlib.contextmanager
def exclusive_database(uri: str):
    """Hold a PostgreSQL advisory lock named after the benchmark database for the whole run.

    Two benchmark runs on one database would drop it under each other (and measure each
    other's load): the second one waits here until the first has finished.
    """
    import zlib

    import sqlalchemy as sa

    url = sa.engine.make_url(uri)
    if not url.drivername.startswith("postgresql"):
        yield
        return
    engine = sa.create_engine(url.set(database="postgres"), poolclass=sa.pool.NullPool)
    key = zlib.crc32(f"oai-harvest-benchmark:{url.database}".encode())
    with engine.connect() as connection:
        if not connection.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar():
            log(f"another benchmark run uses database {url.database}; waiting for it to finish")
            connection.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": key})
        try:
            yield
        finally:
            connection.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": key})
    engine.dispose()


def _fresh_database(uri: str) -> None:
    from sqlalchemy_utils.functions import create_database, database_exists, drop_database

    if database_exists(uri):
        drop_database(uri)
    create_database(uri)


def _postgres_settings(uri: str) -> dict[str, str]:
    """Server settings that change the numbers (autovacuum off: no statistics on new tables)."""
    import sqlalchemy as sa

    if not uri.startswith("postgresql"):
        return {}
    engine = sa.create_engine(uri, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            return {
                name: connection.execute(sa.text(f"SHOW {name}")).scalar()
                for name in ("server_version", "autovacuum", "shared_buffers", "synchronous_commit")
            }
    finally:
        engine.dispose()


def _drop_database(uri: str) -> None:
    from sqlalchemy_utils.functions import database_exists, drop_database

    if database_exists(uri):
        drop_database(uri)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", "-n", type=int, default=20_000, help="N (default 20000)")
    parser.add_argument("--page-size", type=int, default=100, help="provider page size")
    parser.add_argument("--batch-size", type=int, default=100, help="harvester batch size")
    parser.add_argument(
        "--write-chunk", type=int, default=None, help="create_or_update_many chunk (batch size)"
    )
    parser.add_argument("--naive-sample", type=int, default=2000)
    parser.add_argument("--batch-sizes", default="50,100,200,500")
    parser.add_argument("--batch-records", type=int, default=5000, help="N of the batch-size sweep")
    parser.add_argument("--change-fraction", type=float, default=0.01)
    parser.add_argument(
        "--worker-counts",
        default="0,1,2",
        help="Celery worker processes for the workers phase (0: the run writes itself)",
    )
    parser.add_argument("--worker-records", type=int, default=5000, help="N of the workers phase")
    parser.add_argument(
        "--rdm-records", type=int, default=300, help="N of the RDM phases (default 300)"
    )
    parser.add_argument("--rdm-batch-size", type=int, default=10, help="batch size into RDM")
    parser.add_argument(
        "--rdm-worker-counts", default="1,2", help="Celery worker processes of rdm_workers"
    )
    parser.add_argument("--phases", default=",".join(PHASES), help=",".join(PHASES))
    parser.add_argument(
        "--profile", metavar="DIR", help="profile the full harvest (numbers then not comparable)"
    )
    parser.add_argument("--profiler", choices=("py-spy", "pyinstrument"), default=None)
    parser.add_argument("--json", metavar="FILE", help="write all results as JSON")
    parser.add_argument("--compare", metavar="FILE", help="JSON of a run at another N (RSS)")
    parser.add_argument(
        "--access-cache",
        action="store_true",
        help="set ACCESS_CACHE (invenio-access caches permission look-ups) in every phase",
    )
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=900.0,
        metavar="SECONDS",
        help="before each phase wait up to this long for the machine to be idle (0: never)",
    )
    args = parser.parse_args(argv)
    args.write_chunk = args.write_chunk or args.batch_size
    QUIET["max_wait"] = args.quiet_wait
    phases = [name.strip() for name in args.phases.split(",") if name.strip()]
    unknown = set(phases) - set(PHASES)
    if unknown:
        parser.error(f"unknown phases {sorted(unknown)}")
    batch_sizes = [int(size) for size in args.batch_sizes.split(",") if size.strip()]

    database_uri = os.environ.get("SQLALCHEMY_DATABASE_URI", DEFAULT_DB)
    results: dict[str, Any] = {
        "arguments": vars(args),
        "environment": _environment(),
        "database": database_uri.split("@")[-1],
        "phases": {},
    }
    if args.compare:
        results["compare"] = load_comparison(args.compare)

    with exclusive_database(database_uri):
        run_phases(args, phases, batch_sizes, database_uri, results)
    results["summary"] = build_summary(results)
    print_report(results, args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
        log(f"results written to {args.json}")
    return 0


def run_phases(args, phases, batch_sizes, database_uri: str, results: dict[str, Any]) -> None:
    server = None
    providers: list[ProviderProcess] = []
    try:
        if "SEARCH_HOSTS" in os.environ:
            import ast

            search_hosts = ast.literal_eval(os.environ["SEARCH_HOSTS"])
            results["search"] = str(search_hosts)
        else:
            from osmem_server import OsmemServer

            server = OsmemServer.start(freeze=False, japanese=False)
            host, port = server.url.rstrip("/").split("://", 1)[-1].rsplit(":", 1)
            search_hosts = [{"host": host, "port": int(port)}]
            results["search"] = f"osmem-server {server.version} at {server.url}"
        log(f"fresh database {results['database']}")
        _fresh_database(database_uri)
        results["environment"]["postgresql"] = _postgres_settings(database_uri)
        common = {
            "access_cache": args.access_cache,
            "search_hosts": search_hosts,
            "database_uri": database_uri,
            "search_pid": server.pid if server is not None else None,
        }

        main_phases = [phase for phase in phases if phase not in SEPARATE_PROVIDER_PHASES]
        if main_phases:
            log(f"provider: generating {args.records} records")
            provider = ProviderProcess(args.records, args.page_size)
            providers.append(provider)
            params = {
                **common,
                "base_url": provider.base_url,
                "provider_address": provider.address,
                "provider_pid": provider.process.pid,
                "records": args.records,
                "batch_size": args.batch_size,
                "write_chunk": args.write_chunk,
                "naive_sample": args.naive_sample,
                "change_fraction": args.change_fraction,
                "profile": os.path.abspath(args.profile) if args.profile else None,
                "profiler": args.profiler,
            }
            for phase in main_phases:
                log(f"phase {phase}")
                results["phases"][phase] = run_worker(phase, params)
        if "batch" in phases:
            log(f"provider: generating {args.batch_records} records for the batch-size sweep")
            small = ProviderProcess(args.batch_records, args.page_size)
            providers.append(small)
            results["phases"]["batch"] = {}
            for size in batch_sizes:
                params = {
                    **common,
                    "base_url": small.base_url,
                    "provider_address": small.address,
                    "provider_pid": small.process.pid,
                    "records": args.batch_records,
                    "batch_size": size,
                }
                results["phases"]["batch"][str(size)] = run_worker("batch", params)
        if "workers" in phases:
            log(f"provider: generating {args.worker_records} records for the workers phase")
            fan = ProviderProcess(args.worker_records, args.page_size)
            providers.append(fan)
            results["phases"]["workers"] = {}
            for count in [int(c) for c in args.worker_counts.split(",") if c.strip()]:
                params = {
                    **common,
                    "base_url": fan.base_url,
                    "provider_address": fan.address,
                    "provider_pid": fan.process.pid,
                    "records": args.worker_records,
                    "batch_size": args.batch_size,
                    "worker_processes": count,
                }
                results["phases"]["workers"][str(count)] = run_worker("workers", params)
        rdm_phases = [phase for phase in phases if phase in RDM_PHASES]
        if rdm_phases:
            log(f"provider: generating {args.rdm_records} records for the RDM phases")
            rdm_provider = ProviderProcess(args.rdm_records, args.page_size)
            providers.append(rdm_provider)
            rdm_params = {
                **common,
                "rdm": True,
                "base_url": rdm_provider.base_url,
                "provider_address": rdm_provider.address,
                "provider_pid": rdm_provider.process.pid,
                "records": args.rdm_records,
                "batch_size": args.rdm_batch_size,
            }
            if "rdm" in phases:
                log("phase rdm")
                results["phases"]["rdm"] = run_worker("rdm", rdm_params)
            if "rdm_workers" in phases:
                results["phases"]["rdm_workers"] = {}
                for count in [int(c) for c in args.rdm_worker_counts.split(",") if c.strip()]:
                    log(f"phase rdm_workers, {count} Celery worker process(es)")
                    params = {**rdm_params, "worker_processes": count}
                    outcome = run_worker("rdm_workers", params)
                    results["phases"]["rdm_workers"][str(count)] = outcome
    finally:
        for provider in providers:
            provider.stop()
        if server is not None:
            server.close()
        if not args.keep_db:
            with contextlib.suppress(Exception):
                _drop_database(database_uri)


if __name__ == "__main__":
    sys.exit(main())
