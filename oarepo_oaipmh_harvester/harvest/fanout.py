"""Spread the writing of a run over Celery workers, as invenio-jobs subtasks of the run.

The run that follows the token chain turns every batch into a subtask run (its records'
XML in the subtask's arguments) and queues a Celery task for it. When the list is read, the
run waits for its subtasks, and writes any that no worker has picked up yet itself (so a
site with a single busy worker cannot deadlock), then ends with the summed counts. Only
then does the run move the watermark or reconcile: a run never trusts a window before its
last batch is written. Ordering between batches is kept by the writer (per-identifier locks
and the stale-version rule).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import Run, RunStatusEnum
from invenio_jobs.proxies import current_runs_service

from ..protocol.client import record_from_xml
from ..protocol.records import OAIRecord
from .writer import RecordWriter, WriteCounts

log = logging.getLogger(__name__)

FINISHED = (RunStatusEnum.SUCCESS, RunStatusEnum.FAILED, RunStatusEnum.PARTIAL_SUCCESS)


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


def write_subtask(subtask_run_id: uuid.UUID, writer_factory: Any) -> bool:
    """Write one subtask's batch (if nobody else has); returns whether this process did it."""
    run = claim_subtask(subtask_run_id)
    if run is None:
        return False
    args = dict(run.args or {})
    job_id, parent_id = run.job_id, run.parent_run_id
    items = args.get("records") or []
    try:
        writer: RecordWriter = writer_factory(args["harvester_id"], parent_id)
        counts = writer.write_batch(deserialize_batch(items))
    except Exception as error:  # noqa: BLE001 - recorded on the subtask, the parent decides
        db.session.rollback()
        log.exception("Subtask %s of run %s failed", subtask_run_id, parent_id)
        # Nothing of the batch was written: every record of it counts as failed.
        counts = WriteCounts(failed=len(items))
        _finish(subtask_run_id, job_id, counts, f"{type(error).__name__}: {error}")
        return True
    _finish(subtask_run_id, job_id, counts, None)
    return True


def _finish(
    subtask_run_id: uuid.UUID, job_id: Any, counts: WriteCounts | None, error: str | None
) -> None:
    report: dict[str, Any] = {"worker": worker_name(), "error": error}
    if counts is not None:
        report.update(
            created=counts.created,
            updated=counts.updated,
            deleted=counts.deleted,
            unchanged=counts.unchanged,
            failed=counts.failed,
            failures=counts.failures[:20],
        )
    db.session.execute(
        sa.update(Run)
        .where(Run.id == subtask_run_id)
        .values(
            message=json.dumps(report, ensure_ascii=False),
            finished_at=datetime.now(UTC),
            total_entries=counts.total if counts else 0,
            inserted_entries=counts.created if counts else 0,
            updated_entries=(counts.updated + counts.deleted) if counts else 0,
            errored_entries=counts.failed if counts else 0,
        )
    )
    db.session.commit()
    current_runs_service.finalize_subtask(
        system_identity,
        subtask_run_id,
        job_id,
        errored_entries_count=counts.failed if counts else 0,
        success=error is None,
        inserted_entries_count=counts.created if counts else 0,
        updated_entries_count=(counts.updated + counts.deleted) if counts else 0,
    )


class BatchDispatcher:
    """Used by a run in place of writing locally: one subtask per batch."""

    def __init__(
        self,
        *,
        harvester_id: str,
        parent_run_id: uuid.UUID,
        writer_factory: Any,
        queue: str | None,
        wait_timeout: float,
        take_over_after: float,
        poll_interval: float = 0.2,
    ) -> None:
        self.harvester_id = harvester_id
        self.parent_run_id = parent_run_id
        self.writer_factory = writer_factory
        self.queue = queue
        self.wait_timeout = wait_timeout
        self.take_over_after = take_over_after
        self.poll_interval = poll_interval
        parent = db.session.get(Run, parent_run_id)
        self.job_id = parent.job_id

    def dispatch(self, records: Sequence[OAIRecord]) -> None:
        from ..tasks import write_harvest_batch

        subtask = current_runs_service.create_subtask_run(
            system_identity, self.parent_run_id, self.job_id
        )
        # Set afterwards: Run.create would pass them through the job type's argument builder.
        db.session.execute(
            sa.update(Run)
            .where(Run.id == subtask.id)
            .values(args={"harvester_id": self.harvester_id, "records": serialize_batch(records)})
        )
        self._add_to_total(len(records))  # commits the subtask too
        options = {"queue": self.queue} if self.queue else {}
        write_harvest_batch.apply_async(kwargs={"subtask_run_id": str(subtask.id)}, **options)

    def count_unqueued(self, unchanged: int) -> None:
        """Add records the run found unchanged itself to the parent run's total."""
        self._add_to_total(unchanged)

    def _add_to_total(self, records: int) -> None:
        db.session.execute(
            sa.update(Run)
            .where(Run.id == self.parent_run_id)
            .values(total_entries=Run.total_entries + records)
        )
        db.session.commit()

    def wait(self) -> WriteCounts:
        """Until every subtask finished (writing stale-queued ones here); the summed counts."""
        deadline = time.monotonic() + self.wait_timeout
        while True:
            db.session.expire_all()
            subtasks = db.session.execute(
                sa.select(Run.id, Run.status, Run.created).where(
                    Run.parent_run_id == self.parent_run_id
                )
            ).all()
            pending = [s for s in subtasks if s.status not in FINISHED]
            if not pending:
                return self._collect()
            now = datetime.now(UTC)
            for subtask in pending:
                created = subtask.created.replace(tzinfo=UTC)
                waiting = (now - created).total_seconds()
                if subtask.status == RunStatusEnum.QUEUED and waiting >= self.take_over_after:
                    write_subtask(subtask.id, self.writer_factory)
            if time.monotonic() > deadline:
                raise FanOutTimeout(
                    f"{len(pending)} of {len(subtasks)} batches of run {self.parent_run_id} "
                    f"were not written within {self.wait_timeout:.0f} s."
                )
            time.sleep(self.poll_interval)

    def _collect(self) -> WriteCounts:
        totals = WriteCounts()
        messages = db.session.scalars(
            sa.select(Run.message).where(Run.parent_run_id == self.parent_run_id)
        )
        for message in messages:
            report = json.loads(message or "{}")
            if report.get("error"):
                batch_size = max(int(report.get("failed") or 1), 1)
                totals.fail(f"(batch written by {report.get('worker')})", report["error"])
                totals.failed += batch_size - 1  # one message for all the batch's records
                continue
            counts = WriteCounts(
                created=report.get("created", 0),
                updated=report.get("updated", 0),
                deleted=report.get("deleted", 0),
                unchanged=report.get("unchanged", 0),
                failed=report.get("failed", 0),
                failures=[tuple(f) for f in report.get("failures", [])],
            )
            totals.add(counts)
        return totals
