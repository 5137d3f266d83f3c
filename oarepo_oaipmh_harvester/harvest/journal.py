"""The run journal: each tracking row as it was before a run first changed it.

Decision owned here: what a run keeps so that it can be undone (:mod:`.undo`) - the
harvester's watermarks before the run, and for every tracking row the run changed, the row as
it was (or that there was none) - and for how many runs it is kept
(``OAI_HARVESTER_UNDO_RUNS``). The local record's earlier data is the row's ``transformed``:
what the harvest wrote last. A row the run only stamped as listed (reconciliation) keeps its
earlier run id and held deletion only: nothing else of it changed.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from invenio_db import db

from ..models import OAIHarvestedRecord, OAIHarvester, OAIRunChange, OAIRunJournal
from .dialects import dialect_insert

_ROWS = OAIHarvestedRecord.__table__
_CHANGES = OAIRunChange.__table__
_JOURNALS = OAIRunJournal.__table__

ROW_COLUMNS = (
    "datestamp",
    "deleted",
    "local_pid",
    "errors",
    "warnings",
    "original_xml",
    "transformed",
    "harvested_at",
    "attempts",
    "next_attempt_at",
    "purged",
    "adopted",
    "files",
    "held_deletion",
    "conflicts",
    "linked",
)
"""The tracking row's columns a change keeps (besides its run id, kept as previous_run_id)."""

SEEN_COLUMNS = ("held_deletion",)
"""What a stamp as listed changes besides the run id."""

WRITTEN = "written"
SEEN = "seen"


class RunJournal:
    """The journal of one run of one harvester."""

    def __init__(self, harvester_id: str, run_id: uuid.UUID) -> None:
        self.harvester_id = harvester_id
        self.run_id = run_id
        self._begun = False

    def begin(self, *, undo_of: uuid.UUID | None = None, keep: int | None = None) -> None:
        """Note the harvester's watermarks as the run finds them (committed); with `keep`,
        only the journals of the newest `keep` runs of the harvester stay."""
        self._insert_head(undo_of)
        if keep is not None:
            newest = (
                sa.select(_JOURNALS.c.run_id)
                .where(_JOURNALS.c.harvester_id == self.harvester_id)
                .order_by(_JOURNALS.c.started_at.desc())
                .limit(max(keep, 1))
            )
            kept = [_JOURNALS.c.run_id.not_in(newest.scalar_subquery())]
            if undo_of is not None:  # the run being undone keeps its journal, however old
                kept.append(_JOURNALS.c.run_id != undo_of)
            pruned = sa.select(_JOURNALS.c.run_id).where(
                _JOURNALS.c.harvester_id == self.harvester_id, *kept
            )
            # Both tables: SQLite enforces no foreign key (so no cascade) unless told to.
            db.session.execute(sa.delete(_CHANGES).where(_CHANGES.c.run_id.in_(pruned)))
            db.session.execute(sa.delete(_JOURNALS).where(_JOURNALS.c.run_id.in_(pruned)))
        db.session.commit()
        self._begun = True

    def remember(self, identifiers: Iterable[str], *, kind: str = WRITTEN) -> None:
        """Keep the rows of `identifiers` as they are now, unless this run changed them
        already (inside the caller's transaction: the change and its note commit together)."""
        identifiers = sorted(set(identifiers))
        if not identifiers:
            return
        self._ensure_begun()
        copied = ROW_COLUMNS if kind == WRITTEN else SEEN_COLUMNS
        values = [
            sa.literal(self.run_id, OAIRunChange.run_id.type).label("run_id"),
            _ROWS.c.oai_identifier,
            _ROWS.c.harvester_id,
            sa.literal(kind).label("kind"),
            sa.true().label("existed"),
            _ROWS.c.run_id.label("previous_run_id"),
            *(_ROWS.c[name] for name in copied),
        ]
        names = [
            "run_id",
            "oai_identifier",
            "harvester_id",
            "kind",
            "existed",
            "previous_run_id",
            *copied,
        ]
        existing = sa.select(*values).where(
            _ROWS.c.harvester_id == self.harvester_id,
            _ROWS.c.oai_identifier.in_(identifiers),
        )
        insert = dialect_insert()(_CHANGES).from_select(names, existing)
        # A row stamped as listed and then written in the same run: everything but what the
        # stamp changed is still as it was before the run.
        upgraded = {name: insert.excluded[name] for name in ROW_COLUMNS if name not in SEEN_COLUMNS}
        db.session.execute(
            insert.on_conflict_do_update(
                index_elements=[_CHANGES.c.run_id, _CHANGES.c.oai_identifier],
                set_={**upgraded, "kind": insert.excluded.kind},
                where=sa.and_(_CHANGES.c.kind == SEEN, insert.excluded.kind == WRITTEN),
            )
        )
        if kind == WRITTEN:
            absent = dialect_insert()(_CHANGES).values(
                [
                    {
                        "run_id": self.run_id,
                        "oai_identifier": identifier,
                        "harvester_id": self.harvester_id,
                        "kind": WRITTEN,
                        "existed": False,
                    }
                    for identifier in identifiers
                ]
            )
            db.session.execute(absent.on_conflict_do_nothing())

    def remember_where(self, condition: sa.ColumnElement[bool]) -> None:
        """Keep every row of the harvester that `condition` selects (before an update of
        all of them at once)."""
        identifiers = db.session.scalars(
            sa.select(_ROWS.c.oai_identifier).where(
                _ROWS.c.harvester_id == self.harvester_id, condition
            )
        ).all()
        self.remember(identifiers)

    def _ensure_begun(self) -> None:
        # A worker of a fanned-out run writes under the journal its run began; a run that
        # did not begin one (an older process) gets it here, with the watermarks as they are,
        # in the caller's transaction: asked again until it is found committed.
        if self._begun:
            return
        exists = db.session.scalar(
            sa.select(sa.func.count()).where(_JOURNALS.c.run_id == self.run_id)
        )
        self._begun = bool(exists)
        if exists:
            return
        self._insert_head(None)

    def _insert_head(self, undo_of: uuid.UUID | None) -> None:
        """The journal's head, with the harvester's watermarks as they are now."""
        harvester = db.session.get(OAIHarvester, self.harvester_id)
        insert = dialect_insert()(_JOURNALS).values(
            run_id=self.run_id,
            harvester_id=self.harvester_id,
            started_at=datetime.now(UTC),
            watermark=harvester.watermark if harvester else None,
            watermarks=harvester.watermarks if harvester else None,
            undo_of=undo_of,
        )
        db.session.execute(insert.on_conflict_do_nothing(index_elements=[_JOURNALS.c.run_id]))


def journal_of(run_id: uuid.UUID) -> dict[str, Any] | None:
    """The journal's head of a run (its columns), None when none is kept."""
    row = db.session.execute(sa.select(_JOURNALS).where(_JOURNALS.c.run_id == run_id)).first()
    return row._asdict() if row else None


def journals_of(harvester_id: str, run_ids: list[uuid.UUID]) -> list[dict[str, Any]]:
    """The journals' heads kept for these runs of the harvester."""
    if not run_ids:
        return []
    rows = db.session.execute(
        sa.select(_JOURNALS).where(
            _JOURNALS.c.harvester_id == harvester_id, _JOURNALS.c.run_id.in_(run_ids)
        )
    )
    return [row._asdict() for row in rows]
