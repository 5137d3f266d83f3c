"""Habits of invenio-oaiserver (InvenioRDM, Zenodo): OAI errors with 422, an empty last page, 500s."""

from factories import make_harvester, run_harvest

from .helpers import expected_titles, local_titles, tracking


def test_no_records_match_with_422_is_an_empty_successful_window(
    app, db, clean_index, provider, corpus
):
    provider.quirks.error_status = 422
    make_harvester(provider.base_url)
    assert run_harvest("test").counts.created == 50
    corpus.advance_clock(hours=1)

    summary = run_harvest("test")  # nothing changed: noRecordsMatch, status 422

    assert summary.succeeded and summary.counts.total == 0 and summary.watermark_advanced
    assert provider.requests_for("ListRecords")[-1].get("from")


def test_bad_resumption_token_with_422_restarts_the_window(
    app, db, clean_index, provider, corpus, sample_service
):
    provider.quirks.error_status = 422
    provider.quirks.expire_tokens_after = 3  # the fourth continuation: badResumptionToken
    make_harvester(provider.base_url)

    def tokens_live_again_once_restarted(_progress):
        starts = [r for r in provider.requests_for("ListRecords") if "metadataPrefix" in r]
        if len(starts) > 1:
            provider.quirks.expire_tokens_after = None

    app.config["OAI_HARVESTER_PREFETCH_BATCHES"] = 0  # batches in step with the requests
    try:
        summary = run_harvest("test", progress=tokens_live_again_once_restarted)
    finally:
        app.config["OAI_HARVESTER_PREFETCH_BATCHES"] = 2

    assert summary.succeeded and summary.counts.created == 50
    assert local_titles(sample_service) == expected_titles(corpus)
    starts = [r for r in provider.requests_for("ListRecords") if "metadataPrefix" in r]
    assert len(starts) == 2  # the window was asked again from its first request


def test_id_does_not_exist_with_422_is_that_identifiers_error(app, db, clean_index, provider):
    provider.quirks.error_status = 422
    make_harvester(provider.base_url)

    summary = run_harvest("test", identifiers=["oai:example.org:nope"])

    assert summary.counts.failed == 1
    assert "idDoesNotExist" in summary.counts.failures[0][1]


def test_an_http_500_for_one_get_record_is_that_identifiers_error(
    app, db, clean_index, provider, corpus
):
    gone, fine = sorted(corpus.live_identifiers())[:2]
    provider.quirks.server_error_for = {gone}
    make_harvester(provider.base_url)
    app.config["OAI_HARVESTER_MAX_RETRIES"] = 0
    try:
        summary = run_harvest("test", identifiers=[gone, fine])
    finally:
        app.config["OAI_HARVESTER_MAX_RETRIES"] = 5

    assert summary.counts.failed == 1 and summary.counts.created == 1
    assert "HTTP 500 for GetRecord" in tracking()[gone].errors[0]
    assert tracking()[fine].local_pid


def test_a_last_page_without_records_and_with_an_empty_token_ends_the_list(
    app, db, clean_index, provider, corpus, sample_service
):
    provider.quirks.empty_last_page = True
    provider.page_size = 10  # 50 records: five full pages, then an empty one
    make_harvester(provider.base_url)

    summary = run_harvest("test")

    assert summary.succeeded and summary.counts.created == 50
    assert len(provider.requests_for("ListRecords")) == 6
    assert local_titles(sample_service) == expected_titles(corpus)


def test_tokens_that_expire_in_seconds_survive_a_slow_target_with_the_spool(
    app, db, clean_index, provider, corpus, sample_service
):
    import time

    import pytest

    from oarepo_oaipmh_harvester.protocol.errors import TooManyRestarts

    provider.quirks.token_lifetime_seconds = 0.5  # invenio-oaiserver: 60 s
    make_harvester(provider.base_url)  # batches of 10; 50 records in pages of 7

    def slow_target(_progress):
        time.sleep(0.8)  # a batch takes 0.8 s to write (InvenioRDM: a few records a second)

    # Reading in step with writing lets the tokens expire, again after every restart ...
    with pytest.raises(TooManyRestarts):
        run_harvest("test", progress=slow_target)

    # ... the spool reads the list to its end at once and writes it afterwards.
    app.config["OAI_HARVESTER_SPOOL"] = True
    try:
        summary = run_harvest("test", full=True, progress=slow_target)
    finally:
        app.config["OAI_HARVESTER_SPOOL"] = False
    assert summary.succeeded
    assert local_titles(sample_service) == expected_titles(corpus)
