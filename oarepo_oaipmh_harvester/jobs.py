"""invenio-jobs job types: one per harvester, so that each can be scheduled on its own.

The job id format lives here only.
"""

from __future__ import annotations

import logging
from typing import Any

from invenio_db import db
from invenio_jobs.jobs import JobType, PredefinedArgsSchema
from invenio_jobs.registry import JobsRegistry
from marshmallow import fields
from sqlalchemy.exc import SQLAlchemyError

from .arguments import RUN_ARGUMENT_NAMES, RunArgumentsSchema, check_task_arguments
from .harvest.window import SinceSource, since_source_of
from .models import OAIHarvester
from .tasks import harvest_every_active_harvester, harvest_oaipmh_records

log = logging.getLogger(__name__)

JOB_ID_PREFIX = "harvest_oaipmh_records_"


def job_type_id(harvester_id: str) -> str:
    """The invenio-jobs task id of a harvester's job type."""
    return f"{JOB_ID_PREFIX}{harvester_id}"


def harvester_id_of(job_id: str) -> str | None:
    """The harvester id encoded in a job type id, or None for other job types."""
    return job_id[len(JOB_ID_PREFIX) :] if job_id.startswith(JOB_ID_PREFIX) else None


class OAIHarvestArgsSchema(RunArgumentsSchema, PredefinedArgsSchema):
    """The run arguments (`RunArgumentsSchema`) as invenio-jobs' run form and scheduler see them."""

    job_arg_schema = fields.String(
        metadata={"type": "hidden"},
        dump_default="OAIHarvestArgsSchema",
        load_default="OAIHarvestArgsSchema",
    )


class _HarvestTask:
    """The Celery task, looked up on access.

    A task proxy in a class body is evaluated by ABCMeta (it probes every attribute for
    `__isabstractmethod__`), which finalizes the Celery app before flask-celeryext installs
    its app-context task class: every task of the instance would then run without a Flask
    app context in workers.
    """

    __isabstractmethod__ = False

    def __get__(self, instance: Any, owner: Any) -> Any:
        return harvest_oaipmh_records


class OAIHarvestJob(JobType):
    """Harvest one OAI-PMH harvester; subclassed per harvester by `job_type_for`."""

    harvester_id: str | None = None
    task = _HarvestTask()
    arguments_schema = OAIHarvestArgsSchema

    @classmethod
    def build_task_arguments(
        cls,
        job_obj: Any,
        since: Any = None,
        identifiers: list[str] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        """Arguments of `harvest_oaipmh_records`: every run argument, by its one name."""
        arguments: dict[str, Any] = {"harvester_id": cls.harvester_id, "since": since}
        arguments["identifiers"] = list(identifiers) if identifiers else None
        for name in RUN_ARGUMENT_NAMES:
            if name in ("since", "identifiers"):
                continue
            value = kwargs.get(name)
            if name == "undo":
                arguments[name] = str(value) if value else None
            else:
                arguments[name] = value if name == "confirm" else bool(value)
        return arguments

    @classmethod
    def _build_task_arguments(
        cls,
        job_obj: Any,
        since: Any = None,
        custom_args: dict | None = None,
        since_source: str | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        # invenio-jobs fills `since` itself when nobody typed one; remember which it was,
        # because only an automatic `since` may be moved back to the watermark. The
        # scheduler feeds arguments built here back in: their `since_source` is kept.
        if custom_args:
            # Typed as JSON by an administrator, past the run form's schema: checked here.
            check_task_arguments(custom_args)
            return {**custom_args, "harvester_id": cls.harvester_id}
        if since_source is None:
            since_source = since_source_of(since, SinceSource.LAST_SUCCESS).value
        arguments = super()._build_task_arguments(job_obj, since=since, **kwargs)
        arguments["since_source"] = since_source
        return arguments


class _RunAllTask:
    """The run-all Celery task, looked up on access (see `_HarvestTask`)."""

    __isabstractmethod__ = False

    def __get__(self, instance: Any, owner: Any) -> Any:
        return harvest_every_active_harvester


class HarvestAllJob(JobType):
    """Every active harvester in turn, each with its own run and watermark (a paused
    harvester is left out); one that fails does not stop the others."""

    id = "harvest_oaipmh_all"
    title = "OAI-PMH: harvest every active harvester (harvest_oaipmh_all)"
    description = "Run each active OAI-PMH harvester in turn, each in a run of its own job."
    task = _RunAllTask()

    @classmethod
    def build_task_arguments(cls, job_obj: Any, since: Any = None, **kwargs: Any) -> dict:
        # Each harvester's own run reckons its window from its own watermark.
        return {}


def job_type_for(harvester: OAIHarvester) -> type[OAIHarvestJob]:
    """A job type class bound to one harvester."""
    return type(
        f"OAIHarvestJob_{harvester.id}",
        (OAIHarvestJob,),
        {
            "id": job_type_id(harvester.id),
            "harvester_id": harvester.id,
            # Admins choose the task by this title in Administration -> Jobs: show the name
            # and the id that the README and the harvester's page speak of.
            "title": f"OAI-PMH harvest: {harvester.name} ({job_type_id(harvester.id)})",
            "description": f"Harvest {harvester.base_url} into {harvester.target}",
        },
    )


class HarvesterJobsRegistry(JobsRegistry):
    """invenio-jobs' registry, kept in step with the harvesters in the database.

    A harvester created in one process (a web worker) must be runnable in every other
    (other web workers, Celery workers) without a restart, so look-ups of harvest job ids
    fall back to the database, and listings add and drop harvester job types as needed.
    """

    def __init__(self, registered: dict[str, Any] | None = None) -> None:
        super().__init__()
        self._jobs.update(registered or {})

    def register_harvester(self, harvester: OAIHarvester) -> type[OAIHarvestJob]:
        job_type = job_type_for(harvester)
        self._jobs[job_type.id] = job_type  # replaces: name or URL may have changed
        return job_type

    def unregister_harvester(self, harvester_id: str) -> None:
        self._jobs.pop(job_type_id(harvester_id), None)

    def get(self, job_id: str) -> Any:
        """The job type; harvester job types missing here are looked up in the database."""
        harvester_id = harvester_id_of(job_id)
        if harvester_id is not None:
            harvester = _query_harvesters(harvester_id)
            if harvester:
                return self.register_harvester(harvester[0])
            self.unregister_harvester(harvester_id)
        return super().get(job_id)

    def get_all(self) -> dict[str, Any]:
        """All job types, with harvester job types synchronised from the database."""
        harvesters = _query_harvesters()
        if harvesters is not None:
            stored = {job_type_id(h.id) for h in harvesters}
            for job_id in [j for j in self._jobs if harvester_id_of(j) and j not in stored]:
                del self._jobs[job_id]
            for harvester in harvesters:
                self.register_harvester(harvester)
        return super().get_all()

    @property
    def schemas(self) -> dict[str, Any]:
        # The run form needs our schema even before the first harvester exists here.
        return {**super().schemas, OAIHarvestArgsSchema.__name__: OAIHarvestArgsSchema}


def _query_harvesters(harvester_id: str | None = None) -> list[OAIHarvester] | None:
    """Stored harvesters (one or all); None when the table cannot be read (not created yet)."""
    query = db.select(OAIHarvester)
    if harvester_id is not None:
        query = query.where(OAIHarvester.id == harvester_id)
    try:
        with db.session.begin_nested():  # a failure must not poison the caller's transaction
            return list(db.session.scalars(query))
    except SQLAlchemyError as error:
        log.debug("Harvester job types not synchronised: %s", error)
        return None
