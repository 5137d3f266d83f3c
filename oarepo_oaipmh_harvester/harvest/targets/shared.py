"""Records that two harvesters bring: one local record per work (``dedupe``).

Decision owned here: which local record a new source record joins - one that a live tracking
row of another harvester names and that carries the record's DOI or an identifier of the
harvester's ``match_on`` (several candidates fail, as every match) -, what joining writes into
it (``link``: this source's provenance link and the identifiers the record lacks, its metadata
not written; ``merge``: also the values of the fields whose field policy is merge, united with
the record's), and that a record another harvester still holds is never deleted for one
source's tombstone or purge: the holder left takes it over (its row is no longer linked).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from invenio_db import db

from ...models import OAIHarvestedRecord
from ..field_policy import as_input_references, united, value_at, with_value_at
from .matching import LocalTwins, Twin, normalised
from .options import DedupePolicy, TargetOptions

_ROWS = OAIHarvestedRecord.__table__

WRITTEN_PARTS = ("access", "custom_fields", "metadata", "pids")
"""What of a record's read form is written back when a source joins it."""


class SharedRecords:
    """One harvester's view of the records it shares with others (one records table)."""

    def __init__(self, harvester_id: str, model_cls: Any, options: TargetOptions) -> None:
        self.harvester_id = harvester_id
        self.policy = options.dedupe
        self.merged_fields = options.merged_fields
        self.twins = LocalTwins(model_cls, options.match_on, held_by_others_of=harvester_id)
        self._joined = False

    @property
    def active(self) -> bool:
        return self.policy is not DedupePolicy.OFF

    def find(self, data: dict[str, Any], doi: str | None, doi_holder: str | None) -> Twin | None:
        """The record another harvester holds that `data` is the same work as: the holder of
        its DOI, else one carrying an identifier of match_on (SeveralTwins: more than one)."""
        if not self.active:
            return None
        if doi_holder and holders_besides(self.harvester_id, doi_holder):
            return Twin(doi_holder, "doi", doi or "")
        return self.twins.find(data)

    def links(self, pid: str) -> bool:
        """Whether this harvester's row of `pid` is linked to another harvester's record."""
        if not self.active:
            return False
        return bool(
            db.session.scalar(
                sa.select(sa.func.count()).where(
                    _ROWS.c.harvester_id == self.harvester_id,
                    _ROWS.c.local_pid == pid,
                    _ROWS.c.linked.is_(True),
                )
            )
        )

    def join(
        self,
        pid: str,
        current: dict[str, Any],
        data: dict[str, Any],
        what: str | None,
        *,
        write: Callable[[dict[str, Any]], str],
        notices: list[str],
    ) -> str:
        """The source record `data` joins the record `pid` (`current`: as the target reads
        it; `what`: how it was found, for a new one); written (`write`) only where that
        changes the record."""
        if what:
            notices.append(
                f"Linked to {what}, which another harvester brought (dedupe {self.policy}); "
                f"this source is added to it."
            )
        self._joined = True
        joined = self.joined(current, data)
        return pid if joined == self.joined(current, {}) else write(joined)

    def take_joined(self) -> bool:
        """Whether a record was joined since last asked."""
        joined, self._joined = self._joined, False
        return joined

    def joined(self, current: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        """What the record (`current`, as the target reads it) becomes once the source record
        `data` joins it: its own data (references by their id, as written), with this
        source's provenance links and identifiers added, and under merge the merged fields'
        values united (the record's items first)."""
        record = {part: current[part] for part in WRITTEN_PARTS if part in current}
        record = as_input_references(record)
        record["files"] = {"enabled": bool((current.get("files") or {}).get("enabled"))}
        record.get("access", {}).pop("status", None)  # computed by the service
        metadata = record.setdefault("metadata", {})
        incoming = data.get("metadata") or {}
        for name in ("identifiers", "related_identifiers"):
            mine = metadata.get(name) or []
            theirs = incoming.get(name) or []
            if name == "related_identifiers":  # only where each source's record is
                theirs = [
                    item
                    for item in theirs
                    if (item.get("relation_type") or {}).get("id") == "isderivedfrom"
                ]
            known = {_identifier_key(item) for item in mine}
            added = [item for item in theirs if _identifier_key(item) not in known]
            if added:  # one entry an identifier: InvenioRDM refuses duplicates
                metadata[name] = [*mine, *as_input_references(added)]
        if self.policy is DedupePolicy.MERGE:
            for path in self.merged_fields:
                steps = tuple(path.split("."))
                mine, theirs = value_at(record, steps), value_at(data, steps)
                if isinstance(theirs, list):
                    mine = mine if isinstance(mine, list) else []
                    with_value_at(record, steps, united(mine, as_input_references(theirs)))
        return record


def _identifier_key(item: dict[str, Any]) -> tuple[str, str, str]:
    """An identifier entry as InvenioRDM tells duplicates: scheme, normalised value (and the
    relation of a related identifier)."""
    scheme = str(item.get("scheme") or "")
    relation = str((item.get("relation_type") or {}).get("id") or "")
    return scheme, normalised(str(item.get("identifier") or "").strip(), scheme), relation


def holders_besides(harvester_id: str, pid: str) -> list[str]:
    """The other harvesters whose live tracking rows name the local record `pid`."""
    return list(
        db.session.scalars(
            sa.select(_ROWS.c.harvester_id)
            .where(
                _ROWS.c.local_pid == pid,
                _ROWS.c.harvester_id != harvester_id,
                _ROWS.c.deleted.is_(False),
            )
            .order_by(_ROWS.c.harvester_id)
            .distinct()
        )
    )


def hand_over(harvester_id: str, pid: str) -> list[str]:
    """Before `harvester_id` deletes the local record `pid`: the other harvesters that still
    hold it (then it is not deleted, and where all of them only link to it, the first takes
    it over: its next change is written as the record's metadata)."""
    holders = holders_besides(harvester_id, pid)
    if not holders:
        return []
    others = sa.and_(
        _ROWS.c.local_pid == pid,
        _ROWS.c.harvester_id != harvester_id,
        _ROWS.c.deleted.is_(False),
    )
    owned = db.session.scalar(sa.select(sa.func.count()).where(others, _ROWS.c.linked.is_(False)))
    if not owned:
        db.session.execute(
            sa.update(_ROWS).where(others, _ROWS.c.harvester_id == holders[0]).values(linked=False)
        )
    return holders
