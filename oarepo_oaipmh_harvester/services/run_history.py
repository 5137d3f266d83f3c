"""The last runs of a harvester in numbers: what each created, updated, deleted, failed and
held back, and how long it took (the chart of the harvester's page, ``invenio oai runs``,
``GET .../harvesters/<id>/runs/history``).

A run keeps its counts by kind in its ``args`` (``harvest.ledger.COUNTS_ARG``); a run from
before they were kept there has only invenio-jobs' columns, whose updates include the
deletions: its deletions are then 0 and ``counts_known`` says so.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from invenio_db import db
from invenio_jobs.models import Run

from ..harvest.counts import WriteCounts
from ..harvest.ledger import COUNTS_ARG
from .jobs import runs_query

HISTORY_SIZE = 20
"""Runs a history shows unless asked for another number."""

MAX_HISTORY_SIZE = 100

KINDS = ("created", "updated", "deleted", "failed", "held")
"""What a run did to records, in the order the chart stacks them. ``held``: deletions a
mass-deletion guard held back (0 where a run kept no such count)."""


def _utc(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def run_tally(run: Run) -> dict[str, Any]:
    """One run in numbers: id, title, status, started and finished (ISO, UTC), duration in
    seconds (None while it has not finished), and its counts of each kind."""
    kept = (run.args or {}).get(COUNTS_ARG)
    if isinstance(kept, dict):
        counts = {name: int(kept.get(name) or 0) for name in (*KINDS, "unchanged")}
    else:
        columns = WriteCounts.from_run_columns(run)
        counts = {name: getattr(columns, name, 0) for name in (*KINDS, "unchanged")}
        counts["held"] = 0
    started, finished = _utc(run.started_at), _utc(run.finished_at)
    duration = (finished - started).total_seconds() if started and finished else None
    return {
        "id": str(run.id),
        "title": run.title,
        "status": run.status.name if run.status else None,
        "started": started.isoformat() if started else None,
        "finished": finished.isoformat() if finished else None,
        "duration": round(duration, 3) if duration is not None else None,
        **counts,
        "counts_known": isinstance(kept, dict),
    }


def run_history(harvester_id: str, size: int = HISTORY_SIZE) -> list[dict[str, Any]]:
    """The harvester's last `size` runs (of every job of it), the oldest first."""
    size = max(1, min(int(size), MAX_HISTORY_SIZE))
    runs = db.session.scalars(
        runs_query(harvester_id).order_by(Run.created.desc(), Run.id.desc()).limit(size)
    ).all()
    return [run_tally(run) for run in reversed(runs)]
