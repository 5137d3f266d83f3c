"""Does a harvested record need writing? Pure decisions, no database, no service.

Decision owned here: which records can be tracked at all (an identifier, and one that fits the
tracking table), which version of an identifier a batch keeps, and whether a record is
already written as it is (same datestamp and status, no error from the last attempt but a
search index that did not take it) or is an older version than the one this run already
wrote (a late batch of a parallel writer).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from ..protocol.datestamps import MalformedDatestamp, parse_datestamp
from ..protocol.errors import limited
from ..protocol.records import OAIRecord

MAX_IDENTIFIER_LENGTH = 1024
"""Longest OAI identifier the tracking table's column holds, in characters."""

MAX_IDENTIFIER_BYTES = 1000
"""Longest identifier tracked as it is, in UTF-8 bytes: PostgreSQL's index entries are bounded
in bytes (about 2.7 kB), and 1,024 CJK characters are 3 kB."""

NO_IDENTIFIER = "(no identifier)"

MAX_RETRY_DELAY = timedelta(days=7)

NOT_INDEXED = "Not indexed:"
"""How the error on a row whose record did not reach the search index begins. The record is
written as it is: each run sends such documents first, and a harvest need not write it again."""

TrackedRow = Mapping[str, Any]
"""What the tracking store knows of an identifier: datestamp, deleted, local_pid, errors, run_id."""


def tracking_key(identifier: str) -> str:
    """The tracking-table key of an identifier: itself, or for an over-long one a shortened
    form made unique by its SHA-256 digest (a provider's 5,000-character identifier must not
    stop the harvester)."""
    encoded = identifier.encode("utf-8")
    if len(encoded) <= MAX_IDENTIFIER_BYTES and len(identifier) <= MAX_IDENTIFIER_LENGTH:
        return identifier
    digest = hashlib.sha256(encoded).hexdigest()
    prefix = encoded[: MAX_IDENTIFIER_BYTES - 80].decode("utf-8", errors="ignore")
    return f"{prefix}{SHORTENED_MARK}{digest}"


SHORTENED_MARK = "...sha256:"
"""What a shortened tracking key carries between the identifier's start and its digest."""


def is_shortened(key: str) -> bool:
    """Whether a tracking key stands for a longer identifier (:func:`tracking_key`)."""
    return SHORTENED_MARK in key


def admissible(records: Sequence[OAIRecord]) -> tuple[list[OAIRecord], list[tuple[str, str]]]:
    """(records that can be tracked, (identifier, error) of those that cannot).

    A record without an identifier is never written (it could only overwrite another one);
    a record whose identifier is too long for the tracking table is tracked under
    :func:`tracking_key` with a warning.
    """
    kept: list[OAIRecord] = []
    refused: list[tuple[str, str]] = []
    for record in records:
        identifier = record.identifier or ""
        if not identifier.strip():
            refused.append(
                (NO_IDENTIFIER, "The provider sent a record without an identifier; not written.")
            )
        elif (key := tracking_key(identifier)) != identifier:
            warning = (
                f"The identifier has {len(identifier)} characters "
                f"({len(identifier.encode('utf-8'))} bytes), more than the tracking table "
                f"holds; tracked as {key[-72:]!r}. It begins {limited(identifier, 120)!r}."
            )
            kept.append(
                OAIRecord(
                    key,
                    record.datestamp,
                    record.deleted,
                    record.set_specs,
                    metadata=record.metadata,
                    xml=record.xml,
                    errors=(*record.errors, warning),
                )
            )
        else:
            kept.append(record)
    return kept, refused


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
    """The target already holds this record as it is (or a newer version of this run).

    A record whose local copy a purge removed is never unchanged: the next harvest recreates it.
    """
    if row is None:
        return False
    if is_stale(record, row, run_id):
        return True
    return (
        all(error.startswith(NOT_INDEXED) for error in row["errors"] or ())
        and not row.get("purged")
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
    *,
    force: bool = False,
) -> list[str]:
    """The identifiers whose record is not already written as it is, in batch order; with
    `force` every one (an operator asked to write what the provider did not change)."""
    if force:
        return [
            identifier
            for identifier, record in latest.items()
            if identifier not in tracked or not is_stale(record, tracked[identifier], run_id)
        ]
    return [
        identifier
        for identifier, record in latest.items()
        if not is_unchanged(record, tracked.get(identifier), run_id)
    ]


def retry_delay(attempts: int, backoff: float) -> timedelta:
    """How long a record that failed `attempts` times in a row waits before its next retry:
    `backoff`, doubled with every further failure, at most a week."""
    exponent = min(max(attempts - 1, 0), 20)
    return min(timedelta(seconds=backoff * 2**exponent), MAX_RETRY_DELAY)


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
