"""Does a harvested record need writing? Pure decisions, no database, no service.

Decision owned here: which version of an identifier a batch keeps, and whether a record is
already written as it is (same datestamp and status, no error from the last attempt) or is an
older version than the one this run already wrote (a late batch of a parallel writer).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..protocol.datestamps import MalformedDatestamp, parse_datestamp
from ..protocol.records import OAIRecord

TrackedRow = Mapping[str, Any]
"""What the tracking store knows of an identifier: datestamp, deleted, local_pid, errors, run_id."""


def latest_of_each(records: Sequence[OAIRecord]) -> dict[str, OAIRecord]:
    """One record per identifier, in batch order: the newest datestamp wins, ties the later one.

    A provider may list an identifier twice (a record in two sets, a record changed while
    the list was being served); the older version must never overwrite the newer.
    """
    latest: dict[str, OAIRecord] = {}
    for record in records:
        kept = latest.get(record.identifier)
        if kept is not None and _is_older(record, kept):
            continue
        latest[record.identifier] = record
    return latest


def is_unchanged(record: OAIRecord, row: TrackedRow | None, run_id: uuid.UUID | None) -> bool:
    """The target already holds this record as it is (or a newer version of this run)."""
    if row is None:
        return False
    if is_stale(record, row, run_id):
        return True
    return (
        not row["errors"]
        and row["datestamp"] == record.datestamp
        and row["deleted"] == record.deleted
    )


def is_stale(record: OAIRecord, row: TrackedRow, run_id: uuid.UUID | None) -> bool:
    """This run already wrote a newer version (a batch of a parallel writer finished late)."""
    if run_id is None or row["run_id"] != run_id:
        return False  # across runs any change wins: providers may rewrite datestamps
    incoming, written = record.datestamp_value, _parse_or_none(row["datestamp"])
    return incoming is not None and written is not None and incoming < written


def needing_write(
    latest: Mapping[str, OAIRecord],
    tracked: Mapping[str, TrackedRow],
    run_id: uuid.UUID | None,
) -> list[str]:
    """The identifiers whose record is not already written as it is, in batch order."""
    return [
        identifier
        for identifier, record in latest.items()
        if not is_unchanged(record, tracked.get(identifier), run_id)
    ]


def _is_older(record: OAIRecord, than: OAIRecord) -> bool:
    incoming, kept = record.datestamp_value, than.datestamp_value
    return incoming is not None and kept is not None and incoming < kept


def _parse_or_none(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return parse_datestamp(value)
    except MalformedDatestamp:
        return None
