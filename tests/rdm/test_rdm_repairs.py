"""The repair tools against the real InvenioRDM records service: rewrite, preview, purge."""

from __future__ import annotations

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester
from invenio_access.permissions import system_identity
from invenio_rdm_records.services.errors import RecordDeletedException

from oarepo_oaipmh_harvester.harvest.assembly import run_harvest
from oarepo_oaipmh_harvester.harvest.window import SinceSource
from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service

from .conftest import RDM_TARGET, TRANSFORMER
from .helpers import tracking
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
