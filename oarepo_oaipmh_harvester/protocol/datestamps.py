"""OAI-PMH datestamps: UTC, at day or second granularity.

Decision owned here: which datestamps we send and which we accept.  Formatting is strict (what we send must be exactly what the protocol allows); parsing is
tolerant (what real providers send is not always what the protocol allows).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from enum import StrEnum


class MalformedDatestamp(ValueError):
    """A datestamp that cannot be read as a date or a date and time."""


class Granularity(StrEnum):
    """The finest datestamp a provider understands (Identify/granularity)."""

    DAY = "YYYY-MM-DD"
    SECONDS = "YYYY-MM-DDThh:mm:ssZ"

    @classmethod
    def from_identify(cls, value: str | None) -> Granularity:
        """The granularity announced in Identify.

        Raises ValueError when the value is absent or is neither of the two the protocol
        defines.  The form without the trailing ``Z`` is accepted as seconds: providers that
        write it mean seconds, and it is the only ambiguity seen in practice.
        """
        if value is None or not value.strip():
            raise ValueError("The provider's Identify response does not state a granularity.")
        normalized = value.strip()
        for member in cls:
            if normalized == member.value:
                return member
        if normalized.upper() in ("YYYY-MM-DDTHH:MM:SSZ", "YYYY-MM-DDTHH:MM:SS"):
            return cls.SECONDS
        if normalized.upper() == "YYYY-MM-DD":
            return cls.DAY
        raise ValueError(
            f"Unknown datestamp granularity {value[:60]!r} in the provider's Identify response; "
            f"OAI-PMH allows only {cls.DAY.value!r} and {cls.SECONDS.value!r}."
        )


def _to_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def format_datestamp(value: datetime, granularity: Granularity) -> str:
    """``value`` as an OAI-PMH datestamp (naive means UTC; sub-second parts are dropped)."""
    value = _to_utc(value)
    day = f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    if granularity is Granularity.DAY:
        return day
    return f"{day}T{value.hour:02d}:{value.minute:02d}:{value.second:02d}Z"


_DATESTAMP = re.compile(
    r"""
    (?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})
    (?:
        [Tt ]
        (?P<hour>\d{2}):(?P<minute>\d{2}):(?P<second>\d{2})
        (?:[.,](?P<fraction>\d+))?
        (?P<zone>[Zz]|[+-]\d{2}(?::?\d{2})?)?
    )?
    """,
    re.VERBOSE,
)


def parse_datestamp(value: str) -> datetime:
    """An aware UTC datetime from a datestamp as providers actually send them.

    Accepts ``YYYY-MM-DD`` (midnight UTC), ``YYYY-MM-DDThh:mm:ssZ``, fractional seconds,
    numeric offsets (converted to UTC) and a missing zone (taken as UTC, which is what the
    protocol mandates anyway).  Anything else raises :class:`MalformedDatestamp`.
    """
    if not isinstance(value, str):
        raise MalformedDatestamp(f"Datestamp must be a string, not {type(value).__name__}.")
    match = _DATESTAMP.fullmatch(value.strip())
    if match is None:
        raise MalformedDatestamp(
            f"Malformed datestamp {value!r}: expected YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ."
        )
    parts = match.groupdict()
    try:
        if parts["hour"] is None:
            return datetime(int(parts["year"]), int(parts["month"]), int(parts["day"]), tzinfo=UTC)
        fraction = parts["fraction"] or "0"
        parsed = datetime(
            int(parts["year"]),
            int(parts["month"]),
            int(parts["day"]),
            int(parts["hour"]),
            int(parts["minute"]),
            int(parts["second"]),
            int(fraction[:6].ljust(6, "0")),
            tzinfo=_zone(parts["zone"]),
        )
    except ValueError as error:
        raise MalformedDatestamp(f"Malformed datestamp {value!r}: {error}.") from None
    return parsed.astimezone(UTC)


def _zone(zone: str | None) -> timezone:
    if zone is None or zone in ("Z", "z"):
        return UTC
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    if hours > 23 or minutes > 59:
        raise ValueError(f"offset {zone} is out of range")
    return timezone(sign * timedelta(hours=hours, minutes=minutes))


__all__ = ["Granularity", "MalformedDatestamp", "format_datestamp", "parse_datestamp"]
