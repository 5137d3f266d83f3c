"""The harvester service: harvesters (CRUD, search) and their runs, for every surface."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from flask import current_app
from invenio_access.permissions import system_identity, system_user_id
from invenio_db import db
from invenio_db.uow import ModelCommitOp, ModelDeleteOp, Operation, UnitOfWork, unit_of_work
from invenio_jobs.models import Job, Run, RunStatusEnum
from invenio_jobs.proxies import current_jobs, current_runs_service
from invenio_jobs.tasks import execute_run
from invenio_records_resources.services.base import LinksTemplate, Service
from invenio_records_resources.services.records.schema import ServiceSchemaWrapper
from marshmallow import ValidationError

from ..harvest.preflight import PreflightError, check_provider
from ..harvest.run import ProgressCallback, progress_listener
from ..harvest.window import SinceSource
from ..jobs import job_type_id
from ..models import OAIHarvestedRecord, OAIHarvester
from .errors import (
    HarvesterAlreadyExists,
    HarvesterNotFound,
    HarvesterValidationError,
    HarvestRunInProgress,
    HarvestRunNotFound,
)
from .results import HarvesterItem, SQLItem, SQLList, SQLPage
from .schemas import RunRequestSchema, apply_defaults
from .sql import contains_all_words, fetch_page, query_words, resolve_search_params

EDITABLE_FIELDS = (
    "name",
    "comment",
    "base_url",
    "metadata_prefix",
    "setspecs",
    "target",
    "transformer",
    "batch_size",
    "harvest_managers",
    "request_delay",
)

PREFLIGHT_FIELDS = ("base_url", "metadata_prefix", "setspecs")
"""Changing one of these asks the provider again (the preflight check)."""

ACTIVE_RUN_STATUSES = (RunStatusEnum.QUEUED, RunStatusEnum.RUNNING)


@dataclass
class HarvesterView:
    """What the schema and the links see of a harvester: the row, its jobs and its last run."""

    model: OAIHarvester
    job: dict[str, Any] | None
    jobs: list[dict[str, Any]]
    last_run: dict[str, Any] | None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


@dataclass
class RunView:
    """A run of a harvester's job, with the harvester it belongs to."""

    run: Run
    harvester_id: str

    def __getattr__(self, name: str) -> Any:
        return getattr(self.run, name)


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


def _new_job(harvester: OAIHarvester) -> Job:
    """The harvester's job: active, not scheduled (an admin gives it a schedule in
    Administration -> Jobs), with the title and description its job type has."""
    return Job(
        title=f"OAI-PMH harvest: {harvester.name}",
        description=f"Harvest {harvester.base_url} into {harvester.target}",
        task=job_type_id(harvester.id),
        active=True,
        default_queue=current_jobs.default_queue,
    )


def _dump_job(job: Job) -> dict[str, Any]:
    return {
        "id": str(job.id),
        "title": job.title,
        "active": job.active,
        "scheduled": bool(job.active and job.schedule),
        "schedule": job.schedule,
        "task": job.task,
    }


def _is_user(identity: Any) -> bool:
    return isinstance(getattr(identity, "id", None), int) and identity.id != system_user_id


class HarvesterService(Service):
    """Harvesters and their runs. Every surface (CLI, REST, administration) goes through here.

    Harvesters live in SQL only: searches are SQL queries. Results are `HarvesterItem`s
    (``.data``, ``.to_dict()``, ``.links``; attribute access falls through to the row).
    """

    def __init__(self, config: Any, jobs_registry_getter: Callable[[], Any] | None = None) -> None:
        super().__init__(config)
        self._schema = ServiceSchemaWrapper(self, schema=config.schema)
        # invenio-jobs' registry is replaced at finalize: look it up on use.
        self._jobs_registry = jobs_registry_getter or (lambda: current_jobs.registry)

    @property
    def schema(self) -> ServiceSchemaWrapper:
        return self._schema

    @property
    def links_item_tpl(self) -> LinksTemplate:
        return LinksTemplate(self.config.links_item)

    # -- access ----------------------------------------------------------------------------
    def _get(self, identity: Any, harvester_id: str, action: str = "read") -> OAIHarvester:
        """The harvester, if `identity` may do `action` on it.

        Callers who may not use the API at all: 403 before any look-up. A harvester they may
        not read: not found, as if it did not exist (names of other harvesters do not leak).
        Readable but not allowed `action`: 403.
        """
        self.require_permission(identity, "use")
        harvester = db.session.get(OAIHarvester, harvester_id)
        if harvester is None or not self.check_permission(identity, "read", harvester=harvester):
            raise HarvesterNotFound(harvester_id)
        if action != "read":
            self.require_permission(identity, action, harvester=harvester)
        return harvester

    def visible_harvester_ids(self, identity: Any) -> list[str] | None:
        """Ids of the harvesters `identity` may read; None means all of them."""
        if self.check_permission(identity, "manage"):
            return None
        return [
            harvester.id
            for harvester in db.session.scalars(db.select(OAIHarvester))
            if self.check_permission(identity, "read", harvester=harvester)
        ]

    # -- projection ------------------------------------------------------------------------
    def _jobs_of(self, harvester_id: str) -> list[Job]:
        """The invenio-jobs jobs of the harvester's task, the scheduled ones first."""
        jobs = db.session.scalars(
            db.select(Job).where(Job.task == job_type_id(harvester_id)).order_by(Job.created)
        ).all()
        return sorted(jobs, key=lambda job: not (job.active and job.schedule))

    def _job_of(self, harvester_id: str) -> Job | None:
        jobs = self._jobs_of(harvester_id)
        return jobs[0] if jobs else None

    def _runs_query(self, harvester_id: str) -> sa.Select:
        return (
            db.select(Run)
            .join(Job, Run.job_id == Job.id)
            .where(Job.task == job_type_id(harvester_id), Run.parent_run_id.is_(None))
        )

    def _dump_run(self, run: Run, harvester_id: str) -> dict[str, Any]:
        return self.config.run_schema().dump(RunView(run, harvester_id))

    def _view(self, harvester: OAIHarvester) -> HarvesterView:
        jobs = [_dump_job(job) for job in self._jobs_of(harvester.id)]
        last_run = db.session.scalars(
            self._runs_query(harvester.id).order_by(Run.created.desc())
        ).first()
        return HarvesterView(
            model=harvester,
            job=jobs[0] if jobs else None,
            jobs=jobs,
            last_run=self._dump_run(last_run, harvester.id) if last_run else None,
        )

    def _item(self, identity: Any, harvester: OAIHarvester) -> HarvesterItem:
        return self.result_item(
            self, identity, self._view(harvester), links_tpl=self.links_item_tpl
        )

    def _run_item(self, identity: Any, harvester_id: str, run: Run) -> SQLItem:
        return self.config.run_item_cls(
            self,
            identity,
            RunView(run, harvester_id),
            links_tpl=LinksTemplate(self.config.links_run),
            schema=ServiceSchemaWrapper(self, schema=self.config.run_schema),
        )

    # -- validation ------------------------------------------------------------------------
    def _load(self, identity: Any, data: dict) -> dict:
        try:
            loaded, _ = self.schema.load(data, context={"identity": identity})
        except ValidationError as error:
            raise HarvesterValidationError(_flatten(error.messages)) from None
        return apply_defaults(loaded)

    def _preflight(self, loaded: dict, check: bool | None) -> None:
        """Ask the provider whether it can serve this configuration; refuse it if not."""
        if check is None:
            check = current_app.config["OAI_HARVESTER_PREFLIGHT_CHECK"]
        if not check:
            return
        try:
            check_provider(loaded["base_url"], loaded["metadata_prefix"], loaded["setspecs"])
        except PreflightError as error:
            raise HarvesterValidationError(error.errors) from None

    # -- harvesters ------------------------------------------------------------------------
    def read(self, identity: Any, harvester_id: str) -> HarvesterItem:
        return self._item(identity, self._get(identity, harvester_id))

    def search(self, identity: Any, params: dict | None = None, **kwargs: Any) -> SQLList:
        """Harvesters `identity` may see; `q` matches id, name and base URL."""
        self.require_permission(identity, "search")
        options = self.config.search
        params = resolve_search_params(options, params)
        query = db.select(OAIHarvester)
        visible = self.visible_harvester_ids(identity)
        if visible is not None:
            query = query.where(OAIHarvester.id.in_(visible))
        words = query_words(params["q"])
        if words:
            query = query.where(
                contains_all_words(
                    [OAIHarvester.id, OAIHarvester.name, OAIHarvester.base_url], words
                )
            )
        rows, total = fetch_page(query, OAIHarvester, options, params)
        return self.result_list(
            self,
            identity,
            SQLPage(rows=rows, total=total),
            params=params,
            links_tpl=LinksTemplate(self.config.links_search, context={"args": _link_args(params)}),
            links_item_tpl=self.links_item_tpl,
            prepare=self._view,
        )

    def list(self, identity: Any) -> list[HarvesterItem]:
        """Every harvester `identity` may see, by id (no paging)."""
        self.require_permission(identity, "search")
        query = db.select(OAIHarvester).order_by(OAIHarvester.id)
        visible = self.visible_harvester_ids(identity)
        if visible is not None:
            query = query.where(OAIHarvester.id.in_(visible))
        return [self._item(identity, harvester) for harvester in db.session.scalars(query)]

    @unit_of_work()
    def create(
        self, identity: Any, data: dict, *, check: bool | None = None, uow: UnitOfWork = None
    ) -> HarvesterItem:
        """Validate, ask the provider (unless `check` is False) and store a new harvester.

        Its invenio-jobs job type is registered after the commit.
        """
        self.require_permission(identity, "create")
        loaded = self._load(identity, data)
        if db.session.get(OAIHarvester, loaded["id"]) is not None:
            raise HarvesterAlreadyExists(loaded["id"])
        self._preflight(loaded, check)
        harvester = OAIHarvester(**loaded)
        uow.register(ModelCommitOp(harvester))
        # The job exists from the start, so that an admin schedules this one in
        # Administration -> Jobs rather than creating a second one.
        uow.register(ModelCommitOp(_new_job(harvester)))
        uow.register(RegisterJobTypeOp(self._jobs_registry, harvester))
        return self._item(identity, harvester)

    @unit_of_work()
    def update(
        self,
        identity: Any,
        harvester_id: str,
        data: dict,
        *,
        check: bool | None = None,
        uow: UnitOfWork = None,
    ) -> HarvesterItem:
        """Change the fields given; the others keep their value. The id cannot change.

        The provider is asked again only when the endpoint, the prefix or the sets change.
        """
        harvester = self._get(identity, harvester_id, "update")
        if not isinstance(data, dict):
            raise HarvesterValidationError({"_schema": ["Send the fields to change as an object."]})
        if "id" in data and data["id"] != harvester_id:
            raise HarvesterValidationError({"id": ["The id of a harvester cannot change."]})
        current = {name: getattr(harvester, name) for name in EDITABLE_FIELDS}
        merged = {**current, **{k: v for k, v in data.items() if k != "id"}}
        loaded = self._load(identity, {**merged, "id": harvester_id})
        if any(loaded[name] != current[name] for name in PREFLIGHT_FIELDS):
            self._preflight(loaded, check)
        for name in EDITABLE_FIELDS:
            setattr(harvester, name, loaded[name])
        uow.register(ModelCommitOp(harvester))
        # The job type carries the name and URL in its title and description.
        uow.register(RegisterJobTypeOp(self._jobs_registry, harvester))
        return self._item(identity, harvester)

    @unit_of_work()
    def delete(self, identity: Any, harvester_id: str, *, uow: UnitOfWork = None) -> bool:
        """Delete the harvester, its tracking rows and its invenio-jobs jobs and runs.

        Local records it created stay: removing a source is not a reason to lose data.
        """
        harvester = self._get(identity, harvester_id, "delete")
        job_ids = list(
            db.session.scalars(db.select(Job.id).where(Job.task == job_type_id(harvester_id)))
        )
        if job_ids:
            db.session.execute(db.delete(Run).where(Run.job_id.in_(job_ids)))
            db.session.execute(db.delete(Job).where(Job.id.in_(job_ids)))
        # Explicit, not only ON DELETE CASCADE: SQLite does not enforce foreign keys by default.
        db.session.execute(
            db.delete(OAIHarvestedRecord).where(OAIHarvestedRecord.harvester_id == harvester_id)
        )
        uow.register(ModelDeleteOp(harvester))
        uow.register(UnregisterJobTypeOp(self._jobs_registry, harvester_id))
        return True

    # -- runs ------------------------------------------------------------------------------
    @unit_of_work()
    def ensure_job(self, identity: Any, harvester_id: str, *, uow: UnitOfWork = None) -> Job:
        """The harvester's invenio-jobs Job (the scheduled one, if several); created if the
        harvester has none (harvesters stored before jobs were created with them)."""
        harvester = self._get(identity, harvester_id, "run")
        job = self._job_of(harvester_id)
        if job is None:
            job = _new_job(harvester)
            uow.register(ModelCommitOp(job))
        return job

    def active_run(self, harvester_id: str) -> Run | None:
        """A queued or running run of the harvester's jobs, if there is one."""
        return db.session.scalars(
            self._runs_query(harvester_id)
            .where(Run.status.in_(ACTIVE_RUN_STATUSES))
            .order_by(Run.created.desc())
        ).first()

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
        ``identifiers`` for GetRecord of just these, ``reconcile_only``) and a ``title``. Refused while another run of the harvester is queued or running.
        """
        self._get(identity, harvester_id, "run")
        try:
            request = RunRequestSchema().load(data or {})
        except ValidationError as error:
            raise HarvesterValidationError(_flatten(error.messages)) from None
        job = self.ensure_job(identity, harvester_id)
        active = self.active_run(harvester_id)
        if active is not None:
            raise HarvestRunInProgress(harvester_id, str(active.id), active.status.name)

        args: dict[str, Any] = {
            "job_arg_schema": "OAIHarvestArgsSchema",
            "full": request["full"],
            "reconcile_only": request["reconcile_only"],
        }
        if request.get("since"):
            args["since"] = request["since"].isoformat()
        if request.get("identifiers"):
            args["identifiers"] = list(request["identifiers"])
        run_title = title or request.get("title") or "Run now"
        # invenio-jobs lets only administrators start runs; harvest managers may start their
        # harvester's runs, which our own permission check above has allowed. The run is
        # created as the system and then credited to the person who asked for it.
        with UnitOfWork() as uow:
            created = current_runs_service.create(
                system_identity, job.id, {"title": run_title, "args": args}, uow=uow
            )
            run = created._record
            if _is_user(identity):
                run.started_by_id = identity.id
            uow.commit()
        db.session.expire_all()  # eager execution (tests, demo) changed the run meanwhile
        return self._run_item(identity, harvester_id, db.session.get(Run, run.id))

    def search_runs(self, identity: Any, harvester_id: str, params: dict | None = None) -> SQLList:
        """The runs of the harvester's jobs, newest first."""
        self._get(identity, harvester_id)
        options = _RunSearchOptions
        params = resolve_search_params(options, params)
        rows, total = fetch_page(self._runs_query(harvester_id), Run, options, params)
        return self.result_list(
            self,
            identity,
            SQLPage(rows=rows, total=total),
            params=params,
            links_tpl=LinksTemplate(
                self.config.links_runs_search,
                context={"args": _link_args(params), "harvester_id": harvester_id},
            ),
            links_item_tpl=LinksTemplate(self.config.links_run),
            schema=ServiceSchemaWrapper(self, schema=self.config.run_schema),
            prepare=lambda run: RunView(run, harvester_id),
        )

    def read_run(self, identity: Any, harvester_id: str, run_id: str | uuid.UUID) -> SQLItem:
        """One run of the harvester's jobs."""
        self._get(identity, harvester_id)
        try:
            run_uuid = run_id if isinstance(run_id, uuid.UUID) else uuid.UUID(str(run_id))
        except ValueError:
            raise HarvestRunNotFound(harvester_id, str(run_id)) from None
        run = db.session.scalars(self._runs_query(harvester_id).where(Run.id == run_uuid)).first()
        if run is None:
            raise HarvestRunNotFound(harvester_id, str(run_id))
        return self._run_item(identity, harvester_id, run)

    def harvest_in_process(
        self,
        identity: Any,
        harvester_id: str,
        *,
        since: datetime | None = None,
        full: bool = False,
        identifiers: list[str] | None = None,
        progress: ProgressCallback | None = None,
        reconcile_only: bool = False,
    ) -> Run:
        """Run a harvest now, in this process, recorded as a run of the harvester's job.

        Without `since` or `full` it continues from the stored watermark. Batches are
        written here too, whatever OAI_HARVESTER_WRITE_MODE says.
        """
        job = self.ensure_job(identity, harvester_id)
        source = SinceSource.MANUAL if since else SinceSource.WATERMARK
        run = Run(
            id=uuid.uuid4(),
            task_id=uuid.uuid4(),
            job=job,
            title="Command-line harvest",
            status=RunStatusEnum.QUEUED,
            queue=job.default_queue or current_jobs.default_queue,
            started_by_id=identity.id if _is_user(identity) else None,
            args={
                "harvester_id": harvester_id,
                "since": since.isoformat() if since else None,
                "since_source": source.value,
                "full": full,
                "identifiers": identifiers or None,
                "reconcile_only": reconcile_only,
                "write_mode": "local",
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

    def tracked_records(
        self, identity: Any, harvester_id: str, *, errors_only: bool = False
    ) -> Iterator[OAIHarvestedRecord]:
        """The tracking rows of a harvester, by identifier (streamed, for the command line)."""
        self._get(identity, harvester_id)
        query = (
            db.select(OAIHarvestedRecord)
            .where(OAIHarvestedRecord.harvester_id == harvester_id)
            .order_by(OAIHarvestedRecord.oai_identifier)
        )
        if errors_only:
            query = query.where(OAIHarvestedRecord.errors.is_not(None))
        yield from db.session.scalars(query.execution_options(yield_per=1000))


class _RunSearchOptions:
    sort_options = {
        "newest": {"title": "Newest", "fields": ["-created"]},
        "oldest": {"title": "Oldest", "fields": ["created"]},
    }
    sort_default = "newest"
    sort_default_no_query = "newest"
    default_size = 10
    max_size = 100


def _link_args(params: dict[str, Any]) -> dict[str, Any]:
    """Query arguments repeated in the search links (defaults dropped)."""
    return {k: v for k, v in params.items() if v not in (None, "", [], {}) and k != "facets"}


def _flatten(messages: Any, prefix: str = "") -> dict[str, list[str]]:
    flat: dict[str, list[str]] = {}
    if isinstance(messages, dict):
        for key, value in messages.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, dict):
                flat.update(_flatten(value, name))
            else:
                flat[name] = [str(v) for v in (value if isinstance(value, list) else [value])]
    else:
        flat[prefix or "_schema"] = [str(messages)]
    return flat
