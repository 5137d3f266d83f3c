"""A provider whose clock lies can neither empty a window nor poison the watermark."""

from datetime import UTC, datetime, timedelta

from factories import make_harvester, run_harvest
from invenio_db import db as db_

from oarepo_oaipmh_harvester.models import OAIHarvester

from .helpers import expected_titles, local_titles


def _watermark():
    db_.session.expire_all()
    return db_.session.get(OAIHarvester, "test").watermark


def test_a_clock_in_the_future_stores_no_watermark_and_misses_no_later_change(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url)
    run_harvest("test")
    good = _watermark()
    assert good == datetime(2024, 6, 1, 12, tzinfo=UTC)

    # One responseDate of 2999, as a misconfigured provider sent it.
    corpus.set_clock(datetime(2999, 1, 1, tzinfo=UTC))
    edited = sorted(corpus.live_identifiers())[0]
    corpus.update(
        edited,
        metadata={"title": ["Edited under the bad clock"]},
        datestamp=datetime(2024, 6, 2, tzinfo=UTC),
    )
    summary = run_harvest("test")

    assert summary.succeeded and summary.counts.updated == 1
    assert _watermark() == good  # not 2999
    assert not summary.watermark_advanced
    assert any("2999-01-01T00:00:00Z" in warning for warning in summary.warnings)
    # The request asked for everything from the good watermark on, with no `until`.
    last_list = provider.requests_for("ListRecords")[-1]
    assert last_list["from"] == "2024-06-01T12:00:00Z" and "until" not in last_list

    # The clock is fixed; a change made in between is harvested by the next default run.
    corpus.set_clock(datetime(2024, 6, 3, tzinfo=UTC))
    second = sorted(corpus.live_identifiers())[1]
    corpus.update(second, metadata={"title": ["Edited after the fix"]})
    summary = run_harvest("test")
    assert summary.counts.updated >= 1
    assert local_titles(sample_service) == expected_titles(corpus)
    assert _watermark() == datetime(2024, 6, 3, tzinfo=UTC)


def test_a_clock_in_1970_harvests_the_window_and_keeps_the_watermark(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url)
    run_harvest("test")
    good = _watermark()

    edited = sorted(corpus.live_identifiers())[3]
    corpus.update(
        edited, metadata={"title": ["Edited"]}, datestamp=datetime(2024, 6, 5, tzinfo=UTC)
    )
    corpus.set_clock(datetime(1970, 1, 1, tzinfo=UTC))
    summary = run_harvest("test")

    assert summary.counts.updated == 1  # not an empty window
    assert _watermark() == good  # not 1970
    assert any("earlier than the watermark" in warning for warning in summary.warnings)
    assert local_titles(sample_service) == expected_titles(corpus)


def test_the_warning_is_on_the_jobs_run(app, db, clean_index, provider, corpus):
    from invenio_access.permissions import system_identity
    from invenio_jobs.models import RunStatusEnum

    from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service

    make_harvester(provider.base_url)
    corpus.set_clock(datetime.now(UTC) + timedelta(days=400))
    run = current_harvest_runs_service.harvest_in_process(system_identity, "test")

    assert run.status == RunStatusEnum.SUCCESS
    assert "later than ours" in (run.message or "")
    assert _watermark() is None  # a first run under a bad clock stores nothing either
