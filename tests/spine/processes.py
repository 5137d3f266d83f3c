"""`invenio oai ...` in a process of its own, as an operator's shell or a scheduler starts it,
on the test's database and search server (both committed for real: see `committed`)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from invenio_access.permissions import system_identity
from invenio_db import db
from oaiharvest_test_support.sample_records.records import SampleRecordMetadata
from oaiharvest_test_support.workers import invenio_environment
from search_node import empty_search_indices

from oarepo_oaipmh_harvester.proxies import current_harvester_service

KEYS = (
    "SQLALCHEMY_DATABASE_URI",
    "SEARCH_HOSTS",
    "SEARCH_INDEX_PREFIX",
    "OAI_HARVESTER_SAMPLE_TARGET",
    "OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS",
    "JOBS_LOGGING",
    "CACHE_TYPE",
    "CELERY_BROKER_URL",
    "BROKER_URL",
    "RECORDS_REFRESOLVER_CLS",
    "RECORDS_REFRESOLVER_STORE",
    "SECRET_KEY",
)
"""The test application's settings a command's process gets (as INVENIO_* variables)."""


class Command:
    """One `invenio oai ...` process; its stdout and stderr go to files (a flood must not
    block it on a full pipe)."""

    def __init__(self, app: Flask, folder: Path, args: tuple[str, ...], config: dict) -> None:
        self.stdout_path = folder / f"stdout-{id(self)}.txt"
        self.stderr_path = folder / f"stderr-{id(self)}.txt"
        settings = {key: app.config[key] for key in KEYS if key in app.config}
        invenio = Path(sys.executable).with_name("invenio")
        with self.stdout_path.open("w") as stdout, self.stderr_path.open("w") as stderr:
            self.process = subprocess.Popen(
                [str(invenio), "oai", *args],
                env=invenio_environment({**settings, **config}),
                stdout=stdout,
                stderr=stderr,
            )

    def wait(self, timeout: float = 120.0) -> int:
        return self.process.wait(timeout=timeout)

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text()

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def shown(self) -> str:
        """What it printed, for assertion messages."""
        return f"exit {self.process.poll()}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def commands(app: Flask, folder: Path) -> Iterator[Any]:
    """`start(*args, **config)` starts `invenio oai *args`; every process still running at
    the end is killed."""
    started: list[Command] = []

    def start(*args: str, **config: Any) -> Command:
        command = Command(app, folder, args, config)
        started.append(command)
        return command

    try:
        yield start
    finally:
        for command in started:
            command.end()


def read_committed(query: Any) -> Any:
    """`query()` on what other processes committed, the snapshot ended afterwards: an open
    SQLite transaction would keep the other process from committing."""
    db.session.rollback()
    try:
        return query()
    finally:
        db.session.rollback()


@contextlib.contextmanager
def committed(db_uri: str) -> Iterator[None]:
    """The block's harvesters, records and runs are committed for real, so that another
    process sees them (on PostgreSQL, or an SQLite file); they are removed afterwards."""
    if not db_uri.startswith(("postgresql", "sqlite:///")) or ":memory:" in db_uri:
        pytest.skip("Two processes on one database: PostgreSQL or an SQLite file.")
    try:
        yield
    finally:
        db.session.rollback()
        for item in current_harvester_service.list(system_identity):
            current_harvester_service.delete(system_identity, item.data["id"])
        db.session.execute(db.text("DELETE FROM pidstore_pid WHERE pid_type = 'oaismp'"))
        db.session.query(SampleRecordMetadata).delete()
        db.session.commit()
        empty_search_indices()
