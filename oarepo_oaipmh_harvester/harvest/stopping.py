"""When a run must end before its work is done: a stop request, its time limit, its lock.

Decision owned here: what a run checks before each batch, and how it notices that it was
asked to stop. invenio-jobs' Stop sets the run CANCELLING and revokes its Celery task; a
revoke cannot interrupt a task that already runs (threads or solo pool) and, on a prefork
pool, sends SIGTERM. Either way the run stops at the next batch boundary: every batch it
wrote is whole (tracking rows and target agree) and nothing after it - reconciliation, the
watermark - happens.

A harvest run in the foreground (``invenio oai harvest``) is stopped the same way by SIGINT
(Ctrl-C) or SIGTERM (:class:`Interruptions`); a second one ends it at once, rolling back the
batch in flight.
"""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Protocol

import sqlalchemy as sa
from invenio_db import db
from invenio_jobs.models import Run, RunStatusEnum
from sqlalchemy import event


class RunTooLong(Exception):
    """A run went on past OAI_HARVESTER_MAX_RUN_SECONDS; nothing of its window is trusted."""

    def __init__(self, harvester_id: str, limit: float) -> None:
        super().__init__(
            f"The run of harvester {harvester_id!r} took longer than "
            f"OAI_HARVESTER_MAX_RUN_SECONDS ({limit:.0f} s) and was stopped; the watermark was "
            f"not moved, so the next run continues the same window."
        )


class RunStopped(Exception):
    """The run was asked to stop and did, between two batches."""

    def __init__(self, reason: str, records: int) -> None:
        self.reason = reason
        self.records = records
        super().__init__(
            f"Stopped ({reason}) after {records} records. What was written is complete; the "
            f"watermark did not move, so the next run harvests the same window again."
        )


class StopSignal:
    """Whether the run should stop: a signal arrived, the process that watches the run says
    so (`also`: the command line's Ctrl-C), or its invenio-jobs run is CANCELLING."""

    def __init__(
        self, run_id: uuid.UUID | None, also: Callable[[], str | None] | None = None
    ) -> None:
        self.run_id = run_id
        self.also = also
        self._signalled: str | None = None

    def signal(self, reason: str) -> None:
        """Called from a signal handler: only a flag is set, the run stops at the next batch."""
        self._signalled = reason

    def reason(self) -> str | None:
        """Why the run must stop now, or None to go on."""
        if self._signalled:
            return self._signalled
        asked = self.also() if self.also is not None else None
        if asked:
            return asked
        if self.run_id is None:
            return None
        # Its own statement, read after the last batch's commit: the request comes from
        # another process (the web app), and the answer must not be an earlier snapshot.
        status = db.session.execute(
            sa.select(Run.status).where(Run.id == self.run_id)
        ).scalar_one_or_none()
        if status == RunStatusEnum.CANCELLING:
            return "Stop was requested in Administration → Jobs"
        return None


class HeldLock(Protocol):
    def verify(self) -> None:
        """Raises when the run no longer holds its harvester's lock."""


class RunBounds:
    """What a run checks before each batch: that it still holds its lock (a run that lost it
    must not write beside another), is within its time, and was not asked to stop."""

    def __init__(
        self, harvester_id: str, lock: HeldLock, *, max_seconds: float, stop: StopSignal
    ) -> None:
        self.harvester_id = harvester_id
        self.lock = lock
        self.max_seconds = max_seconds
        self.stop = stop
        self._deadline = time.monotonic() + max_seconds

    def check(self, records_so_far: int) -> None:
        self.lock.verify()
        if time.monotonic() > self._deadline:
            raise RunTooLong(self.harvester_id, self.max_seconds)
        self.stop_if_asked(records_so_far)

    def stop_if_asked(self, records_so_far: int) -> None:
        """RunStopped if the run was asked to stop (also after its last batch: a stopped run
        neither reconciles nor moves its watermark)."""
        reason = self.stop.reason()
        if reason:
            raise RunStopped(reason, records_so_far)


_STOPPED_RUNS: dict[str, str] = {}
"""Runs of this process that stopped on request: run id -> what the run's message says."""


def end_run_cancelled(run_id: uuid.UUID | None, message: str) -> None:
    """A run of invenio-jobs that stopped on request ends CANCELLED, with `message`.

    invenio-jobs ends every run whose task returns SUCCESS, and lets a task end it CANCELLED
    only by raising SystemExit, which also shuts the Celery worker down. So the run gets its
    message here and, when invenio-jobs sets SUCCESS, CANCELLED instead.
    """
    if run_id is None:
        return
    db.session.execute(sa.update(Run).where(Run.id == run_id).values(message=message))
    db.session.commit()
    _STOPPED_RUNS[str(run_id)] = message


def end_run_aborted(run_id: uuid.UUID | None, message: str) -> None:
    """A run that was ended at once (a second Ctrl-C) is CANCELLED now, with `message`: no
    task result follows that invenio-jobs could end it with."""
    if run_id is None:
        return
    db.session.execute(
        sa.update(Run)
        .where(Run.id == run_id)
        .values(status=RunStatusEnum.CANCELLED, finished_at=datetime.now(UTC), message=message)
    )
    db.session.commit()


def end_run_unstarted(run_id: uuid.UUID, error: BaseException) -> None:
    """A run that invenio-jobs could not start or end (its task never reported) is FAILED
    with one sentence saying why, unless something ended it already."""
    message = (
        f"The run could not start or end: {_in_words(error)} Nothing was lost: start it again."
    )
    db.session.execute(
        sa.update(Run)
        .where(Run.id == run_id)
        .where(Run.status.in_([RunStatusEnum.QUEUED, RunStatusEnum.RUNNING]))
        .values(status=RunStatusEnum.FAILED, finished_at=datetime.now(UTC), message=message)
    )
    db.session.commit()


def _in_words(error: BaseException) -> str:
    first_line = (str(error).strip().splitlines() or [""])[0][:300]
    if type(error).__module__.startswith("opensearchpy"):
        return (
            f"the search server did not answer ({type(error).__name__}); invenio-jobs writes "
            f"a run's log there (JOBS_LOGGING)."
        )
    return f"{type(error).__name__}: {first_line}"


@event.listens_for(Run.status, "set", retval=True)
def _success_of_a_stopped_run_is_cancelled(
    run: Run, value: Any, old_value: Any, initiator: Any
) -> Any:
    if value == RunStatusEnum.SUCCESS and _STOPPED_RUNS.pop(str(run.id), None) is not None:
        return RunStatusEnum.CANCELLED
    return value


INTERRUPTS = {
    signal.SIGINT: "SIGINT, Ctrl-C on the command line",
    signal.SIGTERM: "SIGTERM to the command-line process",
}
"""The signals that stop a run in the foreground, and how its message names each."""


class AbortedAtOnce(KeyboardInterrupt):
    """A second SIGINT or SIGTERM: the run ends where it is, without finishing its batch."""

    def __init__(self, received: signal.Signals) -> None:
        self.signal = received
        super().__init__(
            f"Aborted at once by a second signal ({INTERRUPTS[received]}): the transaction of "
            f"the batch in flight was rolled back, what earlier batches wrote is complete, and "
            f"the watermark did not move, so the next run harvests the same window again."
        )

    @property
    def exit_code(self) -> int:
        """128 + the signal's number, as a shell reports a process a signal ended."""
        return 128 + int(self.signal)


class Interruptions:
    """SIGINT (Ctrl-C) and SIGTERM to a process running a harvest in the foreground.

    The first asks the run to stop after the batch in flight (:meth:`reason`, asked before
    each batch), as Stop in Administration → Jobs does: the run ends CANCELLED with its
    watermark kept. A second raises :class:`AbortedAtOnce` wherever the run is; the
    transaction of its batch in flight is then rolled back.
    """

    def __init__(self) -> None:
        self.received: signal.Signals | None = None

    def reason(self) -> str | None:
        """Why the run must stop, once a signal arrived."""
        return INTERRUPTS[self.received] if self.received is not None else None

    @property
    def exit_code(self) -> int | None:
        """128 + the number of the signal that arrived (130 for Ctrl-C), or None."""
        return 128 + int(self.received) if self.received is not None else None

    def handle(self, signum: int, frame: Any) -> None:
        received = signal.Signals(signum)
        if self.received is not None:
            raise AbortedAtOnce(received)
        self.received = received


@contextmanager
def interruptible() -> Iterator[Interruptions]:
    """SIGINT and SIGTERM handled by an :class:`Interruptions` for the block (in the main
    thread, where Python runs signal handlers; elsewhere they keep their meaning)."""
    interruptions = Interruptions()
    if threading.current_thread() is not threading.main_thread():
        yield interruptions
        return
    previous = {received: signal.getsignal(received) for received in INTERRUPTS}
    for received in INTERRUPTS:
        signal.signal(received, interruptions.handle)
    try:
        yield interruptions
    finally:
        for received, handler in previous.items():
            signal.signal(received, handler if handler is not None else signal.SIG_DFL)
