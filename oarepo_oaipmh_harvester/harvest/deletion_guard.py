"""The mass-deletion guard: a run that would delete too much of a collection holds back.

Decision owned here: when a run's deletions are too many (more than a share of the harvester's
live records, and at least a minimum), what happens to them instead (held: the records stay
published, the tracking rows say ``held``), how a held deletion is released (confirmed:
applied; rejected: dropped, and never applied by a later run unless the source deletes the
record again, with a new datestamp, or a reconciliation finds it gone after listing it again),
and how deletions wait for that decision within a run (``pending``: a tombstone's deletion is
decided once the run has seen all of them).

The states live on the tracking rows (``held_deletion``): None, ``pending``, ``held``,
``rejected``. A row whose deletion waits keeps ``deleted`` false (its local record is live)
and the tombstone's datestamp.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from invenio_db import db

from ..models import OAIHarvestedRecord
from .counts import WriteCounts, describe_error
from .targets import TargetAdapter
from .unit_of_work import BulkIndexingUnitOfWork

PENDING = "pending"
HELD = "held"
REJECTED = "rejected"

_TABLE = OAIHarvestedRecord.__table__


@dataclass(frozen=True)
class DeletionGuard:
    """How much of a harvester's collection one run may delete."""

    percent: float = 10.0
    """A share of the live records (0: the guard is off)."""
    minimum: int = 20
    """Fewer deletions than this are never held."""

    @property
    def active(self) -> bool:
        return self.percent > 0

    def holds(self, deletions: int, live: int) -> bool:
        """Whether `deletions` of `live` records are too many to apply unasked."""
        return (
            self.active
            and deletions >= self.minimum
            and deletions > self.percent / 100 * max(live, 0)
        )

    def why(self, deletions: int, live: int, harvester_id: str, what: str) -> str:
        """The run's message for held deletions."""
        share = f"{deletions / live:.0%}" if live else "all"
        return (
            f"{deletions} deletions held ({what}: {share} of the {live} live records, more "
            f"than the deletion guard's {self.percent:g}%): the records stay published and the "
            f"watermark did not move. List them with `invenio oai deletions {harvester_id}`, "
            f"apply them with --confirm or drop them with --reject (or on the harvester's page)."
        )


class HeldDeletions:
    """The deletions of one harvester that wait (pending within a run, or held)."""

    def __init__(self, harvester_id: str) -> None:
        self.harvester_id = harvester_id

    @property
    def _mine(self) -> sa.ColumnElement[bool]:
        return _TABLE.c.harvester_id == self.harvester_id

    def count(self, state: str) -> int:
        return (
            db.session.scalar(
                sa.select(sa.func.count())
                .select_from(_TABLE)
                .where(self._mine, _TABLE.c.held_deletion == state)
            )
            or 0
        )

    def live(self) -> int:
        """Live tracked records (those whose deletion waits among them)."""
        return (
            db.session.scalar(
                sa.select(sa.func.count())
                .select_from(_TABLE)
                .where(self._mine, _TABLE.c.deleted.is_(False))
            )
            or 0
        )

    def rows(self, state: str, limit: int | None = None) -> list[sa.Row]:
        query = (
            sa.select(
                _TABLE.c.oai_identifier,
                _TABLE.c.local_pid,
                _TABLE.c.datestamp,
                _TABLE.c.harvested_at,
            )
            .where(self._mine, _TABLE.c.held_deletion == state)
            .order_by(_TABLE.c.oai_identifier)
        )
        return list(db.session.execute(query.limit(limit) if limit else query))

    def move(self, source: str | Sequence[str], target: str | None) -> int:
        """Every row in state `source` (or these identifiers) to state `target`."""
        where = (
            _TABLE.c.held_deletion == source
            if isinstance(source, str)
            else _TABLE.c.oai_identifier.in_(list(source))
        )
        result = db.session.execute(
            sa.update(_TABLE).where(self._mine, where).values(held_deletion=target)
        )
        return result.rowcount or 0

    def apply(
        self,
        state: str,
        target: TargetAdapter,
        *,
        batch_size: int,
        run_id: Any = None,
        on_commit: Callable[[WriteCounts], Any] | None = None,
    ) -> WriteCounts:
        """Delete the local records of the rows in `state`, a batch per commit; their rows
        become deleted (as a tombstone's write leaves them)."""
        totals = WriteCounts()
        while rows := self.rows(state, batch_size):
            counts = WriteCounts()
            now = datetime.now(UTC)
            with BulkIndexingUnitOfWork(db.session) as uow:
                for row in rows:
                    mark = uow.mark()
                    change: dict[str, Any] = {"held_deletion": None, "harvested_at": now}
                    try:
                        # False: another harvester's source still brings it (dedupe)
                        deleted = bool(row.local_pid) and target.delete_alone(row.local_pid, uow)
                        counts.deleted += deleted
                        counts.unchanged += not deleted
                        change.update(deleted=True, errors=None)
                        if not (deleted and target.keeps_deleted_pids):
                            change["local_pid"] = None
                    except Exception as error:  # noqa: BLE001 - tracked on the record
                        uow.discard_since(mark)
                        message = f"Could not delete the record: {describe_error(error)}"
                        change["errors"] = [message]
                        counts.fail(row.oai_identifier, message)
                    if run_id is not None:
                        change["run_id"] = run_id
                    db.session.execute(
                        sa.update(_TABLE)
                        .where(self._mine, _TABLE.c.oai_identifier == row.oai_identifier)
                        .values(**change)
                    )
                if on_commit is not None:
                    on_commit(counts)
                uow.commit()
            totals.add(counts)
        return totals
