"""Conformance: the harvester against independent OAI-PMH implementations from PyPI.

Both servers serve the same corpus as our own provider; after a full harvest, edits,
additions and deletions at the source and the follow-up runs, the target service must hold
exactly the provider's live records and none of its deleted ones. Providers without
persistent tombstones (`no`, `transient`) are brought in step by a reconciling full harvest.

oai-repo cannot send tombstones at all ("oai-repo-tombstones" in
`tests/independent_servers.py`, Known quirks): only its `no` mode is a correct server.
"""

import pytest
from factories import make_harvester, run_harvest
from independent_servers import QUIRKS, start_independent

from oarepo_oaipmh_harvester.harvest.window import SinceSource

from .helpers import expected_titles, indexed_total, live_local_count, local_titles

COMBINATIONS = [
    pytest.param(kind, granularity, mode, id=f"{kind}-{granularity}-{mode}")
    for kind in ("pyoai", "oai-repo")
    for granularity in ("seconds", "day")
    for mode in ("persistent", "transient", "no")
    if not (kind == "oai-repo" and mode != "no")
] + [
    pytest.param(
        "oai-repo",
        "seconds",
        "persistent",
        id="oai-repo-seconds-persistent",
        marks=pytest.mark.xfail(strict=True, reason=QUIRKS["oai-repo-tombstones"]),
    )
]


@pytest.mark.parametrize("kind, granularity, deleted_record", COMBINATIONS)
def test_target_ends_with_exactly_the_live_records(
    app, db, clean_index, corpus, sample_service, kind, granularity, deleted_record
):
    corpus.set_clock(None)  # these servers answer with the real time as responseDate
    ids = sorted(corpus.live_identifiers())
    corpus.delete(ids[-1])  # a tombstone already there at the first harvest
    server = start_independent(
        kind, corpus, page_size=8, granularity=granularity, deleted_record=deleted_record
    )
    try:
        make_harvester(server.base_url)
        first = run_harvest("test")
        assert first.succeeded and first.counts.created == 49
        assert local_titles(sample_service) == expected_titles(corpus)

        corpus.update(ids[0], metadata={"title": ["Edited at the source"]})
        corpus.add("oai:example.org:added", {"title": ["Added at the source"]})
        corpus.delete(ids[1])
        corpus.delete(ids[2])
        incremental = run_harvest("test", since_source=SinceSource.WATERMARK)
        assert incremental.succeeded and incremental.counts.created == 1
        if deleted_record == "persistent":
            assert incremental.counts.deleted == 2
        else:
            full = run_harvest("test", full=True)  # tombstones may never come: reconcile
            assert full.succeeded and full.reconciled

        assert local_titles(sample_service) == expected_titles(corpus)
        assert live_local_count() == len(corpus.live_identifiers()) == 48
        assert indexed_total(sample_service) == 48
        first_requests = [r for r in server.requests if "metadataPrefix" in r]
        assert "from" not in first_requests[0] and "from" in first_requests[1]
    finally:
        server.stop()
