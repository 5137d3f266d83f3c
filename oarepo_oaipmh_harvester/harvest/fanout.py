"""Spread the writing of a run over Celery workers, as invenio-jobs subtasks of the run.

Decision owned here: how a batch becomes a subtask and comes back as counts.  The run that
follows the token chain turns every batch into a subtask run (its records' XML in the
subtask's arguments) and hands its id to ``enqueue`` (the Celery task module passes it in;
the engine imports no task).  When the list is read, the run waits for its subtasks, and
writes any that no worker has picked up yet itself (so a site with a single busy worker
cannot deadlock), then ends with the summed counts.  Only then does the run move the
watermark or reconcile: a run never trusts a window before its last batch is written.
Ordering between batches is kept by the writer (per-identifier locks and the stale-version
rule).  A finished subtask keeps its counts in its arguments (``counts``, with its records
dropped) and a readable summary in its message.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import Run, RunStatusEnum
from invenio_jobs.proxies import current_runs_service

from ..protocol.items import record_from_xml
from ..protocol.records import OAIRecord
from .counts import WriteCounts, describe_error
from .memory import run_scope
from .prefetch import batched
from .stopping import RunStopped
from .writer import RecordWriter

WriterFactory = Callable[[str, uuid.UUID | None], RecordWriter]
"""(harvester id, parent run id) -> the writer of a batch of that run."""

Enqueue = Callable[[str, str | None], None]
"""Queues the writing of one subtask (its run id) for a worker, on a queue (None: default)."""

log = logging.getLogger(__name__)

FINISHED = (RunStatusEnum.SUCCESS, RunStatusEnum.FAILED, RunStatusEnum.PARTIAL_SUCCESS)


class WritersOfARun:
    """The writer a process uses for the batches of one run, built at the first of them.

    A writer is made for a run: the run that writes locally has one for all its batches,
    and its transformer keeps the run's vocabulary look-ups. Built again for each subtask,
    a worker read the same vocabulary entries (and searched the index for them) every
    ten records. One writer per thread (a transformer is not thread-safe), for the latest
    run only; after a batch that failed as a whole the next one starts a new writer.
    """

    def __init__(self, factory: WriterFactory) -> None:
        self._factory = factory
        self._local = threading.local()

    def __call__(self, harvester_id: str, run_id: uuid.UUID | None) -> RecordWriter:
        key = (harvester_id, run_id)
        kept = getattr(self._local, "kept", None)
        if kept is None or kept[0] != key:
            kept = self._local.kept = (key, self._factory(harvester_id, run_id))
        return kept[1]

    def forget(self) -> None:
        """Build the next batch's writer afresh."""
        self._local.kept = None


class FanOutTimeout(Exception):
    """Subtasks did not finish in time; the run is not trusted (no watermark, no reconcile)."""


def serialize_batch(records: Sequence[OAIRecord]) -> list[dict[str, Any]]:
    return [{"xml": record.xml, "errors": list(record.errors)} for record in records]


def deserialize_batch(items: Sequence[dict[str, Any]]) -> list[OAIRecord]:
    return [record_from_xml(item["xml"], tuple(item.get("errors") or ())) for item in items]


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def claim_subtask(subtask_run_id: uuid.UUID) -> Run | None:
    """Atomically QUEUED -> RUNNING; None when another process already took it."""
    claimed = db.session.execute(
        sa.update(Run)
        .where(Run.id == subtask_run_id, Run.status == RunStatusEnum.QUEUED)
        .values(status=RunStatusEnum.RUNNING, started_at=datetime.now(UTC))
        .returning(Run.id)
    ).first()
    db.session.commit()
    return db.session.get(Run, subtask_run_id) if claimed else None


def write_subtask(
    subtask_run_id: uuid.UUID,
    writers: WritersOfARun,
    *,
    scope: Callable[[], AbstractContextManager[None]] = run_scope,
) -> bool:
    """Write one subtask's batch (if nobody else has); returns whether this process did it.

    `scope`: the garbage collector's regime while writing (``memory``): a run's by default,
    ``worker_process_scope`` in a Celery worker.
    """
    run = claim_subtask(subtask_run_id)
    if run is None:
        return False
    args = dict(run.args or {})
    job_id, parent_id = run.job_id, run.parent_run_id
    items = args.get("records") or []
    parent = db.session.get(Run, parent_id) if parent_id else None
    if parent is None or parent.status != RunStatusEnum.RUNNING:
        # The parent ended (failed, timed out, closed as interrupted): a later run may already
        # have written newer versions of these records, which this batch must not overwrite.
        counts = WriteCounts()
        counts.fail("(batch)", "Not written: its run had ended.", records=max(len(items), 1))
        _finish(subtask_run_id, job_id, args, counts, "its run had ended")
        return True
    records = deserialize_batch(items)
    counts, error, committed = WriteCounts(), None, 0
    try:
        writer = writers(args["harvester_id"], parent_id)
        with scope():
            # The run's units of work (into a draft-enabled target, smaller than a subtask),
            # each committed with its tracking rows.
            per_transaction = int(args.get("records_per_transaction") or len(records) or 1)
            for unit in batched(records, per_transaction):
                counts.add(writer.write_batch(unit))
                committed += len(unit)
    except Exception as failure:  # noqa: BLE001 - recorded on the subtask, the parent decides
        db.session.rollback()
        writers.forget()
        log.exception("Subtask %s of run %s failed", subtask_run_id, parent_id)
        error = describe_error(failure)
        # What was committed before the failure stands; every other record counts as failed.
        counts.fail(
            f"(batch written by {worker_name()})", error, records=max(len(items) - committed, 1)
        )
    _finish(subtask_run_id, job_id, args, counts, error)
    return True


def _finish(
    subtask_run_id: uuid.UUID,
    job_id: Any,
    args: dict[str, Any],
    counts: WriteCounts,
    error: str | None,
) -> None:
    # The records' XML has done its job; the counts travel back to the parent run.
    result_args = {key: value for key, value in args.items() if key != "records"}
    result_args.update(counts=counts.as_dict(), worker=worker_name())
    message = f"Written by {worker_name()}: {counts.describe()}."
    if error:
        message = f"{message} The batch failed: {error}"
    db.session.execute(
        sa.update(Run)
        .where(Run.id == subtask_run_id)
        .values(
            args=result_args,
            message=message,
            finished_at=datetime.now(UTC),
            **counts.run_columns(),
        )
    )
    db.session.commit()
    columns = counts.run_columns()
    current_runs_service.finalize_subtask(
        system_identity,
        subtask_run_id,
        job_id,
        errored_entries_count=columns["errored_entries"],
        success=error is None,
        inserted_entries_count=columns["inserted_entries"],
        updated_entries_count=columns["updated_entries"],
    )


class BatchDispatcher:
    """Used by a run in place of writing locally: one subtask per batch."""

    def __init__(
        self,
        *,
        harvester_id: str,
        parent_run_id: uuid.UUID,
        writers: WritersOfARun,
        enqueue: Enqueue,
        queue: str | None = None,
        wait_timeout: float,
        take_over_after: float,
        poll_interval: float = 0.2,
    ) -> None:
        self.harvester_id = harvester_id
        self.parent_run_id = parent_run_id
        self.writers = writers
        self.enqueue = enqueue
        self.queue = queue
        self.wait_timeout = wait_timeout
        self.take_over_after = take_over_after
        self.poll_interval = poll_interval
        parent = db.session.get(Run, parent_run_id)
        self.job_id = parent.job_id

    def dispatch(self, records: Sequence[OAIRecord], *, records_per_transaction: int) -> None:
        """One subtask for `records`, which its writer commits `records_per_transaction` at
        a time."""
        subtask = current_runs_service.create_subtask_run(
            system_identity, self.parent_run_id, self.job_id
        )
        args = {
            "harvester_id": self.harvester_id,
            "records": serialize_batch(records),
            "records_per_transaction": records_per_transaction,
        }
        # Set afterwards: Run.create would pass them through the job type's argument builder.
        db.session.execute(sa.update(Run).where(Run.id == subtask.id).values(args=args))
        self.add_to_total(len(records))  # commits the subtask too
        self.enqueue(str(subtask.id), self.queue)

    def add_to_total(self, records: int) -> None:
        """Add records to the parent run's total (queued ones, and those found unchanged)."""
        current_runs_service.add_total_entries(
            system_identity, self.parent_run_id, self.job_id, records
        )

    def wait(
        self,
        verify_lock: Callable[[], None] | None = None,
        stop: Callable[[], str | None] | None = None,
    ) -> WriteCounts:
        """Until every subtask finished (writing stale-queued ones here); the summed counts.

        `verify_lock` raises when the run no longer holds its lock: it must then neither
        write batches itself nor wait for workers it can no longer vouch for. `stop` says why
        the run must stop (None: go on): the batches no worker has taken are then cancelled,
        the ones being written are waited for, and :class:`RunStopped` ends the wait.
        """
        deadline = time.monotonic() + self.wait_timeout
        stopping: str | None = None
        while True:
            if verify_lock is not None:
                verify_lock()
            if stop is not None and stopping is None:
                stopping = stop()
                if stopping:
                    self._cancel_queued()
            db.session.expire_all()
            subtasks = db.session.execute(
                sa.select(Run.id, Run.status, Run.created).where(
                    Run.parent_run_id == self.parent_run_id
                )
            ).all()
            pending = [s for s in subtasks if s.status not in (*FINISHED, RunStatusEnum.CANCELLED)]
            if not pending:
                counts = self._collect()
                if stopping:
                    raise RunStopped(stopping, counts.total)
                return counts
            now = datetime.now(UTC)
            for subtask in pending:
                created = subtask.created.replace(tzinfo=UTC)
                waiting = (now - created).total_seconds()
                if (
                    not stopping
                    and subtask.status == RunStatusEnum.QUEUED
                    and waiting >= self.take_over_after
                ):
                    write_subtask(subtask.id, self.writers)
            if time.monotonic() > deadline:
                raise FanOutTimeout(
                    f"{len(pending)} of {len(subtasks)} batches of run {self.parent_run_id} "
                    f"were not written within {self.wait_timeout:.0f} s."
                )
            time.sleep(self.poll_interval)

    def _cancel_queued(self) -> None:
        """Batches no worker has taken yet are not written (a worker's claim then fails)."""
        db.session.execute(
            sa.update(Run)
            .where(Run.parent_run_id == self.parent_run_id, Run.status == RunStatusEnum.QUEUED)
            .values(status=RunStatusEnum.CANCELLED, finished_at=datetime.now(UTC))
        )
        db.session.commit()

    def _collect(self) -> WriteCounts:
        totals = WriteCounts()
        for subtask_id, status, args in db.session.execute(
            sa.select(Run.id, Run.status, Run.args).where(Run.parent_run_id == self.parent_run_id)
        ):
            args = args or {}
            if status == RunStatusEnum.CANCELLED:
                continue  # cancelled by a stop before any worker took it: nothing was written
            if "counts" in args:
                totals.add(WriteCounts.from_dict(args["counts"]))
            else:  # finished without a report (closed as interrupted): nothing is vouched for
                totals.fail(
                    f"(batch {subtask_id})",
                    "The batch ended without its worker reporting what it wrote.",
                    records=max(len(args.get("records") or []), 1),
                )
        return totals
