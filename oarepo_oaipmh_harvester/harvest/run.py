"""One harvest run: Identify, plan the window, stream records, write them in batches.

Decision owned here: the order of a run - Identify first, then the window (:mod:`.window`),
the list (records, identifiers for reconciliation, or GetRecord of selected identifiers),
writing each batch here or handing it to workers (:mod:`.fanout`), and only after the last
batch reconciliation (:mod:`.reconcile`) and the watermark; at the end of a harvest, the
records that failed in earlier runs are asked for again. Before all of it, the documents that
earlier runs left out of the search index are sent. A run that repairs instead of
harvesting is handed to :mod:`.repairs`. It is built by :mod:`.assembly` and reads no
application config itself.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from invenio_db import db

from ..models import OAIHarvester
from ..protocol.client import OAIClient
from ..protocol.errors import IdDoesNotExist, OAITransportError
from ..protocol.records import OAIRecord
from .counts import WriteCounts, describe_error
from .deletion_guard import HELD, PENDING, HeldDeletions
from .fanout import BatchDispatcher
from .ledger import RunLedger
from .lock import RunLock
from .prefetch import batched, prefetch, spooled
from .reconcile import Reconciler, reconciles_after_full
from .repairs import Repairer
from .request import RunKind, RunRequest
from .results import HarvestSummary, ProgressCallback
from .run_log import RunLog
from .settings import HarvestSettings
from .stopping import RunBounds, RunStopped, StopSignal
from .window import HarvestWindow, Scope, plan_window, scope_changes, stored_watermarks
from .writer import RecordWriter

log = logging.getLogger(__name__)


class HarvestRun:
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
        self.harvester_batch_size: int = settings.batch_size_of(harvester.batch_size)
        self.batch_size: int = settings.batch_size_of(
            harvester.batch_size, drafts=writer.target.writes_grow_with_transaction
        )
        self.settings = settings
        self.client = client
        self.writer = writer
        self.writes = writer.writes
        self.lock = lock or RunLock(harvester.id)
        self.dispatcher = dispatcher
        self._stream: Any = None
        dry_run = self.writes.is_dry_run
        self.ledger = RunLedger(
            None if dry_run else run_id,  # a dry run counts nothing on any run row
            progress=progress,
            run_log=None if dry_run else (run_log or RunLog(log, harvester.id)),
            list_size=lambda: getattr(self._stream, "complete_list_size", None),
        )
        self.bounds = RunBounds(
            harvester.id,
            self.lock,
            max_seconds=settings.max_run_seconds,
            stop=StopSignal(None) if dry_run else (stop or StopSignal(None)),
        )
        self.repairer = Repairer(
            writer, batch_size=self.batch_size, bounds=self.bounds, ledger=self.ledger
        )

    def execute(self, request: RunRequest) -> HarvestSummary:
        """Do what `request` asks; protocol failures propagate (nothing of the window is
        trusted then)."""
        summary = HarvestSummary(harvester_id=self.harvester_id, window=None)
        self.writer.force = request.force
        try:
            self._execute(request, summary)
        except RunStopped:
            # A stopped run's row counts what its batches wrote, unchanged records included.
            self.ledger.settle(summary)
            raise
        return self._finish(summary)

    def _execute(self, request: RunRequest, summary: HarvestSummary) -> None:
        kind = request.kind
        # A reindex sends every document anyway, a purge removes them.
        if kind not in (RunKind.REINDEX, RunKind.PURGE) and not self.writes.is_dry_run:
            self.repairer.index_left_out(summary)
        if kind is RunKind.REINDEX:
            self.repairer.reindex(summary)
        elif kind is RunKind.REWRITE:
            self.repairer.rewrite(
                summary, errors_only=request.errors_only, identifiers=request.identifiers
            )
        elif kind is RunKind.PURGE:
            self.repairer.purge(summary, forget=request.forget)
        elif kind is RunKind.UNDO:
            self.repairer.undo(summary, request.undo)
        elif kind in (RunKind.IDENTIFIERS, RunKind.RETRY_ERRORS):
            self.client.identify()  # the provider answers before anything is asked of it
            identifiers = list(request.identifiers)
            if kind is RunKind.RETRY_ERRORS:
                identifiers = self.writer.tracking.failed_identifiers(
                    limit=None, max_attempts=None, due_by=None
                )
                summary.warnings.append(f"Asked again for {len(identifiers)} failed records.")
            records = self._get_records(identifiers, summary.counts)
            self._write(summary, batched(self.writes.records(records), self.batch_size))
        else:
            self._harvest(summary, request)

    def _harvest(self, summary: HarvestSummary, request: RunRequest) -> None:
        """The list of every scope (set) of the harvester in its window, written; then
        reconciliation, the watermarks and the retries of earlier failures."""
        reconcile_only = request.kind is RunKind.RECONCILE
        profile = self.client.identify()  # per run: the provider may have changed
        scopes = [Scope(self.base_url, self.metadata_prefix, spec) for spec in self.setspecs]
        stored = stored_watermarks(self.harvester.watermarks, self.harvester.watermark, scopes)
        windows = {
            scope: plan_window(
                response_date=profile.response_date,
                granularity=profile.granularity,
                since=request.since,
                since_source=request.since_source,
                watermark=stored.get(scope.key),
                full=request.full or reconcile_only,
                now=datetime.now(UTC),
                clock_tolerance=timedelta(seconds=self.settings.clock_tolerance),
            )
            for scope in scopes
        }
        for scope, window in windows.items():
            self.ledger.say(f"{scope.describe()}, window {window.describe()}")
        if self.batch_size < self.harvester_batch_size:
            self.ledger.say(
                f"writes batches of {self.batch_size} records, not the harvester's "
                f"{self.harvester_batch_size}: each record's write into this draft-enabled "
                f"target costs more the larger its batch (OAI_HARVESTER_DRAFTS_LARGEST_BATCH)"
            )
        for warning in self.writer.target.scale_warnings():
            self.ledger.warn(warning)
        summary.window = windows[scopes[0]]
        summary.warnings.extend(scope_changes(stored, scopes))
        clock_problem = summary.window.clock_problem
        if clock_problem:
            self.ledger.warn(clock_problem)
            summary.warnings.append(clock_problem)
        is_full = all(window.is_full for window in windows.values())
        wants_reconcile = reconcile_only or reconciles_after_full(
            self.settings.reconcile, profile.deleted_record
        )
        self.writer.marks_unchanged_as_seen = (
            is_full and wants_reconcile and self.writes.stamps_seen
        )
        if reconcile_only:
            records = self._list_tombstones_marking_seen(windows)
        else:
            records = self._list_records(windows)
        dispatching = self.dispatcher is not None and not reconcile_only
        # A subtask holds a harvester's batch; its writer commits it batch_size at a time.
        size = self.harvester_batch_size if dispatching else self.batch_size
        batches = batched(self.writes.records(records), size)
        if self.settings.spool and not reconcile_only:
            # Tokens that expire fast: the list is read to its end while batches are written.
            batches = spooled(batches, self.settings.spool_directory)
        elif self.settings.prefetch_batches and not reconcile_only:
            # Whole batches cross the thread boundary: one queue hand-over per batch.
            batches = prefetch(batches, self.settings.prefetch_batches)
        # Closed on any failure too: a read-ahead thread must not go on asking the provider
        # once the run has stopped (and let its lock go).
        with contextlib.closing(batches):
            if dispatching:
                self._dispatch(summary, batches)
            else:
                self._write(summary, batches)
        if self.writes.is_dry_run:
            # A dry run ends with its list: it predicts what a reconciliation would delete,
            # and neither reconciles nor moves a watermark nor retries anything.
            if is_full and wants_reconcile:
                self.writes.predict_reconciliation(self.writer.tracking)
            return
        self.bounds.stop_if_asked(summary.counts.total)  # a stop after the last batch too
        self._settle_deletions(summary)
        if summary.succeeded and is_full and wants_reconcile:
            self.lock.verify()
            self._reconcile(summary)
        if summary.succeeded and not reconcile_only:
            self.lock.verify()  # the watermark moves only while the lock is held
            self._advance_watermarks(windows, stored, summary)
        if not reconcile_only:
            self._retry_failed(summary)

    def _finish(self, summary: HarvestSummary) -> HarvestSummary:
        summary.requests = self.client.request_count
        # What the provider got wrong and the run worked around: told once, not per record.
        summary.warnings.extend(self.client.provider_faults.values())
        self.ledger.finish(summary)
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
                self.writes.mark_seen(self.writer.tracking, live)
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

    def _get_records(self, identifiers: list[str], counts: WriteCounts) -> Iterator[OAIRecord]:
        """GetRecord of each identifier; one the provider will not serve fails alone."""
        tracking = self.writer.tracking
        for identifier in identifiers:
            try:
                asked = tracking.source_identifier(identifier)
                yield self.client.get_record(asked, self.metadata_prefix)
            except IdDoesNotExist as error:
                # Counted and reported by the run; a row only where the record was harvested
                # before (it is gone now): an identifier mistyped or never there gets none.
                self._track_failure(identifier, str(error), counts, tracked_only=True)
            except OAITransportError as error:
                if error.status_code is None:
                    raise  # no answer at all: the provider is down, not this record
                # An HTTP error for one record (invenio-oaiserver answers 500 for a record
                # deleted there): that identifier's error, the others are still asked for.
                message = (
                    f"The provider answered HTTP {error.status_code} for GetRecord of this "
                    f"identifier ({describe_error(error)})"
                )
                self._track_failure(identifier, message, counts)

    def _track_failure(
        self, identifier: str, message: str, counts: WriteCounts, *, tracked_only: bool = False
    ) -> None:
        counts.fail(identifier, message)
        self.writes.track_failure(
            self.writer.tracking,
            identifier,
            message,
            retry_backoff=self.writer.retry_backoff,
            tracked_only=tracked_only,
        )

    # -- reconciliation and retries --------------------------------------------------------
    def _settle_deletions(self, summary: HarvestSummary) -> None:
        """The tombstones this run (or a run that died) left waiting: applied, or held when
        they are too many (:mod:`.deletion_guard`)."""
        guard = self.writer.deletion_guard
        if guard is None or not guard.active:
            return
        waiting = HeldDeletions(self.harvester_id)
        pending = waiting.count(PENDING)
        if not pending:
            return
        live = waiting.live()
        if guard.holds(pending, live):
            waiting.move(PENDING, HELD)
            db.session.commit()
            summary.counts.held += pending
            summary.problems.append(
                guard.why(pending, live, self.harvester_id, "deleted at the source")
            )
            return
        summary.counts.add(
            waiting.apply(
                PENDING,
                self.writer.target,
                batch_size=self.batch_size,
                run_id=self.writer.run_id,
                on_commit=self.ledger.on_commit(summary),
            )
        )

    def _reconcile(self, summary: HarvestSummary) -> None:
        guard = self.writer.deletion_guard
        if guard is not None and guard.active:
            unseen, live = self.writer.tracking.count_unseen()
            if guard.holds(unseen, live):
                summary.counts.held += self.writer.tracking.hold_unseen()
                summary.problems.append(
                    guard.why(unseen, live, self.harvester_id, "no longer listed")
                )
                return
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
        removed = reconciler.remove_unseen(on_commit=self.ledger.on_commit(summary))
        summary.counts.add(removed)
        summary.reconciled = True

    def _retry_failed(self, summary: HarvestSummary) -> None:
        """Ask again (GetRecord) for records that failed in earlier runs and were not seen in
        this window: a bounded number, those whose backoff has passed, under the attempt
        limit. Their outcome is reported apart: a record that still fails was failing before,
        and does not make this run partial."""
        settings = self.settings
        if settings.retry_per_run <= 0:
            return
        identifiers = self.writer.tracking.failed_identifiers(
            limit=settings.retry_per_run,
            max_attempts=settings.retry_max_attempts,
            due_by=datetime.now(UTC),
        )
        if not identifiers:
            return
        retried = WriteCounts()
        records = self._get_records(identifiers, retried)
        for batch in batched(records, self.batch_size):
            self.bounds.check(summary.counts.total)
            retried.add(self.writer.write_batch(batch))
        healed = retried.created + retried.updated + retried.deleted + retried.unchanged
        summary.retried = retried
        summary.warnings.append(
            f"Asked again for {len(identifiers)} records that failed in earlier runs: "
            f"{healed} written, {retried.failed} still failing."
        )

    # -- writing ---------------------------------------------------------------------------
    def _write(self, summary: HarvestSummary, batches: Iterable[list[OAIRecord]]) -> None:
        for batch in batches:
            self.bounds.check(summary.counts.total)
            counts = self.writer.write_batch(batch, on_commit=self.ledger.counters_with(summary))
            summary.counts.add(counts)
            self.writes.written(self.writer.tracking, counts.total - counts.unchanged)
            self.ledger.batch_done(summary, counts)
        self.ledger.settle(summary)

    def _dispatch(self, summary: HarvestSummary, batches: Iterable[list[OAIRecord]]) -> None:
        unchanged = read = 0
        try:
            for batch in batches:
                self.bounds.check(summary.counts.total + read)
                changed, unchanged_ids = self.writer.split_unchanged(batch)
                if unchanged_ids:
                    # Counted and (for reconciliation) marked here: no worker needs them.
                    unchanged += len(unchanged_ids)
                    if self.writer.marks_unchanged_as_seen:
                        self.writer.tracking.mark_seen(unchanged_ids)
                    self.dispatcher.add_to_total(len(unchanged_ids))
                if changed:
                    self.dispatcher.dispatch(changed, records_per_transaction=self.batch_size)
                    self.writes.written(self.writer.tracking, len(changed))
                read += len(batch)
                self.ledger.progress_line(
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
            self.dispatcher.wait(verify_lock=self.lock.verify, stop=self.bounds.stop.reason)
        )
        summary.counts.unchanged += unchanged
        self.ledger.report(summary)

    # -- the watermark ---------------------------------------------------------------------
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
