"""A search server that is down while batches are written: counted, remembered, repaired."""

import pytest
from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity
from invenio_db import db as db_
from invenio_jobs.models import RunStatusEnum
from invenio_search.proxies import current_search

from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service

from .helpers import indexed_total, tracking


@pytest.fixture(scope="module")
def search_hosts(search_proxy):
    """This module's app talks to the search server through the proxy."""
    return [{"host": "127.0.0.1", "port": search_proxy.port}]


@pytest.fixture()
def flaky_search(search_proxy):
    search_proxy.down = False
    yield search_proxy
    search_proxy.down = False
    search_proxy.bulk = "forward"


def _refresh():
    current_search.flush_and_refresh("*")


def _down_for_batches(proxy, first, last):
    """A progress callback that takes the search server down for batches first..last."""
    state = {"batches": 0}

    def progress(_):
        state["batches"] += 1
        proxy.down = first <= state["batches"] + 1 <= last

    return progress


def test_index_failures_make_the_run_partial_and_the_next_run_repairs_them(
    app, db, clean_index, provider, corpus, sample_service, flaky_search
):
    make_harvester(provider.base_url)  # 50 records, batches of 10
    # Batches 2 and 3 are written while the search server is down.
    summary = run_harvest("test", progress=_down_for_batches(flaky_search, 2, 3))
    flaky_search.down = False
    _refresh()

    assert summary.counts.created == 50
    assert summary.counts.not_indexed == 20 and not summary.succeeded
    assert not summary.watermark_advanced
    assert indexed_total(sample_service) == 30
    not_indexed = [i for i, row in tracking().items() if row.errors]
    assert len(not_indexed) == 20
    assert all(tracking()[i].errors[0].startswith("Not indexed:") for i in not_indexed)

    # The next run sends exactly those again before it harvests; then nothing has changed.
    repaired = run_harvest("test", full=True)
    _refresh()
    assert repaired.succeeded and repaired.left_out.reindexed == 20
    assert (repaired.counts.updated, repaired.counts.unchanged) == (0, 50)
    assert indexed_total(sample_service) == 50
    assert not any(row.errors for row in tracking().values())


def test_reindex_sends_every_local_record_again_without_asking_the_provider(
    app, db, clean_index, provider, corpus, sample_service, flaky_search
):
    make_harvester(provider.base_url)
    flaky_search.down = True  # for the whole first harvest
    assert run_harvest("test").counts.not_indexed == 50
    flaky_search.down = False
    _refresh()
    assert indexed_total(sample_service) == 0
    requests_before = len(provider.requests)

    run = current_harvest_runs_service.harvest_in_process(system_identity, "test", reindex=True)

    _refresh()
    assert run.status == RunStatusEnum.SUCCESS, run.message
    assert indexed_total(sample_service) == 50
    assert len(provider.requests) == requests_before  # not one request to the provider
    assert not any(row.errors for row in tracking().values())
    db_.session.expire_all()
    assert run.updated_entries == 50


def test_documents_the_index_keeps_refusing_do_not_hold_the_next_runs_back(
    app, db, clean_index, provider, corpus, sample_service, flaky_search
):
    make_harvester(provider.base_url)
    flaky_search.bulk = "refuse"  # the index takes no document, this run nor the next
    try:
        assert run_harvest("test").counts.not_indexed == 50
        again = run_harvest("test")  # the provider has nothing new
    finally:
        flaky_search.bulk = "forward"

    # Sent first and refused again: counted apart, as they were refused before.
    assert again.left_out.not_indexed == 50
    assert again.succeeded and again.watermark_advanced
    assert all(row.errors[0].startswith("Not indexed:") for row in tracking().values())
    _refresh()
    assert run_harvest("test").left_out.reindexed == 50
    _refresh()
    assert indexed_total(sample_service) == 50
