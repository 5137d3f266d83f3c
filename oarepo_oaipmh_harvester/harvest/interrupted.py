"""Runs that a dead process left RUNNING: found and closed, so that they block nothing.

Decision owned here: when a RUNNING run of a harvester counts as interrupted (its harvester's
lock is free, or held by the run that looks, and it started a while ago) and what it is then
marked with.  invenio-jobs itself never learns that the worker of a run was killed.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from invenio_db import db
from invenio_jobs.models import Run, RunStatusEnum

GRACE = timedelta(seconds=60)
"""A run younger than this may be alive and just not holding its lock yet."""


def grace_for(wait_for_running: bool, lock_timeout: float) -> timedelta:
    """How old a RUNNING run must be to count as dead: where runs wait for each other's lock,
    a waiting run is alive for up to the lock timeout without holding it."""
    return GRACE + timedelta(seconds=lock_timeout if wait_for_running else 0)


def interrupted_runs(
    harvester_id: str, *, started_before: datetime, except_run: uuid.UUID | None = None
) -> list[Run]:
    """RUNNING runs (and their subtasks) of this harvester that started before the moment."""
    candidates = db.session.scalars(
        sa.select(Run).where(
            Run.status.in_([RunStatusEnum.RUNNING, RunStatusEnum.QUEUED]),
            # A run that waited in the queue is as young as its start, not its creation.
            sa.func.coalesce(Run.started_at, Run.created) < started_before,
        )
    )
    found = []
    for run in candidates:
        if (run.args or {}).get("harvester_id") != harvester_id:
            continue
        if except_run is not None and except_run in (run.id, run.parent_run_id):
            continue
        if run.status == RunStatusEnum.QUEUED and run.parent_run_id is None:
            continue  # waiting for a worker: not started, not dead
        found.append(run)
    return found


def close_interrupted_runs(
    harvester_id: str,
    *,
    found_by: str,
    except_run: uuid.UUID | None = None,
    grace: timedelta = GRACE,
) -> list[uuid.UUID]:
    """Mark the harvester's interrupted runs FAILED, saying so; their ids. The caller must
    know that no live run of the harvester holds its lock (it holds it itself, or saw it free)."""
    now = datetime.now(UTC)
    runs = interrupted_runs(harvester_id, started_before=now - grace, except_run=except_run)
    for run in runs:
        run.status = RunStatusEnum.FAILED
        run.finished_at = now
        run.message = (
            f"Interrupted: the process of this run ended without finishing it (the "
            f"harvester's lock was free when {found_by} looked at "
            f"{now.strftime('%Y-%m-%d %H:%M:%S')} UTC). Nothing of its window was trusted: "
            f"the watermark was not moved, and the next run harvests that window again."
        )
    if runs:
        db.session.commit()
    return [run.id for run in runs]
