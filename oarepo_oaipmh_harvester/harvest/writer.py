"""Keeps the target service in step with the provider, one batch per unit of work.

The only place that decides whether a harvested record is new, changed, unchanged or gone.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from invenio_db import db
from invenio_pidstore.errors import PIDDeletedError, PIDDoesNotExistError
from marshmallow import ValidationError
from sqlalchemy.dialects import postgresql, sqlite

from ..models import OAIHarvestedRecord
from ..protocol.datestamps import MalformedDatestamp, parse_datestamp
from ..protocol.records import OAIRecord
from .lock import lock_key
from .transformers import Transformer
from .unit_of_work import BulkIndexingUnitOfWork

log = logging.getLogger(__name__)

MAX_REPORTED_FAILURES = 100


@dataclass
class WriteCounts:
    """What happened to the records of one or more batches."""

    created: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    failed: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.created + self.updated + self.deleted + self.unchanged + self.failed

    def add(self, other: WriteCounts) -> None:
        self.created += other.created
        self.updated += other.updated
        self.deleted += other.deleted
        self.unchanged += other.unchanged
        self.failed += other.failed
        room = MAX_REPORTED_FAILURES - len(self.failures)
        self.failures.extend(other.failures[: max(room, 0)])

    def fail(self, identifier: str, error: str) -> None:
        self.failed += 1
        if len(self.failures) < MAX_REPORTED_FAILURES:
            self.failures.append((identifier, error))


class _OneByOne(Exception):
    """A bulk write must be undone and redone one record at a time."""


class _BulkValidationError(Exception):
    """Schema errors of one record of `create_or_update_many` ([{field, messages}])."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(errors)
        self.messages = {error.get("field") or "_schema": error.get("messages") for error in errors}


def describe_error(error: BaseException) -> str:
    """An operator-readable one-line description of why a record failed."""
    if isinstance(error, ValidationError | _BulkValidationError):
        return f"Validation failed: {error.messages}"
    message = str(error) or repr(error)
    return f"{type(error).__name__}: {message}"


class RecordWriter:
    """Writes batches of harvested records of one harvester into its target service."""

    def __init__(
        self,
        *,
        harvester_id: str,
        service: Any,
        transformer: Transformer,
        identity: Any,
        run_id: uuid.UUID | None = None,
    ) -> None:
        self.harvester_id = harvester_id
        self.service = service
        self.transformer = transformer
        self.identity = identity
        self.run_id = run_id
        self._bulk_writes: bool | None = None
        self.marks_unchanged_as_seen = True
        """Stamp unchanged records with the run id; only reconciliation needs it, and on a
        re-harvest where nothing changed it is the only database write left."""

    # -- public --------------------------------------------------------------------------
    def write_batch(self, records: Sequence[OAIRecord], on_commit: Any = None) -> WriteCounts:
        """Write one batch in one unit of work; per-record failures are tracked, not raised.

        `on_commit(counts)` runs inside the batch transaction just before it commits, so
        that progress counters are committed together with the data they count. A batch
        with nothing to write opens no unit of work, takes no lock and never calls it.
        """
        latest = _last_of_each(records)
        # Decide without locks first: on a re-harvest almost every batch is unchanged, and
        # a record that needs no write cannot conflict with a parallel writer.
        tracked = self._load_tracking(list(latest))
        pending = self._needing_write(latest, tracked)
        if pending or self.marks_unchanged_as_seen:
            # Every row this batch writes (seen stamps included) is locked, in one sorted
            # order, so that two parallel batches can never deadlock on each other's rows.
            self._lock_identifiers(list(latest) if self.marks_unchanged_as_seen else pending)
            # A parallel writer may have committed between the look and the lock.
            tracked.update(self._load_tracking(pending))
            pending = self._needing_write({i: latest[i] for i in pending}, tracked)
        counts = WriteCounts(unchanged=len(latest) - len(pending))
        seen_ids: list[str] = []
        if self.marks_unchanged_as_seen:
            to_write = set(pending)
            seen_ids = [i for i in latest if i not in to_write]
        if not pending and not seen_ids:
            db.session.commit()  # end the read-only transaction (keeps what a caller left)
            return counts

        with BulkIndexingUnitOfWork(db.session) as uow:
            rows = self._write_records(uow, [latest[i] for i in pending], tracked, counts)
            self._save_tracking(rows, seen_ids)
            if on_commit is not None:
                on_commit(counts)
            uow.commit()
        for error in uow.index_errors:
            log.error("Harvester %s: indexing error %s", self.harvester_id, error)
        return counts

    def split_unchanged(self, records: Sequence[OAIRecord]) -> tuple[list[OAIRecord], list[str]]:
        """(records that need writing, identifiers of unchanged ones), in one query.

        Lets a run that fans out keep unchanged records off the task queue; the writer that
        gets the rest decides again under its locks.
        """
        latest = _last_of_each(records)
        tracked = self._load_tracking(list(latest))
        db.session.commit()  # end the read-only transaction
        pending = self._needing_write(latest, tracked)
        to_write = set(pending)
        return [latest[i] for i in pending], [i for i in latest if i not in to_write]

    def refresh_statistics(self) -> None:
        """Let PostgreSQL plan the tracking look-ups with statistics that match the table.

        A table that has just grown from nothing has none until autovacuum gets to it (or
        never, where it is off), and the planner then scans every row of the harvester for
        each batch's look-up: quadratic over a first harvest.
        """
        if db.session.get_bind().dialect.name != "postgresql":
            return
        db.session.execute(sa.text(f"ANALYZE {OAIHarvestedRecord.__tablename__}"))
        db.session.commit()

    def track_failure(self, identifier: str, message: str) -> None:
        """Record an error on an identifier that could not even be fetched (idDoesNotExist)."""
        table = OAIHarvestedRecord.__table__
        row = {
            "harvester_id": self.harvester_id,
            "oai_identifier": identifier,
            "deleted": False,
            "errors": [message],
            "harvested_at": datetime.now(UTC),
            "run_id": self.run_id,
        }
        insert = _dialect_insert(db.session.get_bind().dialect.name)(table).values([row])
        db.session.execute(
            insert.on_conflict_do_update(
                index_elements=[table.c.harvester_id, table.c.oai_identifier],
                set_={name: insert.excluded[name] for name in ("errors", "harvested_at", "run_id")},
            )
        )
        db.session.commit()

    def mark_seen(self, identifiers: Sequence[str]) -> None:
        """Note that the provider still lists these identifiers (reconciliation by headers)."""
        self._save_tracking([], list(identifiers))
        db.session.commit()

    def count_unseen(self) -> tuple[int, int]:
        """(live tracked records this run did not see, all live tracked records)."""
        table = OAIHarvestedRecord.__table__
        live = sa.and_(table.c.harvester_id == self.harvester_id, table.c.deleted.is_(False))
        unseen = sa.and_(live, self._not_seen_clause())
        count = sa.func.count()
        total = db.session.execute(sa.select(count).select_from(table).where(live)).scalar()
        missing = db.session.execute(sa.select(count).select_from(table).where(unseen)).scalar()
        return missing, total

    def remove_unseen(self, batch_size: int, on_commit: Any = None) -> WriteCounts:
        """Delete the local records of identifiers the provider no longer lists.

        Only called after a complete, error-free full window: everything the provider
        holds was seen by this run, so what was not seen is gone at the source.
        """
        table = OAIHarvestedRecord.__table__
        totals = WriteCounts()
        while True:
            rows = db.session.execute(
                sa.select(table.c.oai_identifier, table.c.local_pid)
                .where(
                    table.c.harvester_id == self.harvester_id,
                    table.c.deleted.is_(False),
                    self._not_seen_clause(),
                )
                .order_by(table.c.oai_identifier)
                .limit(batch_size)
            ).all()
            if not rows:
                return totals
            counts = WriteCounts()
            updates: list[dict[str, Any]] = []
            now = datetime.now(UTC)
            with BulkIndexingUnitOfWork(db.session) as uow:
                for identifier, local_pid in rows:
                    update = {"oai_identifier": identifier, "run_id": self.run_id}
                    mark = uow.mark()
                    try:
                        if local_pid:
                            with db.session.begin_nested():
                                self._delete_local(uow, local_pid)
                            counts.deleted += 1
                        update.update(deleted=True, local_pid=None, errors=None, harvested_at=now)
                    except Exception as error:  # noqa: BLE001 - tracked on the record
                        uow.discard_since(mark)
                        message = f"Could not remove the vanished record: {describe_error(error)}"
                        update.update(errors=[message])
                        counts.fail(identifier, message)
                    updates.append(update)
                for update in updates:
                    db.session.execute(
                        sa.update(table)
                        .where(
                            table.c.harvester_id == self.harvester_id,
                            table.c.oai_identifier == update.pop("oai_identifier"),
                        )
                        .values(**update)
                    )
                if on_commit is not None:
                    on_commit(counts)
                uow.commit()
            totals.add(counts)

    def _not_seen_clause(self):
        table = OAIHarvestedRecord.__table__
        if self.run_id is None:
            raise RuntimeError("Reconciliation needs a run id to tell seen records apart.")
        return sa.or_(table.c.run_id.is_(None), table.c.run_id != self.run_id)

    # -- decisions -----------------------------------------------------------------------
    def _needing_write(
        self, latest: dict[str, OAIRecord], tracked: dict[str, dict[str, Any]]
    ) -> list[str]:
        """The identifiers whose record is not already written as it is (in batch order)."""
        return [i for i, record in latest.items() if not self._is_unchanged(record, tracked.get(i))]

    def _is_unchanged(self, record: OAIRecord, row: dict[str, Any] | None) -> bool:
        if row is None:
            return False
        if self._is_stale(record, row):
            return True
        return (
            not row["errors"]
            and row["datestamp"] == record.datestamp
            and row["deleted"] == record.deleted
        )

    def _is_stale(self, record: OAIRecord, row: dict[str, Any]) -> bool:
        """This run already wrote a newer version (a batch of a parallel writer finished late)."""
        if self.run_id is None or row["run_id"] != self.run_id:
            return False  # across runs any change wins: providers may rewrite datestamps
        incoming, written = record.datestamp_value, _parse_or_none(row["datestamp"])
        return incoming is not None and written is not None and incoming < written

    def _lock_identifiers(self, identifiers: list[str]) -> None:
        """Serialise parallel writers on shared identifiers until this batch commits.

        Transaction-level advisory locks, taken in a fixed order so that two batches can
        never deadlock; the row that does not exist yet cannot be locked with FOR UPDATE.
        """
        if not identifiers or db.session.get_bind().dialect.name != "postgresql":
            return
        keys = sorted({lock_key(f"{self.harvester_id}\x00{i}") for i in identifiers})
        db.session.execute(
            sa.text(
                "SELECT pg_advisory_xact_lock(key) FROM unnest(CAST(:keys AS bigint[])) AS key"
            ),
            {"keys": keys},
        )

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
            row = self._new_row(record, tracked.get(record.identifier), now)
            rows.append(row)
            if record.deleted or not self.bulk_writes:
                self._write_one(uow, record, row, counts)
                continue
            try:
                data = self.transformer.transform(record)
            except Exception as error:  # noqa: BLE001 - tracked on the record
                self._note_failure(row, counts, error)
                continue
            row["transformed"] = data
            live.append((row, data))
        if live and not self._write_bulk(uow, live, counts):
            for row, data in live:
                self._write_one(uow, None, row, counts, data)
        return rows

    def _new_row(
        self, record: OAIRecord, tracked: dict[str, Any] | None, now: datetime
    ) -> dict[str, Any]:
        return {
            "harvester_id": self.harvester_id,
            "oai_identifier": record.identifier,
            "datestamp": record.datestamp,
            "deleted": record.deleted,
            "local_pid": tracked["local_pid"] if tracked else None,
            "errors": None,
            "warnings": list(record.errors) or None,
            "original_xml": record.xml,
            "transformed": None,
            "harvested_at": now,
            "run_id": self.run_id,
        }

    @property
    def bulk_writes(self) -> bool:
        """Whether live records go through the service's `create_or_update_many`.

        Asked of the target's permission policy once per writer: a policy without
        `can_create_or_update_many` gets its records one at a time.
        """
        if self._bulk_writes is None:
            self._bulk_writes = hasattr(self.service, "create_or_update_many") and bool(
                self.service.check_permission(self.identity, "create_or_update_many")
            )
            if not self._bulk_writes:
                log.warning(
                    "Harvester %s: the target's permission policy has no "
                    "create_or_update_many; writing one record at a time.",
                    self.harvester_id,
                )
        return self._bulk_writes

    def _write_bulk(
        self,
        uow: BulkIndexingUnitOfWork,
        live: list[tuple[dict[str, Any], dict[str, Any]]],
        counts: WriteCounts,
    ) -> bool:
        """Create or update the live records with the service's bulk method, in one savepoint.

        The service then checks its permission once, not once per record, and needs no
        savepoint per record. False (everything undone) when any record raised rather than
        failing validation: what a raising component left in the session cannot be told
        apart, so the batch is then written one record at a time.
        """
        mark = uow.mark()
        try:
            with db.session.begin_nested():
                result = self.service.create_or_update_many(
                    self.identity, [(row["local_pid"], data) for row, data in live], uow=uow
                )
                items = list(result.results)
                if len(items) != len(live) or any(item.exc is not None for item in items):
                    raise _OneByOne
        except Exception:  # noqa: BLE001 - _OneByOne or a database error: retried one by one
            uow.discard_since(mark)
            return False
        written = []
        for (row, _), item in zip(live, items, strict=True):
            if item.errors:
                self._note_failure(row, counts, _BulkValidationError(item.errors))
                continue
            row["local_pid"] = item.record.pid.pid_value
            written.append(item.record)
            if item.op_type == "create":
                counts.created += 1
            else:
                counts.updated += 1
        uow.index_records(self.service.indexer, written)
        return True

    def _write_one(
        self,
        uow: BulkIndexingUnitOfWork,
        record: OAIRecord | None,
        row: dict[str, Any],
        counts: WriteCounts,
        data: dict[str, Any] | None = None,
    ) -> None:
        """Write one record in its own savepoint (`data`: already transformed)."""
        local_pid = row["local_pid"]
        mark = uow.mark()
        try:
            if row["deleted"]:
                if local_pid:
                    with db.session.begin_nested():
                        self._delete_local(uow, local_pid)
                    counts.deleted += 1
                else:
                    counts.unchanged += 1  # a tombstone we never had a record for
                row["local_pid"] = None
            else:
                if data is None:
                    data = self.transformer.transform(record)
                row["transformed"] = data
                with db.session.begin_nested():
                    row["local_pid"], created = self._upsert_local(uow, local_pid, data)
                if created:
                    counts.created += 1
                else:
                    counts.updated += 1
        except Exception as error:  # noqa: BLE001 - any failure is tracked on the record
            uow.discard_since(mark)
            self._note_failure(row, counts, error)

    def _note_failure(self, row: dict[str, Any], counts: WriteCounts, error: Exception) -> None:
        message = describe_error(error)
        identifier = row["oai_identifier"]
        log.info("Harvester %s: %s failed: %s", self.harvester_id, identifier, message)
        row["errors"] = [message]
        counts.fail(identifier, message)

    def _upsert_local(
        self, uow: BulkIndexingUnitOfWork, local_pid: str | None, data: dict[str, Any]
    ) -> tuple[str, bool]:
        if local_pid:
            try:
                item = self.service.update(self.identity, local_pid, data, uow=uow)
                return item.id, False
            except (PIDDoesNotExistError, PIDDeletedError):
                pass  # removed locally (or by an earlier tombstone): create it again
        item = self.service.create(self.identity, data, uow=uow)
        return item.id, True

    def _delete_local(self, uow: BulkIndexingUnitOfWork, local_pid: str) -> None:
        try:
            self.service.delete(self.identity, local_pid, uow=uow)
        except (PIDDoesNotExistError, PIDDeletedError):
            pass  # already gone locally: the desired end state

    # -- tracking rows -------------------------------------------------------------------
    def _load_tracking(self, identifiers: list[str]) -> dict[str, dict[str, Any]]:
        if not identifiers:
            return {}
        table = OAIHarvestedRecord.__table__
        query = sa.select(
            table.c.oai_identifier,
            table.c.datestamp,
            table.c.deleted,
            table.c.local_pid,
            table.c.errors,
            table.c.run_id,
        ).where(
            table.c.harvester_id == self.harvester_id,
            table.c.oai_identifier.in_(identifiers),
        )
        return {row.oai_identifier: row._asdict() for row in db.session.execute(query)}

    def _save_tracking(self, rows: list[dict[str, Any]], unchanged_ids: list[str]) -> None:
        table = OAIHarvestedRecord.__table__
        if rows:
            insert = _dialect_insert(db.session.get_bind().dialect.name)(table).values(rows)
            updated_columns = {
                name: insert.excluded[name]
                for name in rows[0]
                if name not in ("harvester_id", "oai_identifier")
            }
            db.session.execute(
                insert.on_conflict_do_update(
                    index_elements=[table.c.harvester_id, table.c.oai_identifier],
                    set_=updated_columns,
                )
            )
        if unchanged_ids and self.run_id is not None:
            # Remember that this run saw them (reconciliation needs it), nothing else.
            db.session.execute(
                sa.update(table)
                .where(
                    table.c.harvester_id == self.harvester_id,
                    table.c.oai_identifier.in_(unchanged_ids),
                )
                .values(run_id=self.run_id)
            )


def _last_of_each(records: Sequence[OAIRecord]) -> dict[str, OAIRecord]:
    latest: dict[str, OAIRecord] = {}
    for record in records:  # a record seen twice in one batch (two sets): last wins
        latest[record.identifier] = record
    return latest


def _parse_or_none(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return parse_datestamp(value)
    except MalformedDatestamp:
        return None


def _dialect_insert(dialect_name: str):
    if dialect_name == "postgresql":
        return postgresql.insert
    if dialect_name == "sqlite":
        return sqlite.insert
    raise RuntimeError(f"Unsupported database {dialect_name!r}: use PostgreSQL or SQLite.")
