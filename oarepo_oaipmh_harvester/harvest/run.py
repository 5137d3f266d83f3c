"""One harvest run: Identify, plan the window, stream records, write them in batches.

Decision owned here: the order of a run - Identify first, then the window (:mod:`.window`),
the list (records, identifiers for reconciliation, or GetRecord of selected identifiers),
writing each batch here or handing it to workers (:mod:`.fanout`), and only after the last
batch reconciliation (:mod:`.reconcile`) and the watermark.  It is built by
:mod:`.assembly` and reads no application config itself.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from invenio_db import db
from invenio_jobs.models import Run

from ..models import OAIHarvester
from ..protocol.records import OAIRecord
from .changes import tracking_key
from .counts import WriteCounts
from .fanout import BatchDispatcher
from .lock import RunLock
from .prefetch import batched, prefetch, spooled
from .preview import PreviewReport
from .reconcile import Reconciler, reconciles_after_full
from .repairs import RepairRuns
from .results import HarvestProgress, HarvestSummary, ProgressCallback
from .run_log import RunLog
from .settings import HarvestSettings
from .stopping import RunStopped, StopSignal
from .window import (
    HarvestWindow,
    Scope,
    SinceSource,
    plan_window,
    scope_changes,
    stored_watermarks,
)
from .writer import RecordWriter

if TYPE_CHECKING:
    from ..protocol.client import OAIClient

log = logging.getLogger(__name__)

ANALYZE_FIRST_AFTER = 1000
"""Written records after which a run first refreshes the tracking table's statistics."""

COUNTERS_INTERVAL = 2.0
"""Seconds between saves of the run's progress counters while batches write nothing."""


class RunTooLong(Exception):
    """A run went on past OAI_HARVESTER_MAX_RUN_SECONDS; nothing of its window is trusted."""

    def __init__(self, harvester_id: str, limit: float) -> None:
        super().__init__(
            f"The run of harvester {harvester_id!r} took longer than "
            f"OAI_HARVESTER_MAX_RUN_SECONDS ({limit:.0f} s) and was stopped; the watermark was "
            f"not moved, so the next run continues the same window."
        )


class HarvestRun(RepairRuns):
    """Brings the target service in step with one harvester's provider, once."""

    def __init__(
        self,
        harvester: OAIHarvester,
        *,
        settings: HarvestSettings,
        client: OAIClient,
        writer: RecordWriter,
        lock: RunLock | None = None,
        run_id: uuid.UUID | None = None,
        progress: ProgressCallback | None = None,
        dispatcher: BatchDispatcher | None = None,
        preview: PreviewReport | None = None,
        stop: StopSignal | None = None,
        run_log: RunLog | None = None,
    ) -> None:
        self.harvester = harvester
        # Plain copies: the ORM object expires on every batch commit, and the prefetch
        # thread must never touch the database session.
        self.harvester_id: str = harvester.id
        self.base_url: str = harvester.base_url
        self.metadata_prefix: str = harvester.metadata_prefix
        self.setspecs: list[str | None] = list(harvester.setspecs or []) or [None]
        self.batch_size: int = settings.batch_size_of(harvester.batch_size)
        self.settings = settings
        self.client = client
        self.writer = writer
        self.lock = lock or RunLock(harvester.id)
        self.run_id = run_id
        self.progress = progress
        self.dispatcher = None if preview is not None else dispatcher
        self.preview = preview
        self.writer.preview = preview
        self._seen: set[str] = set()
        """Identifiers a preview saw (it stamps no tracking row), for its reconciliation."""
        self._stream: Any = None
        self._written = 0
        self._analyze_at = ANALYZE_FIRST_AFTER
        self._deadline = time.monotonic() + settings.max_run_seconds
        self.stop = stop or StopSignal(None)
        self.run_log = run_log or RunLog(log, harvester.id)
        self._summary: HarvestSummary | None = None

    def execute(
        self,
        *,
        since: datetime | None = None,
        since_source: SinceSource = SinceSource.LAST_SUCCESS,
        full: bool = False,
        identifiers: list[str] | None = None,
        reconcile_only: bool = False,
        reindex: bool = False,
        rewrite: bool = False,
        errors_only: bool = False,
        force: bool = False,
        retry_errors: bool = False,
        purge: bool = False,
        forget: bool = False,
    ) -> HarvestSummary:
        """Harvest; protocol failures propagate (nothing of the window is trusted then).

        Besides a harvest (incremental, full, of some identifiers, reconciliation only) a
        run may repair what was harvested without asking the provider (`reindex`, `rewrite`
        from the stored XML, `purge`) or ask again for the records that failed
        (`retry_errors`). `force` writes records the provider did not change too.
        """
        harvester_id = self.harvester.id
        self.writer.force = force
        summary = HarvestSummary(harvester_id=harvester_id, window=None)
        self._summary = summary
        if reindex:
            self._reindex(summary)
            return self._finish(summary)
        if rewrite:
            self._rewrite(summary, errors_only=errors_only, identifiers=identifiers)
            return self._finish(summary)
        if purge:
            self._purge(summary, forget=forget)
            return self._finish(summary)
        profile = self.client.identify()  # per run: the provider may have changed
        if retry_errors:
            identifiers = self.writer.tracking.failed_identifiers(
                limit=None, max_attempts=None, due_by=None
            )
            summary.warnings.append(f"Asked again for {len(identifiers)} failed records.")
        if identifiers or retry_errors:
            records = self._get_records(identifiers or [], summary.counts)
            self._write(summary, batched(self._limited(records), self.batch_size))
            return self._finish(summary)

        scopes = [Scope(self.base_url, self.metadata_prefix, spec) for spec in self.setspecs]
        stored = stored_watermarks(self.harvester.watermarks, self.harvester.watermark, scopes)
        windows = {
            scope: plan_window(
                response_date=profile.response_date,
                granularity=profile.granularity,
                since=since,
                since_source=since_source,
                watermark=stored.get(scope.key),
                full=full or reconcile_only,
                now=datetime.now(UTC),
                clock_tolerance=timedelta(seconds=self.settings.clock_tolerance),
            )
            for scope in scopes
        }
        for scope, window in windows.items():
            self.run_log.info(f"{scope.describe()}, window {window.describe()}")
        summary.window = windows[scopes[0]]
        summary.warnings.extend(scope_changes(stored, scopes))
        clock_problem = summary.window.clock_problem
        if clock_problem:
            self.run_log.warning(clock_problem)
            summary.warnings.append(clock_problem)
        is_full = all(window.is_full for window in windows.values())
        wants_reconcile = reconcile_only or reconciles_after_full(
            self.settings.reconcile, profile.deleted_record
        )
        # A preview writes nothing, not even seen stamps: it remembers what it saw instead.
        self.writer.marks_unchanged_as_seen = is_full and wants_reconcile and not self.preview
        if reconcile_only:
            records = self._list_tombstones_marking_seen(windows)
        else:
            records = self._list_records(windows)
        batches = batched(self._limited(records), self.batch_size)
        if self.settings.spool and not reconcile_only:
            # Tokens that expire fast: the list is read to its end while batches are written.
            batches = spooled(batches, self.settings.spool_directory)
        elif self.settings.prefetch_batches and not reconcile_only:
            # Whole batches cross the thread boundary: one queue hand-over per batch.
            batches = prefetch(batches, self.settings.prefetch_batches)
        # Closed on any failure too: a read-ahead thread must not go on asking the provider
        # once the run has stopped (and let its lock go).
        with contextlib.closing(batches):
            if self.dispatcher is not None and not reconcile_only:
                self._dispatch(summary, batches)
            else:
                self._write(summary, batches)
        if self.preview is not None:
            if is_full and wants_reconcile:
                self._predict_reconciliation()
            return self._finish(summary)
        if summary.succeeded and is_full and wants_reconcile:
            self.lock.verify()
            self._reconcile(summary)
        if summary.succeeded and not reconcile_only:
            self.lock.verify()  # the watermark moves only while the lock is held
            self._advance_watermarks(windows, stored, summary)
        if not reconcile_only:
            self._retry_failed(summary)
        return self._finish(summary)

    def _finish(self, summary: HarvestSummary) -> HarvestSummary:
        summary.requests = self.client.request_count
        if self.preview is None:
            self.run_log.finished(summary)
        if (summary.warnings or summary.counts.notices) and self._run_row is not None:
            # A successful run keeps this message; a partial one gets summary.message().
            db.session.execute(
                sa.update(Run).where(Run.id == self._run_row).values(message=summary.message())
            )
        self._save_run_counters(summary)  # the final counts, reconciliation included
        self._report(summary)
        return summary

    # -- reading ---------------------------------------------------------------------------
    def _list_records(self, windows: dict[Scope, HarvestWindow]) -> Iterator[OAIRecord]:
        for scope, window in windows.items():
            self._stream = self.client.list_records(
                self.metadata_prefix, set_spec=scope.set_spec, **window.arguments()
            )
            yield from self._stream

    def _list_tombstones_marking_seen(
        self, windows: dict[Scope, HarvestWindow]
    ) -> Iterator[OAIRecord]:
        """ListIdentifiers: live identifiers are only marked seen, tombstones are written."""
        for scope, window in windows.items():
            self._stream = self.client.list_identifiers(
                self.metadata_prefix, set_spec=scope.set_spec, **window.arguments()
            )
            for headers in batched(self._stream, self.batch_size):
                live = [h.identifier for h in headers if not h.deleted]
                if self.preview is None:
                    self.writer.tracking.mark_seen(live)
                else:
                    self._seen.update(tracking_key(identifier) for identifier in live if identifier)
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

    # -- reconciliation --------------------------------------------------------------------
    def _reconcile(self, summary: HarvestSummary) -> None:
        reconciler = Reconciler(
            self.writer.tracking,
            self.writer.target,
            max_share=self.settings.reconcile_max_share,
            batch_size=self.batch_size,
        )
        refusal = reconciler.refusal()
        if refusal:
            summary.problems.append(refusal)
            return
        removed = reconciler.remove_unseen(
            on_commit=lambda counts: self._update_run_counters(summary, counts)
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
            self._check_bounds()
            counters_behind = True
            batch_counts = self.writer.write_batch(batch, on_commit=save_counters_with_batch)
            summary.counts.add(batch_counts)
            if self.preview is None:
                self.run_log.batch_written(
                    batch_counts,
                    summary.counts,
                    getattr(self._stream, "complete_list_size", None),
                )
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
        unchanged = read = 0
        try:
            for batch in batches:
                self._check_bounds()
                changed, unchanged_ids = self.writer.split_unchanged(batch)
                if unchanged_ids:
                    # Counted and (for reconciliation) marked here: no worker needs them.
                    unchanged += len(unchanged_ids)
                    if self.writer.marks_unchanged_as_seen:
                        self.writer.tracking.mark_seen(unchanged_ids)
                    self.dispatcher.add_to_total(len(unchanged_ids))
                if changed:
                    self.dispatcher.dispatch(changed)
                    self._keep_statistics_fresh(len(changed))
                read += len(batch)
                self.run_log.progress(
                    f"{read} records read, {unchanged} of them unchanged; the changed ones "
                    f"are written by workers"
                )
        except RunStopped as stopped:
            # The batches handed out are written or cancelled before the run ends; the wait
            # ends in RunStopped, with what the workers wrote counted.
            reason = stopped.reason
            self.dispatcher.wait(verify_lock=self.lock.verify, stop=lambda: reason)
            raise
        summary.counts.add(
            self.dispatcher.wait(verify_lock=self.lock.verify, stop=self._stop_reason)
        )
        summary.counts.unchanged += unchanged
        self._report(summary)

    def _check_bounds(self) -> None:
        """Before each batch: the run still holds its lock (a run that lost it must not write
        beside another), is within its time and was not asked to stop."""
        self.lock.verify()
        if time.monotonic() > self._deadline:
            raise RunTooLong(self.harvester_id, self.settings.max_run_seconds)
        reason = self._stop_reason()
        if reason:
            raise RunStopped(reason, self._summary.counts.total if self._summary else 0)

    def _stop_reason(self) -> str | None:
        return None if self.preview is not None else self.stop.reason()

    def _keep_statistics_fresh(self, written: int) -> None:
        """Refresh the tracking table's statistics each time this run has doubled its writes."""
        if self.preview is not None:
            return  # a preview wrote nothing
        self._written += written
        if self._written >= self._analyze_at:
            self.writer.tracking.refresh_statistics()
            self._analyze_at = 2 * self._written

    def _report(self, summary: HarvestSummary) -> None:
        if self.progress is not None:
            self.progress(
                HarvestProgress(
                    counts=summary.counts,
                    complete_list_size=getattr(self._stream, "complete_list_size", None),
                )
            )

    @property
    def _run_row(self) -> uuid.UUID | None:
        """The id of the invenio-jobs run whose columns count this run (a preview has none)."""
        return self.run_id if self.preview is None else None

    def _update_run_counters(self, summary: HarvestSummary, batch: WriteCounts) -> None:
        if self._run_row is None:
            return
        columns = summary.counts.plus(batch).run_columns()
        db.session.execute(sa.update(Run).where(Run.id == self._run_row).values(**columns))

    def _save_run_counters(self, summary: HarvestSummary) -> None:
        if self._run_row is None:
            return
        self._update_run_counters(summary, WriteCounts())
        db.session.commit()

    def _advance_watermarks(
        self,
        windows: dict[Scope, HarvestWindow],
        stored: dict[str, datetime],
        summary: HarvestSummary,
    ) -> None:
        """Store, for the scopes this run harvested (and only those), the watermarks earned."""
        earned = {}
        for scope, window in windows.items():
            if window.until is None:
                return  # the provider's clock was not believed: keep every watermark
            previous = stored.get(scope.key)
            watermark = window.next_watermark(previous) or previous
            if watermark is not None:  # a scope with neither stays to be harvested in full
                earned[scope.key] = watermark
        if not earned:
            return
        db.session.execute(
            sa.update(OAIHarvester)
            .where(OAIHarvester.id == self.harvester_id)
            .values(
                watermarks={key: value.isoformat() for key, value in earned.items()},
                watermark=min(earned.values()),
            )
        )
        db.session.commit()
        summary.watermark_advanced = True
