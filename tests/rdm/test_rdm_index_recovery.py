"""A tombstone that did not reach InvenioRDM's search index: the next run sends it."""

from __future__ import annotations

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester, run_harvest
from invenio_search.proxies import current_search, current_search_client
from invenio_search.utils import build_alias_name

from .conftest import RDM_TARGET, TRANSFORMER
from .helpers import harvest_again, tracking


@pytest.fixture(scope="module")
def search_hosts(search_proxy):
    """This module's app talks to the search server through the proxy."""
    return [{"host": "127.0.0.1", "port": search_proxy.port}]


@pytest.fixture()
def reachable_search(search_proxy):
    search_proxy.bulk = "forward"
    yield search_proxy
    search_proxy.bulk = "forward"


def deletion_status(pid: str) -> str:
    """What the records index says of the record: "P" published, "D" deleted."""
    from invenio_rdm_records.records.api import RDMRecord

    current_search.flush_and_refresh(RDMRecord.index._name)
    hits = current_search_client.search(
        index=build_alias_name(RDMRecord.index._name), body={"query": {"term": {"id": pid}}}
    )["hits"]["hits"]
    [hit] = hits
    return hit["_source"]["deletion_status"]


def test_a_tombstone_the_index_missed_is_sent_by_the_next_run(
    rdm, provider, corpus, reachable_search
):
    make_harvester(provider.base_url, target=RDM_TARGET, transformer=TRANSFORMER, batch_size=4)
    run_harvest("test")
    identifier = sorted(corpus.live_identifiers())[1]
    pid = tracking()[identifier].local_pid
    assert deletion_status(pid) == "P"

    corpus.advance_clock(minutes=5)
    corpus.delete(identifier)
    reachable_search.bulk = "refuse"  # the index takes no document while the deletion is written
    summary = harvest_again(corpus)
    reachable_search.bulk = "forward"

    assert summary.counts.deleted == 1 and summary.counts.not_indexed == 1
    row = tracking()[identifier]
    assert row.deleted and row.local_pid == pid and row.errors[0].startswith("Not indexed:")
    assert deletion_status(pid) == "P"  # the index still shows the record

    summary = harvest_again(corpus)  # the provider has nothing new

    assert summary.succeeded and summary.left_out.reindexed == 1
    assert deletion_status(pid) == "D"
    assert tracking()[identifier].errors is None
