"""Repairs of what a harvester wrote, without asking its provider: the local records sent to
the index again (reindex), transformed again from their stored XML (rewrite), or removed (a
purge). The repairer holds the run's batch writer and writes through it.

Decision owned here: when a record transformed again needs no write (the target already
holds the result: no new revision), when a local edit stops a rewrite (the harvester's
local_drafts policy: local wins, or harvest wins with a notice), and which local records a
purge removes (those the harvester created, never those it took over) and what it leaves on
their tracking rows (a purged mark, so that the next harvest recreates them; or nothing, with
forget).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from invenio_db import db

from ..models import OAIHarvester
from ..protocol.records import OAIRecord
from ..transformers import with_transform_warnings
from .changes import tracking_key
from .counts import WriteCounts, describe_error
from .diffs import holds, target_changes
from .ledger import RunLedger
from .results import HarvestSummary
from .stopping import RunBounds
from .targets.options import LocalDraftPolicy
from .tracking import NOT_FETCHED, NOT_INDEXED, errors_of_kind
from .undo import RunUndo, UndoReport
from .unindexed import indexed_after_commit
from .unit_of_work import BulkIndexingUnitOfWork
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


class Repairer:
    """The repair runs of one harvester, written through its batch writer."""

    def __init__(
        self,
        writer: RecordWriter,
        *,
        batch_size: int,
        bounds: RunBounds,
        ledger: RunLedger,
    ) -> None:
        self.writer = writer
        self.tracking = writer.tracking
        self.writes = writer.writes
        self.batch_size = batch_size
        self.bounds = bounds
        self.ledger = ledger

    # -- reindexing ------------------------------------------------------------------------
    def index_left_out(self, summary: HarvestSummary) -> None:
        """The documents that earlier runs wrote but did not get into the index (the search
        engine refused them, or the run died before it asked), sent before anything else;
        counted apart: one still refused was refused before."""
        left_out = WriteCounts()
        for rows in self.writer.unindexed.pages(self.batch_size):
            self.bounds.check(summary.counts.total)
            gone = [identifier for identifier, pid in rows if not pid]
            if gone:  # nothing left to send
                self.writer.unindexed.indexed(gone)
                db.session.commit()
            kept = [(identifier, pid) for identifier, pid in rows if pid]
            if kept:
                left_out.add(self.writer.reindex(kept, gone_is_failure=False))
        if left_out.reindexed:
            summary.left_out = left_out
            refused = left_out.not_indexed
            self.ledger.say(
                f"sent {left_out.reindexed} documents that earlier runs left out of the index"
                + (f"; {refused} not taken again, the next run tries again" if refused else "")
            )

    def reindex(self, summary: HarvestSummary) -> None:
        """Every live local record of the harvester to the index again, a batch at a time."""
        for rows in self.tracking.live_local_records(self.batch_size):
            self.bounds.lock.verify()
            summary.counts.add(self.writer.reindex(rows))
            self._batch_done(summary)

    # -- rewriting from the stored XML -----------------------------------------------------
    def rewrite(
        self, summary: HarvestSummary, *, errors_only: bool, identifiers: Sequence[str]
    ) -> None:
        """Every tracked live record (or those with errors, or those named) transformed again
        from its stored XML and written where the result differs: no provider request."""
        selected = [tracking_key(identifier) for identifier in identifiers] or None
        stored = self.tracking.stored_records(
            self.batch_size, errors_only=errors_only, identifiers=selected
        )
        for rows in stored:
            self.bounds.check(summary.counts.total)
            rows = self.writes.rows(rows)  # a dry run stops at its limit
            if not rows:
                break
            summary.counts.add(self.rewrite_batch(rows))
            self._batch_done(summary)

    # -- purging ---------------------------------------------------------------------------
    def purge(self, summary: HarvestSummary, *, forget: bool) -> None:
        """Remove, through the target, every local record this harvester created; then the
        harvester starts again from nothing (its watermarks go) so that a harvest recreates
        them."""
        for rows in self.tracking.created_records(self.batch_size):
            self.bounds.check(summary.counts.total)
            summary.counts.add(self.purge_batch(rows, forget=forget))
            self._batch_done(summary)
        adopted = self.tracking.adopted_count()
        if adopted:
            summary.warnings.append(
                f"{adopted} local records that the harvester took over but did not create were "
                f"left as they are."
            )
        if not summary.succeeded:
            return  # the records that could not be removed keep their rows, and the watermark
        self.bounds.lock.verify()
        if forget:
            forgotten = self.tracking.forget_all()
            summary.warnings.append(f"Forgot {forgotten} tracked records of the harvester.")
        db.session.execute(
            sa.update(OAIHarvester)
            .where(OAIHarvester.id == self.writer.harvester_id)
            .values(watermarks=None, watermark=None)
        )
        db.session.commit()

    # -- undoing ---------------------------------------------------------------------------
    def undo(self, summary: HarvestSummary, run_id: str) -> UndoReport:
        """Take back what the run `run_id` wrote (:mod:`.undo`); this run is the undo."""
        undo = RunUndo(
            self.writer.harvester_id,
            self.writer.target,
            undo_run_id=self.tracking.run_id,
            batch_size=self.batch_size,
            field_policies=self.writer.field_policies,
        )
        report = undo.apply(uuid.UUID(run_id), summary.counts)
        self.ledger.say(report.describe())
        summary.warnings.append(report.describe())
        self._batch_done(summary)
        return report

    def _batch_done(self, summary: HarvestSummary) -> None:
        self.ledger.save(summary)
        self.ledger.report(summary)

    # -- batches ---------------------------------------------------------------------------
    def rewrite_batch(self, stored: Sequence[dict[str, Any]]) -> WriteCounts:
        """Transform stored records again (no provider) and write those whose result is not
        what the target holds; a local edit of a record follows the local_drafts policy."""
        writer = self.writer
        counts = WriteCounts()
        tracked = {row["oai_identifier"]: row for row in stored}
        self.tracking.lock(list(tracked))
        now = datetime.now(UTC)
        rows: list[dict[str, Any]] = []
        with BulkIndexingUnitOfWork(db.session) as uow:
            for known in stored:
                self.writes.examined()
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
                    files=known["files"],  # what the record holds: unchanged, not fetched again
                )
                try:
                    data = writer.transform(record)
                    row["warnings"] = with_transform_warnings(None, writer.transformer)
                except Exception as error:  # noqa: BLE001 - tracked on the record
                    rows.append(row)
                    writer.note_failure(row, counts, error)
                    writer.note_failed_row(row)
                    continue
                row["transformed"] = data
                if self._rewrite_is_unneeded(known, data, row, counts):
                    continue
                rows.append(row)
                writer.write_one(uow, None, row, counts, data, restore=bool(known["purged"]))
            writer.finish_rows(rows, tracked)
            self._keep_fetch_errors(rows, tracked)
            self.tracking.save(rows)
            awaiting = indexed_after_commit(rows)
            self.writer.unindexed.expect(awaiting)
            if not self.writes.end_batch(uow, None, counts):
                return counts
        writer.settle_indexing(uow, awaiting, rows, tracked, counts)
        return counts

    def _keep_fetch_errors(
        self, rows: list[dict[str, Any]], tracked: dict[str, dict[str, Any]]
    ) -> None:
        """A record the provider would not serve stays failed (and keeps its retry schedule)
        after a rewrite of its older stored copy: only the provider can heal it."""
        for row in rows:
            known = tracked[row["oai_identifier"]]
            if not row["errors"]:
                row.update(_after_a_good_rewrite(known))

    def _rewrite_is_unneeded(
        self,
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
        target = self.writer.target
        current = target.read(pid)
        if current is None:
            return False  # gone locally: the adapter decides (create again, or report)
        written = known["transformed"]
        edited = written is not None and not holds(current, written)
        if not edited and not target_changes(current, data, written):
            counts.unchanged += 1
            if known["errors"]:
                # The target already holds the fixed output: no revision, only the error goes.
                self.writes.update_row(
                    self.tracking,
                    row["oai_identifier"],
                    transformed=data,
                    warnings=row["warnings"],
                    **_after_a_good_rewrite(known),
                )
            return True
        if edited and target.options.local_drafts is LocalDraftPolicy.LOCAL_WINS:
            message = (
                f"Record {pid} was edited in this repository since it was harvested; the "
                f"rewrite did not overwrite it (local wins)."
            )
            self.writer.note_failure(row, counts, RuntimeError(message), described=message)
            self.writes.update_row(self.tracking, row["oai_identifier"], errors=row["errors"])
            self.writer.note_failed_row(row)
            return True
        if edited:
            notice = (
                f"Local edits of record {pid} were replaced by the harvested data "
                f"(local_drafts harvest-wins)."
            )
            row["warnings"] = [*(row["warnings"] or ()), notice]
            counts.notice(row["oai_identifier"], notice)
        return False

    def purge_batch(self, rows: Sequence[tuple[str, str]], *, forget: bool) -> WriteCounts:
        """Remove the local records of these (identifier, pid) rows through the target; the
        rows are marked purged (the next harvest recreates the records); with `forget` the
        run deletes every row when the purge is done."""
        target = self.writer.target
        counts = WriteCounts()
        identifiers = [identifier for identifier, _ in rows]
        self.tracking.lock(identifiers)
        awaiting: list[str] = []  # tombstones whose document is sent after the commit
        with BulkIndexingUnitOfWork(db.session) as uow:
            for identifier, pid in rows:
                mark = uow.mark()
                try:
                    deleted = target.delete_alone(pid, uow)
                except Exception as error:  # noqa: BLE001 - tracked on the record
                    uow.discard_since(mark)
                    counts.fail(identifier, describe_error(error))
                    self.tracking.update(identifier, errors=[describe_error(error)])
                    continue
                counts.deleted += deleted
                counts.unchanged += not deleted  # another harvester still brings it: its own
                if not forget:
                    keep_pid = pid if deleted and target.keeps_deleted_pids else None
                    self.tracking.update(
                        identifier, purged=True, local_pid=keep_pid, run_id=self.writer.run_id
                    )
                    if keep_pid:
                        awaiting.append(identifier)
            self.writer.unindexed.expect(awaiting)
            uow.commit()
        by_pid = {pid: identifier for identifier, pid in rows}
        self.writer.unindexed.settle(awaiting, uow.index_failures, by_pid, counts)
        return counts
