"""The messages our jobs' runs leave in Administration → Jobs: a sentence or two, no traceback.

Decision owned here: invenio-jobs writes ``<class>: <error>`` and the Python traceback into the
message of a run whose task raised anything but its own partial-success error; for the runs of
the harvester's jobs (a harvester's own, the run-all job, direct or under run-all) the
traceback is cut off before the run is saved. Our task raises :class:`HarvestFailed` with the
failure in words (``harvest.counts.describe_error``), and its class name is cut off too: the
message is what went wrong; the traceback goes to the application's log.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from invenio_jobs.models import Job, Run

from .text import TRACEBACK_HEADER, without_traceback

OUR_JOB_TYPES = "harvest_oaipmh_"
"""What the ids of our job types begin with: each harvester's (``harvest_oaipmh_records_<id>``)
and the run-all job's (``harvest_oaipmh_all``). Not imported from .jobs, which imports the
tasks, which import this."""


class HarvestFailed(Exception):
    """A harvest ended with an error: its message is the failure in one or two sentences."""


def _is_ours(run: Run, connection: Any) -> bool:
    # Asked on the flush's own connection: loading run.job here would load inside the flush.
    task = connection.scalar(sa.select(Job.task).where(Job.id == run.job_id)) or ""
    return task.startswith(OUR_JOB_TYPES)


def _cut_traceback(mapper: Any, connection: Any, run: Run) -> None:
    message = run.message
    if message and TRACEBACK_HEADER in message and _is_ours(run, connection):
        message = without_traceback(message) or ""
        run.message = message.removeprefix(f"{HarvestFailed.__name__}: ")


def keep_run_messages_short() -> None:
    """Cut the traceback off the messages of our jobs' runs (once per process)."""
    for event in ("before_insert", "before_update"):
        if not sa.event.contains(Run, event, _cut_traceback):
            sa.event.listen(Run, event, _cut_traceback)
