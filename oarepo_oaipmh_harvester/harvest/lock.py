"""One run per harvester at a time, enforced by the database.

Decision owned here: who may write for a harvester now (the holder of its lock), and when a
run must stop because it no longer holds it.

A PostgreSQL session-level advisory lock, held on a connection of its own for the whole run:
the run's own session commits after every batch, which would end a row lock, and a crashed
worker's connection is closed by the server, which releases the lock - a harvester is never
locked for ever.  The other side of that: a connection that dies (a network cut, a server
restart, an administrator's pg_terminate_backend) frees the lock while the run goes on, so the
run asks :meth:`RunLock.verify` before each batch and before its watermark, and stops with
:class:`LockLost` when the lock is no longer its own.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine


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
    """The connection holding the harvester's lock is gone: another run may be writing."""

    def __init__(self, harvester_id: str) -> None:
        self.harvester_id = harvester_id
        super().__init__(
            f"The lock of harvester {harvester_id!r} was lost (its database connection "
            f"ended); this run stopped before writing more, and its watermark was not moved."
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
    """The lock a run holds (or, on SQLite, a stand-in that always holds)."""

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
    if engine.dialect.name != "postgresql":
        # SQLite allows one writing process anyway; there is nothing to coordinate.
        yield RunLock(harvester_id)
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


def holder_of(harvester_id: str, engine: Engine) -> int | None:
    """The PostgreSQL backend pid of the session holding the harvester's run lock, or None.

    A look at ``pg_locks`` only: it takes nothing, so it never delays a run. A run whose
    process died no longer holds the lock (the server closed its connection), whatever its
    Run row still says. On SQLite there is no lock: None.
    """
    if engine.dialect.name != "postgresql":
        return None
    with engine.connect() as connection:
        return connection.execute(_LOCK_HOLDER, _halves(lock_key(harvester_id))).scalar()
