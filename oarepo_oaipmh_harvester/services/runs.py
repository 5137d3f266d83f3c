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

from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_db.uow import ModelCommitOp, UnitOfWork, unit_of_work
from invenio_jobs.models import Job, Run, RunStatusEnum
from invenio_jobs.proxies import current_jobs, current_runs_service
from invenio_jobs.tasks import execute_run
from invenio_records_resources.services.base import LinksTemplate
from marshmallow import ValidationError

from ..arguments import run_request
from ..harvest.assembly import (
    PurgeNotConfirmed,
    current_settings,
    interactive_stop,
    progress_listener,
    run_harvest,
)
from ..harvest.interrupted import close_interrupted_runs, grace_for
from ..harvest.lock import HarvesterBusy, holder_of
from ..harvest.preview import PreviewReport
from ..harvest.request import RunKind, RunRequest
from ..harvest.results import ProgressCallback
from ..harvest.stopping import end_run_unstarted
from ..harvest.window import SinceSource, since_source_of
from ..models import OAIHarvester
from ..text import without_traceback
from .access import HarvesterAccessMixin, flatten_messages, is_user, link_args
from .base import SQLService
from .errors import (
    HarvesterValidationError,
    HarvestRunInProgress,
    HarvestRunNotFound,
    required_mapping,
)
from .jobs import active_run, job_of, new_job, runs_query
from .results import SQLItem, SQLList, SQLPage
from .run_history import HISTORY_SIZE, run_history
from .run_schemas import HarvestRunSchema, PreviewRequestSchema, RunRequestSchema
from .sql import fetch_page, resolve_search_params
from .undo import check_undoable


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


def dump_run(run: Run, harvester_id: str) -> dict[str, Any]:
    return HarvestRunSchema().dump(RunView.of(run, harvester_id))


class HarvestRunService(HarvesterAccessMixin, SQLService):
    """Runs of harvesters, for every surface; permissions are the harvesters' ones ("run")."""

    def __init__(self, config: Any, jobs_registry_getter: Callable[[], Any] | None = None) -> None:
        super().__init__(config)
        self._jobs_registry = jobs_registry_getter or (lambda: current_jobs.registry)

    def _run_item(self, identity: Any, harvester_id: str, run: Run) -> SQLItem:
        return self.config.result_item_cls(
            self,
            identity,
            RunView.of(run, harvester_id),
            links_tpl=self.links_item_tpl,
            schema=self.schema,
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
        change the harvester) and a ``title``; None is none of them. Refused while another run
        of the harvester is queued or running.
        """
        if data is not None and not isinstance(data, dict):
            self.get_harvester(identity, harvester_id, "run")  # 404/403 before a 400
            required_mapping(data, RUN_ARGUMENTS_WANTED)
        try:
            loaded = RunRequestSchema().load(data or {})
        except ValidationError as error:
            self.get_harvester(identity, harvester_id, "run")  # 404/403 before a 400
            raise HarvesterValidationError(flatten_messages(error.messages)) from None
        request = RunRequest.from_arguments(
            loaded, since_source_of(loaded.get("since"), SinceSource.LAST_SUCCESS)
        )
        self.get_harvester(identity, harvester_id, _action_of(request))
        if request.kind is RunKind.PURGE and request.confirm != harvester_id:
            raise HarvesterValidationError({"confirm": [str(PurgeNotConfirmed(harvester_id))]})
        if request.kind is RunKind.UNDO:
            check_undoable(harvester_id, request.undo)
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

        # What the job type's arguments schema loads (invenio-jobs checks them again).
        given = {key: value for key, value in request.arguments().items() if value}
        args: dict[str, Any] = {"job_arg_schema": "OAIHarvestArgsSchema", **given}
        run_title = title or loaded.get("title") or _default_title(request)
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
                self.config.links_search,
                context={"args": link_args(params), "harvester_id": harvester_id},
            ),
            links_item_tpl=self.links_item_tpl,
            schema=self.schema,
            prepare=lambda run: RunView.of(run, harvester_id),
        )

    def run_history(
        self, identity: Any, harvester_id: str, size: int | None = None
    ) -> dict[str, Any]:
        """The harvester's last `size` runs in numbers, the oldest first (`run_history`)."""
        self.get_harvester(identity, harvester_id)
        runs = run_history(harvester_id, size or HISTORY_SIZE)
        return {"harvester_id": harvester_id, "runs": runs}

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
        if data is not None and not isinstance(data, dict):
            self.get_harvester(identity, harvester_id, "update")  # 404/403 before a 400
            required_mapping(data, '{"confirm": "<the harvester\'s id>"}')
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
        if data is not None:
            required_mapping(data, 'the preview\'s arguments ({"limit": 10}, say), or no body')
        try:
            request = PreviewRequestSchema().load(data or {})
        except ValidationError as error:
            raise HarvesterValidationError(flatten_messages(error.messages)) from None
        settings = current_settings()
        report = PreviewReport(
            limit=request.get("limit") or settings.preview_limit,
            max_entries=settings.preview_diffs,
        )
        arguments = {key: value for key, value in request.items() if key != "limit"}
        try:
            summary = run_harvest(
                harvester_id,
                RunRequest.from_arguments(
                    arguments, since_source_of(arguments.get("since"), SinceSource.WATERMARK)
                ),
                dry_run=report,
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

    def run_every_active_harvester(
        self,
        identity: Any,
        *,
        title: str = "Run of every active harvester",
        stop: Callable[[], str | None] = lambda: None,
    ) -> list[HarvesterOutcome]:
        """Each active harvester in turn, by id, each in a run of its own job here (its own
        watermark, its own outcome): one that fails does not stop the others. `stop` says
        why to stop before the next harvester (None: go on)."""
        self.require_permission(identity, "search")
        harvester_ids = list(
            db.session.scalars(
                db.select(OAIHarvester.id)
                .where(OAIHarvester.active.is_(True))
                .order_by(OAIHarvester.id)
            )
        )
        outcomes: list[HarvesterOutcome] = []
        for harvester_id in harvester_ids:
            if stop():
                break
            try:
                run = self.harvest_in_process(identity, harvester_id, title=title)
            except Exception as error:  # noqa: BLE001 - the next harvester still runs
                db.session.rollback()
                outcomes.append(HarvesterOutcome(harvester_id, None, "ERROR", str(error)))
                continue
            counted = f"{run.total_entries or 0} records"
            detail = (
                counted
                if run.status == RunStatusEnum.SUCCESS
                else (without_traceback(run.message) or counted)
            )
            outcomes.append(HarvesterOutcome(harvester_id, str(run.id), run.status.name, detail))
        return outcomes

    def harvest_in_process(
        self,
        identity: Any,
        harvester_id: str,
        arguments: dict[str, Any] | None = None,
        *,
        progress: ProgressCallback | None = None,
        stop: Callable[[], str | None] | None = None,
        title: str = "Command-line harvest",
        **more_arguments: Any,
    ) -> Run:
        """Run a harvest now, in this process, recorded as a run of the harvester's job.

        `arguments` (and keyword arguments) are the run arguments (`RunArgumentsSchema`),
        checked as those of every other way to start a run. Without `since` or `full` it
        continues from the stored watermark. Batches are written here too, whatever
        OAI_HARVESTER_WRITE_MODE says. `progress` is told after every batch; `stop` is asked
        before every batch why the run should stop (the command line's Ctrl-C), None to go
        on: the run then ends CANCELLED, its watermark kept.
        """
        if arguments is not None and not isinstance(arguments, dict):
            self.get_harvester(identity, harvester_id, "run")
            required_mapping(arguments, RUN_ARGUMENTS_WANTED)
        try:
            request = run_request(
                {**(arguments or {}), **more_arguments}, without_since=SinceSource.WATERMARK
            )
        except ValidationError as error:
            self.get_harvester(identity, harvester_id, "run")
            raise HarvesterValidationError(flatten_messages(error.messages)) from None
        self.get_harvester(identity, harvester_id, _action_of(request))
        if request.kind is RunKind.PURGE and request.confirm != harvester_id:
            raise HarvesterValidationError({"confirm": [str(PurgeNotConfirmed(harvester_id))]})
        if request.kind is RunKind.UNDO:
            check_undoable(harvester_id, request.undo)
        job = self.ensure_job(identity, harvester_id)
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
                "since_source": request.since_source.value,
                "write_mode": "local",
                **request.arguments(),
            },
        )
        db.session.add(run)
        db.session.commit()
        token = progress_listener.set(progress)
        stop_token = interactive_stop.set(stop)
        try:
            result = execute_run.apply(kwargs={"run_id": run.id, "identity_id": str(identity.id)})
        finally:
            interactive_stop.reset(stop_token)
            progress_listener.reset(token)
        if result.failed():
            # invenio-jobs' own steps failed around the task (its run log cannot reach the
            # search server, say): the run would stay QUEUED with no word of why.
            db.session.rollback()
            end_run_unstarted(run.id, result.result)
        db.session.expire_all()
        return db.session.get(Run, run.id)


@dataclass(frozen=True)
class HarvesterOutcome:
    """How one harvester's run of a run-all run ended."""

    harvester_id: str
    run_id: str | None
    status: str
    """A run status (SUCCESS, PARTIAL_SUCCESS, FAILED, CANCELLED), or ERROR: no run."""
    detail: str

    def describe(self) -> str:
        return f"{self.harvester_id}: {self.status}" + (f" ({self.detail})" if self.detail else "")


RUN_ARGUMENTS_WANTED = 'the run arguments ({"full": true}, say), or no body for a plain run'
"""What a run takes, as the refusal of anything else says it."""


def _action_of(request: RunRequest) -> str:
    """Repairs (rewrite, force, retry, purge) are for those who may change the harvester;
    a harvest manager may start the other runs of their harvester."""
    return "update" if request.is_repair else "run"


RUN_TITLES = {
    RunKind.PURGE: "Purge",
    RunKind.REWRITE: "Rewrite from stored XML",
    RunKind.RETRY_ERRORS: "Retry failed records",
    RunKind.REINDEX: "Reindex",
}


def _default_title(request: RunRequest) -> str:
    if request.kind is RunKind.UNDO:
        return f"Undo of run {request.undo}"
    return RUN_TITLES.get(request.kind, "Run now")


class _RunSearchOptions:
    sort_options = {
        "newest": {"title": "Newest", "fields": ["-created"]},
        "oldest": {"title": "Oldest", "fields": ["created"]},
    }
    sort_default = "newest"
    sort_default_no_query = "newest"
    default_size = 10
    max_size = 100
