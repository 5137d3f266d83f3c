"""Gaps in the repair tests of issue 13, with real runs against the local provider and the
sample service on PostgreSQL (nothing of the package is mocked):

- the end-of-run retries of failed records: bounded per run (and fair across runs), their
  backoff on the tracking rows, retries at the end of a partial run, no second ask for a
  record this run's window already saw, and the error kept on a record no longer retried;
- rewrite: ``errors_only`` when only some records have errors, and no index write for a
  record whose output did not change (the search documents' ``_seq_no``);
- deleting a harvester through its service keeps the local records it created.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_search import current_search_client
from invenio_search.proxies import current_search
from invenio_search.utils import build_alias_name

from oarepo_oaipmh_harvester.harvest.transformers import DublinCoreTransformer, TransformError
from oarepo_oaipmh_harvester.models import OAIHarvestedRecord, OAIHarvester
from oarepo_oaipmh_harvester.protocol.records import OAIRecord
from oarepo_oaipmh_harvester.proxies import (
    current_harvested_records_service,
    current_harvester_service,
)
from oarepo_oaipmh_harvester.testing.corpus import Corpus
from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

from .helpers import counted_search_requests, local_titles, tracking
from .test_repairs import harvest_again, pids, version_of

MODE: dict[str, set[str]] = {"fail": set(), "upper": set()}
"""What the adjustable transformer does: identifiers whose transform raises (a broken
mapping), identifiers whose titles it writes in capitals (a changed mapping)."""


class AdjustableTransformer(DublinCoreTransformer):
    """oai_dc, failing or writing capital titles for the identifiers named in MODE."""

    def transform(self, record: OAIRecord) -> dict[str, Any]:
        if record.identifier in MODE["fail"]:
            raise TransformError(f"Broken mapping for {record.identifier}")
        data = super().transform(record)
        if record.identifier in MODE["upper"]:
            data["metadata"]["title"] = [title.upper() for title in data["metadata"]["title"]]
        return data


@pytest.fixture(scope="module")
def app_config(app_config: dict[str, Any]) -> dict[str, Any]:
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {"adjustable": AdjustableTransformer}
    # One GetRecord request per record asked for: the request-level retries of an HTTP 500
    # belong to the protocol layer (tested there) and would blur the counts here.
    app_config["OAI_HARVESTER_MAX_RETRIES"] = 0
    return app_config


@pytest.fixture(autouse=True)
def plain_mapping() -> Iterator[None]:
    MODE["fail"], MODE["upper"] = set(), set()
    yield
    MODE["fail"], MODE["upper"] = set(), set()


@pytest.fixture()
def harvested(app, db, clean_index, provider, corpus, sample_service) -> Any:
    """The 50 records of the corpus harvested by harvester "test" (the sample service)."""
    make_harvester(provider.base_url, transformer="adjustable")
    assert run_harvest("test").succeeded
    return sample_service


@pytest.fixture()
def retries(app, monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Set the retry settings of this test only (restored afterwards)."""

    def configure(
        *, per_run: int | None = None, max_attempts: int | None = None, backoff: float | None = None
    ) -> None:
        for key, value in (
            ("OAI_HARVESTER_RETRY_PER_RUN", per_run),
            ("OAI_HARVESTER_RETRY_MAX_ATTEMPTS", max_attempts),
            ("OAI_HARVESTER_RETRY_BACKOFF", backoff),
        ):
            if value is not None:
                monkeypatch.setitem(app.config, key, value)

    return configure


# -- helpers -----------------------------------------------------------------------------------
def asked_since(provider: OAIPMHProvider, start: int) -> list[str]:
    """The identifiers of the GetRecord requests after the first `start` ones, in order."""
    return [args["identifier"] for args in provider.requests_for("GetRecord")[start:]]


def get_record_count(provider: OAIPMHProvider) -> int:
    """GetRecord requests the provider has answered so far."""
    return len(provider.requests_for("GetRecord"))


def row(identifier: str) -> OAIHarvestedRecord:
    """The tracking row of harvester "test" for `identifier`, read afresh."""
    db.session.expire_all()
    return tracking()[identifier]


def make_due(*identifiers: str) -> None:
    """Let the backoff of these records pass (as if the time had gone by)."""
    table = OAIHarvestedRecord.__table__
    db.session.execute(
        sa.update(table)
        .where(table.c.harvester_id == "test", table.c.oai_identifier.in_(identifiers))
        .values(next_attempt_at=datetime.now(UTC) - timedelta(seconds=1))
    )
    db.session.commit()


def make_invalid(corpus: Corpus, identifier: str) -> None:
    """Take the title from a record (the sample schema refuses it). Its new datestamp is a
    second after the old one, months before the watermark: no incremental window lists it,
    only a GetRecord brings it (and sees a changed record, not one already written)."""
    record = corpus.get(identifier)
    later = record.datestamp + timedelta(seconds=1)
    corpus.update(identifier, metadata={"creator": ["Nobody"]}, datestamp=later)


def index_state() -> dict[str, tuple[int, int]]:
    """Local pid -> (_version, _seq_no) of every sample record's search document: `_seq_no`
    moves on every write of a document, even one that carries the same version."""
    current_search.flush_and_refresh("oaisamplerecords")
    hits = current_search_client.search(
        index=build_alias_name("oaisamplerecords"),
        body={"size": 1000, "version": True, "seq_no_primary_term": True},
    )["hits"]["hits"]
    return {hit["_source"]["id"]: (hit["_version"], hit["_seq_no"]) for hit in hits}


def index_writes(requests: Counter[tuple[str, str]]) -> Counter[tuple[str, str]]:
    """The requests that write documents, of those :func:`counted_search_requests` saw."""
    return Counter(
        {
            (method, path): count
            for (method, path), count in requests.items()
            if path in ("_bulk", "_doc", "_create", "_update") or method in ("PUT", "DELETE")
        }
    )


# -- 1. retries are bounded per run ------------------------------------------------------------
def test_retries_are_bounded_per_run_and_the_next_run_asks_for_the_next_ones(
    harvested, provider, corpus, retries
):
    retries(per_run=2, backoff=0.0)
    failing = sorted(pids())[10:15]
    provider.quirks.server_error_for = set(failing)
    assert run_harvest("test", identifiers=failing).counts.failed == 5
    assert all(row(identifier).attempts == 1 for identifier in failing)

    asked_by_run = []
    for _ in range(3):
        start = get_record_count(provider)
        summary = harvest_again(corpus)
        asked_by_run.append(asked_since(provider, start))
        assert summary.retried is not None and summary.retried.failed == 2
        assert "Asked again for 2 records" in summary.message()

    # Exactly two GetRecord requests a run, the longest waiting first: the records not asked
    # for yet come before those the previous run asked for again.
    assert asked_by_run == [failing[0:2], failing[2:4], [failing[4], failing[0]]]
    attempts = {identifier: row(identifier).attempts for identifier in failing}
    assert attempts == dict(zip(failing, [3, 2, 2, 2, 2], strict=True))


# -- 2. backoff grows across runs --------------------------------------------------------------
@pytest.mark.parametrize("failure", ["provider-error", "invalid-record"])
def test_the_backoff_doubles_with_every_failed_attempt(
    harvested, provider, corpus, retries, failure
):
    backoff = 600.0  # not the default: the configured value is what counts
    retries(backoff=backoff, max_attempts=10)
    identifier = sorted(pids())[20]
    if failure == "provider-error":
        provider.quirks.server_error_for = {identifier}
    else:
        make_invalid(corpus, identifier)

    before = datetime.now(UTC)
    assert run_harvest("test", identifiers=[identifier]).counts.failed == 1
    after = datetime.now(UTC)
    for attempt in (1, 2, 3, 4):
        tracked = row(identifier)
        assert tracked.errors and tracked.attempts == attempt
        delay = timedelta(seconds=backoff * 2 ** (attempt - 1))  # 10, 20, 40, 80 minutes
        assert before + delay <= tracked.next_attempt_at <= after + delay, attempt

        start = get_record_count(provider)
        harvest_again(corpus)
        assert asked_since(provider, start) == [], "retried before its backoff passed"
        make_due(identifier)
        before = datetime.now(UTC)
        summary = harvest_again(corpus)
        after = datetime.now(UTC)
        assert asked_since(provider, start) == [identifier]
        assert summary.retried is not None and summary.retried.failed == 1


# -- 3. retries at the end of a partial run ----------------------------------------------------
def test_a_partial_run_retries_earlier_failures_too(harvested, provider, corpus, retries):
    retries(backoff=0.0)
    identifier = sorted(pids())[30]
    provider.quirks.server_error_for = {identifier}
    assert run_harvest("test", identifiers=[identifier]).counts.failed == 1
    provider.quirks.server_error_for = set()  # the transient fault is over

    corpus.advance_clock(minutes=5)
    corpus.add("oai:example.org:broken", {"creator": ["Nobody"]})  # no title: refused
    start = get_record_count(provider)
    summary = harvest_again(corpus)

    assert not summary.succeeded and summary.outcome.value == "PARTIAL_SUCCESS"
    assert summary.counts.failed == 1 and summary.counts.failures[0][0] == "oai:example.org:broken"
    assert asked_since(provider, start) == [identifier]
    assert summary.retried is not None and summary.retried.updated == 1
    tracked = row(identifier)
    assert not tracked.errors and tracked.attempts == 0 and tracked.next_attempt_at is None


# -- 4. what this run's window saw is not asked for again -------------------------------------
def test_a_record_seen_and_failing_in_this_window_is_not_asked_for_again(
    harvested, provider, corpus, retries
):
    retries(backoff=0.0)  # everything that failed is due at once
    elsewhere = sorted(pids())[40]  # failing, outside every window: retried by each run
    provider.quirks.server_error_for = {elsewhere}
    run_harvest("test", identifiers=[elsewhere])

    broken = "oai:example.org:broken"
    corpus.advance_clock(minutes=5)
    corpus.add(broken, {"creator": ["Nobody"]})  # listed in the window, refused
    for attempts in (1, 2):
        start = get_record_count(provider)
        summary = harvest_again(corpus)
        assert [identifier for identifier, _ in summary.counts.failures] == [broken]
        assert asked_since(provider, start) == [elsewhere]  # the retries did run, not for it
        assert row(broken).attempts == attempts  # failed once per run, not twice
        corpus.advance_clock(minutes=5)
        corpus.update(broken, metadata={"creator": ["Still nobody"]})  # changed, still no title


# -- 5. given up, the error stays --------------------------------------------------------------
def test_a_record_no_longer_retried_keeps_its_error(harvested, provider, corpus, retries):
    retries(backoff=0.0, max_attempts=3)
    unreachable, invalid = sorted(pids())[7], sorted(pids())[8]
    provider.quirks.server_error_for = {unreachable}
    make_invalid(corpus, invalid)
    run_harvest("test", identifiers=[unreachable, invalid])
    for _ in range(2):
        assert harvest_again(corpus).retried.failed == 2

    start = get_record_count(provider)
    for _ in range(2):
        assert harvest_again(corpus).retried is None
    assert asked_since(provider, start) == []  # given up

    expected = {unreachable: "HTTP 500", invalid: "non-empty title"}
    for identifier, text in expected.items():
        tracked = row(identifier)
        assert tracked.attempts == 3
        assert tracked.errors and text in tracked.errors[0], tracked.errors
        shown = current_harvested_records_service.read(system_identity, "test", identifier).data
        assert shown["has_errors"] and shown["attempts"] == 3
        assert text in shown["errors"][0]
    listed = current_harvested_records_service.search(
        system_identity, {"harvester": "test", "has_errors": "true"}
    )
    assert {hit["oai_identifier"] for hit in listed.hits} == set(expected)


# -- 6. rewrite of the records with errors only ------------------------------------------------
def test_a_rewrite_of_errors_only_rewrites_the_failed_records_alone(harvested, provider, corpus):
    identifiers = sorted(pids())
    broken = set(identifiers[3::10])  # 5 of 50
    MODE["fail"] = broken
    summary = run_harvest("test", rewrite=True)
    assert (summary.counts.failed, summary.counts.unchanged) == (5, 45)
    assert {identifier for identifier, tracked in tracking().items() if tracked.errors} == broken

    versions = {identifier: version_of(pid) for identifier, pid in pids().items()}
    rows_before = {i: (r.harvested_at, r.run_id, r.transformed) for i, r in tracking().items()}
    requests = len(provider.requests)
    # The transformer is fixed, and its new mapping would change every record.
    MODE["fail"], MODE["upper"] = set(), set(identifiers)

    summary = run_harvest("test", rewrite=True, errors_only=True)

    assert len(provider.requests) == requests
    assert summary.succeeded
    assert (summary.counts.updated, summary.counts.total) == (5, 5)
    titles = local_titles(harvested)
    rows_after = tracking()
    for identifier in identifiers:
        source = corpus.get(identifier).metadata["title"]
        tracked = rows_after[identifier]
        if identifier in broken:  # healed, on the new mapping
            assert titles[identifier] == [title.upper() for title in source]
            assert version_of(tracked.local_pid) == versions[identifier] + 1
            assert not tracked.errors and tracked.attempts == 0
            assert tracked.transformed["metadata"]["title"] == titles[identifier]
        else:  # untouched: same revision, same data, same tracking row
            assert titles[identifier] == source
            assert version_of(tracked.local_pid) == versions[identifier]
            assert (
                tracked.harvested_at,
                tracked.run_id,
                tracked.transformed,
            ) == rows_before[identifier]
    assert run_harvest("test", rewrite=True, errors_only=True).counts.total == 0


def test_a_rewrite_that_heals_a_record_without_changing_its_output_writes_nothing(
    harvested, provider, corpus
):
    """A record failed by a broken mapping still holds its earlier output in the target: when
    the fixed mapping gives that output again, the rewrite clears the error and writes no
    revision (the issue: equal data is not written, whatever the row's history)."""
    identifier = sorted(pids())[7]
    version = version_of(pids()[identifier])
    MODE["fail"] = {identifier}
    assert run_harvest("test", rewrite=True).counts.failed == 1
    assert row(identifier).errors and row(identifier).transformed is None
    MODE["fail"] = set()

    summary = run_harvest("test", rewrite=True, errors_only=True)

    assert (summary.counts.unchanged, summary.counts.updated) == (1, 0)
    tracked = row(identifier)
    assert not tracked.errors and tracked.attempts == 0 and tracked.next_attempt_at is None
    assert tracked.transformed["metadata"]["title"] == corpus.get(identifier).metadata["title"]
    assert version_of(tracked.local_pid) == version  # no new revision


def test_a_rewrite_keeps_a_record_the_provider_would_not_serve_failed(
    harvested, provider, corpus, retries
):
    """A GetRecord that fails (invenio-oaiserver answers 500 for a record deleted there)
    leaves the older stored copy: a rewrite brings that copy to the new mapping, but only
    the provider can clear the error, so the record stays failed and keeps its schedule."""
    retries(backoff=600.0)
    identifier = sorted(pids())[11]
    provider.quirks.server_error_for = {identifier}
    assert run_harvest("test", identifiers=[identifier]).counts.failed == 1
    failed = row(identifier)
    assert failed.errors[0].startswith("Not fetched: The provider answered HTTP 500")
    MODE["upper"] = {identifier}

    summary = run_harvest("test", rewrite=True, errors_only=True)

    assert summary.counts.updated == 1  # the stored copy, on the new mapping
    title = corpus.get(identifier).metadata["title"]
    assert local_titles(harvested)[identifier] == [t.upper() for t in title]
    tracked = row(identifier)
    assert tracked.errors == failed.errors
    assert (tracked.attempts, tracked.next_attempt_at) == (
        failed.attempts,
        failed.next_attempt_at,
    )

    provider.quirks.server_error_for = set()
    make_due(identifier)
    assert run_harvest("test", identifiers=[identifier]).succeeded
    assert not row(identifier).errors  # the provider served it: healed


# -- 7. an unchanged rewrite writes nothing to the index ---------------------------------------
def test_a_rewrite_of_unchanged_output_sends_no_index_write(harvested, provider):
    before = index_state()
    assert len(before) == 50

    with counted_search_requests() as requests:
        summary = run_harvest("test", rewrite=True)
    assert (summary.counts.unchanged, summary.counts.total) == (50, 50)
    assert index_writes(requests) == Counter()
    assert index_state() == before

    # The witnesses see a write: a reindex sends every document again with its version...
    with counted_search_requests() as requests:
        assert run_harvest("test", reindex=True).counts.reindexed == 50
    assert index_writes(requests) == Counter({("POST", "_bulk"): 5})
    reindexed = index_state()
    assert all(reindexed[pid][0] == before[pid][0] for pid in before)
    assert all(reindexed[pid][1] != before[pid][1] for pid in before)

    # ... and a rewrite that changes some records writes those and no other.
    changed = {identifier for identifier in pids() if identifier.endswith("5")}
    MODE["upper"] = changed
    with counted_search_requests() as requests:
        summary = run_harvest("test", rewrite=True)
    assert (summary.counts.updated, summary.counts.unchanged) == (len(changed), 50 - len(changed))
    assert sum(index_writes(requests).values()) >= 1
    after = index_state()
    changed_pids = {pids()[identifier] for identifier in changed}
    assert {pid for pid in before if after[pid] != reindexed[pid]} == changed_pids


# -- 8. deleting a harvester keeps its records -------------------------------------------------
def test_deleting_a_harvester_keeps_its_local_records(harvested, corpus):
    created = pids()
    titles = local_titles(harvested)

    assert current_harvester_service.delete(system_identity, "test")

    db.session.expire_all()
    assert db.session.get(OAIHarvester, "test") is None
    assert tracking() == {}  # its tracking rows go with it (documented)
    for identifier, pid in created.items():
        record = harvested.read(system_identity, pid).data
        assert record["metadata"]["title"] == titles[identifier]
        assert record["metadata"]["title"] == corpus.get(identifier).metadata["title"]
    current_search.flush_and_refresh("oaisamplerecords")
    found = {hit["id"] for hit in harvested.search(system_identity, size=200).hits}
    assert found == set(created.values())
