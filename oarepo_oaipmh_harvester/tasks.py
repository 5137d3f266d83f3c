"""Celery tasks: the harvest that invenio-jobs runs, and the writing of one fanned-out batch.

This module may import the engine; the engine never imports it (it receives
:func:`enqueue_batch` as a callable), so there is no import cycle.
"""

from __future__ import annotations

import logging
import signal
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from celery import shared_task
from flask import current_app
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.errors import TaskExecutionPartialError
from invenio_jobs.logging.jobs import EMPTY_JOB_CTX, job_context
from invenio_jobs.models import Run

from .arguments import task_run_request
from .harvest.assembly import interactive_stop, make_writer, run_harvest
from .harvest.counts import describe_error
from .harvest.fanout import WritersOfARun, write_subtask
from .harvest.memory import worker_process_scope
from .harvest.results import RunOutcome
from .harvest.stopping import RunStopped, StopSignal, end_run_aborted, end_run_cancelled
from .run_messages import HarvestFailed
from .signals import harvest_finished

log = logging.getLogger(__name__)


def _current_run_id() -> uuid.UUID | None:
    context = job_context.get()
    if context is EMPTY_JOB_CTX or not context.get("run_id"):
        return None
    return uuid.UUID(str(context["run_id"]))


def _announce(
    harvester_id: str, run_id: uuid.UUID | None, outcome: RunOutcome, summary, error
) -> None:
    try:
        harvest_finished.send(
            current_app._get_current_object(),
            harvester_id=harvester_id,
            run_id=run_id,
            status=outcome.value,
            summary=summary,
            error=error,
        )
    except Exception:  # a report must never hide the run's own outcome
        log.exception("A harvest_finished receiver failed for harvester %s", harvester_id)


@shared_task(ignore_result=True)
def harvest_oaipmh_records(
    harvester_id: str, write_mode: str | None = None, **arguments: Any
) -> dict[str, Any]:
    """Harvest one harvester; invenio-jobs runs it and keeps the run's status.

    `arguments`: the run arguments as invenio-jobs keeps them in the run (the names of
    ``arguments.RunArgumentsSchema``, and ``since_source``).
    """
    run_id = _current_run_id()
    # In a command-line process, Ctrl-C asks for the stop (harvest_in_process sets it).
    stop = StopSignal(run_id, also=interactive_stop.get())
    try:
        # Arguments can arrive past every form (a job's stored custom arguments): the same
        # schema, the identifier cap included, holds here too.
        request = task_run_request(arguments)
        with stop_on_terminate(stop):
            summary = run_harvest(
                harvester_id,
                request,
                run_id=run_id,
                write_mode=write_mode,
                enqueue_batch=enqueue_batch,
                stop=stop,
            )
    except RunStopped as stopped:
        db.session.rollback()
        current_app.logger.warning("Harvester %s: %s", harvester_id, stopped)
        end_run_cancelled(run_id, str(stopped))
        _announce(harvester_id, run_id, RunOutcome.CANCELLED, None, str(stopped))
        return {"harvester_id": harvester_id, "stopped": str(stopped)}
    except Exception as error:
        db.session.rollback()
        described = describe_error(error)
        _announce(harvester_id, run_id, RunOutcome.FAILED, None, described)
        log.warning("Harvester %s failed: %s", harvester_id, described, exc_info=error)
        # invenio-jobs writes the error and its traceback into the run's message; ours says
        # what went wrong, and run_messages cuts the rest.
        raise HarvestFailed(described) from error
    except KeyboardInterrupt as interrupted:  # a second Ctrl-C: the batch in flight goes
        db.session.rollback()
        message = str(interrupted) or (
            "Aborted at once (KeyboardInterrupt): the transaction of the batch in flight was "
            "rolled back, and the watermark did not move."
        )
        end_run_aborted(run_id, message)
        _announce(harvester_id, run_id, RunOutcome.CANCELLED, None, message)
        raise
    if summary.outcome is RunOutcome.PARTIAL_SUCCESS:
        message = summary.message()
        _announce(harvester_id, run_id, summary.outcome, summary, message)
        # The run's errored_entries counter is already up to date (written per batch).
        raise TaskExecutionPartialError(message=message, errored_entries_count=0)
    _announce(harvester_id, run_id, summary.outcome, summary, None)
    return {"harvester_id": harvester_id, "summary": summary.describe()}


@contextmanager
def stop_on_terminate(stop: StopSignal) -> Iterator[None]:
    """In a prefork pool process, SIGTERM stops the run at its next batch.

    Stop in Administration → Jobs revokes the task with terminate, which sends SIGTERM to
    the pool process that runs it; left to its default, the process would raise SystemExit
    wherever the harvest is, halfway through a batch, and invenio-jobs would leave the run
    CANCELLING. Only pool processes are covered: SIGTERM to a worker's main process (solo
    pool, warm shutdown) keeps its meaning.
    """
    from billiard.process import current_process

    in_pool_process = current_process().name.startswith("ForkPoolWorker")
    if not in_pool_process or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(
        signal.SIGTERM, lambda signum, frame: stop.signal("the worker was told to end the task")
    )
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


@shared_task(ignore_result=True)
def harvest_every_active_harvester(**ignored: Any) -> dict[str, Any]:
    """The run-all job (``harvest_oaipmh_all``): every active harvester in turn, each in a
    run of its own job. Its run says which ran and how each ended; it is partial when one
    did not succeed, and stops between two harvesters when it is stopped."""
    from .proxies import current_harvest_runs_service

    run_id = _current_run_id()
    stop = StopSignal(run_id)
    outcomes = current_harvest_runs_service.run_every_active_harvester(
        system_identity,
        title=f"Run of every active harvester ({run_id})" if run_id else "Run-all",
        stop=stop.reason,
    )
    lines = [outcome.describe() for outcome in outcomes]
    message = (
        f"Ran {len(outcomes)} harvester{'' if len(outcomes) == 1 else 's'}: " + "; ".join(lines)
        if outcomes
        else "No active harvester."
    )
    reason = stop.reason()
    if reason:
        end_run_cancelled(run_id, f"Stopped ({reason}) before the next harvester. {message}")
        return {"outcomes": lines}
    if any(outcome.status != "SUCCESS" for outcome in outcomes):
        raise TaskExecutionPartialError(message=message, errored_entries_count=0)
    if run_id is not None:
        db.session.execute(sa.update(Run).where(Run.id == run_id).values(message=message))
        db.session.commit()
    return {"outcomes": lines}


def enqueue_batch(subtask_run_id: str, queue: str | None) -> None:
    """Queue the writing of one batch of a fanned-out run for a Celery worker."""
    options = {"queue": queue} if queue else {}
    write_harvest_batch.apply_async(kwargs={"subtask_run_id": subtask_run_id}, **options)


@shared_task(ignore_result=True, acks_late=True)
def write_harvest_batch(subtask_run_id: str) -> None:
    """Write one batch of a fanned-out run (an invenio-jobs subtask of that run)."""
    request = write_harvest_batch.request
    if request.is_eager or request.called_directly:  # in a caller's process, not a worker's
        write_subtask(uuid.UUID(subtask_run_id), _writers)
    else:
        write_subtask(uuid.UUID(subtask_run_id), _writers, scope=worker_process_scope)


_writers = WritersOfARun(make_writer)
"""This process's writer for the batches of the run it last wrote for."""
