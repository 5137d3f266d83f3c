"""A real OpenSearch node for the suite and the benchmark, or the cluster of SEARCH_HOSTS.

Every Invenio site searches with OpenSearch; an imitation hides what a site meets (data
streams, percolation, date formats on range fields, the cost of indexing). The node is the
one of ``./run.sh opensearch`` (``.ci/opensearch``), started on free ports and stopped at
the end.
"""

from __future__ import annotations

import ast
import os
import signal
import socket
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

import requests

LAUNCHER = Path(__file__).resolve().parents[3] / ".ci" / "opensearch" / "start.sh"
STARTUP_TIMEOUT = 600.0
"""A first start resolves the node from Maven Central (about 20 s here); later ones take 6 s."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class SearchServer:
    """Where the suite searches: `hosts` for SEARCH_HOSTS, and what answers there."""

    def __init__(self, hosts: list[dict[str, Any]], process: subprocess.Popen | None = None):
        self.hosts = hosts
        self.process = process
        self.started_in: float | None = None

    @property
    def url(self) -> str:
        host = self.hosts[0]
        return f"http://{host['host']}:{host['port']}"

    def describe(self) -> str:
        """Distribution and version as the server reports them, for the session header."""
        version = requests.get(self.url, timeout=10).json()["version"]
        how = f"started by the suite in {self.started_in:.1f} s" if self.process else "SEARCH_HOSTS"
        return (
            f"search: {version.get('distribution', 'elasticsearch')} {version['number']} "
            f"at {self.url} ({how})"
        )

    @classmethod
    def from_environment(cls) -> SearchServer:
        if "SEARCH_HOSTS" in os.environ:
            return cls(ast.literal_eval(os.environ["SEARCH_HOSTS"]))
        return cls.start_node()

    @classmethod
    def start_node(cls) -> SearchServer:
        port = free_port()
        started = time.monotonic()
        process = subprocess.Popen(
            [str(LAUNCHER), "--port", str(port), "--transport-port", str(free_port())],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # Ctrl-C on pytest must not kill the node before teardown
        )
        last_lines: deque[str] = deque(maxlen=40)
        ready = threading.Event()

        def read_output() -> None:
            for line in process.stdout:
                last_lines.append(line.rstrip())
                if line.startswith("READY "):
                    ready.set()
            process.stdout.close()

        threading.Thread(target=read_output, daemon=True).start()
        while not ready.wait(0.2):
            if process.poll() is not None or time.monotonic() - started > STARTUP_TIMEOUT:
                process.kill()
                process.wait()
                raise RuntimeError("The OpenSearch node did not start:\n" + "\n".join(last_lines))
        server = cls([{"host": "127.0.0.1", "port": port}], process)
        server.started_in = time.monotonic() - started
        return server

    def remove_indices(self, prefix: str) -> None:
        """What the session made on a cluster it did not start (SEARCH_HOSTS) goes at the end."""
        if self.process is None:
            requests.delete(f"{self.url}/{prefix}*", timeout=60)
            requests.delete(f"{self.url}/_data_stream/{prefix}*", timeout=60)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        # SIGTERM lets the node remove its data folder.
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
