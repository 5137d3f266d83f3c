"""The tracked records whose search document is not known to be in the index
(``oai_harvester_unindexed``), and the "Not indexed" errors on their tracking rows.

Decision owned here: a record is listed in the transaction that writes it when its document
is sent after the commit, and when the index refused it; it leaves the list when the index
has taken it. A run that dies in between leaves it listed, and every run sends the listed
documents first. Its "Not indexed" error goes beside the row's other errors.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from invenio_db import db

from ..models import OAIHarvestedRecord, OAIUnindexedRecord
from .changes import NOT_INDEXED
from .counts import WriteCounts
from .tracking import NOT_FETCHED, TrackingStore, dialect_insert, keyset_pages
from .unit_of_work import IndexFailure

log = logging.getLogger(__name__)

_TABLE = OAIHarvestedRecord.__table__
_UNINDEXED = OAIUnindexedRecord.__table__


class UnindexedRecords:
    """The unindexed records of one harvester, beside its tracking rows."""

    def __init__(self, tracking: TrackingStore) -> None:
        self.tracking = tracking
        self.harvester_id = tracking.harvester_id

    def pages(self, batch_size: int) -> Iterator[list[tuple[str, str | None]]]:
        """(identifier, local pid) of every record whose search document is not known to be
        in the index (:class:`OAIUnindexedRecord`), in batches."""
        query = (
            sa.select(_TABLE.c.oai_identifier, _TABLE.c.local_pid)
            .join(
                _UNINDEXED,
                sa.and_(
                    _UNINDEXED.c.harvester_id == _TABLE.c.harvester_id,
                    _UNINDEXED.c.oai_identifier == _TABLE.c.oai_identifier,
                ),
            )
            .where(_TABLE.c.harvester_id == self.harvester_id)
        )
        for rows in keyset_pages(query, batch_size):
            yield [(row.oai_identifier, row.local_pid) for row in rows]

    def expect(self, identifiers: Sequence[str]) -> None:
        """These records' documents are sent after the commit: until they are known to be in
        the index (:meth:`settle`), the records are unindexed."""
        if not identifiers:
            return
        insert = dialect_insert()(_UNINDEXED).values(
            [{"harvester_id": self.harvester_id, "oai_identifier": i} for i in identifiers]
        )
        db.session.execute(insert.on_conflict_do_nothing())

    def indexed(self, identifiers: Sequence[str]) -> None:
        """These records are in the index now: no longer unindexed, and their rows' "Not
        indexed" errors go (their other errors stay)."""
        if not identifiers:
            return
        db.session.execute(
            sa.delete(_UNINDEXED).where(
                _UNINDEXED.c.harvester_id == self.harvester_id,
                _UNINDEXED.c.oai_identifier.in_(list(identifiers)),
            )
        )
        for identifier, errors in self._errors_of(identifiers, not_indexed_only=True).items():
            self.tracking.update(identifier, errors=_without_not_indexed(errors) or None)

    def settle(
        self,
        awaiting: Sequence[str],
        failures: Sequence[IndexFailure],
        identifier_of_pid: Mapping[str, str],
        counts: WriteCounts,
    ) -> None:
        """After a batch's bulk request: the records `awaiting` it are in the index, except
        those that did not reach it (their rows get the error, and they stay unindexed);
        committed."""
        failed = {identifier_of_pid.get(failure.pid or "") for failure in failures}
        self.indexed([i for i in awaiting if i not in failed])
        self.refused(failures, identifier_of_pid, counts)

    def refused(
        self,
        failures: Sequence[IndexFailure],
        identifier_of_pid: Mapping[str, str],
        counts: WriteCounts,
    ) -> None:
        """A "Not indexed" error on the rows of committed records that are not in the index,
        beside their other errors; they stay unindexed, and the next run sends them first."""
        identifiers = [identifier_of_pid.get(failure.pid or "") for failure in failures]
        current = self._errors_of([i for i in identifiers if i is not None])
        for failure, identifier in zip(failures, identifiers, strict=True):
            what = "removed from" if failure.action == "delete" else "written to"
            message = f"{NOT_INDEXED} the record was {what} the database, but {failure.message}."
            log.error("Harvester %s: %s %s", self.harvester_id, identifier, message)
            if identifier is None:
                counts.not_indexed_one(f"(record {failure.record_id})", message)
                continue
            counts.not_indexed_one(identifier, message)
            errors = [*_without_not_indexed(current.get(identifier)), message]
            self.tracking.update(identifier, errors=errors)
            self.expect([identifier])
        db.session.commit()

    def _errors_of(
        self, identifiers: Sequence[str], *, not_indexed_only: bool = False
    ) -> dict[str, list[str]]:
        """The errors of these rows (those with a "Not indexed" one only, if asked)."""
        if not identifiers:
            return {}
        query = sa.select(_TABLE.c.oai_identifier, _TABLE.c.errors).where(
            _TABLE.c.harvester_id == self.harvester_id,
            _TABLE.c.oai_identifier.in_(list(identifiers)),
        )
        if not_indexed_only:
            query = query.where(_is_not_indexed())
        return {identifier: errors or [] for identifier, errors in db.session.execute(query)}


def _without_not_indexed(errors: Sequence[str] | None) -> list[str]:
    return [error for error in errors or () if not error.startswith(NOT_INDEXED)]


def _is_not_indexed() -> sa.ColumnElement[bool]:
    """The row's error says its record is not in the search index."""
    return sa.cast(_TABLE.c.errors, sa.Text).like(f"%{NOT_INDEXED}%")


def indexed_after_commit(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The identifiers of the rows whose local record gets its search document after the
    batch's commit: until the index has answered they are unindexed
    (:meth:`.unindexed.UnindexedRecords.expect`), and a run that dies in between leaves
    them so; the next run sends those documents first. A record that failed is not written,
    and a provider's refusal to serve it again (``Not fetched``) does not undo a rewrite."""
    return [
        row["oai_identifier"]
        for row in rows
        if row["local_pid"] and all(error.startswith(NOT_FETCHED) for error in row["errors"] or ())
    ]
