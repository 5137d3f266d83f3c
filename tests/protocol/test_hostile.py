"""A hostile provider on 127.0.0.1: redirects, secrets in bodies, forbidden addresses and
trickling answers (real HTTP, nothing mocked but the operating system's name resolver in
the rebinding tests)."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator

import pytest
import requests

from oarepo_oaipmh_harvester.protocol.errors import (
    ForbiddenAddress,
    MalformedResponse,
    OAIHarvestError,
    OAITransportError,
    RedirectNotAllowed,
    RequestDeadlineExceeded,
)
from oarepo_oaipmh_harvester.protocol.networks import (
    DEFAULT_FORBIDDEN_NETWORKS,
    LOOPBACK_AND_PRIVATE_NETWORKS,
    check_url_allowed,
)

from .wire import CannedServer, Reply, identify

XML = {"Content-Type": "text/xml; charset=utf-8"}
SECRET = "AKIA-SECRET-7f3a9"


@pytest.fixture
def other() -> Iterator[CannedServer]:
    """A second server: another port, so another origin."""
    canned = CannedServer()
    yield canned
    canned.stop()


def moved(location: str, status: int = 302) -> Reply:
    return Reply(status, "", headers={"Location": location})


# -- redirects ------------------------------------------------------------------------------


def test_redirect_within_the_origin_is_followed(server, client) -> None:
    def responder(hit):
        if hit.path == "/oai":
            return moved(f"/new/oai?{hit.query}", 301)
        return Reply(body=identify(), headers=XML)

    server.answer(responder)
    assert client.identify().repository_name == "Canned"
    assert [hit.path for hit in server.hits] == ["/oai", "/new/oai"]
    assert server.hits[1].args == {"verb": "Identify"}


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_redirect_to_another_origin_is_refused(server, other, client, status) -> None:
    server.answer(lambda hit: moved(f"{other.base_url}?{hit.query}", status))
    other.answer(lambda hit: Reply(body=identify(), headers=XML))
    with pytest.raises(RedirectNotAllowed) as caught:
        client.identify()
    assert other.hits == []  # never contacted
    port = other.base_url.split(":")[2].split("/")[0]
    assert caught.value.target_origin == f"http://127.0.0.1:{port}"
    assert caught.value.status_code == status
    assert "another origin" in str(caught.value) and "allowed_redirect_origins" in str(caught.value)


def test_redirect_to_another_scheme_is_another_origin(server, client) -> None:
    https = server.base_url.replace("http://", "https://")
    server.answer(lambda hit: moved(https))
    with pytest.raises(RedirectNotAllowed):
        client.identify()
    assert len(server.hits) == 1  # the https URL was never tried


def test_cross_origin_redirect_when_allowed(server, other, make_client) -> None:
    server.answer(lambda hit: moved(f"{other.base_url}?{hit.query}"))
    other.answer(lambda hit: Reply(body=identify(), headers=XML))
    for options in (
        {"allow_cross_origin_redirects": True},
        {"allowed_redirect_origins": (other.base_url.rsplit("/", 1)[0] + "/",)},
    ):
        client = make_client(server.base_url, **options)
        assert client.identify().repository_name == "Canned"
    assert len(other.hits) == 2


def test_redirect_loop_is_bounded(server, make_client) -> None:
    client = make_client(server.base_url, max_redirects=3)
    server.answer(lambda hit: moved(f"/oai?{hit.query}"))
    with pytest.raises(OAITransportError, match="max_redirects"):
        client.identify()
    assert len(server.hits) == 4  # the request and three redirects followed


# -- nothing of a body in an exception message -----------------------------------------------

LEAKY_BODIES = {
    "text": (f"internal config: password={SECRET}\n", "text/plain"),
    "html": (f"<html><body><p>{SECRET}</p></body></html>", "text/html"),
    "broken html": (f"<html><body><{SECRET}><p>{SECRET}</body></html>", "text/html"),
    "other xml": (f"<{SECRET}>{SECRET}</{SECRET}>", "application/xml"),
    "json": (f'{{"AccessKeyId": "{SECRET}"}}', "application/json"),
}


@pytest.mark.parametrize("status", [200, 500])
@pytest.mark.parametrize("kind", sorted(LEAKY_BODIES))
def test_body_never_enters_the_error_message(server, make_client, caplog, kind, status) -> None:
    body, content_type = LEAKY_BODIES[kind]
    client = make_client(server.base_url, max_retries=0)
    server.answer(lambda hit: Reply(status, body, headers={"Content-Type": content_type}))
    caplog.set_level(logging.DEBUG)
    with pytest.raises(OAIHarvestError) as caught:
        client.identify()
    message = str(caught.value)
    assert SECRET.lower() not in message.lower()
    assert f"{len(body.encode())} bytes" in message  # what was wrong, in numbers
    assert content_type in message
    if status == 200:
        assert isinstance(caught.value, MalformedResponse)
        assert "not an OAI-PMH" in message
        # The site's log gets a digest to recognise the body by, never the body itself.
        assert "sha256" in caplog.text
    else:
        assert isinstance(caught.value, OAITransportError) and "HTTP 500" in message
    assert SECRET.lower() not in caplog.text.lower()


def test_redirected_secret_does_not_leak(server, other, make_client) -> None:
    client = make_client(server.base_url, allow_cross_origin_redirects=True)
    server.answer(lambda hit: moved(other.base_url))
    other.answer(lambda hit: Reply(body=f"token {SECRET}", headers={"Content-Type": "text/plain"}))
    with pytest.raises(MalformedResponse) as caught:
        client.identify()
    assert SECRET not in str(caught.value)


def test_provider_reason_phrase_is_not_repeated(server, make_client) -> None:
    client = make_client(server.base_url, max_retries=0)
    server.answer(lambda hit: Reply(403, ""))
    with pytest.raises(OAITransportError) as caught:
        client.identify()
    assert "HTTP 403 Forbidden" in str(caught.value)  # the standard phrase, not the server's


# -- forbidden networks ----------------------------------------------------------------------


def test_check_url_allowed_refuses_the_metadata_address() -> None:
    with pytest.raises(ForbiddenAddress) as caught:
        check_url_allowed("http://169.254.169.254/latest/meta-data/", DEFAULT_FORBIDDEN_NETWORKS)
    assert "provider address 169.254.169.254 is in a forbidden network 169.254.0.0/16" in str(
        caught.value
    )
    assert (caught.value.address, caught.value.network) == ("169.254.169.254", "169.254.0.0/16")
    for url in ("http://[fe80::1]/oai", "http://[::ffff:169.254.169.254]/oai"):
        with pytest.raises(ForbiddenAddress):
            check_url_allowed(url)


def test_default_allows_loopback_and_private_addresses(server, client) -> None:
    check_url_allowed(server.base_url)  # the demo provider and intranet providers work
    check_url_allowed("http://10.1.2.3/oai")
    check_url_allowed("http://[::1]/oai")
    server.answer(lambda hit: identify())
    assert client.identify().repository_name == "Canned"


def test_site_can_forbid_loopback_and_private_networks(server, make_client) -> None:
    networks = DEFAULT_FORBIDDEN_NETWORKS + LOOPBACK_AND_PRIVATE_NETWORKS
    with pytest.raises(ForbiddenAddress, match="127.0.0.0/8"):
        check_url_allowed(server.base_url, networks)
    client = make_client(server.base_url, forbidden_networks=networks)
    server.answer(lambda hit: identify())
    with pytest.raises(ForbiddenAddress) as caught:
        client.identify()
    assert server.hits == []  # refused before connecting
    assert caught.value.url.startswith(server.base_url)
    assert "provider address 127.0.0.1 is in a forbidden network 127.0.0.0/8" in str(caught.value)


def test_client_refuses_the_metadata_address_by_default(make_client) -> None:
    client = make_client("http://169.254.169.254/oai")
    with pytest.raises(ForbiddenAddress, match="169.254.0.0/16"):
        client.identify()


@pytest.fixture
def second_loopback() -> Iterator[CannedServer]:
    canned = CannedServer(host="127.0.0.2")
    yield canned
    canned.stop()


def test_redirect_into_a_forbidden_network_is_refused(server, second_loopback, make_client):
    client = make_client(
        server.base_url, allow_cross_origin_redirects=True, forbidden_networks=("127.0.0.2/32",)
    )
    server.answer(lambda hit: moved(second_loopback.base_url))
    second_loopback.answer(lambda hit: identify())
    with pytest.raises(ForbiddenAddress, match="127.0.0.2"):
        client.identify()
    assert second_loopback.hits == []


@pytest.fixture
def rebinding(monkeypatch) -> Iterator[tuple[CannedServer, CannedServer, list[str]]]:
    """``rebind.test`` resolves to 127.0.0.1 and 127.0.0.2 in turn (same port on both)."""
    allowed = CannedServer(host="127.0.0.1")
    port = int(allowed.base_url.split(":")[2].split("/")[0])
    forbidden = CannedServer(host="127.0.0.2", port=port)
    answers: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if host != "rebind.test":
            return real(host, *args, **kwargs)
        address = "127.0.0.1" if len(answers) % 2 == 0 else "127.0.0.2"
        answers.append(address)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, args[0] or port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield allowed, forbidden, answers
    allowed.stop()
    forbidden.stop()


def test_dns_rebinding_between_check_and_connect_is_refused(rebinding, make_client) -> None:
    allowed, forbidden, answers = rebinding
    for canned in (allowed, forbidden):
        canned.answer(lambda hit: identify())
    url = allowed.base_url.replace("127.0.0.1", "rebind.test")
    check_url_allowed(url, ("127.0.0.2/32",))  # the preflight sees 127.0.0.1
    client = make_client(url, forbidden_networks=("127.0.0.2/32",))
    with pytest.raises(ForbiddenAddress, match="127.0.0.2"):
        client.identify()  # the connection resolves anew, gets 127.0.0.2, refuses
    assert forbidden.hits == []
    # The next connection resolves to 127.0.0.1 and goes exactly there: one resolution per
    # connection, and the checked address is the one connected to.
    assert client.identify().repository_name == "Canned"
    assert answers == ["127.0.0.1", "127.0.0.2", "127.0.0.1"]
    assert len(allowed.hits) == 1 and forbidden.hits == []


def test_a_name_with_any_forbidden_address_is_refused(monkeypatch, server) -> None:
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        if host != "mixed.test":
            return real(host, *args, **kwargs)
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", 80)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("169.254.169.254", 80)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    with pytest.raises(ForbiddenAddress, match="169.254.169.254"):
        check_url_allowed("http://mixed.test/oai")


# -- a total deadline per request --------------------------------------------------------------


def test_trickled_body_is_cut_at_the_request_deadline(server, make_client) -> None:
    # One byte every 50 ms never trips a read timeout of 1 s; the whole body would take 40 s.
    client = make_client(server.base_url, timeout=(1.0, 1.0), request_deadline=0.5)
    body = identify()
    server.answer(lambda hit: Reply(body=body, headers=XML, trickle=0.05))
    with pytest.raises(RequestDeadlineExceeded) as caught:
        client.identify()
    assert "request_deadline" in str(caught.value) and "0.5s" in str(caught.value)
    assert caught.value.limit == "request_deadline"
    assert server.finished.wait(10)
    assert server.sent[0] < len(body) // 4  # the connection was dropped early
    assert len(server.hits) == 1  # not retried


def test_trickled_body_without_length_is_not_taken_as_complete(server, make_client) -> None:
    # Without Content-Length, the end of the body is the end of the connection: the cut must
    # still be reported as the deadline, never as a short but complete response.
    client = make_client(server.base_url, timeout=(1.0, 1.0), request_deadline=0.5)
    body = identify()
    server.answer(lambda hit: Reply(body=body, headers=XML, trickle=0.05, no_length=True))
    with pytest.raises(RequestDeadlineExceeded):
        client.identify()
    assert server.finished.wait(10)
    assert server.sent[0] < len(body) // 4
    assert len(server.hits) == 1


def test_trickled_headers_are_cut_at_the_request_deadline(server, make_client) -> None:
    client = make_client(server.base_url, timeout=(1.0, 1.0), request_deadline=0.5)
    server.answer(
        lambda hit: Reply(body=identify(), headers=XML, trickle=0.05, trickle_headers=True)
    )
    with pytest.raises(RequestDeadlineExceeded):
        client.identify()
    assert server.finished.wait(10)
    assert server.sent[0] == 0  # not even the headers were complete
    assert len(server.hits) == 1


def test_waiting_to_retry_does_not_count_against_the_deadline(server, make_client) -> None:
    client = make_client(
        server.base_url, request_deadline=0.5, max_retry_wait=5.0, backoff_factor=0.001
    )
    server.answer_in_order(
        Reply(503, headers={"Retry-After": "1"}), Reply(body=identify(), headers=XML)
    )
    assert client.identify().repository_name == "Canned"
    assert len(server.hits) == 2 and server.hits[1].at - server.hits[0].at >= 1.0


def test_slow_answer_within_the_deadline_is_read(server, make_client) -> None:
    client = make_client(server.base_url, timeout=(1.0, 1.0), request_deadline=10.0)
    server.answer(lambda hit: Reply(body=identify(), headers=XML, trickle=0.01, trickle_size=200))
    assert client.identify().repository_name == "Canned"


# -- the same guarantees over TLS and on a caller's session -------------------------------------


@pytest.fixture
def tls_server(tmp_path) -> Iterator[tuple[CannedServer, requests.Session]]:
    """A CannedServer speaking HTTPS with a fresh self-signed certificate for 127.0.0.1."""
    import datetime
    import ipaddress
    import ssl

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    canned = CannedServer()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    canned._server.socket = context.wrap_socket(canned._server.socket, server_side=True)
    canned.base_url = canned.base_url.replace("http://", "https://")
    session = requests.Session()
    session.trust_env = False  # no CA bundle from the environment: trust this certificate
    session.verify = str(cert_file)
    yield canned, session
    session.close()
    canned.stop()


def test_https_connections_are_guarded_and_deadlined(tls_server, make_client) -> None:
    server, session = tls_server
    server.answer(lambda hit: identify())
    assert make_client(server.base_url, session=session).identify().repository_name == "Canned"
    refusing = make_client(server.base_url, session=session, forbidden_networks=("127.0.0.0/8",))
    with pytest.raises(ForbiddenAddress, match="127.0.0.0/8"):
        refusing.identify()
    assert len(server.hits) == 1
    server.answer(lambda hit: Reply(body=identify(), headers=XML, trickle=0.05))
    slow = make_client(server.base_url, session=session, timeout=(1, 1), request_deadline=0.5)
    with pytest.raises(RequestDeadlineExceeded):
        slow.identify()


def test_each_client_on_a_shared_session_keeps_its_own_networks(server, make_client) -> None:
    session = requests.Session()
    server.answer(lambda hit: identify())
    allowing = make_client(server.base_url, session=session)
    refusing = make_client(server.base_url, session=session, forbidden_networks=("127.0.0.0/8",))
    with pytest.raises(ForbiddenAddress):
        refusing.identify()
    assert server.hits == []
    # A caller's own adapter (here: a plain subclass) is kept, and the name checked before use.
    session.mount(server.base_url, type("Custom", (requests.adapters.HTTPAdapter,), {})())
    custom = make_client(server.base_url, session=session, forbidden_networks=("127.0.0.0/8",))
    with pytest.raises(ForbiddenAddress):
        custom.identify()
    assert server.hits == []
    assert allowing.identify().repository_name == "Canned"
    session.close()
