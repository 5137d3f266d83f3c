from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from oarepo_oaipmh_harvester.protocol.datestamps import (
    Granularity,
    MalformedDatestamp,
    format_datestamp,
    parse_datestamp,
)

CET = timezone(timedelta(hours=2))


@pytest.mark.parametrize(
    ("value", "granularity", "expected"),
    [
        (datetime(2024, 3, 5, 6, 7, 8), Granularity.SECONDS, "2024-03-05T06:07:08Z"),
        (datetime(2024, 3, 5, 6, 7, 8, tzinfo=UTC), Granularity.SECONDS, "2024-03-05T06:07:08Z"),
        (datetime(2024, 3, 5, 1, 0, 0, tzinfo=CET), Granularity.SECONDS, "2024-03-04T23:00:00Z"),
        (datetime(2024, 3, 5, 1, 0, 0, tzinfo=CET), Granularity.DAY, "2024-03-04"),
        (datetime(2024, 3, 5, 23, 59, 59, 999999), Granularity.SECONDS, "2024-03-05T23:59:59Z"),
        (datetime(2024, 3, 5, 23, 59, 59), Granularity.DAY, "2024-03-05"),
        (datetime(999, 1, 2, tzinfo=UTC), Granularity.DAY, "0999-01-02"),
    ],
)
def test_format_datestamp(value: datetime, granularity: Granularity, expected: str) -> None:
    formatted = format_datestamp(value, granularity)
    assert formatted == expected
    assert "+00:00" not in formatted


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-03-05", datetime(2024, 3, 5, tzinfo=UTC)),
        ("2024-03-05T06:07:08Z", datetime(2024, 3, 5, 6, 7, 8, tzinfo=UTC)),
        ("2024-03-05T06:07:08+02:00", datetime(2024, 3, 5, 4, 7, 8, tzinfo=UTC)),
        ("2024-03-05T06:07:08-0530", datetime(2024, 3, 5, 11, 37, 8, tzinfo=UTC)),
        ("2024-03-05T06:07:08+00:00", datetime(2024, 3, 5, 6, 7, 8, tzinfo=UTC)),
        ("2024-03-05T06:07:08.123456789Z", datetime(2024, 3, 5, 6, 7, 8, 123456, tzinfo=UTC)),
        ("2024-03-05T06:07:08.5+01:00", datetime(2024, 3, 5, 5, 7, 8, 500000, tzinfo=UTC)),
        ("2024-03-05T06:07:08", datetime(2024, 3, 5, 6, 7, 8, tzinfo=UTC)),
        ("  2024-03-05T06:07:08Z\n", datetime(2024, 3, 5, 6, 7, 8, tzinfo=UTC)),
    ],
)
def test_parse_datestamp(text: str, expected: datetime) -> None:
    parsed = parse_datestamp(text)
    assert parsed == expected
    assert parsed.tzinfo is UTC


@pytest.mark.parametrize(
    "text",
    [
        "",
        "yesterday",
        "2024-3-5",
        "2024-13-01",
        "2024-02-30",
        "2024-01-01T25:00:00Z",
        "2024-01-01T10:00Z",
        "2024-01-01T10:00:00+25:00",
        "2020-13-45 xx",
        "2024-01-01T10:00:00ZZ",
    ],
)
def test_parse_datestamp_rejects_malformed(text: str) -> None:
    with pytest.raises(MalformedDatestamp) as caught:
        parse_datestamp(text)
    assert repr(text) in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_format_and_parse_round_trip() -> None:
    value = datetime(2021, 12, 31, 23, 59, 58, tzinfo=UTC)
    assert parse_datestamp(format_datestamp(value, Granularity.SECONDS)) == value
    assert parse_datestamp(format_datestamp(value, Granularity.DAY)) == datetime(
        2021, 12, 31, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("YYYY-MM-DD", Granularity.DAY),
        ("YYYY-MM-DDThh:mm:ssZ", Granularity.SECONDS),
        (" YYYY-MM-DDThh:mm:ssZ\n", Granularity.SECONDS),
        ("YYYY-MM-DDThh:mm:ss", Granularity.SECONDS),
        ("yyyy-mm-dd", Granularity.DAY),
    ],
)
def test_granularity_from_identify(value: str, expected: Granularity) -> None:
    assert Granularity.from_identify(value) is expected


@pytest.mark.parametrize("value", [None, "", "   ", "YYYY", "seconds", "YYYY-MM-DDThh:mmZ"])
def test_granularity_from_identify_rejects_unknown(value: str | None) -> None:
    with pytest.raises(ValueError, match="granularity"):
        Granularity.from_identify(value)


def test_granularity_is_a_string_enum() -> None:
    assert Granularity.DAY == "YYYY-MM-DD"
    assert isinstance(Granularity.SECONDS, str)
