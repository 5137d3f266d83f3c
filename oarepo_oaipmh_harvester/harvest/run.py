"""One harvest run: Identify, plan the window, stream records, write them in batches."""

from __future__ import annotations

import enum
import itertools
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from flask import current_app
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import Run
from invenio_records_resources.proxies import current_service_registry

from .. import __version__
from ..models import OAIHarvester
from ..protocol.errors import IdDoesNotExist
from ..protocol.records import OAIRecord
from .fanout import BatchDispatcher
from .lock import exclusive_run
from .prefetch import prefetch
from .window import HarvestWindow, SinceSource, plan_window
from .writer import RecordWriter, WriteCounts

if TYPE_CHECKING:
    from ..protocol.client import OAIClient

log = logging.getLogger(__name__)

ProgressCallback = Callable[["HarvestProgress"], None]

ANALYZE_FIRST_AFTER = 1000
"""Written records after which a run first refreshes the tracking table's statistics."""

COUNTERS_INTERVAL = 2.0
"""Seconds between saves of the run's progress counters while batches write nothing."""


@dataclass
class HarvestProgress:
    """Reported after every batch."""

    counts: WriteCounts
    complete_list_size: int | None = None


@dataclass
class HarvestSummary:
    """The outcome of a run, for the job status, the command line and reports."""

    harvester_id: str
    window: HarvestWindow | None
    counts: WriteCounts = field(default_factory=WriteCounts)
    problems: list[str] = field(default_factory=list)
    """Run-level problems that make the run not fully successful (e.g. refused reconciliation)."""
    reconciled: bool = False
    watermark_advanced: bool = False
    requests: int = 0

    @property
    def succeeded(self) -> bool:
        return self.counts.failed == 0 and not self.problems

    def describe(self) -> str:
        c = self.counts
        return (
            f"created {c.created}, updated {c.updated}, deleted {c.deleted}, "
            f"unchanged {c.unchanged}, failed {c.failed}"
        )


class ReconcileMode(enum.Enum):
    """When a full window is followed by deleting the local records the provider no longer has."""

    AUTO = "auto"
    """When the provider does not keep tombstones (deletedRecord `no` or `transient`)."""
    ALWAYS = "always"
    NEVER = "never"


def _batched(records: Iterable[OAIRecord], size: int) -> Iterator[list[OAIRecord]]:
    iterator = iter(records)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


class HarvestRun:
    """Brings the target service in step with one harvester's provider, once."""

    def __init__(
        self,
        harvester: OAIHarvester,
        *,
        client: OAIClient,
        writer: RecordWriter,
        run_id: uuid.UUID | None = None,
        progress: ProgressCallback | None = None,
        reconcile: ReconcileMode = ReconcileMode.AUTO,
        reconcile_max_share: float = 0.2,
        prefetch_batches: int = 0,
        dispatcher: BatchDispatcher | None = None,
    ) -> None:
        self.harvester = harvester
        # Plain copies: the ORM object expires on every batch commit, and the prefetch
        # thread must never touch the database session.
        self.metadata_prefix: str = harvester.metadata_prefix
        self.setspecs: list[str | None] = list(harvester.setspecs or []) or [None]
        self.batch_size: int = max(1, int(harvester.batch_size or 1))
        self.client = client
        self.writer = writer
        self.run_id = run_id
        self.progress = progress
        self.reconcile = reconcile
        self.reconcile_max_share = reconcile_max_share
        self.prefetch_batches = prefetch_batches
        self.dispatcher = dispatcher
        self._stream: Any = None
        self._written = 0
        self._analyze_at = ANALYZE_FIRST_AFTER

    def execute(
        self,
        *,
        since: datetime | None = None,
        since_source: SinceSource = SinceSource.LAST_SUCCESS,
        full: bool = False,
        identifiers: list[str] | None = None,
        reconcile_only: bool = False,
    ) -> HarvestSummary:
        """Harvest; protocol failures propagate (nothing of the window is trusted then)."""
        harvester_id = self.harvester.id
        profile = self.client.identify()  # per run: the provider may have changed
        if identifiers:
            summary = HarvestSummary(harvester_id=harvester_id, window=None)
            self._write(summary, _batched(self._get_records(identifiers, summary), self.batch_size))
            summary.requests = self.client.request_count
            self._save_run_counters(summary)  # failures of identifiers after the last batch
            self._report(summary)
            return summary

        window = plan_window(
            response_date=profile.response_date,
            granularity=profile.granularity,
            since=since,
            since_source=since_source,
            watermark=self.harvester.watermark,
            full=full or reconcile_only,
        )
        log.info("Harvester %s: window %s", harvester_id, window.describe())
        summary = HarvestSummary(harvester_id=harvester_id, window=window)
        wants_reconcile = reconcile_only or self._reconciles_after_full(profile.deleted_record)
        self.writer.marks_unchanged_as_seen = window.is_full and wants_reconcile
        if reconcile_only:
            records = self._list_tombstones_marking_seen(window)
        else:
            records = self._list_records(window)
        batches = _batched(records, self.batch_size)
        if self.prefetch_batches and not reconcile_only:
            # Whole batches cross the thread boundary: one queue hand-over per batch.
            batches = prefetch(batches, self.prefetch_batches)
        if self.dispatcher is not None and not reconcile_only:
            self._dispatch(summary, batches)
        else:
            self._write(summary, batches)
        if summary.succeeded and window.is_full and wants_reconcile:
            self._reconcile(summary)
        if summary.succeeded and not reconcile_only:
            self._advance_watermark(profile.response_date)
            summary.watermark_advanced = True
        summary.requests = self.client.request_count
        self._save_run_counters(summary)  # the final counts, reconciliation included
        self._report(summary)
        return summary

    # -- reading ---------------------------------------------------------------------------
    def _list_records(self, window: HarvestWindow) -> Iterator[OAIRecord]:
        for set_spec in self.setspecs:
            self._stream = self.client.list_records(
                self.metadata_prefix, set_spec=set_spec, **window.arguments()
            )
            yield from self._stream

    def _list_tombstones_marking_seen(self, window: HarvestWindow) -> Iterator[OAIRecord]:
        """ListIdentifiers: live identifiers are only marked seen, tombstones are written."""
        for set_spec in self.setspecs:
            self._stream = self.client.list_identifiers(
                self.metadata_prefix, set_spec=set_spec, **window.arguments()
            )
            for headers in _batched(self._stream, self.batch_size):
                self.writer.mark_seen([h.identifier for h in headers if not h.deleted])
                for header in headers:
                    if header.deleted:
                        yield OAIRecord(
                            identifier=header.identifier,
                            datestamp=header.datestamp,
                            deleted=True,
                            set_specs=header.set_specs,
                            metadata=None,
                            xml="",
                            errors=header.errors,
                        )

    def _get_records(self, identifiers: list[str], summary: HarvestSummary) -> Iterator[OAIRecord]:
        for identifier in identifiers:
            try:
                yield self.client.get_record(identifier, self.metadata_prefix)
            except IdDoesNotExist as error:
                self.writer.track_failure(identifier, str(error))
                summary.counts.fail(identifier, str(error))

    # -- reconciliation --------------------------------------------------------------------
    def _reconciles_after_full(self, deleted_record: str) -> bool:
        if self.reconcile is ReconcileMode.AUTO:
            return deleted_record in ("no", "transient")
        return self.reconcile is ReconcileMode.ALWAYS

    def _reconcile(self, summary: HarvestSummary) -> None:
        unseen, live = self.writer.count_unseen()
        if unseen and unseen > self.reconcile_max_share * live:
            summary.problems.append(
                f"Reconciliation refused: {unseen} of {live} local records "
                f"({unseen / live:.0%}) are no longer listed by the provider, more than the "
                f"limit of {self.reconcile_max_share:.0%}. Nothing was deleted; check the "
                f"provider, then raise OAI_HARVESTER_RECONCILE_MAX_SHARE if this is right."
            )
            return
        removed = self.writer.remove_unseen(
            self.batch_size, on_commit=lambda counts: self._update_run_counters(summary, counts)
        )
        summary.counts.add(removed)
        summary.reconciled = True

    # -- writing ---------------------------------------------------------------------------
    def _write(self, summary: HarvestSummary, batches: Iterable[list[OAIRecord]]) -> None:
        counters_saved_at = time.monotonic()
        counters_behind = False

        def save_counters_with_batch(counts: WriteCounts) -> None:
            nonlocal counters_saved_at, counters_behind
            self._update_run_counters(summary, counts)
            counters_saved_at, counters_behind = time.monotonic(), False

        for batch in batches:
            counters_behind = True
            batch_counts = self.writer.write_batch(batch, on_commit=save_counters_with_batch)
            summary.counts.add(batch_counts)
            self._keep_statistics_fresh(batch_counts.total - batch_counts.unchanged)
            # A batch that wrote nothing (all unchanged) had no transaction to carry the
            # counters: they are saved on their own, at most every few seconds.
            if counters_behind and time.monotonic() - counters_saved_at > COUNTERS_INTERVAL:
                self._save_run_counters(summary)
                counters_saved_at, counters_behind = time.monotonic(), False
            self._report(summary)
        if counters_behind:
            self._save_run_counters(summary)

    def _dispatch(self, summary: HarvestSummary, batches: Iterable[list[OAIRecord]]) -> None:
        unchanged = 0
        for batch in batches:
            changed, unchanged_ids = self.writer.split_unchanged(batch)
            if unchanged_ids:
                # Counted and (for reconciliation) marked here: no worker needs to see them.
                unchanged += len(unchanged_ids)
                if self.writer.marks_unchanged_as_seen:
                    self.writer.mark_seen(unchanged_ids)
                self.dispatcher.count_unqueued(len(unchanged_ids))
            if changed:
                self.dispatcher.dispatch(changed)
                self._keep_statistics_fresh(len(changed))
        summary.counts.add(self.dispatcher.wait())
        summary.counts.unchanged += unchanged
        self._report(summary)

    def _keep_statistics_fresh(self, written: int) -> None:
        """Refresh the tracking table's statistics each time this run has doubled its writes."""
        self._written += written
        if self._written >= self._analyze_at:
            self.writer.refresh_statistics()
            self._analyze_at = 2 * self._written

    def _report(self, summary: HarvestSummary) -> None:
        if self.progress is not None:
            self.progress(
                HarvestProgress(
                    counts=summary.counts,
                    complete_list_size=getattr(self._stream, "complete_list_size", None),
                )
            )

    def _update_run_counters(self, summary: HarvestSummary, batch: WriteCounts) -> None:
        if self.run_id is None:
            return
        totals = WriteCounts()
        totals.add(summary.counts)
        totals.add(batch)
        db.session.execute(
            sa.update(Run)
            .where(Run.id == self.run_id)
            .values(
                total_entries=totals.total,
                inserted_entries=totals.created,
                updated_entries=totals.updated + totals.deleted,
                errored_entries=totals.failed,
            )
        )

    def _save_run_counters(self, summary: HarvestSummary) -> None:
        if self.run_id is None:
            return
        self._update_run_counters(summary, WriteCounts())
        db.session.commit()

    def _advance_watermark(self, response_date: datetime) -> None:
        db.session.execute(
            sa.update(OAIHarvester)
            .where(OAIHarvester.id == self.harvester.id)
            .values(watermark=response_date)
        )
        db.session.commit()


# -- assembly from the application's configuration ---------------------------------------
progress_listener: ContextVar[ProgressCallback | None] = ContextVar(
    "oai_harvest_progress_listener", default=None
)
"""Set by an interactive caller (the CLI) to watch a run that invenio-jobs executes."""


def build_client(
    base_url: str,
    harvester_id: str | None = None,
    request_delay: float | None = None,
    *,
    timeout: tuple[float, float] | None = None,
    max_retries: int | None = None,
    max_retry_wait: float | None = None,
) -> OAIClient:
    """An OAI-PMH client configured from the application (timeouts, retries, politeness);
    the preflight check, which someone waits for, asks with shorter timeouts and retries."""
    from ..protocol.client import OAIClient

    config = current_app.config
    user_agent = config["OAI_HARVESTER_USER_AGENT"]
    contact = config["OAI_HARVESTER_CONTACT_EMAIL"]
    if user_agent is None:
        who = f"; harvester {harvester_id}" if harvester_id else ""
        mail = f"; mailto:{contact}" if contact else ""
        user_agent = (
            f"oarepo-oaipmh-harvester/{__version__} "
            f"(+https://github.com/oarepo/oarepo-oaipmh-harvester{who}{mail})"
        )
    return OAIClient(
        base_url,
        timeout=timeout or tuple(config["OAI_HARVESTER_REQUEST_TIMEOUT"]),
        max_retries=config["OAI_HARVESTER_MAX_RETRIES"] if max_retries is None else max_retries,
        max_retry_wait=(
            config["OAI_HARVESTER_MAX_RETRY_WAIT"] if max_retry_wait is None else max_retry_wait
        ),
        max_restarts=config["OAI_HARVESTER_MAX_RESTARTS"],
        user_agent=user_agent,
        request_delay=(
            config["OAI_HARVESTER_REQUEST_DELAY"] if request_delay is None else request_delay
        ),
    )


def make_writer(harvester_id: str, run_id: uuid.UUID | None) -> RecordWriter:
    """The writer of a harvester's records into its target service, for one run."""
    from ..proxies import current_oai_harvester

    harvester = db.session.get(OAIHarvester, harvester_id)
    if harvester is None:
        raise LookupError(f"No harvester with id {harvester_id!r}.")
    return RecordWriter(
        harvester_id=harvester.id,
        service=current_service_registry.get(harvester.target),
        transformer=current_oai_harvester.transformers.get(harvester.transformer),
        identity=system_identity,
        run_id=run_id,
    )


def run_harvest(
    harvester_id: str,
    *,
    since: datetime | None = None,
    since_source: SinceSource = SinceSource.LAST_SUCCESS,
    full: bool = False,
    identifiers: list[str] | None = None,
    run_id: uuid.UUID | None = None,
    progress: ProgressCallback | None = None,
    reconcile_only: bool = False,
    write_mode: str | None = None,
) -> HarvestSummary:
    """Run one harvest of a stored harvester in this process.

    `write_mode` ("local" or "celery") overrides OAI_HARVESTER_WRITE_MODE for this run.
    """
    harvester = db.session.get(OAIHarvester, harvester_id)
    if harvester is None:
        raise LookupError(f"No harvester with id {harvester_id!r}.")
    # Runs outside invenio-jobs still need an id: reconciliation tells seen rows by it.
    is_jobs_run = run_id is not None and db.session.get(Run, run_id) is not None
    run_id = run_id or uuid.uuid4()
    config = current_app.config
    writer = make_writer(harvester.id, run_id)
    dispatcher = None
    fan_out = (write_mode or config["OAI_HARVESTER_WRITE_MODE"]) == "celery" and is_jobs_run
    if fan_out and not identifiers and not reconcile_only:
        dispatcher = BatchDispatcher(
            harvester_id=harvester.id,
            parent_run_id=run_id,
            writer_factory=make_writer,
            queue=config["OAI_HARVESTER_WRITE_QUEUE"],
            wait_timeout=config["OAI_HARVESTER_SUBTASK_TIMEOUT"],
            take_over_after=config["OAI_HARVESTER_SUBTASK_TAKEOVER_AFTER"],
        )
    lock = exclusive_run(
        harvester.id,
        db.engine,
        wait=config["OAI_HARVESTER_CONCURRENT_RUNS"] == "wait",
        timeout=config["OAI_HARVESTER_LOCK_TIMEOUT"],
    )
    with lock, build_client(harvester.base_url, harvester.id, harvester.request_delay) as client:
        return HarvestRun(
            harvester,
            client=client,
            writer=writer,
            run_id=run_id,
            progress=progress or progress_listener.get(),
            reconcile=ReconcileMode(config["OAI_HARVESTER_RECONCILE"]),
            reconcile_max_share=config["OAI_HARVESTER_RECONCILE_MAX_SHARE"],
            prefetch_batches=config["OAI_HARVESTER_PREFETCH_BATCHES"],
            dispatcher=dispatcher,
        ).execute(
            since=since,
            since_source=since_source,
            full=full,
            identifiers=identifiers,
            reconcile_only=reconcile_only,
        )
