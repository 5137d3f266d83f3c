"""Builds a run from the application: the only engine module that reads the app config.

Decision owned here: which client, writer, target adapter, lock and dispatcher a run of a
stored harvester gets, from :class:`~.settings.HarvestSettings` built once per run.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from flask import current_app
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import Run
from invenio_records_resources.proxies import current_service_registry

from ..credentials import provider_credentials
from ..models import OAIHarvester
from ..protocol.client import OAIClient
from ..protocol.credentials import ProviderCredentials
from ..protocol.records import OAIRecord
from ..provenance import Provenance, getrecord_url
from .deletion_guard import DeletionGuard
from .effects import DryRun, KeptWrites, Writes
from .fanout import BatchDispatcher, Enqueue, WritersOfARun
from .field_policy import FieldPolicies
from .files_fetching import record_files_for
from .interrupted import close_interrupted_runs, grace_for
from .journal import RunJournal
from .lock import exclusive_run
from .memory import run_scope
from .preview import PreviewReport
from .request import INCREMENTAL, RunKind, RunRequest
from .results import HarvestSummary, ProgressCallback
from .run import HarvestRun
from .run_log import RunLog
from .settings import HarvestSettings
from .stopping import StopSignal
from .targets import TargetOptions, adapter_for
from .targets.options import files_defaults
from .writer import RecordWriter

log = logging.getLogger(__name__)

progress_listener: ContextVar[ProgressCallback | None] = ContextVar(
    "oai_harvest_progress_listener", default=None
)
"""Set by an interactive caller (the CLI) to watch a run that invenio-jobs executes."""

interactive_stop: ContextVar[Callable[[], str | None] | None] = ContextVar(
    "oai_harvest_interactive_stop", default=None
)
"""Set by an interactive caller (the CLI) that runs a harvest in its process: why the run
should stop now (Ctrl-C), asked before each batch; None to go on."""


def current_settings() -> HarvestSettings:
    """The settings of the current application, as they are now."""
    return HarvestSettings.from_config(current_app.config)


def build_client(
    base_url: str,
    harvester_id: str | None = None,
    request_delay: float | None = None,
    *,
    settings: HarvestSettings | None = None,
    credentials: ProviderCredentials | None = None,
    **overrides: Any,
) -> OAIClient:
    """An OAI-PMH client with the site's settings; `overrides` change single protocol options
    (the preflight check, which someone waits for, asks with shorter timeouts)."""
    settings = settings or current_settings()
    if request_delay is not None:
        overrides.setdefault("request_delay", request_delay)
    return OAIClient(
        base_url,
        settings.protocol,
        user_agent=settings.user_agent_for(harvester_id),
        credentials=credentials,
        **overrides,
    )


def _stored_harvester(harvester_id: str) -> OAIHarvester:
    harvester = db.session.get(OAIHarvester, harvester_id)
    if harvester is None:
        raise LookupError(f"No harvester with id {harvester_id!r}.")
    return harvester


class PurgeNotConfirmed(ValueError):
    """A purge removes every local record a harvester created: its id must be typed."""

    def __init__(self, harvester_id: str) -> None:
        super().__init__(
            f"A purge deletes every local record that harvester {harvester_id!r} created; "
            f"type the harvester's id ({harvester_id}) to confirm it."
        )


class OwnerUnavailable(LookupError):
    """The user a harvester writes records as does not exist or is not active."""


def writing_identity(owner: int | None) -> Any:
    """The identity that records are written as: the system, or the harvester's owner.

    The owner is the user the target records as the records' owner (RDM's
    ``parent.access.owned_by``); it writes with the system's permissions, because the harvester
    must also tombstone, restore and include records in communities, which RDM lets only
    administrators do, while the operator who named the owner already chose to harvest.
    """
    if owner is None:
        return system_identity
    from invenio_access.permissions import authenticated_user, system_process
    from invenio_access.utils import get_identity
    from invenio_accounts.models import User

    user = db.session.get(User, owner)
    if user is None or not user.active:
        raise OwnerUnavailable(
            f"The owner of the harvested records, user {owner}, does not exist or is not "
            f"active; choose another owner (or none: the system) for the harvester."
        )
    identity = get_identity(user)
    identity.provides.add(authenticated_user)
    identity.provides.add(system_process)
    return identity


def transformer_settings(harvester: Any) -> dict[str, Any]:
    """The harvester's own options for its transformer (those it left empty: none)."""
    missing_creator = getattr(harvester, "missing_creator", None)
    return {"missing_creator": missing_creator} if missing_creator else {}


def make_writer(
    harvester_id: str,
    run_id: uuid.UUID | None,
    settings: HarvestSettings | None = None,
    *,
    writes: Writes | None = None,
) -> RecordWriter:
    """The writer of a harvester's records into its target service, for one run (`writes`:
    a run's, kept, unless a dry run's)."""
    from ..proxies import current_oai_harvester

    settings = settings or current_settings()
    harvester = _stored_harvester(harvester_id)
    options = TargetOptions.of(
        harvester,
        files_defaults(current_app.config),
        match_on=current_app.config["OAI_HARVESTER_MATCH_ON"],
    )
    # Plain values: the writer runs past commits that expire the ORM object.
    name, base_url, prefix = harvester.name, harvester.base_url, harvester.metadata_prefix

    def provenance_of(record: OAIRecord) -> Provenance:
        return Provenance(
            harvester_id=harvester_id,
            harvester_name=name,
            oai_identifier=record.identifier or "",
            datestamp=record.datestamp or "",
            getrecord_url=getrecord_url(base_url, prefix, record.identifier or ""),
        )

    writer = RecordWriter(
        harvester_id=harvester.id,
        target=adapter_for(
            current_service_registry.get(harvester.target),
            writing_identity(options.owner),
            harvester_id=harvester.id,
            options=options,
            custom_fields=frozenset(
                field.name for field in current_app.config.get("RDM_CUSTOM_FIELDS") or ()
            ),
            record_files=record_files_for(harvester, options.files, settings, current_app.config),
        ),
        transformer=current_oai_harvester.transformers.get(
            harvester.transformer, transformer_settings(harvester)
        ),
        run_id=run_id,
        retry_backoff=settings.retry_backoff,
        writes=writes,
        provenance_of=provenance_of,
        journaled=settings.undo_runs > 0,
    )
    writer.deletion_guard = deletion_guard_of(harvester, current_app.config)
    writer.field_policies = FieldPolicies.of(getattr(harvester, "field_policy", None))
    return writer


def deletion_guard_of(harvester: Any, config: Any) -> DeletionGuard:
    """The harvester's mass-deletion guard (its own share, else the site's)."""
    own = getattr(harvester, "deletion_guard", None)
    return DeletionGuard(
        percent=float(own if own is not None else config["OAI_HARVESTER_DELETION_GUARD"]),
        minimum=int(config["OAI_HARVESTER_DELETION_GUARD_MINIMUM"]),
    )


def run_harvest(
    harvester_id: str,
    request: RunRequest = INCREMENTAL,
    *,
    run_id: uuid.UUID | None = None,
    progress: ProgressCallback | None = None,
    dry_run: PreviewReport | None = None,
    write_mode: str | None = None,
    enqueue_batch: Enqueue | None = None,
    stop: StopSignal | None = None,
) -> HarvestSummary:
    """Run one harvest of a stored harvester in this process, as `request` asks.

    `write_mode` ("local" or "celery") overrides OAI_HARVESTER_WRITE_MODE for this run;
    batches are handed to workers only in a run of invenio-jobs, through `enqueue_batch`.
    With `dry_run` (a preview) nothing is committed and what would happen is noted there.
    `stop` tells the run to stop between batches; by default a run of invenio-jobs stops
    when its run is set CANCELLING (Stop in Administration → Jobs).
    """
    settings = current_settings()
    harvester = _stored_harvester(harvester_id)
    is_purge = request.kind is RunKind.PURGE
    if is_purge and request.confirm != harvester.id:
        raise PurgeNotConfirmed(harvester.id)
    if is_purge and dry_run is not None:
        raise ValueError("A purge cannot be previewed; it removes the harvester's records.")
    if request.kind is RunKind.UNDO and dry_run is not None:
        raise ValueError("An undo is previewed by its own plan (harvest/undo.py), not a run.")
    # Runs outside invenio-jobs still need an id: reconciliation tells seen rows by it.
    is_jobs_run = run_id is not None and db.session.get(Run, run_id) is not None
    if stop is None:
        stop = StopSignal(run_id if is_jobs_run else None)
    run_id = run_id or uuid.uuid4()
    writes = DryRun(dry_run) if dry_run is not None else KeptWrites()
    writer = make_writer(harvester.id, run_id, settings, writes=writes)
    dispatcher = None
    fan_out = (write_mode or settings.write_mode) == "celery" and is_jobs_run and not dry_run
    if fan_out and enqueue_batch is None:
        log.warning("Harvester %s: no task queue given; writing batches here.", harvester.id)
    elif fan_out and request.kind is RunKind.HARVEST:
        dispatcher = BatchDispatcher(
            harvester_id=harvester.id,
            parent_run_id=run_id,
            writers=WritersOfARun(make_writer),
            enqueue=enqueue_batch,
            queue=settings.write_queue,
            wait_timeout=settings.subtask_timeout,
            take_over_after=settings.subtask_takeover_after,
        )
    with (
        run_scope(),
        exclusive_run(
            harvester.id,
            db.engine,
            wait=settings.wait_for_running,
            timeout=settings.lock_timeout,
        ) as lock,
        build_client(
            harvester.base_url,
            harvester.id,
            harvester.request_delay,
            settings=settings,
            credentials=provider_credentials(harvester.credentials),
        ) as client,
    ):
        # Read again under the lock: a run that waited for it may find its harvester changed,
        # or deleted (LookupError) by the one that held it.
        db.session.expire_all()
        harvester = _stored_harvester(harvester_id)
        # This run holds the lock: a RUNNING run of the harvester that is not alive now is
        # one whose process died (a waiting run is alive, hence the longer grace then).
        grace = grace_for(settings.wait_for_running, settings.lock_timeout)
        closed = (
            []
            if dry_run is not None  # a preview changes nothing, other runs' rows included
            else close_interrupted_runs(
                harvester.id, found_by=f"run {run_id}", except_run=run_id, grace=grace
            )
        )
        if closed:
            log.warning("Harvester %s: closed interrupted runs %s", harvester.id, closed)
        kept = request.kind not in (RunKind.PURGE, RunKind.REINDEX)
        if dry_run is None and kept and settings.undo_runs > 0:
            # Before anything is written: the watermarks as the run found them.
            RunJournal(harvester.id, run_id).begin(
                undo_of=uuid.UUID(request.undo) if request.undo else None,
                keep=settings.undo_runs,
            )
        return HarvestRun(
            harvester,
            settings=settings,
            client=client,
            writer=writer,
            lock=lock,
            run_id=run_id,
            progress=progress or progress_listener.get(),
            dispatcher=dispatcher,
            stop=stop,
            # The application's logger: invenio-jobs shows what it receives during a run on
            # the run's page.
            run_log=RunLog(current_app.logger, harvester.id, interval=settings.run_log_interval),
        ).execute(request)
