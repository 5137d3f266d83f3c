"""The tracking table of one harvester: every SQL statement on ``oai_harvested_record`` (those
on the records whose search document is not known to be indexed are in :mod:`.unindexed`).

Decision owned here: how tracking rows are read, written, locked and stamped as seen by a run,
and how the planner is kept informed about a table that grows from nothing during a run.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from invenio_db import db

from ..models import OAIHarvestedRecord
from ..protocol.records import header_identifier
from .changes import NOT_INDEXED, is_shortened, retry_delay, tracking_key
from .dialects import dialect_insert, dialect_name
from .journal import SEEN, RunJournal
from .lock import lock_key

log = logging.getLogger(__name__)

_TABLE = OAIHarvestedRecord.__table__

NOT_FETCHED = "Not fetched:"
"""How the error on a row whose record the provider would not serve (GetRecord) begins: its
stored XML, if any, is an older copy, and only the provider can clear the error."""


def errors_of_kind(kind: str, errors: Sequence[str] | None) -> list[str]:
    """The errors of a row that begin with `kind` (NOT_FETCHED, NOT_INDEXED)."""
    return [error for error in errors or () if error.startswith(kind)]


_KEY = (_TABLE.c.harvester_id, _TABLE.c.oai_identifier)


class TrackingStore:
    """Tracking rows of one harvester, as one run reads and writes them."""

    def __init__(
        self, harvester_id: str, run_id: uuid.UUID | None = None, *, journaled: bool = True
    ) -> None:
        self.harvester_id = harvester_id
        self.run_id = run_id
        # What a run changes is kept, row by row, so that the run can be undone (:mod:`.undo`).
        self.journal = (
            RunJournal(harvester_id, run_id) if run_id is not None and journaled else None
        )

    # -- reading -------------------------------------------------------------------------
    def load(
        self, identifiers: Sequence[str], *, with_data: bool = False
    ) -> dict[str, dict[str, Any]]:
        """The rows of these identifiers that exist: datestamp, deleted, local_pid, errors,
        run_id, attempts, purged, adopted, files; `with_data` adds the transformed data written last."""
        if not identifiers:
            return {}
        columns = [
            _TABLE.c.oai_identifier,
            _TABLE.c.datestamp,
            _TABLE.c.deleted,
            _TABLE.c.local_pid,
            _TABLE.c.errors,
            _TABLE.c.run_id,
            _TABLE.c.attempts,
            _TABLE.c.purged,
            _TABLE.c.adopted,
            _TABLE.c.files,
            _TABLE.c.held_deletion,
        ]
        if with_data:
            columns.append(_TABLE.c.transformed)
        query = sa.select(*columns).where(
            self._mine, _TABLE.c.oai_identifier.in_(list(identifiers))
        )
        return {row.oai_identifier: row._asdict() for row in db.session.execute(query)}

    def count_unseen(self) -> tuple[int, int]:
        """(live tracked records this run did not see, all live tracked records)."""
        live = sa.and_(self._mine, _TABLE.c.deleted.is_(False))
        count = sa.func.count()
        total = db.session.execute(sa.select(count).select_from(_TABLE).where(live)).scalar()
        missing = db.session.execute(
            sa.select(count)
            .select_from(_TABLE)
            .where(live, self._not_seen, _TABLE.c.held_deletion.is_(None))
        ).scalar()
        return missing or 0, total or 0

    def hold_unseen(self) -> int:
        """Hold the deletion of every live row this run did not see (the deletion guard)."""
        unseen = sa.and_(
            _TABLE.c.deleted.is_(False), self._not_seen, _TABLE.c.held_deletion.is_(None)
        )
        if self.journal is not None:
            self.journal.remember_where(unseen)
        result = db.session.execute(
            sa.update(_TABLE).where(self._mine, unseen).values(held_deletion="held")
        )
        db.session.commit()
        return result.rowcount or 0

    def unseen(self, limit: int) -> list[tuple[str, str | None]]:
        """(identifier, local pid) of up to `limit` live rows this run did not see (but those
        whose deletion an operator held or dropped: :mod:`.deletion_guard`)."""
        return [
            tuple(row)
            for row in db.session.execute(
                sa.select(_TABLE.c.oai_identifier, _TABLE.c.local_pid)
                .where(
                    self._mine,
                    _TABLE.c.deleted.is_(False),
                    self._not_seen,
                    _TABLE.c.held_deletion.is_(None),
                )
                .order_by(_TABLE.c.oai_identifier)
                .limit(limit)
            )
        ]

    def source_identifier(self, key: str) -> str:
        """The identifier the provider knows a tracked record by: the key itself, or, for a
        key shortened to fit the table, the whole identifier from the record's stored XML."""
        if not is_shortened(key):
            return key
        xml = db.session.scalar(
            sa.select(_TABLE.c.original_xml).where(self._mine, _TABLE.c.oai_identifier == key)
        )
        return header_identifier(xml or "") or key

    def failed_identifiers(
        self, *, limit: int | None, max_attempts: int | None, due_by: datetime | None
    ) -> list[str]:
        """Identifiers whose last attempt failed and that this run has not seen: all of them,
        or (for the end-of-run retries) those under `max_attempts` that are due by `due_by`,
        the longest waiting first, at most `limit`."""
        query = sa.select(_TABLE.c.oai_identifier).where(
            self._mine,
            _has_errors(),
            # Written as it is: each run sends such documents first, the provider need not.
            sa.not_(sa.cast(_TABLE.c.errors, sa.Text).like(f'["{NOT_INDEXED}%')),
            _TABLE.c.deleted.is_(False),
        )
        if self.run_id is not None:
            query = query.where(self._not_seen)
        if max_attempts is not None:
            query = query.where(_TABLE.c.attempts < max_attempts)
        if due_by is not None:
            query = query.where(
                sa.or_(_TABLE.c.next_attempt_at.is_(None), _TABLE.c.next_attempt_at <= due_by)
            )
        query = query.order_by(
            _TABLE.c.next_attempt_at.asc().nulls_first(), _TABLE.c.oai_identifier
        )
        if limit is not None:
            query = query.limit(limit)
        identifiers = list(db.session.scalars(query))
        db.session.commit()
        return identifiers

    def stored_records(
        self,
        batch_size: int,
        *,
        errors_only: bool = False,
        identifiers: Sequence[str] | None = None,
    ) -> Iterator[list[dict[str, Any]]]:
        """The live rows with their stored XML and transformed data, in batches: what a
        rewrite re-transforms (only rows with errors, or only given identifiers, if asked)."""
        query = sa.select(
            _TABLE.c.oai_identifier,
            _TABLE.c.datestamp,
            _TABLE.c.local_pid,
            _TABLE.c.errors,
            _TABLE.c.original_xml,
            _TABLE.c.transformed,
            _TABLE.c.attempts,
            _TABLE.c.next_attempt_at,
            _TABLE.c.adopted,
            _TABLE.c.purged,
            _TABLE.c.deleted,
            _TABLE.c.run_id,
            _TABLE.c.files,
        ).where(
            self._mine,
            _TABLE.c.deleted.is_(False),
            _TABLE.c.original_xml.is_not(None),
            _TABLE.c.original_xml != "",
        )
        if errors_only:
            query = query.where(_has_errors())
        if identifiers is not None:
            query = query.where(_TABLE.c.oai_identifier.in_(list(identifiers)))
        for rows in keyset_pages(query, batch_size):
            yield [row._asdict() for row in rows]

    def created_records(self, batch_size: int) -> Iterator[list[tuple[str, str]]]:
        """(identifier, local pid) of every row whose local record the harvester created (not
        taken over) and that a purge has not removed yet, in batches."""
        query = sa.select(_TABLE.c.oai_identifier, _TABLE.c.local_pid).where(
            self._mine,
            _TABLE.c.local_pid.is_not(None),
            _TABLE.c.deleted.is_(False),  # a source tombstone is removed already
            _TABLE.c.adopted.is_(False),
            _TABLE.c.purged.is_(False),
        )
        for rows in keyset_pages(query, batch_size):
            yield [(row.oai_identifier, row.local_pid) for row in rows]

    def live_identifiers(self) -> set[str]:
        """Every identifier with a live local record (what a reconciliation may delete)."""
        identifiers = set(
            db.session.scalars(
                sa.select(_TABLE.c.oai_identifier).where(
                    self._mine, _TABLE.c.deleted.is_(False), _TABLE.c.local_pid.is_not(None)
                )
            )
        )
        db.session.commit()
        return identifiers

    def adopted_count(self) -> int:
        """Rows whose local record was taken over, not created (a purge leaves those)."""
        count = db.session.scalar(
            sa.select(sa.func.count()).where(self._mine, _TABLE.c.adopted.is_(True))
        )
        db.session.commit()
        return count or 0

    def forget(self, identifiers: Sequence[str]) -> None:
        """Delete these rows (the undo of the run that made them)."""
        if self.journal is not None:
            self.journal.remember(identifiers)
        db.session.execute(
            sa.delete(_TABLE).where(self._mine, _TABLE.c.oai_identifier.in_(list(identifiers)))
        )

    def forget_all(self) -> int:
        """Delete every row of the harvester (a purge with forget: it starts from nothing)."""
        deleted = db.session.execute(sa.delete(_TABLE).where(self._mine)).rowcount
        db.session.commit()
        return deleted or 0

    def live_local_records(self, batch_size: int) -> Iterator[list[tuple[str, str]]]:
        """(identifier, local pid) of every live tracked record, in batches."""
        query = sa.select(_TABLE.c.oai_identifier, _TABLE.c.local_pid).where(
            self._mine, _TABLE.c.deleted.is_(False), _TABLE.c.local_pid.is_not(None)
        )
        for rows in keyset_pages(query, batch_size):
            yield [(row.oai_identifier, row.local_pid) for row in rows]

    # -- writing (inside the caller's transaction unless said otherwise) -------------------
    def new_row(self, identifier: str, **values: Any) -> dict[str, Any]:
        """A complete row of this harvester and run; `values` fill the record's columns."""
        row = {
            "harvester_id": self.harvester_id,
            "oai_identifier": identifier,
            "datestamp": None,
            "deleted": False,
            "local_pid": None,
            "errors": None,
            "warnings": None,
            "original_xml": None,
            "transformed": None,
            "harvested_at": datetime.now(UTC),
            "run_id": self.run_id,
            "attempts": 0,
            "next_attempt_at": None,
            "purged": False,
            "adopted": False,
            "files": None,
            "held_deletion": None,
            "conflicts": None,
            "linked": False,
        }
        row.update(values)
        return row

    def save(self, rows: Sequence[dict[str, Any]], seen: Sequence[str] = ()) -> None:
        """Upsert whole rows; stamp `seen` identifiers (unchanged ones) with this run only."""
        if self.journal is not None:
            self.journal.remember(row["oai_identifier"] for row in rows)
            if seen:
                self.journal.remember(seen, kind=SEEN)
        if rows:
            insert = dialect_insert()(_TABLE).values(list(rows))
            updated_columns = {
                name: insert.excluded[name]
                for name in rows[0]
                if name not in ("harvester_id", "oai_identifier")
            }
            db.session.execute(
                insert.on_conflict_do_update(index_elements=_KEY, set_=updated_columns)
            )
        if seen and self.run_id is not None:
            # Remember that this run saw them (reconciliation needs it); a deletion held or
            # dropped because the provider had stopped listing them is moot.
            db.session.execute(
                sa.update(_TABLE)
                .where(self._mine, _TABLE.c.oai_identifier.in_(list(seen)))
                .values(run_id=self.run_id, held_deletion=None)
            )

    def update(self, identifier: str, **values: Any) -> None:
        """Change some columns of one row."""
        if self.journal is not None:
            self.journal.remember([identifier])
        db.session.execute(
            sa.update(_TABLE)
            .where(self._mine, _TABLE.c.oai_identifier == identifier)
            .values(**values)
        )

    def lock(self, identifiers: Iterable[str]) -> None:
        """Serialise parallel writers on shared identifiers until this transaction ends.

        Transaction-level advisory locks, taken in a fixed order so that two batches can
        never deadlock; a row that does not exist yet cannot be locked with FOR UPDATE.
        """
        identifiers = list(identifiers)
        if not identifiers or dialect_name() != "postgresql":
            return
        keys = sorted({lock_key(f"{self.harvester_id}\x00{i}") for i in identifiers})
        db.session.execute(
            sa.text(
                "SELECT pg_advisory_xact_lock(key) FROM unnest(CAST(:keys AS bigint[])) AS key"
            ),
            {"keys": keys},
        )

    # -- committing on their own --------------------------------------------------------------
    def mark_seen(self, identifiers: Sequence[str]) -> None:
        """Note that the provider still lists these identifiers (reconciliation by headers)."""
        self.save([], [tracking_key(identifier) for identifier in identifiers if identifier])
        db.session.commit()

    def track_failure(
        self, identifier: str, message: str, *, retry_backoff: float, tracked_only: bool = False
    ) -> None:
        """Record an error on an identifier that could not even be fetched (idDoesNotExist),
        counting it as a failed attempt. With `tracked_only`, only on a row that exists: an
        identifier the provider never had gets no row (it would stay, failing, for ever)."""
        now = datetime.now(UTC)
        known = self.load([identifier]).get(identifier)
        if known is None and tracked_only:
            return
        attempts = (known["attempts"] if known else 0) + 1
        if self.journal is not None:
            self.journal.remember([identifier])
        row = {
            "harvester_id": self.harvester_id,
            "oai_identifier": identifier,
            "deleted": False,
            "errors": [f"{NOT_FETCHED} {message}"],
            "harvested_at": now,
            "run_id": self.run_id,
            "attempts": attempts,
            "next_attempt_at": now + retry_delay(attempts, retry_backoff),
        }
        insert = dialect_insert()(_TABLE).values([row])
        updated = ("errors", "harvested_at", "run_id", "attempts", "next_attempt_at")
        db.session.execute(
            insert.on_conflict_do_update(
                index_elements=_KEY,
                set_={name: insert.excluded[name] for name in updated},
            )
        )
        db.session.commit()

    def refresh_statistics(self) -> None:
        """Let PostgreSQL plan the tracking look-ups with statistics that match the table.

        A table that has just grown from nothing has none until autovacuum gets to it (or
        never, where it is off), and the planner then scans every row of the harvester for
        each batch's look-up: quadratic over a first harvest.
        """
        if dialect_name() != "postgresql":
            return
        db.session.execute(sa.text(f"ANALYZE {_TABLE.name}"))
        db.session.commit()

    # -- clauses --------------------------------------------------------------------------
    @property
    def _mine(self) -> sa.ColumnElement[bool]:
        return _TABLE.c.harvester_id == self.harvester_id

    @property
    def _not_seen(self) -> sa.ColumnElement[bool]:
        if self.run_id is None:
            raise RuntimeError("Reconciliation needs a run id to tell seen records apart.")
        return sa.or_(_TABLE.c.run_id.is_(None), _TABLE.c.run_id != self.run_id)


def keyset_pages(query: sa.Select, batch_size: int) -> Iterator[list[sa.Row]]:
    """The rows of `query` in pages of `batch_size`, by identifier (keyset: a page costs the
    same at the end of 200,000 rows as at the start), each read in a transaction of its own
    (the caller writes between pages)."""
    after = ""
    while True:
        page = (
            query.where(_TABLE.c.oai_identifier > after)
            .order_by(_TABLE.c.oai_identifier)
            .limit(batch_size)
        )
        rows = list(db.session.execute(page))
        db.session.commit()
        if not rows:
            return
        yield rows
        after = rows[-1].oai_identifier


def _has_errors() -> sa.ColumnElement[bool]:
    """The last attempt failed (no errors are stored as SQL NULL, as the records API reads it)."""
    return _TABLE.c.errors.is_not(None)
