"""The harvester against independent OAI-PMH implementations from PyPI, same corpus.

pyoai (`oaipmh` 4.x BatchingServer) sends tombstones; oai-repo cannot (see
`tests/independent_servers.py`, "Known quirks"), so deletions are only checked on pyoai.
"""

import pytest
from independent_servers import start_independent

from oarepo_oaipmh_harvester.harvest.run import run_harvest
from oarepo_oaipmh_harvester.harvest.window import SinceSource

from .helpers import expected_titles, indexed_total, live_local_count, local_titles, make_harvester


@pytest.mark.parametrize(
    "kind, granularity, deleted_record",
    [
        ("pyoai", "seconds", "persistent"),
        ("pyoai", "day", "transient"),
        ("oai-repo", "seconds", "no"),
        ("oai-repo", "day", "no"),
    ],
)
def test_full_then_incremental_harvest(
    app, db, clean_index, corpus, sample_service, kind, granularity, deleted_record
):
    corpus.set_clock(None)  # these servers answer with the real time as responseDate
    server = start_independent(
        kind, corpus, page_size=8, granularity=granularity, deleted_record=deleted_record
    )
    try:
        make_harvester(server.base_url)
        first = run_harvest("test")
        assert first.succeeded and first.counts.created == 50
        assert local_titles(sample_service) == expected_titles(corpus)

        ids = sorted(corpus.live_identifiers())
        corpus.update(ids[0], metadata={"title": ["Edited at the source"]})
        corpus.add("oai:example.org:added", {"title": ["Added at the source"]})
        if deleted_record != "no":
            corpus.delete(ids[1])
        second = run_harvest("test", since_source=SinceSource.WATERMARK)

        assert second.succeeded
        assert second.counts.created == 1 and second.counts.updated >= 1
        assert local_titles(sample_service) == expected_titles(corpus)
        assert live_local_count() == len(corpus.live_identifiers())
        assert indexed_total(sample_service) == len(corpus.live_identifiers())
        first_requests = [r for r in server.requests if "metadataPrefix" in r]
        assert "from" in first_requests[-1] and "from" not in first_requests[0]
    finally:
        server.stop()
