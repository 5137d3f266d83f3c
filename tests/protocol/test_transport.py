"""HTTP behaviour: timeouts, retries, Retry-After, fatal statuses, headers, size limits."""

from __future__ import annotations

import gzip
import socket
import time
import zlib
from email.utils import formatdate

import pytest
import requests

from oarepo_oaipmh_harvester import __version__
from oarepo_oaipmh_harvester.protocol.errors import (
    BadResumptionToken,
    MalformedResponse,
    OAITransportError,
)
from oarepo_oaipmh_harvester.protocol.options import DEFAULT_USER_AGENT
from oarepo_oaipmh_harvester.protocol.transport import _backoff

from .wire import Reply, envelope, error, identify, record, records_page

XML = {"Content-Type": "text/xml; charset=utf-8"}


def ok(*identifiers: str) -> Reply:
    return Reply(body=records_page(*(record(i) for i in identifiers)), headers=XML)


def test_retries_5xx_then_succeeds(server, client) -> None:
    server.answer_in_order(Reply(503), Reply(502), Reply(500), ok("a"))
    assert [r.identifier for r in client.list_records("oai_dc")] == ["a"]
    assert len(server.hits) == 4
    assert client.request_count == 1  # logical requests: retries are not counted


def test_retries_429(server, client) -> None:
    server.answer_in_order(Reply(429, headers={"Retry-After": "0"}), ok("a"))
    assert len(list(client.list_records("oai_dc"))) == 1
    assert len(server.hits) == 2


def test_retry_count_is_bounded(server, make_client) -> None:
    client = make_client(server.base_url, max_retries=2)
    server.answer(lambda hit: Reply(500, "boom"))
    with pytest.raises(OAITransportError) as caught:
        client.identify()
    assert len(server.hits) == 3
    assert caught.value.status_code == 500
    assert "HTTP 500" in str(caught.value) and "after 2 retries" in str(caught.value)
    assert server.base_url in str(caught.value)


def test_no_retries_when_max_retries_is_zero(server, make_client) -> None:
    client = make_client(server.base_url, max_retries=0)
    server.answer(lambda hit: Reply(503))
    with pytest.raises(OAITransportError):
        client.identify()
    assert len(server.hits) == 1


@pytest.mark.parametrize("status", [401, 403, 404])
def test_auth_and_not_found_fail_at_once(server, make_client, status: int) -> None:
    client = make_client(server.base_url, max_retries=5)
    server.answer(lambda hit: Reply(status, "no", headers={"Retry-After": "0"}))
    with pytest.raises(OAITransportError) as caught:
        client.identify()
    assert len(server.hits) == 1
    assert caught.value.status_code == status
    assert f"HTTP {status}" in str(caught.value)
    assert server.base_url in str(caught.value) and caught.value.url.startswith(server.base_url)


def gap(server, first: int = 0) -> float:
    """Seconds between request ``first`` and the next one, as the server saw them."""
    return server.hits[first + 1].at - server.hits[first].at


def test_retry_after_seconds_is_followed(server, make_client) -> None:
    # Without the header the wait would be the backoff (about 1 ms); with it ignored and the
    # budget used instead it would be 5 s: only following the header gives about 1 s.
    client = make_client(server.base_url, backoff_factor=0.001, max_retry_wait=5.0)
    server.answer_in_order(Reply(503, headers={"Retry-After": "1"}), ok("a"))
    assert [r.identifier for r in client.list_records("oai_dc")] == ["a"]
    assert len(server.hits) == 2
    assert 1.0 <= gap(server) < 2.5


def test_retry_after_zero_wins_over_a_long_backoff(server, make_client) -> None:
    # The backoff alone would wait 5-10 s (capped at 4 s); the provider asks for none.
    client = make_client(server.base_url, backoff_factor=10.0, max_retry_wait=4.0)
    server.answer_in_order(Reply(429, headers={"Retry-After": "0"}), ok("a"))
    assert len(list(client.list_records("oai_dc"))) == 1
    assert len(server.hits) == 2
    assert gap(server) < 2.0  # far from the 4 s of the backoff, with room for a busy machine


def test_retry_after_seconds_is_capped_by_max_retry_wait(server, make_client) -> None:
    client = make_client(server.base_url, max_retry_wait=0.3)
    server.answer_in_order(Reply(503, headers={"Retry-After": "3600"}), ok("a"))
    assert len(list(client.list_records("oai_dc"))) == 1
    # waited the capped 0.3 s: not the backoff (1 ms), not an hour
    assert 0.28 <= gap(server) < 1.5


def test_retry_after_http_date_is_followed(server, make_client) -> None:
    client = make_client(server.base_url, backoff_factor=0.001, max_retry_wait=10.0)
    # HTTP dates have whole seconds: "in 3 s" means a wait of 2-3 s from now.
    in_three_seconds = formatdate(time.time() + 3, usegmt=True)
    server.answer_in_order(Reply(429, headers={"Retry-After": in_three_seconds}), ok("a"))
    assert len(list(client.list_records("oai_dc"))) == 1
    assert 1.5 <= gap(server) < 4.5


def test_retry_after_http_date_is_capped_by_max_retry_wait(server, make_client) -> None:
    client = make_client(server.base_url, max_retry_wait=0.3)
    in_an_hour = formatdate(time.time() + 3600, usegmt=True)
    server.answer_in_order(Reply(429, headers={"Retry-After": in_an_hour}), ok("a"))
    list(client.list_records("oai_dc"))
    assert 0.28 <= gap(server) < 1.5


def test_garbage_retry_after_falls_back_to_backoff(server, make_client) -> None:
    # backoff_factor 0.2: the first retry waits 0.1-0.2 s (equal jitter)
    client = make_client(server.base_url, backoff_factor=0.2, max_retry_wait=5.0)
    server.answer_in_order(Reply(503, headers={"Retry-After": "soon-ish"}), ok("a"))
    assert len(list(client.list_records("oai_dc"))) == 1
    assert len(server.hits) == 2
    assert 0.09 <= gap(server) < 2.0  # not the 5 s budget either


def test_total_retry_wait_is_bounded(server, make_client) -> None:
    client = make_client(server.base_url, max_retries=10, max_retry_wait=0.3)
    server.answer(lambda hit: Reply(503, headers={"Retry-After": "1"}))
    with pytest.raises(OAITransportError) as caught:
        client.identify()
    # one capped wait of 0.3 s uses up the budget; the next one would exceed it
    assert len(server.hits) == 2
    assert 0.28 <= gap(server) < 0.9  # the capped wait, not the 1 s asked for
    assert caught.value.status_code == 503


def test_backoff_is_exponential_with_jitter() -> None:
    for retry in range(1, 6):
        base = 2.0 * 2 ** (retry - 1)
        waits = {_backoff(2.0, retry) for _ in range(50)}
        assert all(base / 2 <= wait <= base for wait in waits)
        assert len(waits) > 1  # jittered
    assert _backoff(0, 3) == 0


def test_read_timeout_is_retried_then_fails(server, make_client) -> None:
    client = make_client(server.base_url, timeout=(1.0, 0.1), max_retries=1)
    server.answer(lambda hit: Reply(body=identify(), headers=XML, delay=0.4))
    with pytest.raises(OAITransportError) as caught:
        client.identify()
    assert caught.value.status_code is None
    assert "timeout" in str(caught.value)
    assert len(server.hits) == 2


def test_read_timeout_then_success(server, make_client) -> None:
    client = make_client(server.base_url, timeout=(1.0, 0.2))
    server.answer_in_order(
        Reply(body=identify(), headers=XML, delay=0.5), Reply(body=identify(), headers=XML)
    )
    assert client.identify().repository_name == "Canned"
    assert len(server.hits) == 2  # the slow answer timed out and was retried
    assert client.request_count == 1


def test_connection_refused_after_retries(make_client, caplog) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = make_client(f"http://127.0.0.1:{port}/oai", max_retries=2)
    with caplog.at_level("WARNING", logger="oarepo_oaipmh_harvester.protocol.retry"):
        with pytest.raises(OAITransportError) as caught:
            client.identify()
    assert caught.value.status_code is None
    assert f"127.0.0.1:{port}" in str(caught.value)
    assert "connection failed" in str(caught.value)
    # Nothing answers on the port, so the retries show only in what the client logs.
    retries = [
        r.getMessage()
        for r in caplog.records
        if r.name == "oarepo_oaipmh_harvester.protocol.retry"
        and r.getMessage().startswith("Retrying")
    ]
    assert len(retries) == 2 and all("connection failed" in m for m in retries)


def test_connection_dropped_mid_body_is_retried(server, client) -> None:
    server.answer_in_order(
        Reply(body=records_page(record("a")), headers=XML, truncate=True), ok("a")
    )
    assert [r.identifier for r in client.list_records("oai_dc")] == ["a"]
    assert len(server.hits) == 2


def test_connection_dropped_mid_body_every_time(server, make_client) -> None:
    client = make_client(server.base_url, max_retries=1)
    server.answer(lambda hit: Reply(body=identify(), headers=XML, truncate=True))
    with pytest.raises(OAITransportError, match="Reading the response"):
        client.identify()
    assert len(server.hits) == 2


def test_oai_error_sent_with_an_http_error_status(server, client) -> None:
    server.answer(lambda hit: Reply(400, envelope(error("badResumptionToken", "old")), XML))
    with pytest.raises(BadResumptionToken):
        client.get_record("x", "oai_dc")


@pytest.mark.parametrize("status", [500, 503])
def test_oai_error_sent_with_a_server_error_status_after_the_retries(
    server, make_client, status
) -> None:
    """A 5xx is retried first (it may pass); if it stays, its OAI-PMH error document decides."""
    client = make_client(server.base_url, max_retries=1, backoff_factor=0.01)
    server.answer(lambda hit: Reply(status, envelope(error("noRecordsMatch", "none")), XML))
    assert list(client.list_records("oai_dc")) == []
    assert len(server.hits) == 2


def test_default_user_agent_and_accept_encoding(server, client) -> None:
    server.answer(lambda hit: identify())
    client.identify()
    headers = server.hits[0].headers
    assert headers["user-agent"] == DEFAULT_USER_AGENT
    assert headers["user-agent"] == (
        f"oarepo-oaipmh-harvester/{__version__} "
        "(+https://github.com/oarepo/oarepo-oaipmh-harvester)"
    )
    assert "gzip" in headers["accept-encoding"] and "deflate" in headers["accept-encoding"]


def test_custom_user_agent(server, make_client) -> None:
    client = make_client(server.base_url, user_agent="my-harvester/1.0 (mailto:x@example.org)")
    server.answer(lambda hit: identify())
    client.identify()
    assert server.hits[0].headers["user-agent"] == "my-harvester/1.0 (mailto:x@example.org)"


@pytest.mark.parametrize(
    ("name", "compress"),
    [("gzip", gzip.compress), ("deflate", zlib.compress)],
)
def test_compressed_responses(server, client, name, compress) -> None:
    body = compress(records_page(record("a", "Žluťoučký kůň")).encode("utf-8"))
    server.answer(lambda hit: Reply(body=body, headers={**XML, "Content-Encoding": name}))
    (only,) = client.list_records("oai_dc")
    assert only.metadata is not None and "Žluťoučký kůň" in only.xml


def test_request_delay_spaces_requests(server, make_client) -> None:
    client = make_client(server.base_url, request_delay=0.15)
    server.answer(lambda hit: identify())
    for _ in range(3):
        client.identify()
    gaps = [
        later.at - earlier.at for earlier, later in zip(server.hits, server.hits[1:], strict=False)
    ]
    assert all(gap >= 0.14 for gap in gaps)


def test_response_size_limit_by_content_length(server, make_client) -> None:
    client = make_client(server.base_url, max_response_bytes=1000)
    server.answer(lambda hit: records_page(*(record(str(i)) for i in range(20))))
    with pytest.raises(MalformedResponse, match="max_response_bytes"):
        client.list_records("oai_dc")


def test_response_size_limit_without_content_length(server, make_client) -> None:
    client = make_client(server.base_url, max_response_bytes=1000)
    big = records_page(*(record(str(i)) for i in range(20)))
    server.answer(lambda hit: Reply(body=big, headers=XML, no_length=True))
    with pytest.raises(MalformedResponse, match="max_response_bytes"):
        client.list_records("oai_dc")


def test_response_size_limit_counts_decompressed_bytes(server, make_client) -> None:
    client = make_client(server.base_url, max_response_bytes=100_000)
    bomb = gzip.compress(b"<" + b" " * 5_000_000)
    assert len(bomb) < 100_000
    server.answer(lambda hit: Reply(body=bomb, headers={**XML, "Content-Encoding": "gzip"}))
    with pytest.raises(MalformedResponse, match="larger than"):
        client.identify()


def test_caller_session_is_used_and_left_open(server, make_client) -> None:
    session = requests.Session()
    session.headers["X-Extra"] = "yes"
    client = make_client(server.base_url, session=session)
    server.answer_in_order(Reply(503), Reply(body=identify(), headers=XML))
    client.identify()
    assert server.hits[-1].headers["x-extra"] == "yes"
    assert len(server.hits) == 2  # our retries were mounted for this provider
    adapter = session.get_adapter(server.base_url)
    assert len(adapter.poolmanager.pools) == 1  # a pooled connection to the provider
    client.close()
    assert len(adapter.poolmanager.pools) == 1  # not closed by the client
    session.close()
    assert len(adapter.poolmanager.pools) == 0


def test_base_url_must_be_http() -> None:
    from oarepo_oaipmh_harvester.protocol.client import OAIClient

    for bad in ("ftp://example.org/oai", "example.org/oai", ""):
        with pytest.raises(ValueError, match="base URL"):
            OAIClient(bad)
