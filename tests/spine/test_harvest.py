"""End-to-end harvests from a real provider on 127.0.0.1 into the sample record service."""

import uuid
from collections import Counter
from datetime import UTC, datetime

import pytest
from factories import gaps, holds_for, make_harvester, record_request_times, run_harvest, wait_until

from oarepo_oaipmh_harvester.harvest.window import SinceSource
from oarepo_oaipmh_harvester.models import OAIHarvester
from oarepo_oaipmh_harvester.protocol.errors import OAITransportError

from .helpers import (
    counted_search_requests,
    counted_transactions,
    expected_titles,
    indexed_total,
    live_local_count,
    local_titles,
    record_versions,
    tracking,
)


def test_full_harvest_follows_the_whole_token_chain(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url)
    summary = run_harvest("test")

    assert summary.counts.created == 50 and summary.succeeded
    assert local_titles(sample_service) == expected_titles(corpus)
    assert live_local_count() == 50
    assert indexed_total(sample_service) == 50
    # 50 records in pages of 7: 8 ListRecords requests; continuations carry the token only.
    list_requests = provider.requests_for("ListRecords")
    assert len(list_requests) == 8
    assert set(list_requests[0]) == {"verb", "metadataPrefix", "until"}
    assert all(set(r) == {"verb", "resumptionToken"} for r in list_requests[1:])
    # until = the provider's responseDate at run start; the watermark is stored.
    assert list_requests[0]["until"] == "2024-06-01T12:00:00Z"
    assert db.session.get(OAIHarvester, "test").watermark == datetime(2024, 6, 1, 12, tzinfo=UTC)


def test_rerun_without_changes_touches_nothing(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url)
    run_harvest("test")
    pids = {k: row.local_pid for k, row in tracking().items()}
    versions = record_versions()
    corpus.advance_clock(hours=1)

    summary = run_harvest(
        "test", since=datetime(2024, 1, 1, tzinfo=UTC), since_source=SinceSource.MANUAL
    )

    assert (summary.counts.unchanged, summary.counts.created, summary.counts.updated) == (50, 0, 0)
    assert {k: row.local_pid for k, row in tracking().items()} == pids
    assert record_versions() == versions  # not one local record rewritten


def test_edits_deletions_and_recreations_arrive_exactly(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url)
    run_harvest("test")
    ids = sorted(corpus.live_identifiers())
    pid_of_edited = tracking()[ids[0]].local_pid

    corpus.advance_clock(hours=1)
    corpus.update(ids[0], metadata={"title": ["Edited title"]})
    corpus.delete(ids[1])
    corpus.delete(ids[2])
    corpus.add("oai:example.org:new", {"title": ["Brand new"]})
    summary = run_harvest("test", since_source=SinceSource.WATERMARK)

    assert (summary.counts.updated, summary.counts.deleted, summary.counts.created) == (1, 2, 1)
    assert tracking()[ids[0]].local_pid == pid_of_edited  # same local record, no duplicate
    assert local_titles(sample_service) == expected_titles(corpus)
    assert live_local_count() == 49
    assert indexed_total(sample_service) == 49
    # Only the window since the watermark was asked for.
    assert provider.requests_for("ListRecords")[8]["from"] == "2024-06-01T12:00:00Z"

    corpus.advance_clock(hours=1)
    corpus.update(ids[1], metadata={"title": ["Back again"]})  # a live record after a tombstone
    summary = run_harvest("test", since_source=SinceSource.WATERMARK)
    assert summary.counts.created == 1
    assert local_titles(sample_service)[ids[1]] == ["Back again"]
    assert live_local_count() == 50


def test_tombstone_for_unknown_identifier_is_only_tracked(
    app, db, clean_index, provider, corpus, sample_service
):
    identifier = sorted(corpus.live_identifiers())[0]
    corpus.delete(identifier)
    make_harvester(provider.base_url)
    summary = run_harvest("test")
    assert summary.counts.created == 49 and summary.counts.deleted == 0
    row = tracking()[identifier]
    assert row.deleted and row.local_pid is None and row.errors is None


def test_failed_record_is_tracked_run_partial_watermark_kept(
    app, db, clean_index, provider, corpus, sample_service
):
    bad = sorted(corpus.live_identifiers())[5]
    corpus.update(
        bad, metadata={"description": ["no title here"]}, datestamp=corpus.get(bad).datestamp
    )
    make_harvester(provider.base_url)

    summary = run_harvest("test")

    assert summary.counts.failed == 1 and summary.counts.created == 49
    assert not summary.succeeded and not summary.watermark_advanced
    assert db.session.get(OAIHarvester, "test").watermark is None
    row = tracking()[bad]
    assert row.local_pid is None
    assert "title" in " ".join(row.errors)
    assert "<dc:description>no title here</dc:description>" in row.original_xml

    # Fixed at the source without a new datestamp: the failed record is retried anyway.
    corpus.update(bad, metadata={"title": ["Fixed"]}, datestamp=corpus.get(bad).datestamp)
    summary = run_harvest("test")
    assert summary.succeeded and summary.counts.created == 1 and summary.counts.unchanged == 49
    assert tracking()[bad].errors is None


def test_selected_identifiers_use_getrecord(app, db, clean_index, provider, corpus, sample_service):
    make_harvester(provider.base_url)
    wanted = sorted(corpus.live_identifiers())[:3]
    summary = run_harvest("test", identifiers=[*wanted, "oai:example.org:missing"])
    assert summary.counts.created == 3
    assert summary.counts.failed == 1
    assert "missing" in summary.counts.failures[0][0]
    assert [r["identifier"] for r in provider.requests_for("GetRecord")] == [
        *wanted,
        "oai:example.org:missing",
    ]
    assert not provider.requests_for("ListRecords")
    assert db.session.get(OAIHarvester, "test").watermark is None


def test_several_sets_one_after_another_record_in_two_sets_written_once(
    app, db, clean_index, provider, corpus, sample_service
):
    in_both = sorted(corpus.live_identifiers())[0]
    corpus.update(in_both, sets=["phys:astro", "math"], datestamp=corpus.get(in_both).datestamp)
    make_harvester(provider.base_url, setspecs=["phys", "math"])

    summary = run_harvest("test")

    expected = {r.identifier for r in corpus.select(set_spec="phys")} | {
        r.identifier for r in corpus.select(set_spec="math")
    }
    assert set(local_titles(sample_service)) == expected
    assert live_local_count() == len(expected)
    assert summary.counts.created == len(expected)
    first_requests = [r for r in provider.requests_for("ListRecords") if "set" in r]
    assert [r["set"] for r in first_requests] == ["phys", "math"]


def test_expired_token_restarts_the_window(app, db, clean_index, provider, corpus, sample_service):
    provider.quirks.expire_tokens_after = 3  # the fourth continuation finds its token expired
    original = provider.handle

    def expire_once(*args, **kwargs):
        restarts = [r for r in provider.requests_for("ListRecords") if "metadataPrefix" in r]
        if len(restarts) >= 2:
            provider.quirks.expire_tokens_after = None
        return original(*args, **kwargs)

    provider.handle = expire_once
    make_harvester(provider.base_url)
    summary = run_harvest("test")
    assert summary.succeeded
    assert local_titles(sample_service) == expected_titles(corpus)
    assert live_local_count() == 50
    first_requests = [r for r in provider.requests_for("ListRecords") if "metadataPrefix" in r]
    assert len(first_requests) == 2  # the window was restarted once, from its from/until


def test_503_with_retry_after_is_honoured(app, db, clean_index, provider, corpus, sample_service):
    make_harvester(provider.base_url)
    arrivals = record_request_times(provider)
    provider.quirks.fail_requests = 2
    # The harvester's own backoff waits 0.5-1 s before its first retry: only a wait that
    # follows the header reaches 2 s.
    provider.quirks.retry_after = "2"
    summary = run_harvest("test")
    assert summary.succeeded and summary.counts.created == 50
    first, second = gaps(arrivals)[:2]  # 503 -> 503 -> the retry that got an answer
    assert first >= 2.0 and second >= 2.0


def test_crash_mid_run_then_rerun_loses_and_duplicates_nothing(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url)
    # The provider dies for good after the third page: more failures than retries.
    original = provider.handle

    def dying(*args, **kwargs):
        if len(provider.requests_for("ListRecords")) >= 3:
            provider.quirks.fail_requests = 1000
            provider.quirks.fail_status = 500
        return original(*args, **kwargs)

    provider.handle = dying
    with pytest.raises(OAITransportError, match="500"):
        run_harvest("test")
    written = len(tracking())
    assert 0 < written < 50
    assert db.session.get(OAIHarvester, "test").watermark is None

    provider.handle = original
    provider.quirks.fail_requests = 0
    summary = run_harvest("test")  # replays the whole (still full) window
    assert summary.succeeded
    assert summary.counts.unchanged == written and summary.counts.created == 50 - written
    assert live_local_count() == 50
    assert local_titles(sample_service) == expected_titles(corpus)


def test_records_added_while_a_harvest_runs_arrive_next_time(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url)
    original = provider.handle

    def adding(*args, **kwargs):
        if len(provider.requests_for("ListRecords")) == 2 and not corpus.get("oai:x:late"):
            corpus.advance_clock(seconds=30)  # after the frozen until
            corpus.add("oai:x:late", {"title": ["Late"]})
        return original(*args, **kwargs)

    provider.handle = adding
    first = run_harvest("test")
    provider.handle = original
    assert first.counts.created == 50
    second = run_harvest("test", since_source=SinceSource.WATERMARK)
    assert second.counts.created == 1
    assert "oai:x:late" in local_titles(sample_service)


def test_two_harvesters_with_the_same_identifiers_do_not_collide(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url, "first")
    make_harvester(provider.base_url, "second")
    assert run_harvest("first").counts.created == 50
    assert run_harvest("second").counts.created == 50
    first, second = tracking("first"), tracking("second")
    assert set(first) == set(second) == corpus.live_identifiers()
    assert {r.local_pid for r in first.values()}.isdisjoint({r.local_pid for r in second.values()})


def test_each_batch_is_two_commits_and_one_bulk_request(app, db, clean_index, provider, corpus):
    make_harvester(provider.base_url, "tens")  # batch size 10: 5 batches
    make_harvester(provider.base_url, "quarters", batch_size=25)  # 2 batches
    with counted_search_requests() as requests, counted_transactions() as tens:
        assert run_harvest("tens").counts.created == 50
    assert requests == Counter({("POST", "_bulk"): 5})
    with counted_transactions() as quarters:
        assert run_harvest("quarters").counts.created == 50
    # Whatever the run itself commits (its start, its end) is the same for both runs; a
    # batch commits its data, then (after its bulk request) that its records are indexed.
    assert len(tens) - len(quarters) == 2 * (5 - 2)


def test_a_run_that_writes_many_records_refreshes_the_tracking_statistics(
    app, db, clean_index, provider, corpus, monkeypatch
):
    from oarepo_oaipmh_harvester.harvest import effects

    if db.engine.dialect.name != "postgresql":
        pytest.skip("planner statistics are PostgreSQL's")

    def analyze_count() -> int:
        db.session.execute(db.text("SELECT pg_stat_clear_snapshot()"))
        return db.session.execute(
            db.text(
                "SELECT analyze_count FROM pg_stat_user_tables "
                "WHERE relname = 'oai_harvested_record'"
            )
        ).scalar()

    monkeypatch.setattr(effects, "ANALYZE_FIRST_AFTER", 10)
    make_harvester(provider.base_url)  # batch size 10
    before = analyze_count()
    run_harvest("test")
    # after 10, 20 and 40 written records: doubling, so a few times per run at any size
    wait_until(  # the statistics reach pg_stat_user_tables with a short delay
        lambda: analyze_count() - before >= 3, interval=0.2, message="3 ANALYZE runs counted"
    )
    assert analyze_count() - before == 3
    run_harvest("test")  # nothing written: nothing to refresh
    holds_for(lambda: analyze_count() - before == 3, 1.0, interval=0.2, message="no 4th ANALYZE")


def test_a_process_writes_the_batches_of_one_run_with_one_writer(app, db, provider):
    from oarepo_oaipmh_harvester.harvest.assembly import make_writer
    from oarepo_oaipmh_harvester.harvest.fanout import WritersOfARun

    make_harvester(provider.base_url)
    writers = WritersOfARun(make_writer)
    run, later_run = uuid.uuid4(), uuid.uuid4()
    first = writers("test", run)
    # Its transformer's vocabulary look-ups, for one: kept for the run's next batches.
    assert writers("test", run) is first and first.run_id == run
    of_the_later_run = writers("test", later_run)
    assert of_the_later_run is not first and of_the_later_run.run_id == later_run
    assert writers("test", later_run) is of_the_later_run
    writers.forget()  # after a batch that failed as a whole
    assert writers("test", later_run) is not of_the_later_run
