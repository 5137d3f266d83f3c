"""Per-record problems with identifiers stay per record: the run goes on, nothing is overwritten."""

from factories import make_harvester, run_harvest
from invenio_jobs.models import RunStatusEnum

from oarepo_oaipmh_harvester.harvest.changes import MAX_IDENTIFIER_LENGTH, NO_IDENTIFIER

from .helpers import expected_titles, live_local_count, local_titles, tracking

LONG = "oai:example.org:" + "x" * 3000


def test_an_identifier_too_long_for_the_table_is_harvested_under_a_shortened_key(
    app, db, clean_index, provider, corpus, sample_service
):
    corpus.add(LONG, metadata={"title": ["Very long identifier"]})
    make_harvester(provider.base_url)

    summary = run_harvest("test")

    assert summary.succeeded and summary.counts.created == 51
    rows = tracking()
    [key] = [key for key in rows if key.startswith("oai:example.org:xxx")]
    assert len(key) <= MAX_IDENTIFIER_LENGTH and "sha256:" in key
    assert rows[key].local_pid and "3016 characters" in rows[key].warnings[0]
    assert live_local_count() == 51
    # A rerun recognises it as unchanged (the key is stable), and the watermark moves on.
    again = run_harvest("test", full=True)
    assert again.succeeded and again.counts.unchanged == 51 and again.counts.created == 0
    # Asked for again by its key (re-harvest, retries), the provider gets the whole identifier.
    one = run_harvest("test", identifiers=[key])
    assert one.succeeded and one.counts.unchanged == 1
    assert provider.requests_for("GetRecord")[-1]["identifier"] == LONG


def test_records_without_identifier_are_never_written_and_the_rest_is(
    app, db, clean_index, provider, corpus, sample_service
):
    corpus.add("", metadata={"title": ["Nameless one"]})
    make_harvester(provider.base_url)

    summary = run_harvest("test")

    assert summary.counts.created == 50 and summary.counts.failed == 1
    assert summary.counts.failures[0][0] == NO_IDENTIFIER
    assert "" not in tracking() and live_local_count() == 50
    assert not summary.watermark_advanced  # the window is replayed, never trusted


def test_the_newer_of_two_versions_on_one_page_wins(
    app, db, clean_index, provider, corpus, sample_service
):
    first = sorted(corpus.live_identifiers())[0]
    provider.quirks.older_copy_after = {first}
    make_harvester(provider.base_url)

    summary = run_harvest("test")

    assert summary.succeeded and summary.counts.created == 50
    assert local_titles(sample_service) == expected_titles(corpus)
    assert local_titles(sample_service)[first] != ["Older version"]


def test_a_jobs_run_with_a_bad_identifier_is_partial_not_aborted(
    app, db, clean_index, provider, corpus
):
    from invenio_access.permissions import system_identity

    from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service

    corpus.add("", metadata={"title": ["Nameless"]})
    make_harvester(provider.base_url)
    run = current_harvest_runs_service.harvest_in_process(system_identity, "test")

    assert run.status == RunStatusEnum.PARTIAL_SUCCESS
    assert run.inserted_entries == 50 and run.errored_entries == 1
    assert "without an identifier" in run.message
