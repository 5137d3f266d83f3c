"""Writes one batch of harvested records into the target, in one unit of work.

Decision owned here: the order of a batch's work - decide without locks (:mod:`.changes`),
lock and decide again, transform, write through the target adapter (:mod:`.targets`: in bulk
where it can, else one savepoint per record), save the tracking rows (:mod:`.tracking`) and
the run's counters in the same transaction, index after the commit - and that a failure of
one record is stored on that record and never stops the batch.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from invenio_db import db

from ..protocol.records import OAIRecord
from ..provenance import Provenance
from ..transformers import Transformer, with_transform_warnings
from ..transformers.files import transform_files
from .changes import admissible, latest_of_each, needing_write, retry_delay
from .counts import RecordValidationError, WriteCounts, describe_error
from .deletion_guard import PENDING, REJECTED, DeletionGuard, HeldDeletions
from .diffs import target_changes
from .effects import CommitHook, KeptWrites, Writes
from .field_policy import FieldPolicies
from .memory import collect_written_batch
from .targets import BulkWriteRefused, KeptWithErrors, TargetAdapter, lookups_shared_by_a_batch
from .tracking import TrackingStore
from .unindexed import UnindexedRecords, indexed_after_commit
from .unit_of_work import BulkIndexingUnitOfWork

log = logging.getLogger(__name__)


class RecordWriter:
    """Writes batches of harvested records of one harvester into its target."""

    def __init__(
        self,
        *,
        harvester_id: str,
        target: TargetAdapter,
        transformer: Transformer,
        run_id: uuid.UUID | None = None,
        retry_backoff: float,
        writes: Writes | None = None,
        provenance_of: Callable[[OAIRecord], Provenance] | None = None,
        journaled: bool = True,
    ) -> None:
        self.harvester_id = harvester_id
        self.target = target
        self.transformer = transformer
        self.run_id = run_id
        self.retry_backoff = retry_backoff
        self.writes: Writes = writes or KeptWrites()
        """Kept (a run) or rolled back and noted (a dry run)."""
        # A dry run keeps nothing, so nothing to undo either.
        journaled = journaled and not self.writes.is_dry_run
        self.tracking = TrackingStore(harvester_id, run_id, journaled=journaled)
        self.unindexed = UnindexedRecords(self.tracking)
        self.marks_unchanged_as_seen = self.writes.stamps_seen
        """Stamp unchanged records with the run id; only reconciliation needs it, and on a
        re-harvest where nothing changed it is the only database write left."""
        self.force = False
        """Write records the provider did not change too (an operator's ``--force``)."""
        self.provenance_of = provenance_of
        """What a written record says of its source (None: nothing)."""
        self.deletion_guard: DeletionGuard | None = None
        """Tombstones wait for the end of the run (``pending``), which applies or holds them
        (:mod:`.deletion_guard`); None: they are applied as they come."""
        self._guarded: bool | None = None
        """Whether the guard can hold anything here (asked once, at the first tombstone)."""
        self.field_policies = FieldPolicies()
        """What a harvest does to fields a local user changed (:mod:`.field_policy`)."""

    def transform(self, record: OAIRecord) -> dict[str, Any]:
        """The record as the target writes it: transformed, saying where it came from."""
        data = self.transformer.transform(record)
        if self.provenance_of is None:
            return data
        return self.target.with_provenance(data, self.provenance_of(record))

    def write_batch(
        self, records: Sequence[OAIRecord], on_commit: CommitHook | None = None
    ) -> WriteCounts:
        """Write one batch in one unit of work; per-record failures are tracked, not raised.

        `on_commit(counts)` runs inside the batch transaction just before it commits, so
        that progress counters are committed together with the data they count. A batch
        with nothing to write opens no unit of work, takes no lock and never calls it.
        """
        records, refused = admissible(records)
        latest = latest_of_each(records)
        # Decide without locks first: on a re-harvest almost every batch is unchanged, and
        # a record that needs no write cannot conflict with a parallel writer.
        with_data = self.writes.compares_with_written or bool(self.field_policies)
        tracked = self.tracking.load(list(latest), with_data=with_data)
        pending = needing_write(latest, tracked, self.run_id, force=self.force)
        if pending or self.marks_unchanged_as_seen:
            # Every row this batch writes (seen stamps included) is locked, in one sorted
            # order, so that two parallel batches can never deadlock on each other's rows.
            self.tracking.lock(list(latest) if self.marks_unchanged_as_seen else pending)
            # A parallel writer may have committed between the look and the lock.
            tracked.update(self.tracking.load(pending, with_data=with_data))
            pending = needing_write(
                {i: latest[i] for i in pending}, tracked, self.run_id, force=self.force
            )
        counts = WriteCounts(unchanged=len(latest) - len(pending))
        for identifier, error in refused:
            log.warning("Harvester %s: %s", self.harvester_id, error)
            counts.fail(identifier, error)
        seen_ids: list[str] = []
        if self.marks_unchanged_as_seen:
            to_write = set(pending)
            seen_ids = [i for i in latest if i not in to_write]
        if not pending and not seen_ids:
            db.session.commit()  # end the read-only transaction (keeps what a caller left)
            return counts

        with lookups_shared_by_a_batch(), BulkIndexingUnitOfWork(db.session) as uow:
            rows = self._write_records(uow, [latest[i] for i in pending], tracked, counts)
            self.finish_rows(rows, tracked)
            self.tracking.save(rows, seen_ids)
            awaiting = indexed_after_commit(rows)
            self.unindexed.expect(awaiting)
            if not self.writes.end_batch(uow, on_commit, counts):
                return counts
        self.settle_indexing(uow, awaiting, rows, tracked, counts)
        collect_written_batch()
        return counts

    def finish_rows(self, rows: list[dict[str, Any]], tracked: dict[str, dict[str, Any]]) -> None:
        """Attempts and the next retry of failed rows; a written row is no longer purged."""
        now = datetime.now(UTC)
        for row in rows:
            known = tracked.get(row["oai_identifier"])
            if row["errors"]:
                row["attempts"] = (known["attempts"] if known else 0) + 1
                row["next_attempt_at"] = now + retry_delay(row["attempts"], self.retry_backoff)
            else:
                row["attempts"], row["next_attempt_at"] = 0, None
            # The purged mark goes once the record is written again (it also tells the
            # adapter that the tombstone a purge left is the harvester's to restore).
            row["purged"] = bool(known and known["purged"] and row["errors"])

    def settle_indexing(
        self,
        uow: BulkIndexingUnitOfWork,
        awaiting: Sequence[str],
        rows: list[dict[str, Any]],
        tracked: dict[str, dict[str, Any]],
        counts: WriteCounts,
    ) -> None:
        """After the batch's bulk request: the records `awaiting` it (:func:`indexed_after_commit`)
        are in the index, except those that did not reach it."""
        by_pid = {known["local_pid"]: i for i, known in tracked.items() if known["local_pid"]}
        by_pid.update({row["local_pid"]: row["oai_identifier"] for row in rows if row["local_pid"]})
        self.unindexed.settle(awaiting, uow.index_failures, by_pid, counts)

    def split_unchanged(self, records: Sequence[OAIRecord]) -> tuple[list[OAIRecord], list[str]]:
        """(records that need writing, identifiers of unchanged ones), in one query.

        Lets a run that fans out keep unchanged records off the task queue; the writer that
        gets the rest decides again under its locks.
        """
        trackable, refused = admissible(records)
        latest = latest_of_each(trackable)
        tracked = self.tracking.load(list(latest))
        db.session.commit()  # end the read-only transaction
        pending = needing_write(latest, tracked, self.run_id)
        to_write = set(pending)
        # Refused records go with the rest: the batch's writer counts them as failed.
        untrackable = [record for record in records if not (record.identifier or "").strip()]
        changed = [latest[i] for i in pending] + (untrackable if refused else [])
        return changed, [i for i in latest if i not in to_write]

    def reindex(
        self, rows: Sequence[tuple[str, str]], *, gone_is_failure: bool = True
    ) -> WriteCounts:
        """Send the documents of these (identifier, local pid) records to the index again; a
        "Not indexed" error on a row that is indexed now is cleared (and, unless
        `gone_is_failure`, on a row whose local record is gone: nothing is left to send)."""
        counts = WriteCounts()
        with BulkIndexingUnitOfWork(db.session) as uow:
            found = self.target.reindex([pid for _, pid in rows], uow)
            for identifier, pid in rows:
                if pid not in found and gone_is_failure:
                    counts.fail(identifier, f"The local record {pid} is gone; not reindexed.")
            uow.commit()
        counts.reindexed = sum(1 for _, pid in rows if pid in found)
        settled = found if gone_is_failure else {pid for _, pid in rows}
        self.unindexed.settle(
            [identifier for identifier, pid in rows if pid in settled],
            uow.index_failures,
            {pid: identifier for identifier, pid in rows},
            counts,
        )
        return counts

    # -- one batch ------------------------------------------------------------------------
    def _write_records(
        self,
        uow: BulkIndexingUnitOfWork,
        records: list[OAIRecord],
        tracked: dict[str, dict[str, Any]],
        counts: WriteCounts,
    ) -> list[dict[str, Any]]:
        """Write records into the target; their new tracking rows, failures noted on them."""
        now = datetime.now(UTC)
        rows: list[dict[str, Any]] = []
        live: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (row, transformed data)
        for record in records:
            known = tracked.get(record.identifier)
            if record.deleted and self._deletion_waits(known):
                if known["held_deletion"] == REJECTED and known["datestamp"] == record.datestamp:
                    counts.unchanged += 1  # an operator dropped this very deletion
                    continue
                # The row keeps the live record's XML and data: only its deletion waits.
                self.tracking.update(
                    record.identifier,
                    held_deletion=PENDING,
                    datestamp=record.datestamp,
                    harvested_at=now,
                    run_id=self.run_id,
                )
                continue
            # A local tombstone is ours to restore only where the source had deleted the
            # record; one that a curator made while the source kept it is not undone.
            restorable = bool(known and (known["deleted"] or known["purged"]))
            row = self.tracking.new_row(
                record.identifier,
                datestamp=record.datestamp,
                deleted=record.deleted,
                local_pid=known["local_pid"] if known else None,
                warnings=list(record.errors) or None,
                original_xml=record.xml,
                harvested_at=now,
                adopted=bool(known and known["adopted"]),
                files=known.get("files") if known else None,
            )
            rows.append(row)
            one_by_one = (
                self.writes.one_record_at_a_time
                or not self.target.supports_bulk
                or self.target.keeps_files
                or bool(self.field_policies)  # each record's local version is read
            )
            if record.deleted or one_by_one:
                written = known.get("transformed") if known else None
                self.write_one(uow, record, row, counts, restore=restorable, written=written)
                continue
            try:
                data = self.transform(record)
                row["warnings"] = with_transform_warnings(row["warnings"], self.transformer)
            except Exception as error:  # noqa: BLE001 - tracked on the record
                self.note_failure(row, counts, error)
                continue
            row["transformed"] = data
            live.append((row, data))
        if live and not self._write_bulk(uow, live, counts):
            for row, data in live:
                self.write_one(uow, None, row, counts, data)
        return rows

    def _deletion_waits(self, known: dict[str, Any] | None) -> bool:
        """Whether a tombstone of this row waits for the end of the run (the guard is on,
        and it would delete a live local record)."""
        if not (
            self.deletion_guard is not None
            and self.deletion_guard.active
            and not self.writes.is_dry_run
            and known
            and known["local_pid"]
            and not known["deleted"]
        ):
            return False
        if self._guarded is None:
            # A collection smaller than the guard's minimum can never be held: its tombstones
            # are applied as they come, as without the guard.
            live = HeldDeletions(self.harvester_id).live()
            self._guarded = live >= self.deletion_guard.minimum
        return self._guarded

    def _write_bulk(
        self,
        uow: BulkIndexingUnitOfWork,
        live: list[tuple[dict[str, Any], dict[str, Any]]],
        counts: WriteCounts,
    ) -> bool:
        """Create or update the live records at once, in one savepoint.

        False (everything undone) when the target refused the bulk write or the database
        raised: the batch is then written one record at a time.
        """
        mark = uow.mark()
        try:
            with db.session.begin_nested():
                written = self.target.write_many(
                    [(row["local_pid"], data) for row, data in live], uow
                )
        except Exception as error:  # noqa: BLE001 - BulkWriteRefused or a database error
            if not isinstance(error, BulkWriteRefused):
                log.info("Harvester %s: bulk write undone: %s", self.harvester_id, error)
            uow.discard_since(mark)
            return False
        for (row, _), item in zip(live, written, strict=True):
            if item.errors:
                self.note_failure(row, counts, RecordValidationError(item.errors))
                continue
            row["local_pid"] = item.pid
            if item.created:
                counts.created += 1
            else:
                counts.updated += 1
        return True

    def write_one(
        self,
        uow: BulkIndexingUnitOfWork,
        record: OAIRecord | None,
        row: dict[str, Any],
        counts: WriteCounts,
        data: dict[str, Any] | None = None,
        *,
        restore: bool = False,
        written: dict[str, Any] | None = None,
    ) -> None:
        """Write one record in its own savepoint (`data`: transformed; `written`: last written)."""
        local_pid = row["local_pid"]
        mark = uow.mark()
        kept: KeptWithErrors | None = None
        before = None
        try:
            if row["deleted"]:
                deleted = bool(local_pid) and self.target.delete_alone(local_pid, uow)
                if deleted:
                    counts.deleted += 1
                    self._note(row, "delete", pid=local_pid)
                else:  # a tombstone we never had a record for, or another source's record
                    counts.unchanged += 1
                if not (deleted and self.target.keeps_deleted_pids):
                    row["local_pid"] = None
            else:
                if data is None:
                    data = self.transform(record)
                    row["warnings"] = with_transform_warnings(row["warnings"], self.transformer)
                row["transformed"] = data  # the source's version, whatever the policies keep
                before = self.writes.image_before(self.target, local_pid)
                data, row["conflicts"] = self.field_policies.with_local_edits(
                    data,
                    written if local_pid else None,  # a record never written has no edits
                    lambda: before if before is not None else self.target.read(local_pid),
                    references_by_id=self.target.expands_references,
                )
                # Fetched (and verified) before anything is written: a failure leaves nothing.
                self.target.stage_files(
                    transform_files(self.transformer),
                    row["files"],
                    dry_run=self.writes.is_dry_run,
                )
                with db.session.begin_nested():
                    try:
                        row["local_pid"], created = self.target.upsert(
                            local_pid,
                            data,
                            uow,
                            restore=restore,
                            sets=record.set_specs if record is not None else (),
                        )
                    except KeptWithErrors as error:
                        # Caught inside the savepoint: the target keeps the draft.
                        kept = error
                row["linked"] = self.target.took_joined()  # another harvester's record
                if kept is not None:
                    row["local_pid"] = kept.pid
                    self.note_failure(row, counts, RecordValidationError(kept.errors))
                    row["errors"].append(
                        f"The draft {kept.pid} is kept for a curator to fix "
                        f"(invalid_drafts keep); the next harvest continues it."
                    )
                    self._note(row, "fail", errors=row["errors"])
                elif created:
                    counts.created += 1
                    self._note(row, "create", changes=target_changes(None, data, None))
                else:
                    counts.updated += 1
                    if not local_pid:
                        row["adopted"] = True  # an existing record taken over, not created
                    self._note(row, "update", changes=target_changes(before, data, written))
        except Exception as error:  # noqa: BLE001 - any failure is tracked on the record
            uow.discard_since(mark)
            self.note_failure(row, counts, error)
            self._note(row, "fail", errors=row["errors"])
        finally:
            self._take_files_report(row, counts, written=kept is None and not row["errors"])
            self._take_notices(row, counts)

    def _note(self, row: dict[str, Any], action: str, **details: Any) -> None:
        """What the write of this record did, for a dry run's report."""
        pid = details.pop("pid", None) or row["local_pid"]
        conflicts = row.get("conflicts")  # fields both sides changed, and what stays
        self.writes.note(row["oai_identifier"], action, pid=pid, conflicts=conflicts, **details)

    def note_failed_row(self, row: dict[str, Any]) -> None:
        """A record that failed before its write (a repair's transform), for the report."""
        self._note(row, "fail", errors=row["errors"])

    def _take_files_report(
        self, row: dict[str, Any], counts: WriteCounts, *, written: bool
    ) -> None:
        """The files the write left (a failed write leaves the row's files as they were)."""
        files, warnings, file_counts = self.target.take_files_report()
        if files:
            self.writes.note_files(row["oai_identifier"], files)
        if not written:
            return
        if files is not None or row["files"]:
            row["files"] = files
        if warnings:
            row["warnings"] = [*(row["warnings"] or ()), *warnings]
        counts.count_files(file_counts)

    def _take_notices(self, row: dict[str, Any], counts: WriteCounts) -> None:
        """What the target did to this record that an operator should know of: on the
        record's tracking row (as warnings) and in the run's report."""
        notices = self.target.take_notices()
        for notice in notices:
            row["warnings"] = [*(row["warnings"] or ()), notice]
            counts.notice(row["oai_identifier"], notice)
        if notices:
            self.writes.note_notices(row["oai_identifier"], notices)

    def note_failure(
        self,
        row: dict[str, Any],
        counts: WriteCounts,
        error: Exception,
        *,
        described: str | None = None,
    ) -> None:
        message = described or describe_error(error)
        identifier = row["oai_identifier"]
        log.info("Harvester %s: %s failed: %s", self.harvester_id, identifier, message)
        log.debug("Harvester %s: %s failed", self.harvester_id, identifier, exc_info=error)
        row["errors"] = [message]
        counts.fail(identifier, message)
