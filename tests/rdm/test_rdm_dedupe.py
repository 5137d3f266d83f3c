"""One record per work across harvesters (issue 38, point 3) on InvenioRDM's records service,
with the real Dublin Core transformer: two harvesters bring the same work (the same Handle);
with dedupe link the second links its source to the first one's record (its provenance and
identifiers added, its metadata not written), with merge it also unites the fields its field
policy merges; a tombstone at one source, or a purge of one harvester, leaves the record
published while the other source still holds it, and that harvester takes it over."""

from __future__ import annotations

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import RunStatusEnum

from oarepo_oaipmh_harvester.models import OAIHarvestedRecord
from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service
from oarepo_oaipmh_harvester.transformers.rdm import DublinCoreRDMTransformer

from .conftest import RDM_TARGET

TRANSFORMER = "oai_dc_rdm"
FIRST = "oai:first.example.org:1"
SECOND = "oai:second.example.org:77"
HANDLE = "11025/4711"


@pytest.fixture(scope="module")
def app_config(app_config):
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {
        **app_config["OAI_HARVESTER_TRANSFORMERS"],
        TRANSFORMER: DublinCoreRDMTransformer,
    }
    return app_config


def source(title: str, subjects: list[str], *identifiers: str) -> dict[str, list[str]]:
    return {
        "title": [title],
        "creator": ["Nová, Jana"],
        "date": ["2021"],
        "type": ["info:eu-repo/semantics/article"],
        "subject": subjects,
        "identifier": [f"hdl:{HANDLE}", *identifiers],
    }


def row(harvester_id: str, identifier: str) -> OAIHarvestedRecord:
    db.session.expire_all()
    return db.session.get(OAIHarvestedRecord, (harvester_id, identifier))


def published(rdm) -> list[dict]:
    """Every published record of the site (latest versions), read through the service."""
    from invenio_rdm_records.records.api import RDMRecord

    db.session.expire_all()
    models = db.session.scalars(
        db.select(RDMRecord.model_cls).where(RDMRecord.model_cls.deletion_status == "P")
    ).all()
    return [rdm.read(system_identity, model.json["id"]).data for model in models]


def derived_from(record: dict) -> set[str]:
    return {
        item["identifier"]
        for item in record["metadata"].get("related_identifiers", [])
        if item["relation_type"]["id"] == "isderivedfrom"
    }


def subjects(record: dict) -> list[str]:
    return [subject["subject"] for subject in record["metadata"].get("subjects", [])]


@pytest.fixture()
def two_sources(rdm, provider, corpus):
    """The same work in two sets of the provider, each harvested by its own harvester (the
    second with `dedupe` as the test asks)."""
    corpus.add(FIRST, source("The work", ["Physics"]), sets=["first"])
    corpus.add(SECOND, source("The work, as a preprint", ["Optics"]), sets=["second"])

    def harvesters(dedupe: str, **second) -> None:
        common = {"target": RDM_TARGET, "transformer": TRANSFORMER}
        make_harvester(provider.base_url, "first", setspecs=["first"], **common,
                       field_policy={"metadata.subjects": "merge"})  # fmt: skip
        make_harvester(provider.base_url, "second", setspecs=["second"], dedupe=dedupe,
                       **common, **second)  # fmt: skip
        for harvester_id in ("first", "second"):
            summary = run_harvest(harvester_id)
            assert summary.counts.failed == 0, summary.counts

    return harvesters


def test_link_keeps_one_record_with_both_provenances(rdm, two_sources, corpus):
    two_sources("link")

    (record,) = published(rdm)
    first, second = row("first", FIRST), row("second", SECOND)
    assert first.local_pid == second.local_pid == record["id"]
    assert second.linked and second.adopted and not first.linked
    assert record["metadata"]["title"] == "The work"  # the second source's is not written
    assert subjects(record) == ["Physics"]
    assert len(derived_from(record)) == 2  # both sources' records
    assert any("second.example.org" in url for url in derived_from(record))  # its GetRecord
    assert any("Linked to local record" in warning for warning in second.warnings)

    # A change at the linking source writes nothing of its metadata.
    corpus.advance_clock(hours=1)
    corpus.update(SECOND, metadata=source("The preprint, revised", ["Optics"]))
    assert run_harvest("second").counts.failed == 0
    (record,) = published(rdm)
    assert record["metadata"]["title"] == "The work"

    # The first source deletes the work: the second still holds it, and takes it over.
    corpus.advance_clock(hours=1)
    corpus.delete(FIRST)
    summary = run_harvest("first")
    assert summary.counts.deleted == 0 and summary.counts.failed == 0
    (record,) = published(rdm)
    assert row("first", FIRST).deleted and row("first", FIRST).local_pid is None
    assert not row("second", SECOND).linked
    corpus.advance_clock(hours=1)
    corpus.update(SECOND, metadata=source("The preprint, final", ["Optics"]))
    assert run_harvest("second").counts.updated == 1
    (record,) = published(rdm)
    assert record["metadata"]["title"] == "The preprint, final"

    # The second deletes it too: no source holds it any more.
    corpus.advance_clock(hours=1)
    corpus.delete(SECOND)
    assert run_harvest("second").counts.deleted == 1
    assert published(rdm) == []


def test_merge_unites_the_merged_fields_and_a_purge_leaves_what_the_other_holds(
    rdm, two_sources, corpus
):
    two_sources("merge", field_policy={"metadata.subjects": "merge"})

    (record,) = published(rdm)
    assert subjects(record) == ["Physics", "Optics"]
    assert record["metadata"]["title"] == "The work"
    # The owner's next change keeps the other source's subjects (its own policy merges them).
    corpus.advance_clock(hours=1)
    corpus.update(FIRST, metadata=source("The work, 2nd edition", ["Physics", "Lasers"]))
    assert run_harvest("first").counts.updated == 1
    (record,) = published(rdm)
    assert record["metadata"]["title"] == "The work, 2nd edition"
    assert subjects(record) == ["Physics", "Lasers", "Optics"]

    # Purging either harvester leaves the record the other still holds.
    for harvester_id in ("second", "first"):
        run = current_harvest_runs_service.harvest_in_process(
            system_identity, harvester_id, {"purge": True, "confirm": harvester_id}
        )
        assert run.status == RunStatusEnum.SUCCESS, run.message
        assert [r["id"] for r in published(rdm)] == [record["id"]]
    assert not row("second", SECOND).linked  # the first's purge handed it over


def test_a_dry_run_names_the_record_a_new_source_record_would_join(rdm, provider, corpus):
    """Issue 38, point 4: the match is shown before anything is written."""
    corpus.add(FIRST, source("The work", ["Physics"]), sets=["first"])
    corpus.add(SECOND, source("The work, as a preprint", ["Optics"]), sets=["second"])
    common = {"target": RDM_TARGET, "transformer": TRANSFORMER}
    make_harvester(provider.base_url, "first", setspecs=["first"], **common)
    make_harvester(provider.base_url, "second", setspecs=["second"], dedupe="link", **common)
    assert run_harvest("first").counts.failed == 0
    (record,) = published(rdm)

    report = current_harvest_runs_service.preview(system_identity, "second", {})

    (entry,) = report["entries"]
    assert (entry["action"], entry["pid"]) == ("update", record["id"])
    assert entry["notices"][0].startswith(f"Linked to local record {record['id']}, which has")
    assert row("second", SECOND) is None and len(published(rdm)) == 1
