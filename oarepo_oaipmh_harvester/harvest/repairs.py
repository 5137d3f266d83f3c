"""Repairs of what a harvester wrote: records transformed again from their stored XML, the
local records of a harvester removed (a purge), single records asked for again (GetRecord:
re-harvests and the retries of failed records), and the bounds of a preview. Mixed into the
batch writer and the run.

Decision owned here: when a record transformed again needs no write (the target already
holds the result: no new revision), when a local edit stops a rewrite (the harvester's
local_drafts policy: local wins, or harvest wins with a notice), and which local records a
purge removes (those the harvester created, never those it took over) and what it leaves on
their tracking rows (a purged mark, so that the next harvest recreates them; or nothing, with
forget).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from invenio_db import db

from ..models import OAIHarvester
from ..protocol.errors import IdDoesNotExist, OAITransportError
from ..protocol.records import OAIRecord
from .changes import tracking_key
from .counts import WriteCounts, describe_error
from .diffs import holds, target_changes
from .prefetch import batched
from .targets.options import LocalDraftPolicy
from .tracking import NOT_FETCHED, NOT_INDEXED, errors_of_kind
from .transformers import with_transform_warnings
from .unit_of_work import BulkIndexingUnitOfWork

if TYPE_CHECKING:
    from .results import HarvestSummary
    from .run import HarvestRun
    from .writer import RecordWriter


def _after_a_good_rewrite(known: dict[str, Any]) -> dict[str, Any]:
    """The error columns of a row whose rewrite succeeded: clear, unless the provider would
    not serve the record (then its error and retry schedule stay as they were)."""
    not_fetched = errors_of_kind(NOT_FETCHED, known["errors"])
    if not not_fetched:
        return {"errors": None, "attempts": 0, "next_attempt_at": None}
    return {
        "errors": not_fetched,
        "attempts": known["attempts"],
        "next_attempt_at": known["next_attempt_at"],
    }


class RepairBatches:
    """The repair batches of :class:`~.writer.RecordWriter` (its target, tracking store,
    transformer and one-record write)."""

    def rewrite_batch(self: RecordWriter, stored: Sequence[dict[str, Any]]) -> WriteCounts:
        """Transform stored records again (no provider) and write those whose result is not
        what the target holds; a local edit of a record follows the local_drafts policy."""
        counts = WriteCounts()
        tracked = {row["oai_identifier"]: row for row in stored}
        self.tracking.lock(list(tracked))
        now = datetime.now(UTC)
        rows: list[dict[str, Any]] = []
        with BulkIndexingUnitOfWork(db.session) as uow:
            for known in stored:
                if self.preview is not None:
                    self.preview.examined += 1
                record = OAIRecord(
                    known["oai_identifier"], known["datestamp"] or "", False, (),
                    xml=known["original_xml"],
                )  # fmt: skip
                row = self.tracking.new_row(
                    record.identifier,
                    datestamp=record.datestamp,
                    local_pid=known["local_pid"],
                    original_xml=record.xml,
                    harvested_at=now,
                    adopted=known["adopted"],
                )
                try:
                    data = self.transformer.transform(record)
                    row["warnings"] = with_transform_warnings(None, self.transformer)
                except Exception as error:  # noqa: BLE001 - tracked on the record
                    rows.append(row)
                    self._note_failure(row, counts, error)
                    self._preview_note(row, "fail", errors=row["errors"])
                    continue
                row["transformed"] = data
                if self._rewrite_is_unneeded(known, data, row, counts):
                    continue
                rows.append(row)
                self._write_one(uow, None, row, counts, data, restore=bool(known["purged"]))
            self._finish_rows(rows, tracked)
            self._keep_fetch_errors(rows, tracked)
            self.tracking.save(rows)
            if self.preview is not None:
                self._roll_back_preview(uow)
                return counts
            uow.commit()
        if uow.index_failures:
            self._note_not_indexed(uow.index_failures, rows, tracked, counts)
        return counts

    def _keep_fetch_errors(
        self: RecordWriter, rows: list[dict[str, Any]], tracked: dict[str, dict[str, Any]]
    ) -> None:
        """A record the provider would not serve stays failed (and keeps its retry schedule)
        after a rewrite of its older stored copy: only the provider can heal it."""
        for row in rows:
            known = tracked[row["oai_identifier"]]
            if not row["errors"]:
                row.update(_after_a_good_rewrite(known))

    def _rewrite_is_unneeded(
        self: RecordWriter,
        known: dict[str, Any],
        data: dict[str, Any],
        row: dict[str, Any],
        counts: WriteCounts,
    ) -> bool:
        """Whether the target already holds `data` (counted unchanged), or a local edit that
        the policy keeps (counted failed); a local edit that the harvest overwrites is noted."""
        pid = known["local_pid"]
        if not pid or known["purged"] or errors_of_kind(NOT_INDEXED, known["errors"]):
            return False  # nothing there, a tombstone to restore, or a document to index
        current = self.target.read(pid)
        if current is None:
            return False  # gone locally: the adapter decides (create again, or report)
        written = known["transformed"]
        edited = written is not None and not holds(current, written)
        if not edited and not target_changes(current, data, written):
            counts.unchanged += 1
            if known["errors"] and self.preview is None:
                # The target already holds the fixed output: no revision, only the error goes.
                self.tracking.update(
                    row["oai_identifier"],
                    transformed=data,
                    warnings=row["warnings"],
                    **_after_a_good_rewrite(known),
                )
            return True
        if edited and self.target.options.local_drafts is LocalDraftPolicy.LOCAL_WINS:
            message = (
                f"Record {pid} was edited in this repository since it was harvested; the "
                f"rewrite did not overwrite it (local wins)."
            )
            self._note_failure(row, counts, RuntimeError(message), described=message)
            self.tracking.update(row["oai_identifier"], errors=row["errors"])
            self._preview_note(row, "fail", errors=row["errors"])
            return True
        if edited:
            notice = (
                f"Local edits of record {pid} were replaced by the harvested data "
                f"(local_drafts harvest-wins)."
            )
            row["warnings"] = [*(row["warnings"] or ()), notice]
            counts.notice(row["oai_identifier"], notice)
        return False

    def purge_batch(
        self: RecordWriter, rows: Sequence[tuple[str, str]], *, forget: bool
    ) -> WriteCounts:
        """Remove the local records of these (identifier, pid) rows through the target; the
        rows are marked purged (the next harvest recreates the records); with `forget` the
        run deletes every row when the purge is done."""
        counts = WriteCounts()
        identifiers = [identifier for identifier, _ in rows]
        self.tracking.lock(identifiers)
        with BulkIndexingUnitOfWork(db.session) as uow:
            for identifier, pid in rows:
                mark = uow.mark()
                try:
                    with db.session.begin_nested():
                        self.target.delete(pid, uow)
                except Exception as error:  # noqa: BLE001 - tracked on the record
                    uow.discard_since(mark)
                    counts.fail(identifier, describe_error(error))
                    self.tracking.update(identifier, errors=[describe_error(error)])
                    continue
                counts.deleted += 1
                if not forget:
                    keep_pid = pid if self.target.keeps_deleted_pids else None
                    self.tracking.update(
                        identifier, purged=True, local_pid=keep_pid, run_id=self.run_id
                    )
            uow.commit()
        if uow.index_failures:
            self._note_not_indexed(uow.index_failures, [], {}, counts, dict(rows))
        return counts


class RepairRuns:
    """The repair kinds of :class:`~.run.HarvestRun` and what every harvest does at its end
    (retrying records that failed earlier), and the bounds of a preview."""

    # -- reindexing ------------------------------------------------------------------------
    def _reindex(self: HarvestRun, summary: HarvestSummary) -> None:
        """Every live local record of the harvester to the index again, a batch at a time."""
        for rows in self.writer.tracking.live_local_records(self.batch_size):
            self.lock.verify()
            counts = self.writer.reindex(rows)
            summary.counts.add(counts)
            self._save_run_counters(summary)
            self._report(summary)

    # -- rewriting from the stored XML -----------------------------------------------------
    def _rewrite(
        self: HarvestRun,
        summary: HarvestSummary,
        *,
        errors_only: bool,
        identifiers: list[str] | None,
    ) -> None:
        """Every tracked live record (or those with errors, or those named) transformed again
        from its stored XML and written where the result differs: no provider request."""
        selected = [tracking_key(identifier) for identifier in identifiers or ()] or None
        stored = self.writer.tracking.stored_records(
            self.batch_size, errors_only=errors_only, identifiers=selected
        )
        for rows in stored:
            self._check_bounds()
            if self.preview is not None:
                rows = rows[: self.preview.room()]
                if not rows:
                    self.preview.stopped_early = True
                    break
            counts = self.writer.rewrite_batch(rows)
            summary.counts.add(counts)
            self._save_run_counters(summary)
            self._report(summary)

    # -- purging ---------------------------------------------------------------------------
    def _purge(self: HarvestRun, summary: HarvestSummary, *, forget: bool) -> None:
        """Remove, through the target, every local record this harvester created; then the
        harvester starts again from nothing (its watermarks go) so that a harvest recreates
        them."""
        for rows in self.writer.tracking.created_records(self.batch_size):
            self._check_bounds()
            counts = self.writer.purge_batch(rows, forget=forget)
            summary.counts.add(counts)
            self._save_run_counters(summary)
            self._report(summary)
        adopted = self.writer.tracking.adopted_count()
        if adopted:
            summary.warnings.append(
                f"{adopted} local records that the harvester took over but did not create were "
                f"left as they are."
            )
        if not summary.succeeded:
            return  # the records that could not be removed keep their rows, and the watermark
        self.lock.verify()
        if forget:
            forgotten = self.writer.tracking.forget_all()
            summary.warnings.append(f"Forgot {forgotten} tracked records of the harvester.")
        db.session.execute(
            sa.update(OAIHarvester)
            .where(OAIHarvester.id == self.harvester_id)
            .values(watermarks=None, watermark=None)
        )
        db.session.commit()

    # -- asking for single records (GetRecord) --------------------------------------------
    def _get_records(
        self: HarvestRun, identifiers: list[str], counts: WriteCounts
    ) -> Iterator[OAIRecord]:
        for identifier in identifiers:
            try:
                asked = self.writer.tracking.source_identifier(identifier)
                yield self.client.get_record(asked, self.metadata_prefix)
            except IdDoesNotExist as error:
                self._track_failure(identifier, str(error), counts)
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
        self: HarvestRun, identifier: str, message: str, counts: WriteCounts
    ) -> None:
        counts.fail(identifier, message)
        if self.preview is not None:
            self.preview.examined += 1
            self.preview.note(identifier, "fail", errors=[message])
            return
        self.writer.tracking.track_failure(
            identifier, message, retry_backoff=self.writer.retry_backoff
        )

    # -- retrying what failed before -------------------------------------------------------
    def _retry_failed(self: HarvestRun, summary: HarvestSummary) -> None:
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
            self._check_bounds()
            retried.add(self.writer.write_batch(batch))
        healed = retried.created + retried.updated + retried.deleted + retried.unchanged
        summary.retried = retried
        summary.warnings.append(
            f"Asked again for {len(identifiers)} records that failed in earlier runs: "
            f"{healed} written, {retried.failed} still failing."
        )

    # -- previews ----------------------------------------------------------------------------
    def _limited(self: HarvestRun, records: Iterable[OAIRecord]) -> Iterator[OAIRecord]:
        """The records of a preview, up to its limit (and those it saw, for reconciliation);
        every record otherwise."""
        if self.preview is None:
            yield from records
            return
        for record in records:
            if self.preview.room() <= 0:
                self.preview.stopped_early = True
                return
            self.preview.examined += 1
            self._seen.add(tracking_key(record.identifier or ""))
            yield record

    def _predict_reconciliation(self: HarvestRun) -> None:
        """How many local records a reconciliation after this full window would delete."""
        if self.preview.stopped_early:
            self.preview.notes.append(
                "The preview stopped at its limit: reconciliation was not predicted."
            )
            return
        live = self.writer.tracking.live_identifiers()
        self.preview.predicted_reconciliation = len(live - self._seen)
