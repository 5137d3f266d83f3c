"""The runs of harvesters: start one (Run now, re-harvest, command line), list and read them.

Runs are invenio-jobs runs of the harvester's job (`services/jobs.py`); starting one goes
through invenio-jobs' own runs service, as the scheduler does.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from flask import current_app
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_db.uow import ModelCommitOp, UnitOfWork, unit_of_work
from invenio_jobs.models import Job, Run, RunStatusEnum
from invenio_jobs.proxies import current_jobs, current_runs_service
from invenio_jobs.tasks import execute_run
from invenio_records_resources.services.base import LinksTemplate, Service
from invenio_records_resources.services.records.schema import ServiceSchemaWrapper
from marshmallow import ValidationError, validate, validates_schema
from marshmallow import fields as ma_fields

from ..arguments import ADMINISTRATOR_ARGUMENTS, RunArgumentsSchema
from ..harvest.assembly import (
    PurgeNotConfirmed,
    current_settings,
    progress_listener,
    run_harvest,
)
from ..harvest.interrupted import close_interrupted_runs, grace_for
from ..harvest.lock import HarvesterBusy, holder_of
from ..harvest.preview import PreviewReport
from ..harvest.results import ProgressCallback
from ..harvest.window import SinceSource, since_source_of
from ..text import without_traceback
from .access import HarvesterAccessMixin, flatten_messages, is_user, link_args
from .errors import HarvesterValidationError, HarvestRunInProgress, HarvestRunNotFound
from .jobs import active_run, job_of, new_job, runs_query
from .results import SQLItem, SQLList, SQLPage
from .schemas import RunRequestSchema
from .sql import fetch_page, resolve_search_params


@dataclass(frozen=True)
class RunView:
    """What the run schema and the links read of a run: its columns and its harvester."""

    harvester_id: str
    id: uuid.UUID
    job_id: uuid.UUID
    title: str | None
    status: RunStatusEnum | None
    message: str | None
    args: dict[str, Any] | None
    started_by_id: int | None
    created: datetime | None
    started_at: datetime | None
    finished_at: datetime | None
    total_entries: int | None
    inserted_entries: int | None
    updated_entries: int | None
    errored_entries: int | None

    @classmethod
    def of(cls, run: Run, harvester_id: str) -> RunView:
        columns = {f.name: getattr(run, f.name) for f in fields(cls) if f.name != "harvester_id"}
        columns["message"] = without_traceback(columns["message"])
        return cls(harvester_id=harvester_id, **columns)


def dump_run(config: Any, run: Run, harvester_id: str) -> dict[str, Any]:
    return config.run_schema().dump(RunView.of(run, harvester_id))


class HarvestRunService(HarvesterAccessMixin, Service):
    """Runs of harvesters, for every surface; permissions are the harvesters' ones ("run")."""

    def __init__(self, config: Any, jobs_registry_getter: Callable[[], Any] | None = None) -> None:
        super().__init__(config)
        self._jobs_registry = jobs_registry_getter or (lambda: current_jobs.registry)

    def _run_item(self, identity: Any, harvester_id: str, run: Run) -> SQLItem:
        return self.config.run_item_cls(
            self,
            identity,
            RunView.of(run, harvester_id),
            links_tpl=LinksTemplate(self.config.links_run),
            schema=ServiceSchemaWrapper(self, schema=self.config.run_schema),
        )

    @unit_of_work()
    def ensure_job(self, identity: Any, harvester_id: str, *, uow: UnitOfWork = None) -> Job:
        """The harvester's invenio-jobs Job (the scheduled one, if several); created if the
        harvester has none (harvesters stored before jobs were created with them)."""
        harvester = self.get_harvester(identity, harvester_id, "run")
        job = job_of(harvester_id)
        if job is None:
            job = new_job(harvester)
            uow.register(ModelCommitOp(job))
        return job

    def active_run(self, harvester_id: str) -> Run | None:
        """A queued or running run of the harvester's jobs, if there is one."""
        return active_run(harvester_id)

    def start_run(
        self,
        identity: Any,
        harvester_id: str,
        data: dict | None = None,
        *,
        title: str | None = None,
    ) -> SQLItem:
        """Start a run through invenio-jobs ("run now"), as the scheduler would.

        `data`: the run arguments (`RunArgumentsSchema`: ``since`` taken as given, ``full``,
        ``identifiers`` for GetRecord of just these, ``reconcile_only``, ``reindex``, and the
        repairs ``rewrite``, ``force``, ``retry_errors``, ``purge`` that need the right to
        change the harvester) and a ``title``. Refused while another run of the harvester is
        queued or running.
        """
        try:
            request = RunRequestSchema().load(data or {})
        except ValidationError as error:
            self.get_harvester(identity, harvester_id, "run")  # 404/403 before a 400
            raise HarvesterValidationError(flatten_messages(error.messages)) from None
        self.get_harvester(identity, harvester_id, _action_of(request))
        if request.get("purge") and request.get("confirm") != harvester_id:
            raise HarvesterValidationError({"confirm": [str(PurgeNotConfirmed(harvester_id))]})
        job = self.ensure_job(identity, harvester_id)
        active = active_run(harvester_id)
        if active is not None and holder_of(harvester_id, db.engine) is None:
            # Nobody holds the harvester's lock: a RUNNING run is one whose process died (or,
            # where runs wait for each other, one between two polls of the lock).
            settings = current_settings()
            grace = grace_for(settings.wait_for_running, settings.lock_timeout)
            close_interrupted_runs(harvester_id, found_by="Run now", grace=grace)
            active = active_run(harvester_id)
        if active is not None:
            raise HarvestRunInProgress(harvester_id, str(active.id), active.status.name)

        args: dict[str, Any] = {
            "job_arg_schema": "OAIHarvestArgsSchema",
            **_flags(request),
        }
        if request.get("since"):
            args["since"] = request["since"].isoformat()
        if request.get("identifiers"):
            args["identifiers"] = list(request["identifiers"])
        if request.get("confirm"):
            args["confirm"] = request["confirm"]
        run_title = title or request.get("title") or _default_title(request)
        # invenio-jobs lets only administrators start runs; harvest managers may start their
        # harvester's runs, which our own permission check above has allowed. The run is
        # created as the system and then credited to the person who asked for it.
        with UnitOfWork() as uow:
            created = current_runs_service.create(
                system_identity, job.id, {"title": run_title, "args": args}, uow=uow
            )
            run = created._record
            if is_user(identity):
                run.started_by_id = identity.id
            uow.commit()
        db.session.expire_all()  # eager execution (tests, demo) changed the run meanwhile
        return self._run_item(identity, harvester_id, db.session.get(Run, run.id))

    def search_runs(self, identity: Any, harvester_id: str, params: dict | None = None) -> SQLList:
        """The runs of the harvester's jobs, newest first."""
        self.get_harvester(identity, harvester_id)
        options = _RunSearchOptions
        params = resolve_search_params(options, params)
        rows, total = fetch_page(runs_query(harvester_id), Run, options, params)
        return self.result_list(
            self,
            identity,
            SQLPage(rows=rows, total=total),
            params=params,
            links_tpl=LinksTemplate(
                self.config.links_runs_search,
                context={"args": link_args(params), "harvester_id": harvester_id},
            ),
            links_item_tpl=LinksTemplate(self.config.links_run),
            schema=ServiceSchemaWrapper(self, schema=self.config.run_schema),
            prepare=lambda run: RunView.of(run, harvester_id),
        )

    def read_run(self, identity: Any, harvester_id: str, run_id: str | uuid.UUID) -> SQLItem:
        """One run of the harvester's jobs."""
        self.get_harvester(identity, harvester_id)
        try:
            run_uuid = run_id if isinstance(run_id, uuid.UUID) else uuid.UUID(str(run_id))
        except ValueError:
            raise HarvestRunNotFound(harvester_id, str(run_id)) from None
        run = db.session.scalars(runs_query(harvester_id).where(Run.id == run_uuid)).first()
        if run is None:
            raise HarvestRunNotFound(harvester_id, str(run_id))
        return self._run_item(identity, harvester_id, run)

    def purge(self, identity: Any, harvester_id: str, data: dict | None = None) -> SQLItem:
        """Start a purge run: every local record the harvester created is deleted through its
        target service. `data`: ``confirm`` (the harvester's id, typed), ``forget``."""
        data = dict(data or {})
        return self.start_run(
            identity,
            harvester_id,
            {
                "purge": True,
                "confirm": data.get("confirm"),
                "forget": bool(data.get("forget")),
                "title": data.get("title") or "Purge",
            },
        )

    def preview(self, identity: Any, harvester_id: str, data: dict | None = None) -> dict:
        """A dry run now, in this process: what a run with these arguments would create,
        update (with the field changes), delete and fail, committing nothing. Harvest
        managers may preview their harvesters; ``limit`` bounds the records examined."""
        self.get_harvester(identity, harvester_id, "run")
        try:
            request = PreviewRequestSchema().load(data or {})
        except ValidationError as error:
            raise HarvesterValidationError(flatten_messages(error.messages)) from None
        settings = current_settings()
        report = PreviewReport(
            limit=request.get("limit") or current_app.config["OAI_HARVESTER_PREVIEW_LIMIT"],
            max_entries=settings.preview_diffs,
        )
        since = request.get("since")
        try:
            summary = run_harvest(
                harvester_id,
                since=since,
                since_source=since_source_of(since, SinceSource.WATERMARK),
                identifiers=request.get("identifiers") or None,
                preview=report,
                **_flags(request),
            )
        except HarvesterBusy as error:
            active = active_run(harvester_id)
            raise HarvestRunInProgress(
                harvester_id,
                str(active.id) if active else "outside invenio-jobs",
                active.status.name if active else "RUNNING",
            ) from error
        finally:
            db.session.rollback()
        return {
            "harvester": harvester_id,
            **report.as_dict(summary.counts),
            "message": summary.message(),
            "requests": summary.requests,
        }

    def harvest_in_process(
        self,
        identity: Any,
        harvester_id: str,
        arguments: dict[str, Any] | None = None,
        *,
        progress: ProgressCallback | None = None,
        title: str = "Command-line harvest",
        **more_arguments: Any,
    ) -> Run:
        """Run a harvest now, in this process, recorded as a run of the harvester's job.

        `arguments` (and keyword arguments) are the run arguments (`RunArgumentsSchema`),
        checked as those of every other way to start a run. Without `since` or `full` it
        continues from the stored watermark. Batches are written here too, whatever
        OAI_HARVESTER_WRITE_MODE says.
        """
        raw = {**(arguments or {}), **more_arguments}
        if isinstance(raw.get("since"), datetime):
            raw["since"] = raw["since"].isoformat()
        try:
            loaded = RunArgumentsSchema().load(raw)
        except ValidationError as error:
            self.get_harvester(identity, harvester_id, "run")
            raise HarvesterValidationError(flatten_messages(error.messages)) from None
        self.get_harvester(identity, harvester_id, _action_of(loaded))
        if loaded.get("purge") and loaded.get("confirm") != harvester_id:
            raise HarvesterValidationError({"confirm": [str(PurgeNotConfirmed(harvester_id))]})
        since, identifiers = loaded.get("since"), loaded.get("identifiers")
        job = self.ensure_job(identity, harvester_id)
        source = since_source_of(since, SinceSource.WATERMARK)
        run = Run(
            id=uuid.uuid4(),
            task_id=uuid.uuid4(),
            job=job,
            title=title,
            status=RunStatusEnum.QUEUED,
            queue=job.default_queue or current_jobs.default_queue,
            started_by_id=identity.id if is_user(identity) else None,
            args={
                "harvester_id": harvester_id,
                "since": since.isoformat() if since else None,
                "since_source": source.value,
                "identifiers": identifiers or None,
                "confirm": loaded.get("confirm"),
                "write_mode": "local",
                **_flags(loaded),
            },
        )
        db.session.add(run)
        db.session.commit()
        token = progress_listener.set(progress)
        try:
            execute_run.apply(kwargs={"run_id": run.id, "identity_id": str(identity.id)})
        finally:
            progress_listener.reset(token)
        db.session.expire_all()
        return db.session.get(Run, run.id)


def _flags(arguments: dict[str, Any]) -> dict[str, bool]:
    """The boolean run arguments, by their one name."""
    return {
        name: bool(arguments.get(name))
        for name, field in RunArgumentsSchema().fields.items()
        if isinstance(field, ma_fields.Boolean)
    }


def _action_of(arguments: dict[str, Any]) -> str:
    """Repairs (rewrite, force, retry, purge) are for those who may change the harvester;
    a harvest manager may start the other runs of their harvester."""
    return "update" if any(arguments.get(name) for name in ADMINISTRATOR_ARGUMENTS) else "run"


def _default_title(arguments: dict[str, Any]) -> str:
    for name, title in (
        ("purge", "Purge"),
        ("rewrite", "Rewrite from stored XML"),
        ("retry_errors", "Retry failed records"),
        ("reindex", "Reindex"),
    ):
        if arguments.get(name):
            return title
    return "Run now"


class PreviewRequestSchema(RunArgumentsSchema):
    """Body of a preview (`POST .../harvesters/<id>/preview`): run arguments and a limit."""

    limit = ma_fields.Integer(
        load_default=None,
        allow_none=True,
        validate=validate.Range(min=1, max=10000),
        metadata={"description": "Records to examine at most."},
    )

    @validates_schema
    def _previewable(self, data: dict[str, Any], **kwargs: Any) -> None:
        if data.get("purge"):
            raise ValidationError("A purge cannot be previewed.", field_name="purge")
        limit = data.get("limit")
        maximum = current_app.config["OAI_HARVESTER_PREVIEW_MAX_LIMIT"]
        if limit is not None and limit > maximum:
            raise ValidationError(
                f"At most {maximum} records per preview (OAI_HARVESTER_PREVIEW_MAX_LIMIT).",
                field_name="limit",
            )


class _RunSearchOptions:
    sort_options = {
        "newest": {"title": "Newest", "fields": ["-created"]},
        "oldest": {"title": "Oldest", "fields": ["created"]},
    }
    sort_default = "newest"
    sort_default_no_query = "newest"
    default_size = 10
    max_size = 100
