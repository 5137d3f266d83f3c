"""Operators' repair tools against a real provider and the sample service on PostgreSQL:
rewrite from the stored XML, force, dry runs, retries of failed records, purge."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import Run
from invenio_search.proxies import current_search
from oaiharvest_test_support.sample_records.records import SampleRecord

from oarepo_oaipmh_harvester.harvest.assembly import PurgeNotConfirmed
from oarepo_oaipmh_harvester.harvest.window import SinceSource
from oarepo_oaipmh_harvester.models import OAIHarvester
from oarepo_oaipmh_harvester.protocol.records import OAIRecord
from oarepo_oaipmh_harvester.proxies import (
    current_harvest_runs_service,
    current_harvested_records_service,
)
from oarepo_oaipmh_harvester.transformers import DublinCoreTransformer

from .helpers import local_titles, record_versions, tracking

MAPPING = {"version": 1}
"""Which mapping the switchable transformer applies: a site fixing its transformer."""


class SwitchableTransformer(DublinCoreTransformer):
    """oai_dc; version 2 writes the titles of even-numbered records in capitals."""

    def transform(self, record: OAIRecord) -> dict[str, Any]:
        data = super().transform(record)
        if MAPPING["version"] == 2 and int(record.identifier[-1]) % 2 == 0:
            data["metadata"]["title"] = [title.upper() for title in data["metadata"]["title"]]
        return data


@pytest.fixture(scope="module")
def app_config(app_config):
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {"switchable": SwitchableTransformer}
    return app_config


@pytest.fixture(autouse=True)
def first_mapping():
    MAPPING["version"] = 1
    yield
    MAPPING["version"] = 1


@pytest.fixture()
def harvested(app, db, clean_index, provider, corpus, sample_service):
    make_harvester(provider.base_url, transformer="switchable")
    assert run_harvest("test").succeeded
    return sample_service


def pids() -> dict[str, str]:
    return {identifier: row.local_pid for identifier, row in tracking().items()}


def version_of(pid: str) -> int:
    db.session.expire_all()
    return record_versions()[SampleRecord.pid.resolve(pid).id]


def harvest_again(corpus, **arguments: Any):
    corpus.advance_clock(hours=1)
    return run_harvest("test", since_source=SinceSource.WATERMARK, **arguments)


def even(identifier: str) -> bool:
    return int(identifier[-1]) % 2 == 0


# -- rewrite -----------------------------------------------------------------------------------
def test_rewrite_brings_every_record_to_the_new_mapping_without_the_provider(
    harvested, provider, corpus
):
    versions = {identifier: version_of(pid) for identifier, pid in pids().items()}
    requests = len(provider.requests)
    MAPPING["version"] = 2

    summary = run_harvest("test", rewrite=True)

    assert len(provider.requests) == requests  # not a single request to the provider
    changed = [identifier for identifier in versions if even(identifier)]
    assert summary.succeeded
    assert (summary.counts.updated, summary.counts.unchanged) == (len(changed), 50 - len(changed))
    titles = local_titles(harvested)
    for identifier, version in versions.items():
        source = corpus.get(identifier).metadata["title"]
        if even(identifier):
            assert titles[identifier] == [title.upper() for title in source]
            assert version_of(pids()[identifier]) == version + 1
        else:
            assert titles[identifier] == source
            assert version_of(pids()[identifier]) == version  # no new revision, no reindex

    again = run_harvest("test", rewrite=True)
    assert (again.counts.updated, again.counts.unchanged) == (0, 50)


def test_rewrite_of_some_identifiers_or_of_records_with_errors_only(harvested, corpus):
    MAPPING["version"] = 2
    chosen = sorted(identifier for identifier in pids() if even(identifier))[:2]

    summary = run_harvest("test", rewrite=True, identifiers=chosen)
    assert (summary.counts.updated, summary.counts.total) == (2, 2)

    summary = run_harvest("test", rewrite=True, errors_only=True)
    assert summary.counts.total == 0  # no record has an error


def test_a_local_edit_is_replaced_by_a_rewrite_and_reported(harvested, corpus):
    identifier = sorted(pids())[1]  # odd: the new mapping does not change it
    pid = pids()[identifier]
    record = harvested.read(system_identity, pid).data
    harvested.update(
        system_identity, pid, {"metadata": {**record["metadata"], "title": ["Edited here"]}}
    )

    summary = run_harvest("test", rewrite=True)

    assert summary.counts.updated == 1 and summary.succeeded
    assert local_titles(harvested)[identifier] == corpus.get(identifier).metadata["title"]
    assert f"Local edits of record {pid} were replaced" in summary.message()


def test_a_local_edit_survives_a_rewrite_when_local_wins(harvested, corpus):
    from oarepo_oaipmh_harvester.proxies import current_harvester_service

    current_harvester_service.update(system_identity, "test", {"local_drafts": "local-wins"})
    identifier = sorted(pids())[1]
    pid = pids()[identifier]
    record = harvested.read(system_identity, pid).data
    harvested.update(
        system_identity, pid, {"metadata": {**record["metadata"], "title": ["Edited here"]}}
    )

    summary = run_harvest("test", rewrite=True)

    assert (summary.counts.failed, summary.counts.updated) == (1, 0)
    assert local_titles(harvested)[identifier] == ["Edited here"]
    assert "(local wins)" in tracking()[identifier].errors[0]


def test_force_rewrites_what_the_provider_did_not_change(harvested, corpus):
    versions = {identifier: version_of(pid) for identifier, pid in pids().items()}

    unchanged = run_harvest("test", full=True)
    forced = run_harvest("test", full=True, force=True)

    assert (unchanged.counts.unchanged, unchanged.counts.updated) == (50, 0)
    assert (forced.counts.updated, forced.counts.unchanged) == (50, 0)
    assert all(version_of(pid) == versions[i] + 1 for i, pid in pids().items())


# -- dry runs ----------------------------------------------------------------------------------
def snapshot() -> dict[str, Any]:
    """The database rows and search documents a run could touch, as they are now."""
    db.session.expire_all()
    tables = {}
    for table in ("oai_harvester", "oai_harvested_record", SampleRecord.model_cls.__tablename__,
                  "pidstore_pid", Run.__tablename__):  # fmt: skip
        rows = db.session.execute(sa.text(f"SELECT * FROM {table}")).all()
        tables[table] = sorted(repr(tuple(row)) for row in rows)
    current_search.flush_and_refresh("oaisamplerecords")
    from invenio_search import current_search_client
    from invenio_search.utils import build_alias_name

    hits = current_search_client.search(
        index=build_alias_name("oaisamplerecords"), body={"size": 1000, "version": True}
    )["hits"]["hits"]
    tables["index"] = sorted((hit["_id"], hit["_version"]) for hit in hits)
    return tables


def change_the_source(corpus) -> None:
    live = sorted(corpus.live_identifiers())
    corpus.advance_clock(minutes=5)
    for identifier in live[:3]:
        corpus.update(
            identifier, metadata={**corpus.get(identifier).metadata, "title": ["Changed"]}
        )
    corpus.delete(live[3])
    corpus.add("oai:example.org:new", {"title": ["New"], "creator": ["Nový, Jan"]})
    corpus.add("oai:example.org:broken", {"creator": ["Nobody"]})  # no title: the sample
    corpus.advance_clock(hours=1)  # schema refuses it


def test_a_dry_run_changes_nothing_and_predicts_the_real_run(harvested, corpus, provider):
    change_the_source(corpus)
    before = snapshot()

    report = current_harvest_runs_service.preview(system_identity, "test", {})

    assert snapshot() == before  # database, index and watermark byte-for-byte as they were
    counts = report["counts"]
    assert (counts["created"], counts["updated"], counts["deleted"], counts["failed"]) == (
        1,
        3,
        1,
        1,
    )
    assert not report["stopped_early"]
    updates = [entry for entry in report["entries"] if entry["action"] == "update"]
    assert {
        "op": "replace",
        "path": "/metadata/title/0",
        "value": "Changed",
    } in updates[0]["changes"]
    failure = next(entry for entry in report["entries"] if entry["action"] == "fail")
    assert failure["identifier"] == "oai:example.org:broken" and "title" in failure["errors"][0]

    real = run_harvest("test", since_source=SinceSource.WATERMARK)

    assert (real.counts.created, real.counts.updated, real.counts.deleted, real.counts.failed) == (
        counts["created"],
        counts["updated"],
        counts["deleted"],
        counts["failed"],
    )


def test_a_dry_run_of_a_rewrite_shows_the_field_changes(harvested, provider):
    before = snapshot()
    requests = len(provider.requests)
    MAPPING["version"] = 2

    report = current_harvest_runs_service.preview(system_identity, "test", {"rewrite": True})

    assert snapshot() == before and len(provider.requests) == requests
    assert report["counts"]["updated"] == 25 and report["counts"]["unchanged"] == 25
    entry = report["entries"][0]
    assert entry["action"] == "update" and entry["changes"][0]["path"] == "/metadata/title/0"
    assert entry["changes"][0]["value"].isupper()

    assert run_harvest("test", rewrite=True).counts.updated == 25


def test_a_large_preview_stops_at_its_limit_and_says_so(harvested, corpus):
    report = current_harvest_runs_service.preview(
        system_identity, "test", {"full": True, "force": True, "limit": 7}
    )
    assert report["stopped_early"] and report["counts"]["examined"] == 7
    assert report["counts"]["updated"] == 7


# -- retries -----------------------------------------------------------------------------------
def test_a_transient_failure_is_retried_by_a_later_run_and_heals(harvested, provider, corpus, app):
    identifier = sorted(pids())[5]
    provider.quirks.server_error_for = {identifier}
    failed = run_harvest("test", identifiers=[identifier])
    row = tracking()[identifier]
    assert failed.counts.failed == 1 and row.errors and row.attempts == 1
    assert row.next_attempt_at > datetime.now(UTC) + timedelta(minutes=50)  # 1 h backoff

    provider.quirks.server_error_for = set()
    asked = len(provider.requests_for("GetRecord"))
    early = harvest_again(corpus)
    assert early.succeeded and len(provider.requests_for("GetRecord")) == asked  # not yet due

    db.session.execute(  # an hour goes by
        sa.update(OAIHarvestedRecord_table()).values(next_attempt_at=datetime.now(UTC))
    )
    db.session.commit()
    healed = harvest_again(corpus)

    assert healed.succeeded and healed.retried.updated == 1
    assert "1 written, 0 still failing" in healed.message()
    row = tracking()[identifier]
    assert not row.errors and row.attempts == 0 and row.next_attempt_at is None


def test_a_record_that_keeps_failing_stops_being_retried(harvested, provider, corpus, app):
    app.config["OAI_HARVESTER_RETRY_BACKOFF"] = 0.0
    app.config["OAI_HARVESTER_RETRY_MAX_ATTEMPTS"] = 3
    try:
        identifier = sorted(pids())[6]
        provider.quirks.server_error_for = {identifier}
        run_harvest("test", identifiers=[identifier])
        for attempts in (2, 3):
            summary = harvest_again(corpus)
            assert summary.succeeded  # an old failure does not make a run partial
            assert "0 written, 1 still failing" in summary.message()
            assert tracking()[identifier].attempts == attempts
        asked = len(provider.requests_for("GetRecord"))
        for _ in range(2):
            assert "still failing" not in harvest_again(corpus).message()
        assert len(provider.requests_for("GetRecord")) == asked  # given up: not asked again

        forced = run_harvest("test", retry_errors=True)  # an operator asks for all of them
        assert forced.counts.failed == 1
        assert tracking()[identifier].attempts == 4
    finally:
        app.config["OAI_HARVESTER_RETRY_BACKOFF"] = 3600.0
        app.config["OAI_HARVESTER_RETRY_MAX_ATTEMPTS"] = 5
        provider.quirks.server_error_for = set()


def OAIHarvestedRecord_table():  # noqa: N802 - the table, as SQL sees it
    from oarepo_oaipmh_harvester.models import OAIHarvestedRecord

    return OAIHarvestedRecord.__table__


# -- purge -------------------------------------------------------------------------------------
def test_purge_removes_exactly_the_harvesters_records(harvested, provider, corpus):
    make_harvester(provider.base_url, harvester_id="other", transformer="switchable")
    assert run_harvest("other").succeeded
    local = harvested.create(system_identity, {"metadata": {"title": ["Made here"]}}).id
    ours = set(pids().values())
    others = {row.local_pid for row in tracking("other").values()}

    with pytest.raises(PurgeNotConfirmed):
        run_harvest("test", purge=True, confirm="other")

    summary = run_harvest("test", purge=True, confirm="test")

    assert summary.succeeded and summary.counts.deleted == 50
    current_search.flush_and_refresh("oaisamplerecords")
    remaining = {hit["id"] for hit in harvested.search(system_identity, size=200).hits}
    assert remaining == others | {local}
    assert not ours & remaining
    rows = tracking()
    assert len(rows) == 50 and all(row.purged and row.local_pid is None for row in rows.values())
    assert db.session.get(OAIHarvester, "test").watermarks is None
    shown = current_harvested_records_service.read(system_identity, "test", next(iter(rows)))
    assert shown.data["purged"] and shown.data["state"].startswith("live, purged locally")

    again = harvest_again(corpus)  # no watermark: a full harvest recreates every record

    assert again.succeeded and again.counts.created == 50
    assert not any(row.purged for row in tracking().values())
    assert local_titles(harvested).keys() == corpus.live_identifiers()


def test_purge_and_forget(harvested, corpus):
    summary = run_harvest("test", purge=True, forget=True, confirm="test")

    assert summary.counts.deleted == 50 and tracking() == {}
    assert "Forgot 50 tracked records" in summary.message()


def test_a_dry_run_predicts_a_reconciliation_and_stamps_nothing(
    app, db, clean_index, corpus, sample_service
):
    from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

    with OAIPMHProvider(corpus, page_size=7, deleted_record="no") as provider:
        make_harvester(provider.base_url, transformer="switchable")
        run_harvest("test")
        corpus.purge(sorted(corpus.live_identifiers())[0])  # gone, without a tombstone
        corpus.advance_clock(hours=1)
        before = snapshot()

        full = current_harvest_runs_service.preview(
            system_identity, "test", {"full": True, "limit": 1000}
        )
        headers = current_harvest_runs_service.preview(
            system_identity, "test", {"reconcile_only": True, "limit": 1000}
        )

        assert snapshot() == before
        assert full["predicted_reconciliation"] == 1 == headers["predicted_reconciliation"]
        assert full["counts"]["unchanged"] == 49
        assert run_harvest("test", full=True).counts.deleted == 1
