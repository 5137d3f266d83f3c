"""The local records a deleted harvester left, and the new harvester that takes them over.

Decision owned here: which tracking rows a deleted harvester leaves behind (those of live local
records: the records stay in the target), which new harvester they belong to (the same
provider endpoint, metadata prefix and target service), and when it takes them over without
being asked (its sets are the deleted one's: it sees the same records) or must be told to.

Without this, deleting a harvester and creating it again wrote every record a second time: the
new harvester knew none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa
from invenio_db import db

from ..models import OAIHarvestedRecord, OAIHarvester, OAIReleasedRecord

# The tracking row's columns a released row keeps; the others start afresh (no error, no
# attempts, not purged, no run).
KEPT_COLUMNS = (
    "oai_identifier",
    "local_pid",
    "datestamp",
    "warnings",
    "original_xml",
    "transformed",
    "harvested_at",
    "adopted",
)


@dataclass(frozen=True)
class ReleasedRecords:
    """The records one deleted harvester left for the source a new harvester names."""

    released_from: str
    setspecs: tuple[str, ...]
    count: int


def live_records_of(harvester_id: str) -> int:
    """How many local records a harvester holds (what deleting it leaves in the target)."""
    return db.session.scalar(
        db.select(sa.func.count()).select_from(OAIHarvestedRecord).where(*_live(harvester_id))
    )


def release(harvester: OAIHarvester) -> int:
    """Keep what `harvester` knew of its live local records for a later harvester of the
    same source; the number kept. Runs in the caller's transaction, before the tracking rows
    go."""
    # A harvester of the same id deleted before left rows too: this release's win.
    db.session.execute(
        db.delete(OAIReleasedRecord).where(
            OAIReleasedRecord.released_from == harvester.id,
            OAIReleasedRecord.oai_identifier.in_(
                db.select(OAIHarvestedRecord.oai_identifier).where(*_live(harvester.id))
            ),
        )
    )
    columns = [getattr(OAIHarvestedRecord, name) for name in KEPT_COLUMNS]
    source = db.select(
        sa.literal(harvester.id),
        sa.literal(harvester.base_url),
        sa.literal(harvester.metadata_prefix),
        sa.literal(list(harvester.setspecs or []), type_=OAIReleasedRecord.setspecs.type),
        sa.literal(harvester.target),
        sa.literal(datetime.now(UTC), type_=OAIReleasedRecord.released_at.type),
        *columns,
    ).where(*_live(harvester.id))
    result = db.session.execute(
        sa.insert(OAIReleasedRecord).from_select(
            [
                "released_from",
                "base_url",
                "metadata_prefix",
                "setspecs",
                "target",
                "released_at",
                *KEPT_COLUMNS,
            ],
            source,
        )
    )
    return result.rowcount


def released_for(base_url: str, metadata_prefix: str, target: str) -> list[ReleasedRecords]:
    """What deleted harvesters of this source left, the most recently deleted first."""
    rows = db.session.execute(
        db.select(
            OAIReleasedRecord.released_from,
            sa.func.count(),
            sa.func.max(OAIReleasedRecord.released_at),
        )
        .where(
            OAIReleasedRecord.base_url == base_url,
            OAIReleasedRecord.metadata_prefix == metadata_prefix,
            OAIReleasedRecord.target == target,
        )
        .group_by(OAIReleasedRecord.released_from)
        .order_by(sa.func.max(OAIReleasedRecord.released_at).desc())
    ).all()
    found = []
    for released_from, count, _ in rows:
        setspecs = db.session.scalar(
            db.select(OAIReleasedRecord.setspecs)
            .where(OAIReleasedRecord.released_from == released_from)
            .limit(1)
        )
        found.append(ReleasedRecords(released_from, tuple(setspecs or ()), count))
    return found


def sees_the_same_records(released: ReleasedRecords, setspecs: list[str]) -> bool:
    """Whether a harvester of these sets harvests what the deleted one did: taking its records
    over is then what the operator means. With other sets, some of them may never be listed
    again (and a later reconciliation would delete them): the operator must say so."""
    return set(released.setspecs) == set(setspecs or ())


def other_sets_refusal(left: list[ReleasedRecords], setspecs: list[str]) -> str:
    """Why a harvester of other sets does not take the records of deleted ones over unasked,
    and what the operator may do."""
    found = "; ".join(
        f"{source.count} of harvester {source.released_from!r} "
        f"(sets: {', '.join(source.setspecs) or 'all'})"
        for source in left
    )
    return (
        f"Deleted harvesters of this provider, metadata prefix and target left local records "
        f"({found}); this one harvests other sets ({', '.join(setspecs) or 'all'}), so a "
        f"harvest would write again those it lists. Take them over (take_over_records; on "
        f"the command line --take-over-records; then `invenio oai harvester purge` removes "
        f"them if they are not wanted), or give the sets of the deleted harvester."
    )


def take_over(harvester_id: str, released: list[ReleasedRecords]) -> int:
    """Make the released rows of `released` `harvester_id`'s tracking rows (an identifier
    left by two deleted harvesters: the later one's); the number taken over. The harvester's
    row must be flushed first."""
    taken = 0
    for source in released:
        known = db.select(OAIHarvestedRecord.oai_identifier).where(
            OAIHarvestedRecord.harvester_id == harvester_id
        )
        rows = db.select(
            sa.literal(harvester_id),
            sa.false(),
            sa.literal(0),
            sa.false(),
            *(getattr(OAIReleasedRecord, name) for name in KEPT_COLUMNS),
        ).where(
            OAIReleasedRecord.released_from == source.released_from,
            OAIReleasedRecord.oai_identifier.not_in(known),
        )
        taken += db.session.execute(
            sa.insert(OAIHarvestedRecord).from_select(
                ["harvester_id", "deleted", "attempts", "purged", *KEPT_COLUMNS], rows
            )
        ).rowcount
        db.session.execute(
            db.delete(OAIReleasedRecord).where(
                OAIReleasedRecord.released_from == source.released_from
            )
        )
    return taken


def _live(harvester_id: str) -> tuple[sa.ColumnElement[bool], ...]:
    return (
        OAIHarvestedRecord.harvester_id == harvester_id,
        OAIHarvestedRecord.local_pid.is_not(None),
        OAIHarvestedRecord.deleted.is_(False),
        OAIHarvestedRecord.purged.is_(False),
    )
