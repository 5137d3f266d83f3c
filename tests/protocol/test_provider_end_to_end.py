"""The client against the project's quirky OAI-PMH provider, over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from email.utils import formatdate

import pytest
from factories import gaps, record_request_times

from oarepo_oaipmh_harvester.protocol.datestamps import Granularity, format_datestamp
from oarepo_oaipmh_harvester.protocol.errors import (
    CannotDisseminateFormat,
    IdDoesNotExist,
    MalformedResponse,
    OAITransportError,
    TokenLoopError,
    TooManyRestarts,
)
from oarepo_oaipmh_harvester.testing.corpus import Corpus
from oarepo_oaipmh_harvester.testing.provider import (
    BAD_DATESTAMP,
    UNSAFE_TOKEN_PREFIX,
    OAIPMHProvider,
)

DC = "{http://purl.org/dc/elements/1.1/}"
START = datetime(2024, 1, 1, tzinfo=UTC)
CLOCK = datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC)
COUNT = 50
PAGE = 7
PAGES = -(-COUNT // PAGE)


@pytest.fixture
def e2e_corpus() -> Corpus:
    corpus = Corpus.generate(COUNT, start=START, step_seconds=60)
    corpus.set_clock(CLOCK)
    return corpus


@pytest.fixture
def e2e_provider(e2e_corpus: Corpus) -> Iterator[OAIPMHProvider]:
    with OAIPMHProvider(e2e_corpus, page_size=PAGE) as running:
        yield running


@pytest.fixture
def e2e_client(e2e_provider, make_client):
    return make_client(e2e_provider.base_url)


def titles(records) -> dict[str, str]:
    return {
        r.identifier: r.metadata.find(f"{DC}title").text for r in records if r.metadata is not None
    }


def corpus_titles(corpus: Corpus) -> dict[str, str]:
    return {r.identifier: r.metadata["title"][0] for r in corpus.select() if not r.deleted}


def test_full_chain_of_pages(e2e_corpus, e2e_provider, e2e_client) -> None:
    profile = e2e_client.identify()
    assert profile.granularity is Granularity.SECONDS
    assert profile.response_date == CLOCK
    stream = e2e_client.list_records("oai_dc")
    assert stream.response_date == CLOCK
    assert stream.complete_list_size == COUNT
    records = list(stream)
    assert [r.identifier for r in records] == [r.identifier for r in e2e_corpus.select()]
    assert titles(records) == corpus_titles(e2e_corpus)  # Unicode intact
    assert all(r.errors == () for r in records)
    assert stream.pages == PAGES
    continuations = e2e_provider.requests_for("ListRecords")[1:]
    assert len(continuations) == PAGES - 1
    assert all(set(args) == {"verb", "resumptionToken"} for args in continuations)
    assert e2e_client.request_count == 1 + PAGES


def test_selective_arguments_with_set_and_window(e2e_corpus, e2e_provider, e2e_client) -> None:
    from_ = format_datestamp(datetime(2024, 1, 1, 0, 10, tzinfo=UTC), Granularity.SECONDS)
    until = format_datestamp(datetime(2024, 1, 1, 0, 40, tzinfo=UTC), Granularity.SECONDS)
    records = list(e2e_client.list_records("oai_dc", set_spec="phys", from_=from_, until=until))
    expected = e2e_corpus.select(
        from_=datetime(2024, 1, 1, 0, 10, tzinfo=UTC),
        until=datetime(2024, 1, 1, 0, 40, tzinfo=UTC),
        set_spec="phys",
    )
    assert [r.identifier for r in records] == [r.identifier for r in expected]
    first = e2e_provider.requests_for("ListRecords")[0]
    assert first == {
        "verb": "ListRecords",
        "metadataPrefix": "oai_dc",
        "set": "phys",
        "from": from_,
        "until": until,
    }


def test_unsafe_tokens(e2e_corpus, e2e_provider, e2e_client) -> None:
    e2e_provider.quirks.token_style = "unsafe"
    records = list(e2e_client.list_records("oai_dc"))
    assert len(records) == COUNT
    tokens = [a["resumptionToken"] for a in e2e_provider.requests_for("ListRecords")[1:]]
    assert len(tokens) == PAGES - 1
    assert all(t.startswith(UNSAFE_TOKEN_PREFIX) for t in tokens)


@pytest.mark.parametrize("final_token", ["empty", "absent"])
def test_final_token_styles(e2e_provider, e2e_client, final_token: str) -> None:
    e2e_provider.quirks.final_token = final_token
    assert len(list(e2e_client.list_records("oai_dc"))) == COUNT


@pytest.mark.parametrize(
    "retry_after, wait", [("1", 1.0), ("0", 0.0), (None, 0.0), ("http-date", 0.0)]
)
def test_503_with_retry_after(e2e_provider, e2e_client, retry_after, wait) -> None:
    if retry_after == "http-date":
        retry_after = formatdate(usegmt=True)  # now: no real wait
    arrivals = record_request_times(e2e_provider)
    e2e_provider.quirks.fail_requests = 2
    e2e_provider.quirks.retry_after = retry_after
    assert len(list(e2e_client.list_records("oai_dc"))) == COUNT
    assert len(e2e_provider.requests) == PAGES + 2
    assert e2e_client.request_count == PAGES
    # The client's backoff is about 1 ms (FAST): a wait of a second is the header's.
    first, second = gaps(arrivals)[:2]
    assert first >= wait and second >= wait


def test_404_fails_at_once(e2e_provider, e2e_client) -> None:
    e2e_provider.quirks.fail_requests = 5
    e2e_provider.quirks.fail_status = 404
    with pytest.raises(OAITransportError, match="HTTP 404") as caught:
        e2e_client.identify()
    assert caught.value.status_code == 404
    assert len(e2e_provider.requests) == 1


def test_persistent_503_gives_up(e2e_provider, make_client) -> None:
    client = make_client(e2e_provider.base_url, max_retries=3)
    e2e_provider.quirks.fail_requests = 100
    with pytest.raises(OAITransportError, match="HTTP 503") as caught:
        client.identify()
    assert caught.value.status_code == 503
    assert len(e2e_provider.requests) == 4


def test_expired_token_restarts_the_list(e2e_corpus, e2e_provider, e2e_client) -> None:
    e2e_provider.quirks.expire_tokens_after = 3
    stream = e2e_client.list_records("oai_dc")
    seen = []
    for item in stream:
        seen.append(item.identifier)
        if stream.restarts == 1:
            e2e_provider.quirks.expire_tokens_after = None  # the provider recovers
    expected = [r.identifier for r in e2e_corpus.select()]
    assert stream.restarts == 1
    assert seen == expected[: 4 * PAGE] + expected  # yielded again after the restart
    first_requests = [
        a for a in e2e_provider.requests_for("ListRecords") if "resumptionToken" not in a
    ]
    assert len(first_requests) == 2 and first_requests[0] == first_requests[1]


def test_tokens_that_always_expire(e2e_provider, make_client) -> None:
    client = make_client(e2e_provider.base_url, max_restarts=2)
    e2e_provider.quirks.expire_tokens_after = 1
    with pytest.raises(TooManyRestarts) as caught:
        list(client.list_records("oai_dc"))
    assert caught.value.restarts == 2


def test_gzip(e2e_provider, e2e_client) -> None:
    e2e_provider.quirks.gzip = True
    encodings = []
    e2e_client.session.hooks["response"].append(
        lambda response, *args, **kwargs: encodings.append(response.headers.get("Content-Encoding"))
    )
    assert e2e_client.identify().compression == ("gzip",)
    assert len(list(e2e_client.list_records("oai_dc"))) == COUNT
    assert encodings and set(encodings) == {"gzip"}


def test_control_characters(e2e_corpus, e2e_provider, e2e_client) -> None:
    e2e_provider.quirks.control_characters = True
    records = list(e2e_client.list_records("oai_dc"))
    assert len(records) == COUNT
    assert titles(records) == corpus_titles(e2e_corpus)
    dirty = [r for r in records if r.errors]
    assert dirty and len(dirty) < COUNT  # the provider soils every third record
    assert {r.errors for r in dirty} == {
        ("removed 2 characters that XML forbids (U+000B, U+001A)",)
    }


def test_malformed_xml(e2e_provider, e2e_client) -> None:
    e2e_provider.quirks.malformed_xml = True
    e2e_client.identify()  # the provider keeps Identify intact
    with pytest.raises(MalformedResponse, match="not well-formed"):
        e2e_client.list_records("oai_dc")


def test_bad_and_offset_datestamps(e2e_corpus, e2e_provider, e2e_client) -> None:
    bad_id = e2e_corpus.select()[3].identifier
    e2e_provider.quirks.bad_datestamp_identifiers = {bad_id}
    e2e_provider.quirks.offset_datestamps = True
    records = {r.identifier: r for r in e2e_client.list_records("oai_dc")}
    assert len(records) == COUNT
    assert records[bad_id].datestamp == BAD_DATESTAMP
    assert records[bad_id].datestamp_value is None and records[bad_id].errors
    for expected in e2e_corpus.select():
        if expected.identifier != bad_id:
            got = records[expected.identifier]
            assert got.datestamp.endswith("+00:00")
            assert got.datestamp_value == expected.datestamp and got.errors == ()


def test_repeated_token(e2e_provider, e2e_client) -> None:
    e2e_provider.quirks.repeat_token = True
    with pytest.raises(TokenLoopError):
        list(e2e_client.list_records("oai_dc"))


def test_some_empty_pages_with_tokens(e2e_provider, e2e_client) -> None:
    e2e_provider.quirks.empty_pages_with_token = 3
    assert len(list(e2e_client.list_records("oai_dc"))) == COUNT


def test_too_many_empty_pages_with_tokens(e2e_provider, e2e_client) -> None:
    e2e_provider.quirks.empty_pages_with_token = 1000
    with pytest.raises(TokenLoopError, match="empty"):
        list(e2e_client.list_records("oai_dc"))


def test_slow_provider_times_out(e2e_provider, make_client) -> None:
    client = make_client(e2e_provider.base_url, timeout=(1.0, 0.1), max_retries=1)
    e2e_provider.quirks.delay_seconds = 0.3
    with pytest.raises(OAITransportError, match="timeout"):
        client.identify()


def test_deletions_and_other_verbs(e2e_corpus, e2e_provider, e2e_client) -> None:
    victim = e2e_corpus.select()[0].identifier
    e2e_corpus.delete(victim)
    headers = list(e2e_client.list_identifiers("oai_dc"))
    assert len(headers) == COUNT
    assert [h.identifier for h in headers if h.deleted] == [victim]
    tombstone = e2e_client.get_record(victim, "oai_dc")
    assert tombstone.deleted and tombstone.metadata is None
    live = e2e_client.get_record(headers[1].identifier, "oai_dc")
    assert live.metadata is not None and not live.deleted
    with pytest.raises(IdDoesNotExist):
        e2e_client.get_record("oai:nowhere:1", "oai_dc")
    with pytest.raises(CannotDisseminateFormat):
        e2e_client.list_records("marc21")
    assert {s.spec for s in e2e_client.list_sets()} == set(e2e_corpus.sets)
    assert [f.prefix for f in e2e_client.list_metadata_formats()] == ["oai_dc"]
    empty = e2e_client.list_records("oai_dc", from_="2030-01-01")
    assert list(empty) == []


def test_provider_without_sets(make_client) -> None:
    corpus = Corpus.generate(3, sets={})
    with OAIPMHProvider(corpus) as provider:
        client = make_client(provider.base_url)
        assert list(client.list_sets()) == []
