"""Real Celery worker processes for the tests and the benchmark (solo or prefork, one queue)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def invenio_environment(config: Mapping[str, Any]) -> dict[str, str]:
    """This process's environment plus `config` as INVENIO_* variables (invenio-config reads
    them with literal_eval, so non-strings are passed as their repr)."""
    env = dict(os.environ)
    for key, value in config.items():
        env[f"INVENIO_{key}"] = value if isinstance(value, str) else repr(value)
    return env


def start_celery_workers(
    env: Mapping[str, str],
    queue: str,
    count: int,
    *,
    name: str = "oai",
    ready_timeout: float = 120.0,
    app_module: str = "invenio_app.celery",
    pool: str = "solo",
    concurrency: int = 1,
) -> list[subprocess.Popen]:
    """Start `count` `celery worker` processes of `app_module` consuming `queue` (several:
    comma-separated, as ``celery worker -Q`` takes them).

    Solo pool by default: one task at a time each, like a small worker; ``pool="prefork"``
    forks `concurrency` pool processes from each, as an InvenioRDM instance's worker does.
    Returns once every one has said it is ready (its log is in the temporary directory,
    named after it: :func:`worker_log`).
    """
    processes: list[subprocess.Popen] = []
    for number in range(count):
        node = f"{name}{number}-{os.getpid()}"
        log_path = Path(tempfile.gettempdir()) / f"{node}.log"
        command = [
            sys.executable, "-m", "celery", "-A", app_module, "worker",
            "-P", pool, "-c", str(concurrency), "-Q", queue, "-n", f"{node}@%h", "-l", "INFO",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
        ]  # fmt: skip
        with log_path.open("w") as log:
            process = subprocess.Popen(
                command, env=dict(env), stdout=subprocess.DEVNULL, stderr=log
            )
        process.log_path = log_path  # type: ignore[attr-defined]
        processes.append(process)
    deadline = time.monotonic() + ready_timeout
    for process in processes:
        while "ready." not in worker_log(process).read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                stop_celery_workers(processes)
                raise RuntimeError(f"A Celery worker did not start; see {worker_log(process)}")
            time.sleep(0.2)
    return processes


def worker_log(process: subprocess.Popen) -> Path:
    """Where a worker started by :func:`start_celery_workers` writes its log."""
    return process.log_path  # type: ignore[attr-defined]


def stop_celery_workers(processes: list[subprocess.Popen], timeout: float = 20.0) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
