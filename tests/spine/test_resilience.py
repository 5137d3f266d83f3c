"""Protocol quirks and faults, through the whole harvester: finish right, or fail loudly and safely."""

from datetime import UTC, datetime

import pytest
from factories import gaps, make_harvester, record_request_times, run_harvest

from oarepo_oaipmh_harvester.harvest.window import SinceSource
from oarepo_oaipmh_harvester.models import OAIHarvester
from oarepo_oaipmh_harvester.protocol.errors import (
    CannotDisseminateFormat,
    MalformedResponse,
    OAITransportError,
    TokenLoopError,
)

from .helpers import expected_titles, local_titles, tracking


def watermark():
    from invenio_db import db

    return db.session.get(OAIHarvester, "test").watermark


@pytest.mark.parametrize(
    "quirk, value",
    [
        ("token_style", "unsafe"),
        ("final_token", "absent"),
        ("gzip", True),
        ("offset_datestamps", True),
        ("empty_pages_with_token", 3),
    ],
)
def test_quirks_a_harvester_must_survive(
    app, db, clean_index, provider, corpus, sample_service, quirk, value
):
    setattr(provider.quirks, quirk, value)
    make_harvester(provider.base_url)
    summary = run_harvest("test")
    assert summary.succeeded and summary.counts.created == 50
    assert local_titles(sample_service) == expected_titles(corpus)
    assert watermark() is not None


@pytest.mark.parametrize(
    "quirk, value, error, message",
    [
        ("repeat_token", True, TokenLoopError, "token"),
        ("empty_pages_with_token", 1000, TokenLoopError, "empty"),
        ("malformed_xml", True, MalformedResponse, "well-formed"),
    ],
)
def test_broken_providers_fail_the_run_and_keep_the_watermark(
    app, db, clean_index, provider, corpus, quirk, value, error, message
):
    setattr(provider.quirks, quirk, value)
    make_harvester(provider.base_url)
    with pytest.raises(error, match=message):
        run_harvest("test")
    assert watermark() is None
    assert len(provider.requests) < 40  # gave up, no endless loop


def test_http_errors(app, db, provider):
    make_harvester(provider.base_url)
    provider.quirks.fail_requests = 1
    provider.quirks.fail_status = 403
    with pytest.raises(OAITransportError, match="403"):
        run_harvest("test")
    assert len(provider.requests) == 1  # 403 is final: no retries
    provider.quirks.fail_requests = 1000
    provider.quirks.fail_status = 503
    with pytest.raises(OAITransportError, match="503"):
        run_harvest("test")
    assert watermark() is None


def test_control_characters_do_not_kill_the_page(
    app, db, clean_index, provider, corpus, sample_service
):
    provider.quirks.control_characters = True
    make_harvester(provider.base_url)
    summary = run_harvest("test")
    assert summary.succeeded and summary.counts.created == 50
    assert local_titles(sample_service) == expected_titles(corpus)  # the injected chars are gone
    warned = [row for row in tracking().values() if row.warnings]
    assert warned and all("XML forbids" in row.warnings[0] for row in warned)
    assert all(row.errors is None for row in tracking().values())
    # The provider's fault is named once on the run, whatever the number of pages it hit.
    faults = [w for w in summary.warnings if "characters that XML forbids" in w]
    assert len(faults) == 1 and faults[0] in summary.message()


def test_an_endless_list_of_known_records_fails_naming_the_rule(
    app, db, clean_index, provider, corpus, sample_service
):
    """A new token on every page, the same identifiers on every page: no page counts as
    progress, so the run fails within a few pages and trusts nothing of the window."""
    provider.quirks.endless_known_records = True
    make_harvester(provider.base_url)
    with pytest.raises(TokenLoopError, match="only identifiers it had already sent") as caught:
        run_harvest("test")
    assert "max_empty_pages" in str(caught.value)
    assert len(provider.requests_for("ListRecords")) <= 12  # not thousands of pages
    assert watermark() is None


def test_no_records_match_to_a_resumption_request_is_a_warning_and_loses_nothing(
    app, db, clean_index, provider, corpus, sample_service
):
    provider.quirks.no_records_match_at_end = True
    make_harvester(provider.base_url)
    summary = run_harvest("test")
    assert summary.succeeded and summary.counts.created == 50
    assert local_titles(sample_service) == expected_titles(corpus)
    assert watermark() is not None
    faults = [w for w in summary.warnings if "noRecordsMatch to a request with a resumption" in w]
    assert len(faults) == 1 and faults[0] in summary.message()


def test_malformed_datestamp_is_harvested_with_a_warning(
    app, db, clean_index, provider, corpus, sample_service
):
    bad = sorted(corpus.live_identifiers())[4]
    provider.quirks.bad_datestamp_identifiers = {bad}
    make_harvester(provider.base_url)
    summary = run_harvest("test")
    assert summary.succeeded and summary.counts.created == 50
    row = tracking()[bad]
    assert row.local_pid and "datestamp" in " ".join(row.warnings)
    corpus.advance_clock(hours=1)
    again = run_harvest("test", full=True)
    assert again.counts.unchanged == 50  # a warning alone does not rewrite the record


def test_no_records_match_is_an_empty_successful_window(app, db, clean_index, provider, corpus):
    make_harvester(provider.base_url)
    run_harvest("test")
    corpus.advance_clock(hours=1)
    provider.requests.clear()
    summary = run_harvest("test", since_source=SinceSource.WATERMARK)
    assert summary.succeeded and summary.counts.total == 0
    assert [r["verb"] for r in provider.requests] == ["Identify", "ListRecords"]
    assert watermark() == datetime(2024, 6, 1, 13, tzinfo=UTC)


def test_format_no_longer_offered_fails_clearly(app, db, provider):
    from invenio_db import db as db_

    make_harvester(provider.base_url)
    db_.session.get(OAIHarvester, "test").metadata_prefix = "marc21"
    db_.session.commit()
    with pytest.raises(CannotDisseminateFormat, match="cannotDisseminateFormat"):
        run_harvest("test")
    assert watermark() is None


def test_day_granularity_provider_gets_day_arguments(app, db, clean_index, corpus, sample_service):
    from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

    with OAIPMHProvider(corpus, page_size=9, granularity="day") as provider:
        make_harvester(provider.base_url)
        run_harvest("test")
        corpus.advance_clock(days=1)
        corpus.update(sorted(corpus.live_identifiers())[0], metadata={"title": ["Next day"]})
        summary = run_harvest("test", since_source=SinceSource.WATERMARK)
        first = [r for r in provider.requests_for("ListRecords") if "metadataPrefix" in r]
        assert first[0]["until"] == "2024-06-01"
        assert (first[1]["from"], first[1]["until"]) == ("2024-06-01", "2024-06-02")
        assert summary.counts.updated == 1
        assert local_titles(sample_service) == expected_titles(corpus)


def test_selected_identifier_that_does_not_exist_is_reported_not_tracked(app, db, provider):
    """A row would stay for ever, failing, for an identifier the provider never had (a typo):
    the run reports it, and only a record harvested before keeps the error on its row."""
    make_harvester(provider.base_url)
    summary = run_harvest("test", identifiers=["oai:example.org:nope"])
    assert summary.counts.failed == 1
    ((identifier, error),) = summary.counts.failures
    assert identifier == "oai:example.org:nope" and "idDoesNotExist" in error
    assert "oai:example.org:nope" not in tracking()


def test_polite_delay_per_harvester(app, db, provider, corpus):
    import time

    make_harvester(provider.base_url, request_delay=0.3)
    provider.quirks.final_token = "absent"
    arrivals = record_request_times(provider)
    started = time.monotonic()
    run_harvest("test")
    requests = len(provider.requests)  # Identify + 8 pages
    assert time.monotonic() - started >= 0.3 * (requests - 1) * 0.9
    # Each pause, not only their sum: a request starts 0.3 s after the previous one ended.
    assert len(arrivals) == requests and min(gaps(arrivals)) >= 0.3
    from invenio_access.permissions import system_identity

    from oarepo_oaipmh_harvester.proxies import current_harvester_service

    updated = current_harvester_service.update(system_identity, "test", {"request_delay": None})
    assert updated.data["request_delay"] is None
