"""Providers that keep no tombstones: full harvests reconcile, guarded by a safety limit."""

import pytest
from factories import make_harvester, run_harvest

from oarepo_oaipmh_harvester.harvest.window import SinceSource
from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

from .helpers import expected_titles, live_local_count, local_titles, tracking


@pytest.fixture(params=["no", "transient"])
def forgetful_provider(request, corpus):
    with OAIPMHProvider(corpus, page_size=7, deleted_record=request.param) as running:
        yield running


def test_full_harvest_deletes_what_the_provider_no_longer_lists(
    app, db, clean_index, forgetful_provider, corpus, sample_service
):
    make_harvester(forgetful_provider.base_url)
    run_harvest("test")
    gone = sorted(corpus.live_identifiers())[:3]
    for identifier in gone:
        corpus.purge(identifier)
    corpus.advance_clock(hours=1)

    incremental = run_harvest("test", since_source=SinceSource.WATERMARK)
    assert (
        not incremental.reconciled and live_local_count() == 50
    )  # an incremental window proves nothing

    full = run_harvest("test", full=True)
    assert full.reconciled and full.succeeded
    assert full.counts.deleted == 3 and full.counts.unchanged == 47
    assert local_titles(sample_service) == expected_titles(corpus)
    assert live_local_count() == 47
    assert all(tracking()[identifier].deleted for identifier in gone)


def test_safety_limit_refuses_mass_deletion(app, db, clean_index, forgetful_provider, corpus):
    # Without the deletion guard (which would hold these: tests/spine/test_deletion_guard.py).
    make_harvester(forgetful_provider.base_url, deletion_guard=0)
    run_harvest("test")
    for identifier in sorted(corpus.live_identifiers())[:20]:  # 40 %, limit is 20 %
        corpus.purge(identifier)
    summary = run_harvest("test", full=True)
    assert not summary.succeeded and not summary.reconciled
    assert "Reconciliation refused: 20 of 50" in summary.problems[0]
    assert live_local_count() == 50
    assert not summary.watermark_advanced


def test_never_reconcile_after_a_failed_record(app, db, clean_index, forgetful_provider, corpus):
    make_harvester(forgetful_provider.base_url)
    run_harvest("test")
    ids = sorted(corpus.live_identifiers())
    corpus.purge(ids[0])
    corpus.update(ids[1], metadata={"subject": ["no title"]})
    summary = run_harvest("test", full=True)
    assert summary.counts.failed == 1 and not summary.reconciled
    assert live_local_count() == 50


def test_never_reconcile_after_a_failed_window(app, db, clean_index, forgetful_provider, corpus):
    make_harvester(forgetful_provider.base_url)
    run_harvest("test")
    corpus.purge(sorted(corpus.live_identifiers())[0])
    forgetful_provider.quirks.malformed_xml = True
    with pytest.raises(Exception, match="well-formed"):  # noqa: B017 - any protocol failure
        run_harvest("test", full=True)
    assert live_local_count() == 50


def test_reconcile_by_identifiers_only(
    app, db, clean_index, forgetful_provider, corpus, sample_service
):
    make_harvester(forgetful_provider.base_url)
    run_harvest("test")
    corpus.purge(sorted(corpus.live_identifiers())[0])
    forgetful_provider.requests.clear()
    summary = run_harvest("test", reconcile_only=True)
    assert summary.reconciled and summary.counts.deleted == 1
    assert {r["verb"] for r in forgetful_provider.requests} == {"Identify", "ListIdentifiers"}
    assert local_titles(sample_service) == expected_titles(corpus)


def test_persistent_provider_is_not_reconciled_by_default(app, db, clean_index, provider, corpus):
    make_harvester(provider.base_url)
    run_harvest("test")
    corpus.purge(sorted(corpus.live_identifiers())[0])  # a provider that broke its promise
    summary = run_harvest("test", full=True)
    assert not summary.reconciled and live_local_count() == 50
