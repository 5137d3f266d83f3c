"""The window rules: from/until and the watermark."""

from datetime import UTC, datetime, timedelta

from oarepo_oaipmh_harvester.harvest.window import SinceSource, plan_window
from oarepo_oaipmh_harvester.protocol.datestamps import Granularity

RESPONSE = datetime(2024, 6, 1, 12, 30, 45, tzinfo=UTC)


def window(**kwargs):
    options = {
        "response_date": RESPONSE,
        "granularity": Granularity.SECONDS,
        "since": None,
        "since_source": SinceSource.LAST_SUCCESS,
        "watermark": None,
    }
    options.update(kwargs)
    return plan_window(**options)


def test_no_since_is_a_full_harvest_until_the_response_date():
    planned = window()
    assert planned.is_full
    assert planned.arguments() == {"from_": None, "until": "2024-06-01T12:30:45Z"}


def test_since_is_formatted_in_utc_with_z_never_an_offset():
    from zoneinfo import ZoneInfo

    since = datetime(2024, 5, 1, 14, 0, 0, tzinfo=ZoneInfo("Europe/Prague"))
    planned = window(since=since, since_source=SinceSource.MANUAL)
    assert planned.arguments()["from_"] == "2024-05-01T12:00:00Z"


def test_day_granularity_is_never_finer_than_advertised():
    planned = window(
        since=datetime(2024, 5, 1, 23, 59, 59, tzinfo=UTC),
        since_source=SinceSource.MANUAL,
        granularity=Granularity.DAY,
    )
    assert planned.arguments() == {"from_": "2024-05-01", "until": "2024-06-01"}


def test_earlier_server_watermark_wins_over_automatic_since():
    since = datetime(2024, 5, 2, tzinfo=UTC)
    watermark = since - timedelta(hours=3)  # provider clock lags ours
    assert window(since=since, watermark=watermark).from_ == watermark
    later = since + timedelta(hours=3)
    assert window(since=since, watermark=later).from_ == since


def test_manual_since_is_taken_as_given():
    since = datetime(2024, 5, 2, tzinfo=UTC)
    watermark = since - timedelta(days=30)
    assert window(since=since, since_source=SinceSource.MANUAL, watermark=watermark).from_ == since


def test_watermark_source_and_full_flag():
    watermark = datetime(2024, 5, 2, tzinfo=UTC)
    assert window(since_source=SinceSource.WATERMARK, watermark=watermark).from_ == watermark
    assert window(since_source=SinceSource.WATERMARK, watermark=None).is_full
    assert window(since=watermark, full=True).is_full


def test_from_never_after_until():
    ahead = RESPONSE + timedelta(hours=2)  # our clock ahead of the provider's
    assert window(since=ahead, since_source=SinceSource.MANUAL).from_ == RESPONSE
    assert window(since=ahead, watermark=RESPONSE).from_ == RESPONSE


def test_a_scope_without_watermark_is_harvested_in_full_whatever_the_jobs_last_success():
    # invenio-jobs passes the start of its last successful run, but nothing of this scope (a
    # set just added, a new endpoint) was ever harvested to the end.
    assert window(since=RESPONSE - timedelta(days=1), watermark=None).is_full


def test_automatic_run_without_since_continues_from_the_harvesters_watermark():
    # A job created after the harvester already succeeded gets no `since` from invenio-jobs.
    watermark = datetime(2024, 5, 2, tzinfo=UTC)
    assert window(since=None, watermark=watermark).from_ == watermark
    assert window(since=None, watermark=watermark, full=True).is_full
    assert window(since=None, watermark=None).is_full
