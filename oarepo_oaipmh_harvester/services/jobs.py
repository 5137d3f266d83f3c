"""A harvester's invenio-jobs jobs and runs, as the services read and create them.

The job type id format lives in `oarepo_oaipmh_harvester.jobs`; this module owns which Job rows
belong to a harvester, which of them is "its" job, and how a new one looks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from invenio_db import db
from invenio_db.uow import Operation, UnitOfWork
from invenio_jobs.models import Job, Run, RunStatusEnum
from invenio_jobs.proxies import current_jobs
from marshmallow import fields

from ..jobs import job_type_id
from ..models import OAIHarvester

ACTIVE_RUN_STATUSES = (RunStatusEnum.QUEUED, RunStatusEnum.RUNNING)


def jobs_of(harvester_id: str) -> list[Job]:
    """The invenio-jobs jobs of the harvester's task, the scheduled ones first."""
    jobs = db.session.scalars(
        db.select(Job).where(Job.task == job_type_id(harvester_id)).order_by(Job.created)
    ).all()
    return sorted(jobs, key=lambda job: not (job.active and job.schedule))


def job_of(harvester_id: str) -> Job | None:
    """The harvester's job: its scheduled one if any, else its oldest."""
    jobs = jobs_of(harvester_id)
    return jobs[0] if jobs else None


def new_job(harvester: OAIHarvester) -> Job:
    """The harvester's job: active, not scheduled (an admin gives it a schedule in
    Administration -> Jobs), with the title and description its job type has."""
    return Job(
        title=f"OAI-PMH harvest: {harvester.name}",
        description=f"Harvest {harvester.base_url} into {harvester.target}",
        task=job_type_id(harvester.id),
        active=True,
        default_queue=current_jobs.default_queue,
    )


def dump_job(job: Job) -> dict[str, Any]:
    last_run = job.last_run
    next_run = next_run_at(
        job.schedule if job.active else None,
        last_run_created=last_run.created if last_run else None,
        scheduled_at=job.updated,
    )
    return {
        "id": str(job.id),
        "title": job.title,
        "active": job.active,
        "scheduled": bool(job.active and job.schedule),
        "schedule": job.schedule,
        "next_run": next_run.isoformat() if next_run else None,
        "task": job.task,
    }


def next_run_at(
    schedule: Mapping[str, Any] | None,
    *,
    last_run_created: datetime | None,
    scheduled_at: datetime | None,
    now: datetime | None = None,
) -> datetime | None:
    """When invenio-jobs' scheduler (celery beat) starts the job next, as it reckons it: one
    interval after the last run was created, or, for a job that never ran, after the
    schedule was set (when beat took the job up); the next crontab match otherwise."""
    if not schedule:
        return None
    now = now or datetime.now(UTC)
    last = _utc(last_run_created or scheduled_at or now)
    parts = {key: value for key, value in schedule.items() if key != "type"}
    if schedule.get("type") == "interval":
        due = last + timedelta(**parts)
    else:
        from celery.schedules import crontab

        schedule = crontab(**parts)
        # Its remaining time counts from its own clock, read again inside: to the minute,
        # which is all a crontab names.
        due = _utc(schedule.now()) + schedule.remaining_estimate(last) + timedelta(seconds=30)
        due = due.replace(second=0, microsecond=0)
    return max(due, now)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def next_run_of_dumped_job(job: Mapping[str, Any]) -> datetime | None:
    """`next_run` of a job as invenio-jobs dumps it (its columns, and its last run as a
    dictionary for one job or as the row itself in a list of jobs)."""
    last_run = job.get("last_run") or {}
    last_created = last_run.get("created") if isinstance(last_run, Mapping) else last_run.created
    return next_run_at(
        job.get("schedule") if job.get("active") else None,
        last_run_created=_parsed(last_created),
        scheduled_at=_parsed(job.get("updated")),
    )


class NextRunField(fields.DateTime):
    """A job's next run, computed from the job (the administration panel draws a DateTime:
    its form and list builders know no computed field types)."""

    def get_value(self, obj: Any, attr: str, accessor: Any = None, default: Any = None) -> Any:
        return next_run_of_dumped_job(obj)


def _parsed(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


def show_next_runs_on_the_jobs_page() -> None:
    """Administration → Jobs shows each job's `next_run`, which invenio-jobs 11's JobSchema
    does not dump ("Next run: -" for every scheduled job); it is added where missing."""
    from invenio_jobs.services.schema import JobSchema

    if "next_run" not in JobSchema._declared_fields:
        JobSchema._declared_fields["next_run"] = NextRunField(dump_only=True)


def runs_query(harvester_id: str) -> sa.Select:
    """The top-level runs (not fan-out subtasks) of the harvester's jobs."""
    return (
        db.select(Run)
        .join(Job, Run.job_id == Job.id)
        .where(Job.task == job_type_id(harvester_id), Run.parent_run_id.is_(None))
    )


def active_run(harvester_id: str) -> Run | None:
    """A queued or running run of the harvester's jobs, if there is one."""
    return db.session.scalars(
        runs_query(harvester_id)
        .where(Run.status.in_(ACTIVE_RUN_STATUSES))
        .order_by(Run.created.desc())
    ).first()


def last_successful_harvest(harvester_id: str) -> datetime | None:
    """When the harvester's last successful run ended."""
    return db.session.scalar(
        sa.select(sa.func.max(Run.finished_at)).where(
            Run.id.in_(
                runs_query(harvester_id)
                .where(Run.status == RunStatusEnum.SUCCESS)
                .with_only_columns(Run.id)
            )
        )
    )


def lock_holding_run(harvester_id: str) -> Run | None:
    """The run that holds the harvester's lock, when its lock is known to be held: a running
    run before a queued one (a queued run may be about to take the lock), newest first."""
    running_first = sa.case((Run.status == RunStatusEnum.RUNNING, 0), else_=1)
    return db.session.scalars(
        runs_query(harvester_id)
        .where(Run.status.in_(ACTIVE_RUN_STATUSES))
        .order_by(running_first, Run.created.desc())
    ).first()


def delete_jobs_of(harvester_id: str) -> None:
    """Delete the harvester's jobs and their runs (in the caller's transaction)."""
    job_ids = list(
        db.session.scalars(db.select(Job.id).where(Job.task == job_type_id(harvester_id)))
    )
    if job_ids:
        db.session.execute(db.delete(Run).where(Run.job_id.in_(job_ids)))
        db.session.execute(db.delete(Job).where(Job.id.in_(job_ids)))


class RegisterJobTypeOp(Operation):
    """After the commit: make the harvester's job type known to invenio-jobs in this process."""

    def __init__(self, registry_getter: Callable[[], Any], harvester: OAIHarvester) -> None:
        self._registry_getter = registry_getter
        self._harvester = harvester

    def on_post_commit(self, uow: UnitOfWork) -> None:
        self._registry_getter().register_harvester(self._harvester)


class UnregisterJobTypeOp(Operation):
    """After the commit: forget the deleted harvester's job type."""

    def __init__(self, registry_getter: Callable[[], Any], harvester_id: str) -> None:
        self._registry_getter = registry_getter
        self._harvester_id = harvester_id

    def on_post_commit(self, uow: UnitOfWork) -> None:
        self._registry_getter().unregister_harvester(self._harvester_id)
