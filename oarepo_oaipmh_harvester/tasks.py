"""Celery tasks."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from celery import shared_task
from invenio_jobs.errors import TaskExecutionPartialError
from invenio_jobs.logging.jobs import EMPTY_JOB_CTX, job_context

from .harvest.run import run_harvest
from .harvest.window import SinceSource


def _current_run_id() -> uuid.UUID | None:
    context = job_context.get()
    if context is EMPTY_JOB_CTX or not context.get("run_id"):
        return None
    return uuid.UUID(str(context["run_id"]))


def _parse_since(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


@shared_task(ignore_result=True)
def harvest_oaipmh_records(
    harvester_id: str,
    since: str | None = None,
    since_source: str = SinceSource.LAST_SUCCESS.value,
    full: bool = False,
    oai_ids: list[str] | None = None,
) -> dict[str, Any]:
    """Harvest one harvester; invenio-jobs runs it and keeps the run's status."""
    summary = run_harvest(
        harvester_id,
        since=_parse_since(since),
        since_source=SinceSource(since_source),
        full=bool(full),
        identifiers=oai_ids or None,
        run_id=_current_run_id(),
    )
    if not summary.succeeded:
        first = "; ".join(f"{oai_id}: {error}" for oai_id, error in summary.counts.failures[:5])
        # The run's errored_entries counter is already up to date (written per batch).
        raise TaskExecutionPartialError(
            message=(
                f"{summary.counts.failed} of {summary.counts.total} records failed "
                f"({summary.describe()}). First failures: {first}"
            ),
            errored_entries_count=0,
        )
    return {"harvester_id": harvester_id, "summary": summary.describe()}
