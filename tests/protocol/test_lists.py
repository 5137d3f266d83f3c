"""List semantics: tokens, list ends, restarts, loops and laziness (canned server)."""

from __future__ import annotations

import gc
import weakref

import pytest

from oarepo_oaipmh_harvester.protocol import parsing
from oarepo_oaipmh_harvester.protocol.errors import (
    BadArgument,
    CannotDisseminateFormat,
    TokenLoopError,
    TooManyRestarts,
)

from .wire import envelope, error, header, list_page, record, records_page, token

DC = "{http://purl.org/dc/elements/1.1/}"
SELECTIVE = {"set_spec": "phys:astro", "from_": "2024-01-01T00:00:00Z", "until": "2024-02-01"}


def three_pages(server, tokens=("t1", "t2")) -> None:
    first, second = tokens
    server.answer_tokens(
        records_page(record("a"), record("b"), resumption=token(first, cursor=0, size=5)),
        {
            first: records_page(
                record("c"), record("d"), resumption=token(second, cursor=2, size=5)
            ),
            second: records_page(record("e"), resumption=token(None, cursor=4, size=5)),
        },
    )


def ids(stream) -> list[str]:
    return [item.identifier for item in stream]


def test_continuation_carries_only_verb_and_token(server, client) -> None:
    three_pages(server)
    assert ids(client.list_records("oai_dc", **SELECTIVE)) == ["a", "b", "c", "d", "e"]
    first, *continuations = server.hits
    assert first.args == {
        "verb": "ListRecords",
        "metadataPrefix": "oai_dc",
        "set": "phys:astro",
        "from": "2024-01-01T00:00:00Z",
        "until": "2024-02-01",
    }
    assert [hit.args for hit in continuations] == [
        {"verb": "ListRecords", "resumptionToken": "t1"},
        {"verb": "ListRecords", "resumptionToken": "t2"},
    ]


def test_absent_selective_arguments_are_not_sent(server, client) -> None:
    server.answer(lambda hit: list_page("ListIdentifiers", [header("a")]))
    list(client.list_identifiers("oai_dc"))
    assert server.hits[0].args == {"verb": "ListIdentifiers", "metadataPrefix": "oai_dc"}


@pytest.mark.parametrize(
    "unsafe",
    ["a%2F b+c/d=", "100%", "x=y&z=1", "päge/2 ü", "+++", "a  b", "tok#frag?q=1", "%25%2B"],
)
def test_unsafe_token_round_trips(server, client, unsafe: str) -> None:
    three_pages(server, tokens=(unsafe, unsafe + "-2"))
    assert ids(client.list_records("oai_dc")) == ["a", "b", "c", "d", "e"]
    assert [hit.args.get("resumptionToken") for hit in server.hits] == [
        None,
        unsafe,
        unsafe + "-2",
    ]
    # Percent-encoded on the wire, a space as %20 (a "+" would be ambiguous for some servers).
    wire = server.hits[1].query.split("resumptionToken=", 1)[1]
    assert not set(wire) & set(" +/=&#?")


def test_list_ends_on_absent_token(server, client) -> None:
    server.answer_tokens(
        records_page(record("a"), resumption=token("t1")),
        {"t1": records_page(record("b"))},
    )
    stream = client.list_records("oai_dc")
    assert ids(stream) == ["a", "b"]
    assert len(server.hits) == 2
    assert stream.oai_response is None  # the last page is released


@pytest.mark.parametrize(
    "final", [token(None, cursor=1, size=2), "<resumptionToken>  </resumptionToken>"]
)
def test_list_ends_on_empty_token(server, client, final: str) -> None:
    server.answer_tokens(
        records_page(record("a"), resumption=token("t1", cursor=0, size=2)),
        {"t1": records_page(record("b"), resumption=final)},
    )
    assert ids(client.list_records("oai_dc")) == ["a", "b"]
    assert len(server.hits) == 2


def test_pretty_printed_token_is_stripped(server, client) -> None:
    server.answer_tokens(
        records_page(record("a"), resumption="<resumptionToken>\n    t1\n  </resumptionToken>"),
        {"t1": records_page(record("b"))},
    )
    assert ids(client.list_records("oai_dc")) == ["a", "b"]


def test_no_records_match_is_an_empty_stream(server, client) -> None:
    server.answer(lambda hit: envelope(error("noRecordsMatch", "nothing here")))
    stream = client.list_records("oai_dc", from_="2030-01-01")
    assert list(stream) == []
    assert stream.pages == 1
    assert len(server.hits) == 1


def test_no_records_match_on_a_continuation_ends_the_list(server, client) -> None:
    server.answer_tokens(
        records_page(record("a"), resumption=token("t1")),
        {"t1": envelope(error("noRecordsMatch"))},
    )
    assert ids(client.list_records("oai_dc")) == ["a"]


@pytest.mark.parametrize(
    ("code", "exception"),
    [("badArgument", BadArgument), ("cannotDisseminateFormat", CannotDisseminateFormat)],
)
def test_errors_on_the_first_request_raise_at_construction(server, client, code, exception) -> None:
    server.answer(lambda hit: envelope(error(code, "no")))
    with pytest.raises(exception):
        client.list_records("marc")


def test_bad_resumption_token_restarts_with_the_same_arguments(server, client) -> None:
    expired = {"count": 0}

    def responder(hit):
        if "resumptionToken" not in hit.args:
            return records_page(record("a"), record("b"), resumption=token("t1", size=3))
        if expired["count"] == 0:
            expired["count"] += 1
            return envelope(error("badResumptionToken", "expired"))
        return records_page(record("c"))

    server.answer(responder)
    stream = client.list_records("oai_dc", **SELECTIVE)
    # Records before the restart come again: the consumer is idempotent.
    assert ids(stream) == ["a", "b", "a", "b", "c"]
    assert stream.restarts == 1
    assert stream.pages == 4
    first_requests = [hit.args for hit in server.hits if "resumptionToken" not in hit.args]
    assert len(first_requests) == 2
    assert first_requests[0] == first_requests[1]
    assert first_requests[0]["set"] == "phys:astro"


def test_too_many_restarts(server, make_client) -> None:
    client = make_client(server.base_url, max_restarts=2)
    server.answer_tokens(records_page(record("a"), resumption=token("t1")), {})
    stream = client.list_records("oai_dc")
    with pytest.raises(TooManyRestarts) as caught:
        list(stream)
    assert caught.value.restarts == 2
    assert "badResumptionToken" in str(caught.value) or "unknown token" in str(caught.value)
    assert sum("resumptionToken" not in hit.args for hit in server.hits) == 3


def test_zero_restarts_allowed(server, make_client) -> None:
    client = make_client(server.base_url, max_restarts=0)
    server.answer_tokens(records_page(record("a"), resumption=token("t1")), {})
    with pytest.raises(TooManyRestarts):
        list(client.list_records("oai_dc"))


def test_same_token_twice_in_a_row_is_a_loop(server, client) -> None:
    server.answer(lambda hit: records_page(record("a"), resumption=token("same")))
    stream = client.list_records("oai_dc")
    with pytest.raises(TokenLoopError) as caught:
        list(stream)
    assert caught.value.token == "same"
    assert "never end" in str(caught.value)
    assert len(server.hits) == 2


def test_token_cycle_is_a_loop(server, client) -> None:
    server.answer_tokens(
        records_page(record("a"), resumption=token("A")),
        {
            "A": records_page(record("b"), resumption=token("B")),
            "B": records_page(record("c"), resumption=token("A")),
        },
    )
    with pytest.raises(TokenLoopError):
        list(client.list_records("oai_dc"))


def test_endless_empty_pages_with_tokens_are_a_loop(server, client) -> None:
    def responder(hit):
        number = int(hit.args.get("resumptionToken", "0"))
        items = [record("a")] if number == 0 else []
        return records_page(*items, resumption=token(str(number + 1)))

    server.answer(responder)
    stream = client.list_records("oai_dc")
    with pytest.raises(TokenLoopError, match="empty"):
        list(stream)
    # the first page, then max_empty_pages (10) empty ones tolerated, the 11th fails
    assert len(server.hits) == 1 + client.max_empty_pages + 1


def test_some_empty_pages_with_tokens_are_tolerated(server, client) -> None:
    def responder(hit):
        number = int(hit.args.get("resumptionToken", "0"))
        if number == 10:
            return records_page(record("z"))
        items = [record("a")] if number == 0 else []
        return records_page(*items, resumption=token(str(number + 1)))

    server.answer(responder)
    assert ids(client.list_records("oai_dc")) == ["a", "z"]


def test_stream_is_lazy_and_holds_one_page(server, client, monkeypatch) -> None:
    parses = []
    original = parsing.etree.fromstring
    monkeypatch.setattr(
        parsing.etree, "fromstring", lambda *a, **k: parses.append(1) or original(*a, **k)
    )
    three_pages(server)
    stream = client.list_records("oai_dc")
    assert len(server.hits) == 1  # construction sends the first request only
    assert [next(stream).identifier, next(stream).identifier] == ["a", "b"]
    assert len(server.hits) == 1
    first_page = weakref.ref(stream.oai_response)
    assert next(stream).identifier == "c"
    assert len(server.hits) == 2
    gc.collect()
    assert first_page() is None  # the stream let go of the first page
    assert stream.oai_response.xml is stream.oai_response.xml  # parsed once, not per access
    list(stream)
    assert len(parses) == len(server.hits) == 3


def test_stream_position_attributes(server, client) -> None:
    three_pages(server)
    stream = client.list_records("oai_dc")
    assert (stream.pages, stream.cursor, stream.complete_list_size) == (1, 0, 5)
    assert stream.response_date is not None and stream.response_date.isoformat() == (
        "2024-06-01T12:00:00+00:00"
    )
    list(stream)
    assert (stream.pages, stream.cursor, stream.complete_list_size, stream.restarts) == (3, 4, 5, 0)
    assert client.request_count == 3


def test_held_record_does_not_pin_its_page(server, client) -> None:
    three_pages(server)
    stream = client.list_records("oai_dc")
    first = next(stream)
    page = weakref.ref(stream.oai_response)
    metadata = first.metadata
    assert metadata is not None
    assert metadata.getroottree().getroot() is metadata
    assert metadata.getparent() is None
    assert [next(stream).identifier, next(stream).identifier] == ["b", "c"]  # on page 2
    gc.collect()
    assert page() is None  # record and its metadata held, their page is gone
    assert first.identifier == "a" and metadata.find(f"{DC}title").text == "A title"


def test_list_identifiers_yields_headers(server, client) -> None:
    server.answer_tokens(
        list_page("ListIdentifiers", [header("a", sets=["s1", "s2"])], token("t1")),
        {"t1": list_page("ListIdentifiers", [header("b", deleted=True)])},
    )
    headers = list(client.list_identifiers("oai_dc"))
    assert [(h.identifier, h.deleted, h.set_specs) for h in headers] == [
        ("a", False, ("s1", "s2")),
        ("b", True, ()),
    ]
    assert server.hits[1].args == {"verb": "ListIdentifiers", "resumptionToken": "t1"}


def test_malformed_datestamp_keeps_the_record(server, client) -> None:
    server.answer(
        lambda hit: records_page(
            record("good"), record("bad", datestamp="2020-13-45 xx"), record("empty", datestamp="")
        )
    )
    good, bad, empty = client.list_records("oai_dc")
    assert good.errors == () and good.datestamp_value is not None
    assert bad.datestamp == "2020-13-45 xx"
    assert bad.datestamp_value is None
    assert len(bad.errors) == 1 and "2020-13-45 xx" in bad.errors[0]
    assert bad.metadata is not None
    assert empty.errors == ("the header has no datestamp",)


def test_tombstones_and_records_without_metadata(server, client) -> None:
    server.answer(
        lambda hit: records_page(
            record("gone", deleted=True),
            "<record>" + header("bare") + "</record>",
        )
    )
    gone, bare = client.list_records("oai_dc")
    assert gone.deleted and gone.metadata is None and gone.errors == ()
    assert '<header status="deleted">' in gone.xml
    assert not bare.deleted and bare.metadata is None
    assert bare.errors == ("the record is not deleted but has no metadata",)


def test_records_pickle_and_copy_with_their_metadata(server, client) -> None:
    import copy
    import pickle

    three_pages(server)
    first = next(iter(client.list_records("oai_dc")))
    title = first.metadata.find("{http://purl.org/dc/elements/1.1/}title").text
    for other in (pickle.loads(pickle.dumps(first)), copy.copy(first), copy.deepcopy(first)):
        assert other == first and hash(other) == hash(first)
        assert other.metadata.find("{http://purl.org/dc/elements/1.1/}title").text == title
    with pytest.raises(AttributeError):
        first.identifier = "changed"
