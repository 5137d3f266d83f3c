"""A built InvenioRDM site served as in production: gunicorn with ``--preload`` and two
workers (a forking server), a Celery prefork worker with concurrency 2, and celery beat with
invenio-jobs' scheduler. Every process runs in the release's virtualenv.

What the processes did is read back from their own logs: gunicorn's access log (one line per
request: status, method, path, worker pid) and the Celery worker's log (each task received,
succeeded or raised), so that a test can count failed requests and tasks.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import urllib.request
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from .instance import Site, SiteSettings

ACCESS_LOG_FORMAT = "%(s)s %(r)s pid=%(p)s"
"""gunicorn's access log: status, request line (the whole path: /api is not stripped there),
the worker that answered."""

_TASK_LINE = re.compile(
    r"\] Task (?P<name>[\w.:]+)\[(?P<id>[0-9a-f-]{36})\] (?P<what>received|succeeded|raised"
    r"|retry|failed)(?P<rest>.*)"
)
_WORKER_OF_LINE = re.compile(r"/(?P<worker>ForkPoolWorker-\d+|MainProcess)\]")


@dataclass
class TaskCounts:
    """What a Celery worker's log says about its tasks."""

    received: dict[str, str] = field(default_factory=dict)
    """task id -> task name"""
    succeeded: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    """task id -> the log line saying why"""
    by_child: dict[str, int] = field(default_factory=dict)
    """forked child (ForkPoolWorker-n) -> tasks it ran to their end"""

    @property
    def unfinished(self) -> set[str]:
        return set(self.received) - self.succeeded - set(self.failed)

    def by_name(self, prefix: str) -> dict[str, int]:
        """Received, succeeded and failed tasks whose name starts with `prefix`."""
        ids = {task for task, name in self.received.items() if name.startswith(prefix)}
        return {
            "received": len(ids),
            "succeeded": len(ids & self.succeeded),
            "failed": len(ids & set(self.failed)),
        }

    def describe(self) -> str:
        lines = [
            f"{len(self.received)} received, {len(self.succeeded)} succeeded, "
            f"{len(self.failed)} failed, {len(self.unfinished)} unfinished"
        ]
        lines += [f"  {self.received.get(task, '?')}: {why}" for task, why in self.failed.items()]
        return "\n".join(lines)


def read_task_counts(log: Path) -> TaskCounts:
    counts = TaskCounts()
    if not log.exists():
        return counts
    for line in log.read_text(errors="replace").splitlines():
        match = _TASK_LINE.search(line)
        if not match:
            continue
        task, what = match["id"], match["what"]
        if what == "received":
            counts.received[task] = match["name"]
        elif what in ("succeeded", "raised", "failed"):
            if what == "succeeded":
                counts.succeeded.add(task)
            else:
                counts.failed[task] = (match["rest"].strip() or what)[:500]
            counts.received.setdefault(task, match["name"])
            worker = _WORKER_OF_LINE.search(line)
            if worker and worker["worker"] != "MainProcess":
                counts.by_child[worker["worker"]] = counts.by_child.get(worker["worker"], 0) + 1
    return counts


@dataclass
class RequestCounts:
    """What gunicorn's access log says about the requests it answered."""

    statuses: list[tuple[int, str, str]] = field(default_factory=list)
    """(status, "METHOD path", worker pid) per request, in order"""

    @property
    def failed(self) -> list[tuple[int, str, str]]:
        return [entry for entry in self.statuses if entry[0] >= 500]

    @property
    def workers(self) -> set[str]:
        return {pid for _, _, pid in self.statuses}


def read_request_counts(log: Path, start: int = 0) -> RequestCounts:
    """Requests in gunicorn's access log from line `start` on."""
    counts = RequestCounts()
    if not log.exists():
        return counts
    for line in log.read_text(errors="replace").splitlines()[start:]:
        parts = line.split()  # status, method, target, protocol, pid=<n>
        if len(parts) >= 5 and parts[0].isdigit():
            counts.statuses.append((int(parts[0]), f"{parts[1]} {parts[2]}", parts[-1]))
    return counts


def pid_file(site: Site) -> Path:
    """The process groups of a site's served processes, while they run."""
    return site.root / "running.pids"


def stop_leftover_processes(site: Site) -> None:
    """Process groups an earlier session started and could not stop (pytest killed): they
    would hold the release's broker and database."""
    path = pid_file(site)
    if not path.exists():
        return
    for pid in map(int, path.read_text().split()):
        with suppress(OSError):
            # Only a process of this release's virtualenv: the pid may be another's now.
            if str(site.venv).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.killpg(pid, signal.SIGKILL)
    path.unlink()


class ServedSite:
    """The site's processes: web (gunicorn), worker (Celery prefork), beat."""

    def __init__(self, site: Site, settings: SiteSettings) -> None:
        self.site = site
        self.settings = settings
        self.logs = site.logs
        self.processes: dict[str, subprocess.Popen] = {}
        self._worker_runs = 0

    @property
    def url(self) -> str:
        return self.settings.url

    @property
    def access_log(self) -> Path:
        return self.logs / "web-access.log"

    def _remember_pids(self) -> None:
        pid_file(self.site).write_text(" ".join(str(p.pid) for p in self.processes.values()))

    def _start(self, name: str, command: list[str], log: Path) -> subprocess.Popen:
        self.logs.mkdir(parents=True, exist_ok=True)
        with log.open("w") as output:
            process = subprocess.Popen(
                command,
                cwd=self.site.instance,
                env=self.site.environment(),
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stopped with its children
            )
        self.processes[name] = process
        self._remember_pids()
        return process

    # -- web -----------------------------------------------------------------------------------
    def start_web(self, timeout: float = 180.0) -> None:
        """gunicorn with --preload: the application is made once in the master, then two
        workers are forked from it (what a site's forking server does)."""
        self.access_log.unlink(missing_ok=True)
        self._start(
            "web",
            [self.site.bin("gunicorn"), "--preload", "--workers", "2",
             "--bind", f"127.0.0.1:{self.settings.port}", "--timeout", "300",
             "--access-logfile", str(self.access_log), "--access-logformat", ACCESS_LOG_FORMAT,
             "invenio_app.wsgi:application"],
            self.logs / "web.log",
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        log = self.logs / "web.log"
        # Both workers booted: the first requests must find them both.
        while log.read_text(errors="replace").count("Booting worker") < 2:
            self._check_alive("web", deadline)
            time.sleep(0.2)
        # No request is made here: the first request each worker answers belongs to the test.

    def ping(self) -> bool:
        with suppress(OSError):
            with urllib.request.urlopen(f"{self.url}/ping", timeout=5) as reply:
                return reply.status == 200
        return False

    # -- worker --------------------------------------------------------------------------------
    @property
    def worker_log(self) -> Path:
        return self.logs / f"worker-{self._worker_runs}.log"

    def start_worker(self, timeout: float = 180.0) -> Path:
        """A Celery worker as a site runs it: the prefork pool, two children. Returns its log."""
        self._worker_runs += 1
        log = self.worker_log
        self._start(
            "worker",
            [self.site.bin("celery"), "-A", "invenio_app.celery", "worker",
             "--pool", "prefork", "--concurrency", "2", "--loglevel", "INFO",
             "--hostname", f"{self.site.release.key}-{self._worker_runs}@%h",
             "--without-gossip", "--without-mingle"],
            log,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while " ready." not in log.read_text(errors="replace"):
            self._check_alive("worker", deadline)
            time.sleep(0.3)
        return log

    def queued(self) -> int:
        """Tasks waiting in the site's Celery queue ("celery", the only one a site's worker
        consumes by default; kombu keeps one Redis list per priority)."""
        client = redis.Redis.from_url(self.site.release.redis_url)
        try:
            return sum(
                client.llen(key)
                for key in client.scan_iter(match="celery*", count=1000)
                if client.type(key) == b"list"
            )
        finally:
            client.close()

    def wait_for_tasks(self, log: Path, timeout: float = 900.0, quiet: float = 3.0) -> TaskCounts:
        """Wait until the broker's queues are empty and every task the worker received has
        ended (for `quiet` seconds in a row: a task may queue more)."""
        deadline = time.monotonic() + timeout
        calm_since: float | None = None
        while True:
            self._check_alive("worker", deadline)
            counts = read_task_counts(log)
            if self.queued() == 0 and counts.received and not counts.unfinished:
                calm_since = calm_since or time.monotonic()
                if time.monotonic() - calm_since >= quiet:
                    return counts
            else:
                calm_since = None
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"tasks still queued or running after {timeout:.0f} s: {counts.describe()}"
                )
            time.sleep(0.5)

    # -- beat ----------------------------------------------------------------------------------
    def start_beat(self) -> None:
        """celery beat with invenio-jobs' scheduler: scheduled jobs start runs."""
        self._start(
            "beat",
            [self.site.bin("celery"), "-A", "invenio_app.celery", "beat", "--loglevel", "INFO",
             "--scheduler", "invenio_jobs.services.scheduler:RunScheduler",
             "--schedule", str(self.logs / "beat-schedule"), "--max-interval", "5"],
            self.logs / "beat.log",
        )  # fmt: skip

    # -- all -----------------------------------------------------------------------------------
    def _check_alive(self, name: str, deadline: float) -> None:
        process = self.processes[name]
        if process.poll() is not None:
            raise RuntimeError(f"The {name} process ended ({process.returncode}); see {self.logs}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"The {name} process did not get ready; see {self.logs}")

    def stop(self, name: str, timeout: float = 30.0) -> None:
        process = self.processes.pop(name, None)
        if process is None:
            return
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        self._remember_pids()

    def stop_all(self) -> None:
        for name in list(self.processes):
            self.stop(name)

    def __enter__(self) -> ServedSite:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop_all()
