"""The repair tools against the real InvenioRDM records service: rewrite, preview, purge."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("invenio_rdm_records")

import sqlalchemy as sa
from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_rdm_records.services.errors import RecordDeletedException
from invenio_search.proxies import current_search, current_search_client
from invenio_search.utils import build_alias_name

from oarepo_oaipmh_harvester.harvest.window import SinceSource
from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service

from .conftest import RDM_TARGET, TRANSFORMER
from .helpers import harvest_again, open_drafts, tracking
from .transform import MinimalRDMTransformer


class DescribedTransformer(MinimalRDMTransformer):
    """The minimal transformer of a site that now also maps dc:description for records
    whose title starts with a vowel (a fixed transformer affecting some records)."""

    def transform(self, record):
        data = super().transform(record)
        if data["metadata"]["title"][:1].lower() not in "aeiouyáéíóúý":
            data["metadata"].pop("description", None)
        return data


@pytest.fixture(scope="module")
def app_config(app_config):
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {
        **app_config["OAI_HARVESTER_TRANSFORMERS"],
        "described": DescribedTransformer,
    }
    return app_config


def revisions(rdm) -> dict[str, int]:
    return {
        identifier: rdm.read(system_identity, row.local_pid).data["revision_id"]
        for identifier, row in tracking().items()
    }


def test_rewrite_publishes_a_revision_only_where_the_mapping_changed(rdm, provider, corpus):
    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER, batch_size=4)
    run_harvest("test")
    before = revisions(rdm)
    requests = len(provider.requests)

    from oarepo_oaipmh_harvester.proxies import current_harvester_service

    current_harvester_service.update(system_identity, "test", {"transformer": "described"})
    preview = current_harvest_runs_service.preview(system_identity, "test", {"rewrite": True})
    summary = run_harvest("test", rewrite=True)

    assert len(provider.requests) == requests
    changed = {
        identifier
        for identifier, row in tracking().items()
        if "description" not in row.transformed["metadata"]
        and corpus.get(identifier).metadata.get("description")
    }
    assert 0 < len(changed) < 6  # the fixed mapping changes some records, not all
    assert summary.succeeded and summary.counts.updated == len(changed)
    assert preview["counts"]["updated"] == len(changed)
    after = revisions(rdm)
    for identifier, revision in before.items():
        if identifier in changed:
            assert after[identifier] > revision
            record = rdm.read(system_identity, tracking()[identifier].local_pid).data
            assert "description" not in record["metadata"]
        else:
            assert after[identifier] == revision  # nothing written, no new revision


def test_purge_leaves_tombstones_and_a_harvest_restores_them_under_their_pids(
    rdm, provider, corpus
):
    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER, batch_size=4)
    run_harvest("test")
    pids = {identifier: row.local_pid for identifier, row in tracking().items()}

    summary = run_harvest("test", purge=True, confirm="test")

    assert summary.succeeded and summary.counts.deleted == 6
    for pid in pids.values():
        with pytest.raises(RecordDeletedException):
            rdm.read(system_identity, pid)
    assert all(row.purged and row.local_pid == pids[i] for i, row in tracking().items())

    corpus.advance_clock(hours=1)
    again = run_harvest("test", since_source=SinceSource.WATERMARK)

    assert again.succeeded and (again.counts.updated, again.counts.created) == (6, 0)
    for identifier, pid in pids.items():
        assert (
            rdm.read(system_identity, pid).data["metadata"]["title"]
            == (corpus.get(identifier).metadata["title"][0])
        )


RDM_TABLES = (
    "rdm_records_metadata", "rdm_drafts_metadata", "rdm_parents_metadata",
    "rdm_versions_state", "pidstore_pid", "files_bucket", "oai_harvested_record",
    "oai_harvester", "jobs_run",
)  # fmt: skip
RDM_INDICES = ("rdmrecords-records", "rdmrecords-drafts")


def rdm_snapshot() -> dict[str, Any]:
    """Every row and search document (with its version) that a write into RDM touches."""
    db.session.expire_all()
    state: dict[str, Any] = {}
    for table in RDM_TABLES:
        rows = db.session.execute(sa.text(f"SELECT * FROM {table}")).all()
        state[table] = sorted(repr(tuple(row)) for row in rows)
    db.session.rollback()
    for index in RDM_INDICES:
        current_search.flush_and_refresh(index)
        hits = current_search_client.search(
            index=build_alias_name(index), body={"query": {"match_all": {}}, "version": True},
            size=100,
        )["hits"]["hits"]  # fmt: skip
        state[index] = sorted((hit["_id"], hit["_version"], repr(hit["_source"])) for hit in hits)
    return state


def test_a_dry_run_into_rdm_leaves_no_draft_no_revision_and_predicts_the_run(rdm, provider, corpus):
    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER, batch_size=4)
    run_harvest("test")
    live = sorted(corpus.live_identifiers())
    corpus.advance_clock(minutes=5)
    corpus.update(live[0], metadata={**corpus.get(live[0]).metadata, "title": ["Edited"]})
    corpus.delete(live[1])
    corpus.add("oai:example.org:new", {"title": ["A new one"], "creator": ["Nová, Eva"],
                                       "date": ["2021"]}, datestamp=corpus.now())  # fmt: skip
    corpus.add("oai:example.org:invalid", {"title": ["ab"], "creator": ["Novák, Jan"],
                                           "date": ["2020"]}, datestamp=corpus.now())  # fmt: skip
    corpus.advance_clock(hours=1)
    before = rdm_snapshot()

    report = current_harvest_runs_service.preview(system_identity, "test", {})

    assert rdm_snapshot() == before  # no draft, pid, revision, bucket, row or document
    counts = report["counts"]
    predicted = (counts["created"], counts["updated"], counts["deleted"], counts["failed"])
    assert predicted == (1, 1, 1, 1)
    failure = next(entry for entry in report["entries"] if entry["action"] == "fail")
    assert failure["identifier"] == "oai:example.org:invalid"
    assert "title" in str(failure)  # RDM's own validation error, as the real run stores it

    summary = harvest_again(corpus)  # another hour later; nothing else changed
    real = summary.counts
    assert (real.created, real.updated, real.deleted, real.failed) == predicted
    assert open_drafts() == 0
