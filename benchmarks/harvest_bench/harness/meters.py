"""What a step measures inside a worker process: peak RSS, CPU per process group, SQL and search.

`Worker.step` (harness.worker) starts and reads these around every timed block.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections import Counter
from typing import Any


class RssSampler(threading.Thread):
    """Peak RSS of this process and of the processes it is told to `watch` (the Celery
    workers of the workers phases), sampled with psutil; `reset` starts a new step."""

    def __init__(self, interval: float = 0.02) -> None:
        super().__init__(daemon=True, name="rss-sampler")
        import psutil

        self._psutil = psutil
        self._process = psutil.Process()
        self.interval = interval
        self._stop_event = threading.Event()
        self.start_rss = self.peak = self._process.memory_info().rss
        self._watched: dict[int, Any] = {}
        self.watched_start: dict[int, int] = {}
        self.watched_peak: dict[int, int] = {}

    def run(self) -> None:
        """Sample until `stop`, keeping the highest RSS since the last `reset`."""
        while not self._stop_event.wait(self.interval):
            rss = self._process.memory_info().rss
            if rss > self.peak:
                self.peak = rss
            self._sample_watched()

    def _sample_watched(self) -> None:
        for pid, process in list(self._watched.items()):
            rss = self._rss_of(process)
            if rss is not None and rss > self.watched_peak.get(pid, 0):
                self.watched_peak[pid] = rss

    def watch(self, pids: list[int]) -> None:
        """Sample these processes too (their start RSS is now); an empty list stops it."""
        self._watched = {pid: self._psutil.Process(pid) for pid in pids}
        self._reset_watched()

    def _rss_of(self, process: Any) -> int | None:
        try:
            return process.memory_info().rss
        except self._psutil.Error:  # the worker has stopped
            return None

    def _reset_watched(self) -> None:
        rss = {pid: self._rss_of(process) for pid, process in self._watched.items()}
        self.watched_start = {pid: value for pid, value in rss.items() if value is not None}
        self.watched_peak = dict(self.watched_start)

    def reset(self) -> None:
        """Start a new step: its start and peak are the RSS now."""
        self.start_rss = self.peak = self._process.memory_info().rss
        self._reset_watched()

    def current(self) -> int:
        """The RSS now, in bytes (a step's end may come between two samples)."""
        return self._process.memory_info().rss

    def watched_summary(self) -> dict[str, Any]:
        """Start and peak RSS (MB) of each watched process during the step, and the largest."""
        self._sample_watched()  # the step's end may come between two samples
        each = [
            {
                "pid": pid,
                "start_mb": self.watched_start[pid] / 2**20,
                "peak_mb": self.watched_peak.get(pid, self.watched_start[pid]) / 2**20,
            }
            for pid in self.watched_start
        ]
        if not each:
            return {}
        return {
            "celery_rss_mb": each,
            "celery_rss_peak_mb": max(entry["peak_mb"] for entry in each),
            "celery_rss_growth_mb": max(entry["peak_mb"] - entry["start_mb"] for entry in each),
        }

    def stop(self) -> None:
        """End the sampling thread."""
        self._stop_event.set()


class CpuMeter:
    """CPU seconds used during a step by this process, PostgreSQL, the search server and the
    provider.

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
        # The node's launcher starts the JVM as its child: the group is the process tree.
        self.search_pids = set()
        if search_pid is not None:
            with contextlib.suppress(psutil.Error):
                root = psutil.Process(search_pid)
                self.search_pids = {search_pid, *(child.pid for child in root.children(True))}
        self.database = database
        self.celery_pids = set(celery_pids or ())

    def _group(self, process) -> str | None:
        pid = process.info["pid"]
        if pid == os.getpid():
            return "harvesting process"
        if pid == self.provider_pid:
            return "provider process"
        if pid in self.search_pids:
            return "search server"
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
        """Read every group's CPU time at the step's start."""
        self._before = self._read()

    def stop(self) -> dict[str, float]:
        """CPU seconds per group since `start`, and what no known group explains."""
        after = self._read()
        used = {k: round(v - self._before.get(k, 0.0), 2) for k, v in after.items()}
        known = sum(v for k, v in used.items() if not k.startswith("machine"))
        used["other processes (interference)"] = round(used["machine (all processes)"] - known, 2)
        return used


_TABLE_RE = re.compile(r"^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+\"?(\w+)", re.IGNORECASE)


class QueryCounters:
    """SQL statements (per verb and per written table) and search requests, per step.

    Counts every statement SQLAlchemy sends and every request of the search client's transport.
    """

    def __init__(self, engine: Any, search_client: Any) -> None:
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
        """Start a new step: every counter at zero."""
        self.sql: Counter[str] = Counter()
        self.sql_writes: Counter[str] = Counter()
        self.search: Counter[str] = Counter()
        self.search_endpoints: Counter[str] = Counter()
        self.search_writes_by_index: Counter[str] = Counter()

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
            index = next((part for part in url.split("?")[0].split("/") if part), "")
            self.search_writes_by_index["(bulk)" if index.startswith("_") else index] += 1
        elif "/_refresh" in url or "/_flush" in url:
            kind = "refresh"
        else:
            kind = "read"
        self.search[kind] += 1
        endpoint = "/".join(part for part in url.split("?")[0].split("/") if part.startswith("_"))
        self.search_endpoints[f"{method} {endpoint or '/'}"] += 1

    def snapshot(self) -> dict[str, Any]:
        """The counts since the last `reset`, as a step's result keys."""
        return {
            "sql_statements": sum(self.sql.values()),
            "sql_by_verb": dict(self.sql.most_common()),
            "sql_writes_by_table": dict(self.sql_writes.most_common()),
            "search_requests": dict(self.search),
            "search_endpoints": dict(self.search_endpoints.most_common()),
            "search_writes_by_index": dict(self.search_writes_by_index.most_common()),
        }
