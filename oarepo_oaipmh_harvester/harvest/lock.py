"""One run per harvester at a time, enforced by a lock that dies with its holder.

Decision owned here: who may write for a harvester now (the holder of its lock), and when a
run must stop because it no longer holds it.

On PostgreSQL, a session-level advisory lock, held on a connection of its own for the whole
run: the run's own session commits after every batch, which would end a row lock, and a
crashed worker's connection is closed by the server, which releases the lock - a harvester is
never locked for ever.  The other side of that: a connection that dies (a network cut, a server
restart, an administrator's pg_terminate_backend) frees the lock while the run goes on, so the
run asks :meth:`RunLock.verify` before each batch and before its watermark, and stops with
:class:`LockLost` when the lock is no longer its own.

On SQLite, an exclusive ``flock`` on a file beside the database file
(``<database>.oai-harvest-<id>.lock``; every process using an SQLite database runs on its
machine): the kernel releases it when the holding process ends, however it ends, as the
PostgreSQL server does with a killed worker's connection. The file itself stays (removing it
would race with a process about to lock it); it holds the process id and host of the run
that holds the lock, for the messages that name it. Other databases (and systems without
``flock``) have no lock.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

try:
    import fcntl
except ImportError:  # pragma: no cover - not a POSIX system
    fcntl = None  # type: ignore[assignment]


class HarvesterBusy(Exception):
    """Another run of the same harvester is writing."""

    def __init__(self, harvester_id: str, waited: float | None = None) -> None:
        self.harvester_id = harvester_id
        how = f" after waiting {waited:.0f} s" if waited is not None else ""
        super().__init__(
            f"Another run of harvester {harvester_id!r} is in progress{how}; this run did "
            f"nothing. (OAI_HARVESTER_CONCURRENT_RUNS decides whether runs wait or fail.)"
        )


class LockLost(Exception):
    """The lock of the harvester is no longer this run's: another run may be writing."""

    def __init__(self, harvester_id: str, how: str = "its database connection ended") -> None:
        self.harvester_id = harvester_id
        super().__init__(
            f"The lock of harvester {harvester_id!r} was lost ({how}); this run stopped "
            f"before writing more, and its watermark was not moved."
        )


def lock_key(harvester_id: str) -> int:
    """A stable signed 64-bit advisory lock key for a harvester."""
    digest = hashlib.sha256(f"oarepo-oaipmh-harvester:{harvester_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


# pg_locks shows a bigint advisory key as two unsigned 32-bit halves, objsubid 1.
_LOCK_HOLDER = sa.text(
    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND classid = CAST(:high AS oid) AND objid = CAST(:low AS oid)"
    " AND objsubid = 1"
)


_HELD_HERE = sa.text(f"SELECT EXISTS ({_LOCK_HOLDER.text} AND pid = pg_backend_pid())")


def _halves(key: int) -> dict[str, int]:
    return {"high": (key >> 32) & 0xFFFFFFFF, "low": key & 0xFFFFFFFF}


class RunLock:
    """The lock a run holds (or, where there is none, a stand-in that always holds)."""

    def __init__(self, harvester_id: str, connection: Any = None, key: int | None = None) -> None:
        self.harvester_id = harvester_id
        self._connection = connection
        self._key = key

    def verify(self) -> None:
        """LockLost unless this run still holds the lock, on the connection that took it."""
        if self._connection is None:
            return
        try:
            held = self._connection.execute(_HELD_HERE, _halves(self._key)).scalar()
        except sa.exc.SQLAlchemyError as error:
            raise LockLost(self.harvester_id) from error
        if not held:
            raise LockLost(self.harvester_id)


class FileRunLock(RunLock):
    """The lock of a run on SQLite: the flock on the harvester's lock file."""

    def __init__(self, harvester_id: str, descriptor: int, path: Path) -> None:
        super().__init__(harvester_id)
        self._descriptor = descriptor
        self.path = path

    def verify(self) -> None:
        """LockLost when the lock file was removed or replaced: a new run would lock that one."""
        try:
            held, named = os.fstat(self._descriptor), os.stat(self.path)
        except OSError:
            raise LockLost(self.harvester_id, "its lock file was removed") from None
        if (held.st_dev, held.st_ino) != (named.st_dev, named.st_ino):
            raise LockLost(self.harvester_id, "its lock file was replaced")


def uses_lock_files(engine: Engine) -> bool:
    """Whether runs of this database lock a file (SQLite) rather than the database."""
    return engine.dialect.name == "sqlite" and fcntl is not None


_SLUG = re.compile(r"[a-z0-9_-]{1,64}")


def lock_file(harvester_id: str, engine: Engine) -> Path:
    """The file whose lock is the harvester's run lock on SQLite: beside the database file
    (a database in memory, which one process alone sees: in the temporary directory)."""
    database = engine.url.database or ""
    if database in ("", ":memory:") or database.startswith("file::memory:"):
        base = Path(tempfile.gettempdir()) / f"oai-harvest-memory-{os.getpid()}"
    else:
        base = Path(database).absolute()
    name = harvester_id if _SLUG.fullmatch(harvester_id) else f"{lock_key(harvester_id):x}"
    return base.with_name(f"{base.name}.oai-harvest-{name}.lock")


PROBE_SECONDS = 0.25
"""How long a run that must not wait keeps trying a lock file that looks held: a look at the
lock (:func:`holder_of`) holds it shared for an instant, and must not refuse a run."""


@contextmanager
def _locked_file(
    harvester_id: str, path: Path, *, wait: bool, timeout: float, poll_interval: float
) -> Iterator[FileRunLock]:
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o664)
    except PermissionError:  # created by another user: lockable, not writable
        descriptor = os.open(path, os.O_RDONLY)
    try:
        started = time.monotonic()
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                waited = time.monotonic() - started
                if waited >= (timeout if wait else PROBE_SECONDS):
                    raise HarvesterBusy(harvester_id, waited if wait else None) from None
                time.sleep(poll_interval if wait else 0.02)
        try:
            _write_holder(descriptor)
            yield FileRunLock(harvester_id, descriptor, path)
        finally:
            _write_holder(descriptor, "")
            fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)


def _write_holder(descriptor: int, text: str | None = None) -> None:
    """Who holds the lock, in its file (for messages only; the flock is the lock)."""
    if text is None:
        text = f"{os.getpid()} {socket.gethostname()}\n"
    try:
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, text.encode(), 0)
    except OSError:
        pass  # a read-only lock file: the lock holds, the holder is not named


def _file_holder(path: Path) -> str | None:
    """Who holds the lock file (a look: held shared for an instant), or None."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pid, _, host = os.pread(descriptor, 300, 0).decode(errors="replace").partition(" ")
            host = host.strip()
            return f"process {pid} on {host}" if pid.isdigit() and host else "another process"
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        return None
    finally:
        os.close(descriptor)


@contextmanager
def exclusive_run(
    harvester_id: str,
    engine: Engine,
    *,
    wait: bool = False,
    timeout: float = 0.0,
    poll_interval: float = 1.0,
) -> Iterator[RunLock]:
    """Hold the harvester's lock for the block; HarvesterBusy if another process holds it
    (with `wait`, once it has been held for `timeout` seconds: OAI_HARVESTER_LOCK_TIMEOUT)."""
    if uses_lock_files(engine):
        with _locked_file(
            harvester_id,
            lock_file(harvester_id, engine),
            wait=wait,
            timeout=timeout,
            poll_interval=poll_interval,
        ) as lock:
            yield lock
        return
    if engine.dialect.name != "postgresql":
        yield RunLock(harvester_id)  # no lock to take here (see the module's docstring)
        return
    key = lock_key(harvester_id)
    with engine.connect() as connection:
        connection = connection.execution_options(isolation_level="AUTOCOMMIT")
        started = time.monotonic()
        while not connection.execute(sa.select(sa.func.pg_try_advisory_lock(key))).scalar():
            waited = time.monotonic() - started
            if not wait or waited >= timeout:
                raise HarvesterBusy(harvester_id, waited if wait else None)
            time.sleep(poll_interval)
        try:
            yield RunLock(harvester_id, connection, key)
        finally:
            try:
                connection.execute(sa.select(sa.func.pg_advisory_unlock(key)))
            except sa.exc.SQLAlchemyError:
                pass  # the connection is gone, and the lock with it


def holder_of(harvester_id: str, engine: Engine) -> str | None:
    """Who holds the harvester's run lock ("database session 4242", "process 4242 on
    host"), or None when nobody does.

    A look only: it never delays a run. A run whose process died no longer holds the lock
    (the server closed its connection; the kernel dropped its flock), whatever its Run row
    still says. A database without a lock: None.
    """
    if uses_lock_files(engine):
        return _file_holder(lock_file(harvester_id, engine))
    if engine.dialect.name != "postgresql":
        return None
    with engine.connect() as connection:
        pid = connection.execute(_LOCK_HOLDER, _halves(lock_key(harvester_id))).scalar()
    return None if pid is None else f"database session {pid}"
