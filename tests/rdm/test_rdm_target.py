"""Harvests into the real InvenioRDM records service through the drafts adapter."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_pidstore.errors import PIDDeletedError
from invenio_rdm_records.services import RDMRecordService
from invenio_rdm_records.services.errors import RecordDeletedException
from invenio_records_resources.proxies import current_service_registry
from invenio_search.proxies import current_search, current_search_client
from invenio_search.utils import build_alias_name
from lxml import etree

from oarepo_oaipmh_harvester.harvest.assembly import current_settings
from oarepo_oaipmh_harvester.harvest.targets import RecordsServiceTarget, adapter_for
from oarepo_oaipmh_harvester.harvest.targets.drafts import (
    DraftsServiceTarget,
    LocalDraftOpen,
    doi_holders,
)
from oarepo_oaipmh_harvester.harvest.targets.options import LocalDraftPolicy, TargetOptions
from oarepo_oaipmh_harvester.harvest.unit_of_work import BulkIndexingUnitOfWork
from oarepo_oaipmh_harvester.harvest.writer import RecordWriter
from oarepo_oaipmh_harvester.protocol.records import OAIRecord

from .conftest import RDM_TARGET, TRANSFORMER
from .helpers import harvest_again, minimal_record, open_drafts, published_titles, tracking
from .transform import MinimalRDMTransformer


def harvest_into_rdm(provider) -> None:
    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER, batch_size=4)


def harvest_then_delete_at_source(corpus) -> tuple[str, str, Any]:
    """A full harvest, then a record deleted at the source and an incremental run: that
    record's identifier, its local pid, the second run's summary."""
    run_harvest("test")
    identifier = sorted(corpus.live_identifiers())[1]
    pid = tracking()[identifier].local_pid
    corpus.advance_clock(minutes=5)
    corpus.delete(identifier)
    return identifier, pid, harvest_again(corpus)


def test_adapter_is_chosen_from_the_service(rdm):
    assert isinstance(adapter_for(rdm, system_identity), DraftsServiceTarget)
    sample = current_service_registry.get("oai-sample-records")
    assert isinstance(adapter_for(sample, system_identity), RecordsServiceTarget)
    assert adapter_for(rdm, system_identity).supports_bulk is False


def test_full_harvest_publishes_every_live_record(rdm, provider, corpus, monkeypatch, caplog):
    caplog.set_level(logging.ERROR, logger="oarepo_oaipmh_harvester")
    bulk_calls: list[int] = []
    # RDM inherits create_or_update_many, which corrupts drafts silently: never to be called.
    monkeypatch.setattr(
        type(rdm._get_current_object()),
        "create_or_update_many",
        lambda *args, **kwargs: bulk_calls.append(1),
    )
    harvest_into_rdm(provider)
    summary = run_harvest("test")

    assert summary.succeeded and summary.counts.created == 6
    titles = published_titles(rdm)
    rows = tracking()
    assert {row.local_pid for row in rows.values()} == set(titles)
    for identifier, row in rows.items():
        assert titles[row.local_pid] == corpus.get(identifier).metadata["title"][0]
    assert open_drafts() == 0
    assert bulk_calls == []
    # A draft published in its batch was never in the index: its deletion's 404 is no error.
    assert [record.getMessage() for record in caplog.records] == []


def test_source_edit_adds_a_revision_to_the_same_record(rdm, provider, corpus):
    harvest_into_rdm(provider)
    run_harvest("test")
    identifier = sorted(corpus.live_identifiers())[0]
    pid = tracking()[identifier].local_pid
    revision = rdm.read(system_identity, pid).data["revision_id"]

    corpus.advance_clock(minutes=5)
    corpus.update(identifier, metadata={**corpus.get(identifier).metadata, "title": ["Edited"]})
    summary = harvest_again(corpus)

    assert (summary.counts.updated, summary.counts.created) == (1, 0)
    assert tracking()[identifier].local_pid == pid
    after = rdm.read(system_identity, pid)
    assert after.data["metadata"]["title"] == "Edited"
    assert after.data["revision_id"] > revision
    assert after.data["versions"]["index"] == 1  # a revision, not a new version
    assert open_drafts() == 0


def test_tombstone_then_restore_under_the_same_pid(rdm, provider, corpus):
    harvest_into_rdm(provider)
    identifier, pid, summary = harvest_then_delete_at_source(corpus)

    assert summary.counts.deleted == 1
    with pytest.raises(RecordDeletedException):
        rdm.read(system_identity, pid)
    tombstone = rdm.read(system_identity, pid, include_deleted=True).data["tombstone"]
    assert "OAI-PMH source" in tombstone["note"] and "test" in tombstone["note"]
    row = tracking()[identifier]
    assert row.deleted and row.local_pid == pid  # the pid is kept to restore it

    corpus.advance_clock(minutes=5)
    corpus.update(
        identifier, metadata={"title": ["Back again"], "creator": ["Novák, Jan"], "date": ["2021"]}
    )
    summary = harvest_again(corpus)

    assert (summary.counts.updated, summary.counts.created) == (1, 0)
    restored = rdm.read(system_identity, pid)
    assert restored.data["metadata"]["title"] == "Back again"
    assert tracking()[identifier].local_pid == pid
    assert pid in published_titles(rdm)
    assert open_drafts() == 0


class DraftsServiceWithoutTombstones(RDMRecordService):
    """A draft-enabled service without RDM's tombstones (``delete_record``, ``restore_record``),
    as invenio-drafts-resources services and OARepo models before them are."""

    delete_record = None
    restore_record = None


@pytest.fixture()
def drafts_without_tombstones(rdm):
    """RDM's records service, same records and indices, minus the tombstone methods."""
    service = copy.copy(rdm._get_current_object())
    service.__class__ = DraftsServiceWithoutTombstones
    current_service_registry.register(service, service_id="drafts-without-tombstones")
    yield service
    current_service_registry._services.pop("drafts-without-tombstones")


def test_a_drafts_service_without_tombstones_deletes_and_creates_again(
    drafts_without_tombstones, provider, corpus
):
    make_harvester(
        provider.base_url, target="drafts-without-tombstones", transformer=TRANSFORMER,
        batch_size=4,
    )  # fmt: skip
    identifier, pid, summary = harvest_then_delete_at_source(corpus)

    assert summary.succeeded and summary.counts.deleted == 1
    assert pid not in published_titles(drafts_without_tombstones)
    with pytest.raises(PIDDeletedError):  # deleted outright, no tombstone page
        drafts_without_tombstones.read(system_identity, pid)
    row = tracking()[identifier]
    assert row.deleted and row.local_pid is None  # nothing to restore under the old pid

    corpus.advance_clock(minutes=5)
    corpus.update(
        identifier, metadata={"title": ["Back again"], "creator": ["Novák, Jan"], "date": ["2021"]}
    )
    summary = harvest_again(corpus)

    assert (summary.counts.created, summary.counts.updated) == (1, 0)
    new_pid = tracking()[identifier].local_pid
    assert new_pid and new_pid != pid
    assert published_titles(drafts_without_tombstones)[new_pid] == "Back again"
    assert open_drafts() == 0


def test_local_open_draft_is_replaced_when_harvest_wins(rdm, provider, corpus):
    harvest_into_rdm(provider)
    run_harvest("test")
    identifier = sorted(corpus.live_identifiers())[2]
    pid = tracking()[identifier].local_pid
    draft = rdm.edit(system_identity, pid).data
    rdm.update_draft(
        system_identity, pid, {**draft, "metadata": {**draft["metadata"], "title": "Local"}}
    )
    assert open_drafts() == 1

    corpus.advance_clock(minutes=5)
    corpus.update(identifier, metadata={**corpus.get(identifier).metadata, "title": ["Harvested"]})
    summary = harvest_again(corpus)

    assert summary.counts.updated == 1 and summary.succeeded
    assert rdm.read(system_identity, pid).data["metadata"]["title"] == "Harvested"
    assert open_drafts() == 0


def test_local_open_draft_is_reported_when_local_wins(rdm, provider, corpus):
    harvest_into_rdm(provider)
    run_harvest("test")
    pid = tracking()[sorted(corpus.live_identifiers())[3]].local_pid
    published = rdm.read(system_identity, pid).data
    rdm.edit(system_identity, pid)
    adapter = DraftsServiceTarget(
        rdm,
        system_identity,
        harvester_id="test",
        options=TargetOptions(local_drafts=LocalDraftPolicy.LOCAL_WINS),
    )
    data = {key: published[key] for key in ("access", "files", "metadata")}

    with (
        BulkIndexingUnitOfWork(db.session) as uow,
        pytest.raises(LocalDraftOpen, match=r"local draft is open .* \(local wins\)"),
    ):
        adapter.update(pid, {**data, "metadata": {**data["metadata"], "title": "Harvested"}}, uow)

    assert (
        rdm.read(system_identity, pid).data["metadata"]["title"] == published["metadata"]["title"]
    )
    assert adapter.read(pid)["id"] == pid


def test_invalid_record_leaves_no_draft_and_its_error_on_its_row(rdm, provider, corpus):
    corpus.add(
        "oai:example.org:invalid",
        {"title": ["ab"], "creator": ["Novák, Jan"], "date": ["2020"]},
        datestamp=corpus.now(),
    )
    harvest_into_rdm(provider)
    summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (6, 1)
    row = tracking()["oai:example.org:invalid"]
    assert row.local_pid is None
    assert "Validation failed" in row.errors[0] and "title" in row.errors[0]
    assert open_drafts() == 0
    assert len(published_titles(rdm)) == 6


def test_invalid_source_edit_keeps_the_published_record(rdm, provider, corpus):
    harvest_into_rdm(provider)
    run_harvest("test")
    identifier = sorted(corpus.live_identifiers())[4]
    pid = tracking()[identifier].local_pid
    title = rdm.read(system_identity, pid).data["metadata"]["title"]

    corpus.advance_clock(minutes=5)
    corpus.update(identifier, metadata={**corpus.get(identifier).metadata, "title": ["ab"]})
    summary = harvest_again(corpus)

    assert (summary.counts.updated, summary.counts.failed) == (0, 1)
    assert rdm.read(system_identity, pid).data["metadata"]["title"] == title
    row = tracking()[identifier]
    assert row.local_pid == pid and "Validation failed" in row.errors[0]
    assert open_drafts() == 0


def test_reindex_sends_every_published_record_again(rdm, provider, corpus):
    harvest_into_rdm(provider)
    run_harvest("test")

    summary = run_harvest("test", reindex=True)

    assert summary.counts.reindexed == 6 and summary.succeeded
    assert len(published_titles(rdm)) == 6


def test_adapter_deletes_idempotently_and_recreates_a_vanished_pid(rdm):
    adapter = DraftsServiceTarget(rdm, system_identity, harvester_id="test")
    data = minimal_record("A direct write")
    with BulkIndexingUnitOfWork(db.session) as uow:
        pid, created = adapter.upsert("no-such-pid", data, uow)
        assert created and adapter.read(pid)["metadata"]["title"] == "A direct write"
        adapter.delete(pid, uow)
        adapter.delete(pid, uow)  # a tombstone already: nothing to do
        adapter.delete("no-such-pid", uow)
        assert adapter.read(pid) is None
        uow.commit()
    assert adapter.keeps_deleted_pids
    tombstone = rdm.read(system_identity, pid, include_deleted=True).data
    assert tombstone["deletion_status"]["is_deleted"]


def test_reconciliation_leaves_a_tombstone_and_a_return_restores_it(rdm, corpus):
    from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

    with OAIPMHProvider(corpus, page_size=4, deleted_record="no") as provider:
        harvest_into_rdm(provider)
        run_harvest("test")
        identifier = sorted(corpus.live_identifiers())[0]
        pid = tracking()[identifier].local_pid
        metadata = corpus.get(identifier).metadata
        corpus.purge(identifier)  # 1 of 6: under the 20 % limit
        corpus.advance_clock(hours=1)

        full = run_harvest("test", full=True)

        assert full.reconciled and full.counts.deleted == 1
        with pytest.raises(RecordDeletedException):
            rdm.read(system_identity, pid)
        assert tracking()[identifier].local_pid == pid

        corpus.add(identifier, metadata)
        summary = harvest_again(corpus)

    assert (summary.counts.updated, summary.counts.created) == (1, 0)
    assert rdm.read(system_identity, pid).data["metadata"]["title"] == metadata["title"][0]
    assert open_drafts() == 0


def _dc_record(identifier: str, datestamp: str, title: str) -> OAIRecord:
    dc = etree.fromstring(
        '<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/"'
        ' xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f"<dc:title>{title}</dc:title><dc:creator>Novák, Jan</dc:creator>"
        "<dc:date>2020-06-01</dc:date></oai_dc:dc>"
    )
    return OAIRecord(identifier, datestamp, False, (), metadata=dc, xml="<record/>")


def test_local_wins_puts_the_open_draft_on_the_tracking_row(rdm, provider):
    harvest_into_rdm(provider)  # the harvester row the tracking rows belong to
    writer = RecordWriter(
        harvester_id="test",
        target=DraftsServiceTarget(
            rdm,
            system_identity,
            harvester_id="test",
            options=TargetOptions(local_drafts=LocalDraftPolicy.LOCAL_WINS),
        ),
        transformer=MinimalRDMTransformer(),
        retry_backoff=current_settings().retry_backoff,
    )
    writer.write_batch([_dc_record("oai:x:1", "2024-01-01", "First title")])
    pid = tracking()["oai:x:1"].local_pid
    rdm.edit(system_identity, pid)

    counts = writer.write_batch([_dc_record("oai:x:1", "2024-02-01", "Second title")])

    assert (counts.updated, counts.failed) == (0, 1)
    row = tracking()["oai:x:1"]
    assert row.local_pid == pid
    assert "A local draft is open" in row.errors[0] and "(local wins)" in row.errors[0]
    assert rdm.read(system_identity, pid).data["metadata"]["title"] == "First title"
    assert open_drafts() == 1  # the user's draft is left alone


def test_batches_into_a_drafts_target_are_capped(rdm, provider, app, monkeypatch, caplog):
    """A draft-enabled target's writes cost more the more the transaction holds: the run
    writes at most OAI_HARVESTER_DRAFTS_LARGEST_BATCH records a batch and says so; a plain
    target keeps the harvester's batch size."""
    monkeypatch.setitem(app.config, "OAI_HARVESTER_DRAFTS_LARGEST_BATCH", 2)
    monkeypatch.setitem(app.config, "OAI_HARVESTER_RUN_LOG_INTERVAL", 0)
    harvest_into_rdm(provider)  # batch size 4
    make_harvester(provider.base_url, harvester_id="plain", batch_size=4)

    with caplog.at_level(logging.INFO, logger="oarepo_oaipmh_harvester"):
        assert run_harvest("test").counts.created == 6
        assert run_harvest("plain").counts.created == 6
    lines = [record.getMessage() for record in caplog.records]
    drafts = [line for line in lines if line.startswith("Harvester test:")]
    plain = [line for line in lines if line.startswith("Harvester plain:")]
    assert any("writes batches of 2 records, not the harvester's 4" in line for line in drafts)
    assert any("6 records after 3 batches" in line for line in drafts)
    assert not any("writes batches of" in line for line in plain)
    assert any("6 records after 2 batches" in line for line in plain)


def _queued_for_indexing(service: Any) -> int:
    """Documents that the records' and drafts' indexer queues still hold (processing them,
    as a site's beat task does, indexes them)."""
    queued = 0
    for indexer in (service.indexer, service.draft_indexer):
        indexed, failed = indexer.process_bulk_queue()
        queued += indexed + failed
    return queued


def _documents_by_id() -> dict[str, dict[str, Any]]:
    """The published records' documents in the index, with their sequence numbers."""
    from invenio_rdm_records.records.api import RDMRecord

    current_search.flush_and_refresh(RDMRecord.index._name)
    hits = current_search_client.search(
        index=build_alias_name(RDMRecord.index._name),
        body={"query": {"match_all": {}}, "seq_no_primary_term": True},
    )["hits"]["hits"]
    return {hit["_source"]["id"]: hit for hit in hits}


def test_each_harvested_record_is_indexed_once_not_queued_again(rdm, provider):
    """Publishing commits the record's parent, which would queue the ids of all its
    versions for a second indexing; the batch's bulk request has them already."""
    _queued_for_indexing(rdm)  # what earlier tests left in the in-memory queue
    harvest_into_rdm(provider)

    assert run_harvest("test").counts.created == 6

    assert _queued_for_indexing(rdm) == 0
    assert len(published_titles(rdm)) == 6


def test_a_new_version_reindexes_every_earlier_one_in_the_same_request(rdm):
    """The parent's commit re-indexes all versions: the first of three, which nothing else
    touches when the third is published, is indexed again with the batch, not queued."""
    first = rdm.publish(
        system_identity, rdm.create(system_identity, minimal_record("Version 1")).id
    ).id
    draft = rdm.new_version(system_identity, first)
    rdm.update_draft(system_identity, draft.id, minimal_record("Version 2"))
    second = rdm.publish(system_identity, draft.id).id
    draft = rdm.new_version(system_identity, second)
    rdm.update_draft(system_identity, draft.id, minimal_record("Version 3"))
    _queued_for_indexing(rdm)
    before = _documents_by_id()[first]["_seq_no"]

    with BulkIndexingUnitOfWork(db.session) as uow:
        third = rdm.publish(system_identity, draft.id, uow=uow).id
        uow.commit()

    assert _queued_for_indexing(rdm) == 0
    assert not uow.index_failures
    documents = _documents_by_id()
    assert documents[first]["_seq_no"] > before  # sent again, in the batch's request
    latest = {pid: doc["_source"]["versions"]["is_latest"] for pid, doc in documents.items()}
    assert latest == {first: False, second: False, third: True}


def test_the_versions_of_a_batch_are_read_once_not_once_a_parent(rdm):
    """Each published record commits its parent, whose versions are indexed with the batch.
    They are read for the whole batch in one statement per table, not two per parent:
    without an index on parent_id each such statement reads the whole table."""
    statements: list[str] = []

    def note(conn, cursor, statement, parameters, context, executemany):
        statements.append(statement)

    event.listen(db.engine, "before_cursor_execute", note)
    try:
        with BulkIndexingUnitOfWork(db.session) as uow:
            pids = [
                rdm.publish(
                    system_identity,
                    rdm.create(system_identity, minimal_record(f"Batch {n}"), uow=uow).id,
                    uow=uow,
                ).id
                for n in range(3)
            ]
            del statements[:]
            uow.commit()
    finally:
        event.remove(db.engine, "before_cursor_execute", note)

    by_parents = [s for s in statements if "parent_id IN" in s]
    by_one_parent = [s for s in statements if ".parent_id = " in s and "IS NULL" in s]
    assert [_table_read(s) for s in by_parents] == ["rdm_records_metadata", "rdm_drafts_metadata"]
    assert by_one_parent == []
    assert not uow.index_failures
    assert set(pids) <= set(_documents_by_id())


def _table_read(statement: str) -> str:
    return statement.split("FROM", 1)[1].split()[0]


def test_versions_that_cannot_be_read_are_left_to_the_queue(rdm, caplog):
    """A failed read of the batch's versions (here a statement the database refuses) loses
    neither the batch nor the versions: they go to the indexer's queue, as the service would
    have sent them."""

    def refuse_the_batch_read(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().startswith("SELECT") and "parent_id IN" in statement:
            return "SELECT no_such_column FROM rdm_records_metadata", {}
        return statement, parameters

    _queued_for_indexing(rdm)
    event.listen(db.engine, "before_cursor_execute", refuse_the_batch_read, retval=True)
    try:
        with caplog.at_level(logging.ERROR, logger="oarepo_oaipmh_harvester"):
            with BulkIndexingUnitOfWork(db.session) as uow:
                draft = rdm.create(system_identity, minimal_record("Unreadable versions"), uow=uow)
                pid = rdm.publish(system_identity, draft.id, uow=uow).id
                uow.commit()
    finally:
        event.remove(db.engine, "before_cursor_execute", refuse_the_batch_read)

    assert any("left to the indexer's queue" in r.getMessage() for r in caplog.records)
    assert not uow.side_effect_errors
    assert rdm.read(system_identity, pid).data["metadata"]["title"] == "Unreadable versions"
    assert pid in _documents_by_id()  # indexed with the batch
    assert _queued_for_indexing(rdm) == 1  # and its versions queued, as RDM queues them


def test_the_doi_holder_look_up_reads_an_index_not_every_doi(rdm):
    """Each new record asks who holds its DOI, case aside; without an index on the lower-cased
    value PostgreSQL read every DOI of the site for it (51 ms at 200,000 DOIs)."""
    if db.engine.name != "postgresql":
        pytest.skip("reads a PostgreSQL query plan")
    query = doi_holders("10.1234/Example.1").limit(1)
    sql = query.compile(dialect=db.engine.dialect, compile_kwargs={"literal_binds": True})
    try:
        db.session.execute(sa.text("SET LOCAL enable_seqscan = off"))  # a tiny table
        plan = "\n".join(db.session.scalars(sa.text(f"EXPLAIN {sql}")))
    finally:
        db.session.rollback()
    assert "Index Scan using ix_oai_harvester_pidstore_pid_lower_value" in plan, plan


def test_a_run_says_when_publishing_reads_whole_tables(rdm, provider, app, monkeypatch, caplog):
    """invenio-rdm-records indexes no parent_id, and each publish looks versions up by it:
    the run log tells the operator, with the statements that fix it, until they are run."""
    monkeypatch.setitem(app.config, "OAI_HARVESTER_RUN_LOG_INTERVAL", 0)
    harvest_into_rdm(provider)
    tables = ("rdm_records_metadata", "rdm_drafts_metadata")

    with caplog.at_level(logging.WARNING, logger="oarepo_oaipmh_harvester"):
        assert run_harvest("test").succeeded
    (warning,) = [r.getMessage() for r in caplog.records if "parent_id" in r.getMessage()]
    assert warning.startswith("Harvester test: rdm_records_metadata, rdm_drafts_metadata have")
    for name in tables:
        assert f"CREATE INDEX CONCURRENTLY ix_{name}_parent_id ON {name} (parent_id);" in warning

    for name in tables:  # in the test's transaction, which is rolled back
        db.session.execute(sa.text(f"CREATE INDEX ix_{name}_parent_id ON {name} (parent_id)"))
    warnings = DraftsServiceTarget(rdm, system_identity, harvester_id="test").scale_warnings()
    assert not [warning for warning in warnings if "parent_id" in warning]
