"""kill -9 in the middle of a run: the next run ends exactly equal to the provider, and the
search index with it."""

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from factories import make_harvester, run_harvest, wait_until
from invenio_access.permissions import system_identity
from invenio_db import db
from oaiharvest_test_support.sample_records.records import SampleRecordMetadata
from oaiharvest_test_support.workers import invenio_environment
from search_node import empty_search_indices
from search_proxy import SearchProxy

from oarepo_oaipmh_harvester.harvest.window import SinceSource
from oarepo_oaipmh_harvester.models import OAIHarvestedRecord, OAIHarvester, OAIUnindexedRecord
from oarepo_oaipmh_harvester.proxies import current_harvester_service

from .helpers import expected_titles, indexed_total, live_local_count, local_titles, tracking
from .processes import KEYS


@pytest.fixture()
def committed_harvester(app, database, search, provider, db_uri):
    """A harvester another process can see (committed, not inside the test's transaction)."""
    if not db_uri.startswith("postgresql"):
        pytest.skip("Two processes on one database: PostgreSQL only.")
    make_harvester(provider.base_url, "crash", batch_size=5)
    db.session.commit()
    yield
    db.session.rollback()
    current_harvester_service.delete(system_identity, "crash")
    db.session.execute(db.text("DELETE FROM pidstore_pid WHERE pid_type = 'oaismp'"))
    db.session.query(SampleRecordMetadata).delete()
    db.session.commit()
    empty_search_indices()


def _tracked() -> int:
    db.session.rollback()  # a fresh snapshot: the other process commits
    return db.session.query(OAIHarvestedRecord).filter_by(harvester_id="crash").count()


def test_a_run_killed_mid_harvest_is_completed_exactly_by_the_next(
    app, committed_harvester, provider, corpus, sample_service
):
    provider.quirks.delay_seconds = 0.3  # slow pages: the kill lands between batches
    invenio = Path(sys.executable).with_name("invenio")
    process = subprocess.Popen(
        [str(invenio), "oai", "harvest", "crash", "--full"],
        env=invenio_environment({key: app.config[key] for key in KEYS}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: _tracked() >= 10, timeout=120, message="the run wrote nothing")
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    provider.quirks.delay_seconds = 0.0
    killed_at = _tracked()
    assert 10 <= killed_at < 50
    assert db.session.get(OAIHarvester, "crash").watermark is None

    summary = run_harvest("crash")

    assert summary.succeeded
    assert summary.counts.created + summary.counts.unchanged == 50
    assert local_titles(sample_service, "crash") == expected_titles(corpus)
    assert live_local_count() == 50  # nothing written twice
    assert indexed_total(sample_service) == 50


def unindexed(harvester_id: str) -> set[str]:
    rows = db.session.query(OAIUnindexedRecord).filter_by(harvester_id=harvester_id)
    return {row.oai_identifier for row in rows}


def _killed_at_its_first_bulk_request(
    app, proxy: SearchProxy, *arguments: str, server_got_it: bool = False
) -> None:
    """``invenio oai harvest crash`` in a process of its own, killed while its first bulk
    request to the search server is on its way (the proxy holds it back), or, if
    `server_got_it`, while the answer is (the proxy forwards the request only)."""
    config = {key: app.config[key] for key in KEYS}
    config["SEARCH_HOSTS"] = [{"host": "127.0.0.1", "port": proxy.port}]
    proxy.bulk_held.clear()
    proxy.bulk = "withhold answer" if server_got_it else "hold"
    invenio = Path(sys.executable).with_name("invenio")
    process = subprocess.Popen(
        [str(invenio), "oai", "harvest", "crash", *arguments],
        env=invenio_environment(config),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proxy.bulk_held.wait(timeout=120), "the run sent no bulk request"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        proxy.bulk = "forward"
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_run_killed_after_a_commit_and_before_the_index_is_indexed_by_the_next(
    app, committed_harvester, provider, corpus, sample_service, search_proxy
):
    _killed_at_its_first_bulk_request(app, search_proxy, "--full")
    db.session.rollback()  # see what the killed process committed
    rows = tracking("crash")
    assert len(rows) == 5  # the first batch is in the database...
    assert indexed_total(sample_service) == 0  # ...and none of it in the index
    assert unindexed("crash") == set(rows)  # what the killed run had not sent yet

    summary = run_harvest("crash")

    assert summary.succeeded
    assert summary.left_out.reindexed == 5
    assert (summary.counts.created, summary.counts.unchanged) == (45, 5)
    assert indexed_total(sample_service) == 50
    assert live_local_count() == 50
    assert not any(row.errors for row in tracking("crash").values())
    assert unindexed("crash") == set()


@pytest.mark.parametrize("server_got_it", [False, True], ids=["before", "after the index"])
def test_a_run_killed_while_deleting_leaves_no_deleted_record_in_the_index(
    app, committed_harvester, provider, corpus, sample_service, search_proxy, server_got_it
):
    assert run_harvest("crash").succeeded
    assert indexed_total(sample_service) == 50
    gone = sorted(corpus.live_identifiers())[:5]
    corpus.advance_clock(hours=1)
    for identifier in gone:
        corpus.delete(identifier)

    _killed_at_its_first_bulk_request(app, search_proxy, server_got_it=server_got_it)

    db.session.rollback()
    # The deletions' bulk request goes before their commit: nothing committed yet, whether
    # the index has deleted the documents or not.
    assert live_local_count() == 50
    if server_got_it:
        wait_until(lambda: indexed_total(sample_service) == 45, message="deletions indexed")
    else:
        assert indexed_total(sample_service) == 50
    assert not any(tracking("crash")[identifier].deleted for identifier in gone)
    summary = run_harvest("crash", since_source=SinceSource.WATERMARK)
    assert summary.succeeded and summary.counts.deleted == 5
    assert live_local_count() == 45
    assert indexed_total(sample_service) == 45
