"""The harvester service: harvesters (create, read, update, delete, search) for every surface.

Runs live in `runs.py`, the harvester's invenio-jobs jobs in `jobs.py`, the access check in
`access.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from flask import current_app
from invenio_db import db
from invenio_db.uow import ModelCommitOp, ModelDeleteOp, UnitOfWork, unit_of_work
from invenio_jobs.models import Run
from invenio_jobs.proxies import current_jobs
from invenio_records_resources.services.base import LinksTemplate
from marshmallow import ValidationError

from .. import credentials
from ..harvest.lock import HarvesterBusy, exclusive_run, holder_of
from ..models import OAIHarvestedRecord, OAIHarvester
from .access import HarvesterAccessMixin, flatten_messages, link_args
from .base import SQLService
from .errors import (
    HarvesterAlreadyExists,
    HarvesterInUse,
    HarvesterValidationError,
    required_mapping,
)
from .jobs import (
    RegisterJobTypeOp,
    UnregisterJobTypeOp,
    delete_jobs_of,
    dump_job,
    jobs_of,
    last_successful_harvest,
    lock_holding_run,
    new_job,
    runs_query,
)
from .prefix_choice import picked_prefix
from .preflight import PreflightError, check_provider
from .released import (
    live_records_of,
    other_sets_refusal,
    release,
    released_for,
    sees_the_same_records,
    take_over,
)
from .results import HarvesterItem, SQLList, SQLPage
from .runs import dump_run
from .schemas import apply_defaults
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
    "owner",
    "community",
    "target_adapter",
    "local_drafts",
    "invalid_drafts",
    "doi_conflicts",
    "set_communities",
    "missing_creator",
    "files", "files_failure", "files_changes", "files_max_size", "files_hosts",
    "files_restricted", "deletion_guard", "match_on", "field_policy", "dedupe",
    "active",
)  # fmt: skip

PREFLIGHT_FIELDS = ("base_url", "metadata_prefix", "setspecs")
"""Changing one of these asks the provider again (the preflight check)."""


@dataclass(frozen=True)
class HarvesterView:
    """What the harvester schema and the links read: its stored fields, jobs and last run."""

    id: str
    name: str
    comment: str | None
    base_url: str
    metadata_prefix: str
    setspecs: list[str]
    target: str
    transformer: str
    batch_size: int
    harvest_managers: list[int]
    request_delay: float | None
    owner: int | None
    community: str | None
    target_adapter: str
    local_drafts: str
    invalid_drafts: str
    doi_conflicts: str
    set_communities: dict[str, str] | None
    missing_creator: str | None
    metadata_prefix_choice: str | None
    files: str
    files_failure: str
    files_changes: str
    files_max_size: int | None
    files_hosts: list[str] | None
    files_restricted: bool
    deletion_guard: float | None
    match_on: list[str] | None
    field_policy: dict[str, str] | None
    dedupe: str
    active: bool
    credentials: str | None
    """Sealed (encrypted): the schema shows only what is set."""
    watermark: datetime | None
    created: datetime | None
    updated: datetime | None
    job: dict[str, Any] | None = None
    jobs: list[dict[str, Any]] = field(default_factory=list)
    last_run: dict[str, Any] | None = None
    taken_over: dict[str, Any] | None = None
    """At creation: the records of deleted harvesters it took over (services/released.py)."""


class HarvesterService(HarvesterAccessMixin, SQLService):
    """Harvesters. Every surface (CLI, REST, administration, fixtures) goes through here.

    Harvesters live in SQL only: searches are SQL queries. Results are `HarvesterItem`s
    (``.data``, ``.to_dict()``, ``.links``): what the schema dumps.
    """

    def __init__(self, config: Any, jobs_registry_getter: Callable[[], Any] | None = None) -> None:
        super().__init__(config)
        # invenio-jobs' registry is replaced at finalize: look it up on use.
        self._jobs_registry = jobs_registry_getter or (lambda: current_jobs.registry)

    # -- projection ------------------------------------------------------------------------
    def _view(self, harvester: OAIHarvester) -> HarvesterView:
        jobs = [dump_job(job) for job in jobs_of(harvester.id)]
        last_run = db.session.scalars(runs_query(harvester.id).order_by(Run.created.desc())).first()
        stored = {
            name: getattr(harvester, name)
            for name in HarvesterView.__dataclass_fields__
            if name not in ("job", "jobs", "last_run", "taken_over")
        }
        return HarvesterView(
            **stored,
            job=jobs[0] if jobs else None,
            jobs=jobs,
            last_run=dump_run(last_run, harvester.id) if last_run else None,
        )

    def _item(
        self, identity: Any, harvester: OAIHarvester, *, taken_over: dict | None = None
    ) -> HarvesterItem:
        view = self._view(harvester)
        if taken_over is not None:
            view = replace(view, taken_over=taken_over)
        return self.result_item(self, identity, view, links_tpl=self.links_item_tpl)

    # -- validation ------------------------------------------------------------------------
    def _validated(
        self,
        identity: Any,
        data: dict,
        *,
        check: bool | None,
        stored_credentials: str | None = None,
        provider_fields_changed: Callable[[dict], bool] = lambda loaded: True,
    ) -> dict:
        """The harvester as it will be stored (its credentials sealed), or every problem
        with it at once.

        The provider is asked (unless `check` is False, or neither the fields it answers for
        nor the credentials changed) whenever those fields themselves are valid, so that an
        operator who got the target wrong hears in the same answer that the prefix or a set
        is wrong too.
        """
        try:
            loaded, _ = self.schema.load(data, context={"identity": identity})
            errors: dict[str, list[str]] = {}
        except ValidationError as error:
            loaded = error.valid_data or {}
            errors = flatten_messages(error.messages)
        try:
            sealed = credentials.updated(stored_credentials, loaded)
        except credentials.CredentialsUnavailable as error:
            errors.setdefault("auth", []).append(str(error))
            sealed = None
        changed = provider_fields_changed(loaded) or sealed != stored_credentials
        offered: list[str] | None = None
        if all(name not in errors for name in PREFLIGHT_FIELDS) and (
            changed or loaded.get("metadata_prefix") is None
        ):
            provider_errors, offered = self._provider_errors(loaded, sealed, check)
            errors = {**provider_errors, **errors}
        if not errors and loaded.get("metadata_prefix") is None:
            errors = picked_prefix(loaded, offered)
        if errors:
            raise HarvesterValidationError(errors)
        for name in credentials.CHANGES:
            loaded.pop(name, None)
        return {**apply_defaults(loaded), "credentials": sealed}

    def _provider_errors(
        self, loaded: dict, sealed: str | None, check: bool | None
    ) -> tuple[dict[str, list[str]], list[str] | None]:
        """What the provider says is wrong with this configuration (the preflight check),
        and the formats it offers (None when it was not asked)."""
        if check is None:
            check = current_app.config["OAI_HARVESTER_PREFLIGHT_CHECK"]
        if not check:
            return {}, None
        try:
            offered = check_provider(
                loaded["base_url"],
                loaded["metadata_prefix"],
                loaded.get("setspecs") or [],
                credentials=credentials.provider_credentials(sealed),
                time_limit=current_app.config["OAI_HARVESTER_PREFLIGHT_TIMEOUT"],
            )
        except credentials.CredentialsUnavailable as error:
            return {"auth": [str(error)]}, None
        except PreflightError as error:
            return error.errors, None
        return {}, offered

    # -- harvesters ------------------------------------------------------------------------
    def read(self, identity: Any, harvester_id: str) -> HarvesterItem:
        return self._item(identity, self.get_harvester(identity, harvester_id))

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
            links_tpl=LinksTemplate(self.config.links_search, context={"args": link_args(params)}),
            links_item_tpl=self.links_item_tpl,
            prepare=self._view,
        )

    def public_sources(self) -> list[dict[str, Any]]:
        """What the public page of harvested sources shows of every harvester: its name, how
        many records of it the site holds, and when it was last harvested successfully.
        Nothing else (no endpoint, which may be private; no credentials)."""
        live = (
            db.select(OAIHarvestedRecord.harvester_id, sa.func.count().label("records"))
            .where(OAIHarvestedRecord.deleted.is_(False), OAIHarvestedRecord.local_pid.is_not(None))
            .group_by(OAIHarvestedRecord.harvester_id)
            .subquery()
        )
        rows = db.session.execute(
            db.select(OAIHarvester.id, OAIHarvester.name, live.c.records)
            .outerjoin(live, live.c.harvester_id == OAIHarvester.id)
            .order_by(OAIHarvester.name)
        ).all()
        return [
            {
                "name": name,
                "records": records or 0,
                "last_harvest": last_successful_harvest(harvester_id),
            }
            for harvester_id, name, records in rows
        ]

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

        The local records that deleted harvesters of the same provider, prefix and target
        left become its own (services/released.py): with the same sets always, with other
        sets when ``take_over_records`` says so. Its invenio-jobs job type is registered
        after the commit.
        """
        self.require_permission(identity, "create")
        required_mapping(
            data, 'the harvester\'s fields ({"id": ..., "name": ..., "base_url": ..., ...})'
        )
        loaded = self._validated(identity, data, check=check)
        take_over_records = loaded.pop("take_over_records", False)
        if db.session.get(OAIHarvester, loaded["id"]) is not None:
            raise HarvesterAlreadyExists(loaded["id"])
        left = released_for(loaded["base_url"], loaded["metadata_prefix"], loaded["target"])
        if not take_over_records and any(
            not sees_the_same_records(source, loaded["setspecs"]) for source in left
        ):
            raise HarvesterValidationError(
                {"take_over_records": [other_sets_refusal(left, loaded["setspecs"])]}
            )
        harvester = OAIHarvester(**loaded)
        uow.register(ModelCommitOp(harvester))
        # The job exists from the start, so that an admin schedules this one in
        # Administration -> Jobs rather than creating a second one.
        uow.register(ModelCommitOp(new_job(harvester)))
        uow.register(RegisterJobTypeOp(self._jobs_registry, harvester))
        taken_over = None
        if left:
            db.session.flush()  # the tracking rows refer to the harvester's row
            count = take_over(harvester.id, left)
            taken_over = {"records": count, "from": [source.released_from for source in left]}
        return self._item(identity, harvester, taken_over=taken_over)

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
        harvester = self.get_harvester(identity, harvester_id, "update")
        required_mapping(data, 'the fields to change ({"name": ..., ...})')
        if "id" in data and data["id"] != harvester_id:
            raise HarvesterValidationError({"id": ["The id of a harvester cannot change."]})
        current = {name: getattr(harvester, name) for name in EDITABLE_FIELDS}
        merged = {**current, **{k: v for k, v in data.items() if k != "id"}}
        loaded = self._validated(
            identity,
            {**merged, "id": harvester_id},
            check=check,
            stored_credentials=harvester.credentials,
            provider_fields_changed=lambda loaded: any(
                loaded.get(name) != current[name] for name in PREFLIGHT_FIELDS
            ),
        )
        for name in (*EDITABLE_FIELDS, "credentials"):
            setattr(harvester, name, loaded[name])
        if data.get("metadata_prefix", current["metadata_prefix"]) != current["metadata_prefix"]:
            # Named anew (the reason goes) or left to the check again (a new reason); a form
            # that sends the stored prefix back keeps the reason.
            harvester.metadata_prefix_choice = loaded.get("metadata_prefix_choice")
        uow.register(ModelCommitOp(harvester))
        # The job type carries the name and URL in its title and description.
        uow.register(RegisterJobTypeOp(self._jobs_registry, harvester))
        return self._item(identity, harvester)

    def delete(self, identity: Any, harvester_id: str, *, uow: UnitOfWork | None = None) -> bool:
        """Delete the harvester, its tracking rows and its invenio-jobs jobs and runs.

        Local records it created stay: removing a source is not a reason to lose data. What
        it knew of them is kept for a new harvester of the same source, which takes them over
        (services/released.py) instead of writing them again.
        Refused (HarvesterInUse) while a run holds the harvester's lock: the run would crash
        and its records would stay without tracking rows. A run row left RUNNING by a killed
        worker does not hold the lock and does not stand in the way.
        """
        harvester = self.get_harvester(identity, harvester_id, "delete")
        engine = db.engine
        try:
            # Taken, not only looked at: held until the delete is committed, no run can start
            # in between. (A unit of work passed in by the caller commits after the release.)
            with exclusive_run(harvester_id, engine):
                return self._delete_unlocked(harvester, uow=uow)
        except HarvesterBusy:
            run = lock_holding_run(harvester_id)
            raise HarvesterInUse(
                harvester_id,
                str(run.id) if run else None,
                run.status.name if run else None,
                holder_of(harvester_id, engine),
            ) from None

    @unit_of_work()
    def _delete_unlocked(self, harvester: OAIHarvester, *, uow: UnitOfWork = None) -> bool:
        harvester_id = harvester.id
        delete_jobs_of(harvester_id)
        release(harvester)
        # Explicit, not only ON DELETE CASCADE: SQLite does not enforce foreign keys by default.
        db.session.execute(
            db.delete(OAIHarvestedRecord).where(OAIHarvestedRecord.harvester_id == harvester_id)
        )
        uow.register(ModelDeleteOp(harvester))
        uow.register(UnregisterJobTypeOp(self._jobs_registry, harvester_id))
        return True

    def records_held(self, identity: Any, harvester_id: str) -> int:
        """How many local records the harvester holds: what deleting it leaves in the target."""
        self.get_harvester(identity, harvester_id, "delete")
        return live_records_of(harvester_id)
