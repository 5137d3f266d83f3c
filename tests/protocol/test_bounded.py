"""Bounded runs against a hostile provider on 127.0.0.1: huge records, lists that never end
(and legitimate lists that must still pass)."""

from __future__ import annotations

import pytest

from oarepo_oaipmh_harvester.protocol import ProtocolOptions
from oarepo_oaipmh_harvester.protocol.errors import NoProgress, TokenLoopError, TooManyPages
from oarepo_oaipmh_harvester.protocol.items import record_from_xml

from .wire import envelope, list_page, record, records_page, token

# -- the size of one record ------------------------------------------------------------------


def test_oversized_record_keeps_its_header_and_fails_alone(server, make_client) -> None:
    client = make_client(server.base_url, max_record_bytes=50_000)
    server.answer_tokens(
        records_page(
            record("a"),
            record("big", "x" * 60_000, sets=["s1"]),
            record("c"),
            resumption=token("t1"),
        ),
        {"t1": records_page(record("d"))},
    )
    a, big, c, d = client.list_records("oai_dc")
    assert [r.identifier for r in (a, c, d)] == ["a", "c", "d"]
    assert all(r.metadata is not None and r.errors == () for r in (a, c, d))
    assert (big.identifier, big.datestamp, big.deleted, big.set_specs) == (
        "big",
        "2024-01-01T00:00:00Z",
        False,
        ("s1",),
    )
    assert big.metadata is None
    (reason,) = big.errors
    assert "max_record_bytes" in reason and "50000" in reason
    assert len(big.xml) < 1000  # only the header is kept
    again = record_from_xml(big.xml, big.errors)  # crosses a task queue like any record
    assert (again.identifier, again.set_specs, again.metadata) == ("big", ("s1",), None)
    assert again.errors[0] == reason


def test_record_size_is_counted_in_utf8_bytes(server, make_client) -> None:
    client = make_client(server.base_url, max_record_bytes=20_000)
    # 12,000 characters of two bytes each: under the limit in characters, over it in bytes.
    server.answer(
        lambda hit: records_page(record("wide", "ž" * 12_000), record("narrow", "z" * 12_000))
    )
    wide, narrow = client.list_records("oai_dc")
    assert wide.metadata is None and "max_record_bytes" in wide.errors[0]
    assert narrow.metadata is not None and narrow.errors == ()


def test_oversized_record_from_get_record(server, make_client) -> None:
    client = make_client(server.base_url, max_record_bytes=10_000)
    server.answer(lambda hit: envelope(f"<GetRecord>{record('big', 'y' * 20_000)}</GetRecord>"))
    big = client.get_record("big", "oai_dc")
    assert big.identifier == "big" and big.metadata is None and "max_record_bytes" in big.errors[0]


# -- lists that never end ----------------------------------------------------------------------


def endless(server, items_on) -> None:
    """A new token on every page, forever; page n carries ``items_on(n)`` records."""

    def responder(hit):
        number = int(hit.args.get("resumptionToken", "0"))
        items = [record(f"r{number}-{i}") for i in range(items_on(number))]
        return records_page(*items, resumption=token(str(number + 1)))

    server.answer(responder)


def test_the_same_identifiers_again_and_again_are_no_progress(server, client) -> None:
    """A new token every time, but the five records of the first page on every page."""

    def responder(hit):
        number = int(hit.args.get("resumptionToken", "0"))
        items = [record(f"known-{i}") for i in range(5)]
        return records_page(*items, resumption=token(str(number + 1)))

    server.answer(responder)
    with pytest.raises(TokenLoopError, match="only identifiers it had already sent"):
        list(client.list_records("oai_dc"))
    assert len(server.hits) == 12  # the first page, then max_empty_pages (10) + 1 repeats


def test_a_record_sent_again_among_new_ones_is_progress(server, client) -> None:
    """Real lists repeat a record now and then (changed while it was listed): the page's
    new records count, and the list is read to its end."""

    def responder(hit):
        number = int(hit.args.get("resumptionToken", "0"))
        items = [record(f"r{number}-{i}") for i in range(3)] + [record("r0-0")]
        more = token(str(number + 1)) if number < 30 else "<resumptionToken/>"
        return records_page(*items, resumption=more)

    server.answer(responder)
    assert len(list(client.list_records("oai_dc"))) == 31 * 4


def test_a_record_every_ninth_page_is_no_progress(server, client) -> None:
    endless(server, lambda n: 1 if n % 9 == 0 else 0)
    with pytest.raises(NoProgress) as caught:
        list(client.list_records("oai_dc"))
    assert caught.value.limit == "min_items_per_page"
    assert isinstance(caught.value, TokenLoopError)
    assert "progress_window" in str(caught.value) and "min_items_per_page" in str(caught.value)
    assert len(server.hits) == ProtocolOptions().progress_window  # judged on the first window


def test_page_limit(server, make_client) -> None:
    client = make_client(server.base_url, max_pages=50)
    endless(server, lambda n: 5)
    stream = client.list_records("oai_dc")
    with pytest.raises(TooManyPages) as caught:
        list(stream)
    assert caught.value.limit == "max_pages" and caught.value.pages == 50
    assert "max_pages" in str(caught.value)
    assert len(server.hits) == 50


def test_cursor_beyond_complete_list_size(server, client) -> None:
    def responder(hit):
        number = int(hit.args.get("resumptionToken", "0"))
        return records_page(
            record(f"r{number}"), resumption=token(str(number + 1), cursor=number, size=5)
        )

    server.answer(responder)
    with pytest.raises(NoProgress) as caught:
        list(client.list_records("oai_dc"))
    assert caught.value.limit == "completeListSize"
    assert "completeListSize" in str(caught.value)
    assert len(server.hits) == 7  # cursor 6 > 5 on the seventh page


def test_occasional_empty_pages_over_many_windows_pass(server, client) -> None:
    last = 350

    def responder(hit):
        number = int(hit.args.get("resumptionToken", "0"))
        items = [] if number % 4 == 3 else [record(f"r{number}")]
        more = token(str(number + 1)) if number < last else ""
        return records_page(*items, resumption=more)

    server.answer(responder)
    records = list(client.list_records("oai_dc"))
    assert len(records) == sum(1 for n in range(last + 1) if n % 4 != 3)


def test_sparse_list_with_an_advancing_cursor_passes(server, client) -> None:
    # A provider that filters a long list into a small set: mostly empty pages, but its
    # cursor moves through completeListSize.
    last = 250

    def responder(hit):
        number = int(hit.args.get("resumptionToken", "0"))
        items = [record(f"r{number}")] if number % 20 == 0 else []
        more = token(str(number + 1), cursor=number * 100, size=(last + 1) * 100)
        return records_page(*items, resumption=more if number < last else "")

    server.answer(responder)
    assert len(list(client.list_records("oai_dc"))) == len(range(0, last + 1, 20))


def test_no_progress_rule_can_be_turned_off(server, make_client) -> None:
    client = make_client(server.base_url, min_items_per_page=0, max_pages=150)
    endless(server, lambda n: 1 if n % 9 == 0 else 0)
    with pytest.raises(TooManyPages):
        list(client.list_records("oai_dc"))
    assert len(server.hits) == 150


def test_list_identifiers_and_sets_are_guarded_too(server, make_client) -> None:
    client = make_client(server.base_url, max_pages=20)

    def responder(hit):
        number = int(hit.args.get("resumptionToken", "0"))
        verb = hit.args["verb"]
        item = (
            f"<header><identifier>h{number}</identifier><datestamp>2024-01-01</datestamp></header>"
            if verb == "ListIdentifiers"
            else f"<set><setSpec>s{number}</setSpec><setName>S</setName></set>"
        )
        return list_page(verb, [item], token(str(number + 1)))

    server.answer(responder)
    with pytest.raises(TooManyPages):
        list(client.list_identifiers("oai_dc"))
    with pytest.raises(TooManyPages):
        list(client.list_sets())
