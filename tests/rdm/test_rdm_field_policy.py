"""Per-field policies for local edits (issue 38, point 1) on InvenioRDM's records service,
with the real Dublin Core transformer: a curator's subjects and languages (vocabulary entries
RDM reads back expanded) survive a harvest with ``merge`` and are overwritten with ``source``;
a curated title stays with ``local``; the conflicts are kept on the tracking row; a record no
curator touched takes every change of its source, whatever the policies."""

from __future__ import annotations

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity
from invenio_db import db

from oarepo_oaipmh_harvester.proxies import current_harvester_service
from oarepo_oaipmh_harvester.transformers.rdm import DublinCoreRDMTransformer

from .conftest import RDM_TARGET
from .helpers import tracking

TRANSFORMER = "oai_dc_rdm"
EDITED = "oai:source.example.org:edited"
UNTOUCHED = "oai:source.example.org:untouched"


@pytest.fixture(scope="module")
def app_config(app_config):
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {
        **app_config["OAI_HARVESTER_TRANSFORMERS"],
        TRANSFORMER: DublinCoreRDMTransformer,
    }
    return app_config


def source(title: str, subjects: list[str], language: str = "en") -> dict[str, list[str]]:
    return {
        "title": [title],
        "creator": ["Nová, Jana"],
        "date": ["2021"],
        "type": ["info:eu-repo/semantics/article"],
        "subject": subjects,
        "language": [language],
    }


def local(rdm, identifier: str) -> dict:
    db.session.expire_all()
    return rdm.read(system_identity, tracking()[identifier].local_pid).data["metadata"]


def subjects(metadata: dict) -> list[str]:
    return [subject["subject"] for subject in metadata.get("subjects", [])]


def languages(metadata: dict) -> list[str]:
    return [language["id"] for language in metadata.get("languages", [])]


@pytest.fixture()
def curated(rdm, provider, corpus):
    """Two records harvested; a curator added a subject and a language to one and corrected
    its title (edit, publish, as in RDM's deposit form); then both changed at the source."""
    for identifier in (EDITED, UNTOUCHED):
        corpus.add(identifier, source(f"Title of {identifier}", ["Physics"]))
    make_harvester(
        provider.base_url,
        target=RDM_TARGET,
        transformer=TRANSFORMER,
        field_policy={
            "metadata.subjects": "merge",
            "metadata.languages": "merge",
            "metadata.title": "local",
        },
    )
    summary = run_harvest("test")
    assert summary.counts.failed == 0, summary.counts

    pid = tracking()[EDITED].local_pid
    draft = rdm.edit(system_identity, pid).data
    draft["metadata"]["subjects"].append({"subject": "Curated subject"})
    draft["metadata"]["languages"].append({"id": "ces"})
    draft["metadata"]["title"] = "Corrected by a curator"
    rdm.update_draft(system_identity, pid, draft)
    rdm.publish(system_identity, pid)
    assert languages(local(rdm, EDITED)) == ["eng", "ces"]

    corpus.advance_clock(hours=1)
    for identifier in (EDITED, UNTOUCHED):
        corpus.update(identifier, metadata=source("Changed at the source", ["Physics", "Optics"]))
    return pid


def test_merge_and_local_keep_a_curators_edits_on_inveniordm(rdm, curated, corpus):
    summary = run_harvest("test")

    assert summary.counts.failed == 0 and summary.counts.updated == 2, summary.counts
    edited = local(rdm, EDITED)
    assert subjects(edited) == ["Physics", "Optics", "Curated subject"]
    assert languages(edited) == ["eng", "ces"]
    assert edited["languages"][1]["title"]["en"] == "Czech"  # a real vocabulary entry still
    assert edited["title"] == "Corrected by a curator"
    conflicts = {c["field"]: c["kept"] for c in tracking()[EDITED].conflicts}
    assert conflicts == {"metadata.subjects": "merged", "metadata.title": "local"}

    # RDM's read form of what the harvest wrote (expanded languages, ...) is no local edit.
    untouched = local(rdm, UNTOUCHED)
    assert subjects(untouched) == ["Physics", "Optics"]
    assert untouched["title"] == "Changed at the source"
    assert tracking()[UNTOUCHED].conflicts is None


def test_source_overwrites_a_curators_subjects_on_inveniordm(rdm, curated, corpus):
    current_harvester_service.update(
        system_identity, "test", {"field_policy": {"metadata.subjects": "source"}}
    )
    summary = run_harvest("test")

    assert summary.counts.failed == 0, summary.counts
    edited = local(rdm, EDITED)
    assert subjects(edited) == ["Physics", "Optics"]
    assert edited["title"] == "Changed at the source"  # no policy for it any more
    assert languages(edited) == ["eng"]
    (conflict,) = tracking()[EDITED].conflicts
    assert (conflict["field"], conflict["kept"]) == ("metadata.subjects", "source")
    assert {"subject": "Curated subject"} in conflict["local"]
