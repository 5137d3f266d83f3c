"""FileFetcher against a real local HTTP server: hosts, networks, redirects, sizes, checksums,
deadlines, retries, conditional requests, politeness and bounded memory."""

from __future__ import annotations

import hashlib
import pickle
import threading
import time
from collections.abc import Callable, Iterator
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from oarepo_oaipmh_harvester.protocol.credentials import ProviderCredentials
from oarepo_oaipmh_harvester.protocol.download_errors import host_allowed
from oarepo_oaipmh_harvester.protocol.downloads import (
    FetchedFile,
    FileFetcher,
    FileFetchError,
    FileNotModified,
    FileSource,
)


def payload(size: int) -> bytes:
    return bytes(i % 251 for i in range(size))


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients hang up on purpose here


class FileServer:
    """Serves files on 127.0.0.1; ``routes`` maps a path to a handler function."""

    def __init__(self) -> None:
        self.hits: list[tuple[str, dict[str, str]]] = []
        self.counts: dict[str, int] = {}
        self.active = 0
        self.peak = 0
        self.lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.files = self  # type: ignore[attr-defined]
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: C901 - one route table
        files: FileServer = self.server.files  # type: ignore[attr-defined]
        parts = urlsplit(self.path)
        route, query = parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}
        with files.lock:
            files.hits.append((route, dict(self.headers)))
            count = files.counts[route] = files.counts.get(route, 0) + 1
            files.active += 1
            files.peak = max(files.peak, files.active)
        try:
            self._route(files, route, query, count)
        finally:
            with files.lock:
                files.active -= 1

    def _send(self, status: int, body: bytes = b"", **headers: str) -> None:
        self.send_response(status)
        headers = {name.replace("_", "-"): value for name, value in headers.items()}
        headers.setdefault("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _route(self, files: FileServer, route: str, query: dict[str, str], count: int) -> None:
        size = int(query.get("size", "1000"))
        if route == "/file":
            self._send(200, payload(size), Content_Type="application/pdf; charset=binary")
        elif route == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            data = payload(size)
            for start in range(0, len(data), 4096):
                piece = data[start : start + 4096]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
        elif route == "/big":
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            block = b"x" * (1 << 20)
            left = size
            while left > 0:
                self.wfile.write(block[: min(left, len(block))])
                left -= len(block)
        elif route == "/redirect":
            self._send(int(query.get("status", "302")), Location=query["to"])
        elif route == "/loop":
            self._send(302, Location=f"/loop?n={count}")
        elif route == "/drip":
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            for _ in range(size):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.05)
        elif route == "/busy":  # 503 for the first `fail` requests
            if count <= int(query.get("fail", "1")):
                after = query.get("after", "0")
                if after == "date":
                    after = formatdate(time.time() + 2, usegmt=True)
                self._send(503, b"busy", Retry_After=after)
            else:
                self._send(200, payload(size))
        elif route == "/status":
            self._send(int(query["code"]), b"no")
        elif route == "/conditional":
            if self.headers.get("If-None-Match") == '"v1"':
                self._send(304, b"")
            else:
                self._send(200, payload(size), ETag='"v1"', Last_Modified="Mon, 01 Jan 2024 0")
        elif route == "/short":  # announces more than it sends, then hangs up
            self._send(200, payload(size)[: size // 2], Content_Length=str(size))
            self.close_connection = True
        elif route == "/long":  # sends more than it announces
            self._send(200, payload(size) * 2, Content_Length=str(size))
            self.close_connection = True
        elif route == "/broken-once":  # the first answer breaks off mid-body, after more
            if count == 1:  # bytes than the whole file has
                self.send_response(200)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                junk = b"j" * (size * 2)
                self.wfile.write(b"%x\r\n%s\r\n" % (len(junk), junk))
                self.close_connection = True  # no last chunk: the body is cut
            else:
                self._send(200, payload(size))
        elif route == "/slow":
            time.sleep(0.15)
            self._send(200, payload(size))
        else:
            self._send(404)


@pytest.fixture
def server() -> Iterator[FileServer]:
    files = FileServer()
    yield files
    files.stop()


@pytest.fixture
def fetcher(server: FileServer) -> Iterator[Callable[..., FileFetcher]]:
    made: list[FileFetcher] = []

    def make(**kwargs: Any) -> FileFetcher:
        options: dict[str, Any] = {
            "max_size": 10_000_000,
            "forbidden_networks": (),
            "backoff_factor": 0.01,
            "max_retry_wait": 5.0,
            "timeout": (2.0, 5.0),
            "deadline": 10.0,
            **kwargs,
        }
        made.append(FileFetcher(server.url("/oai"), **options))
        return made[-1]

    yield make
    for one in made:
        one.close()


def fetch(fetcher: FileFetcher, source: FileSource | str) -> tuple[FetchedFile, bytes]:
    if isinstance(source, str):
        source = FileSource(source)
    with fetcher.download(source) as (fetched, body):
        return fetched, body.read()


def failure(fetcher: FileFetcher, source: FileSource | str) -> FileFetchError:
    with pytest.raises(FileFetchError) as caught:
        fetch(fetcher, source)
    error = caught.value
    assert "Traceback" not in error.reason
    assert error.reason.count(". ") <= 2  # one or two sentences
    return error


# -- the file, its size and its checksum ----------------------------------------------------


def test_a_file_arrives_with_md5_mimetype_and_the_temporary_file_goes(server, fetcher) -> None:
    data = payload(5000)
    source = FileSource(server.url("/file?size=5000"))
    with fetcher().download(source) as (fetched, body):
        assert body.tell() == 0
        assert body.read() == data
        name = body.name
    assert fetched.size == 5000
    assert fetched.checksum == f"md5:{hashlib.md5(data).hexdigest()}"
    assert fetched.verified is False
    assert fetched.mimetype == "application/pdf"
    assert fetched.url == source.url
    assert body.closed and isinstance(name, int)  # anonymous, gone once closed


@pytest.mark.parametrize("algorithm", ["md5", "SHA1", "sha256", "Sha512"])
def test_a_given_checksum_is_verified(server, fetcher, algorithm) -> None:
    digest = hashlib.new(algorithm.lower(), payload(3000)).hexdigest().upper()
    source = FileSource(server.url("/file?size=3000"), checksum=f"{algorithm}:{digest}")
    fetched, _ = fetch(fetcher(), source)
    assert fetched.verified is True
    assert fetched.checksum == f"md5:{hashlib.md5(payload(3000)).hexdigest()}"


def test_a_wrong_checksum_fails_and_is_not_retried(server, fetcher) -> None:
    url = server.url("/file?size=3000")
    error = failure(fetcher(), FileSource(url, checksum="sha256:" + "0" * 64))
    assert not error.retryable
    assert url in error.reason and "sha256 checksum" in error.reason
    assert server.counts["/file"] == 1


def test_a_malformed_checksum_is_refused_before_fetching(server, fetcher) -> None:
    error = failure(fetcher(), FileSource(server.url("/file"), checksum="crc32:abcd"))
    assert not error.retryable and "crc32" not in server.counts
    assert "/file" not in server.counts


def test_chunked_bodies_are_counted_too(server, fetcher) -> None:
    fetched, data = fetch(fetcher(), server.url("/chunked?size=50000"))
    assert data == payload(50000) and fetched.size == 50000


def test_a_declared_length_above_max_size_fails_before_reading(server, fetcher) -> None:
    error = failure(fetcher(max_size=1000), server.url("/file?size=5000"))
    assert "5000 bytes long (Content-Length)" in error.reason and "max_size" in error.reason
    assert not error.retryable


def test_a_body_beyond_max_size_is_cut_off(server, fetcher) -> None:
    error = failure(fetcher(max_size=10_000, chunk_size=4096), server.url("/chunked?size=90000"))
    assert "larger than the allowed 10000 bytes" in error.reason and not error.retryable


def test_an_expected_size_that_differs_fails(server, fetcher) -> None:
    url = server.url("/file?size=3000")
    error = failure(fetcher(), FileSource(url, expected_size=2999))
    assert "its record says 2999" in error.reason and not error.retryable
    error = failure(fetcher(), FileSource(server.url("/chunked?size=3000"), expected_size=3001))
    assert "arrived with 3000 bytes" in error.reason
    error = failure(fetcher(max_size=100), FileSource(url, expected_size=3000))
    assert "max_size" in error.reason and server.counts["/file"] == 1


def test_a_body_shorter_than_its_content_length_fails_after_retries(server, fetcher) -> None:
    error = failure(fetcher(retries=1), server.url("/short?size=4000"))
    assert "ended after 2000 of the 4000 bytes" in error.reason and error.retryable
    assert server.counts["/short"] == 2


def test_a_body_longer_than_its_content_length_fails(server, fetcher) -> None:
    error = failure(fetcher(), server.url("/long?size=4000"))
    assert "more bytes than the 4000" in error.reason and not error.retryable


def test_a_failure_mid_body_restarts_the_whole_file(server, fetcher) -> None:
    fetched, data = fetch(fetcher(), server.url("/broken-once?size=8000"))
    assert data == payload(8000) and fetched.size == 8000
    assert server.counts["/broken-once"] == 2


# -- hosts, networks, redirects, credentials ------------------------------------------------


def test_only_http_and_allowed_hosts(server, fetcher) -> None:
    error = failure(fetcher(), "ftp://127.0.0.1/file")
    assert "not an http(s) URL" in error.reason
    error = failure(fetcher(), server.url("/file", host="localhost"))
    assert "localhost" in error.reason and "files_hosts" in error.reason
    assert not error.retryable and server.hits == []
    fetched, _ = fetch(fetcher(allowed_hosts=["LOCALHOST"]), server.url("/file", "localhost"))
    assert fetched.size == 1000


def test_a_malformed_url_is_not_retried(server, fetcher) -> None:
    error = failure(fetcher(), "http://127.0.0.1:99999/file")
    assert "cannot be requested" in error.reason and not error.retryable
    error = failure(fetcher(), FileSource(server.url("/file"), etag='"a"\r\nX-Evil: 1'))
    assert not error.retryable and server.hits == []


def test_host_patterns() -> None:
    assert host_allowed("Provider.org", "provider.org", ())
    assert host_allowed("files.cdn.example.org", "provider.org", ["*.example.org"])
    assert not host_allowed("example.org", "provider.org", ["*.example.org"])
    assert not host_allowed("badexample.org", "provider.org", ["*.example.org"])
    assert not host_allowed("example.org.evil.com", "provider.org", ["example.org"])
    assert not host_allowed("sub.provider.org", "provider.org", ())


def test_redirects_are_followed_and_checked_again(server, fetcher) -> None:
    inner = server.url("/file?size=2000", host="localhost")
    url = server.url(f"/redirect?to={inner}")
    error = failure(fetcher(), url)
    assert "redirected to" in error.reason and "localhost" in error.reason
    fetched, _ = fetch(fetcher(allowed_hosts=["localhost"]), url)
    assert fetched.url == inner and fetched.size == 2000
    error = failure(fetcher(), server.url("/redirect?to=file:///etc/passwd&status=301"))
    assert "not an http(s) URL" in error.reason


def test_too_many_redirects(server, fetcher) -> None:
    error = failure(fetcher(max_redirects=3), server.url("/loop"))
    assert "more than 3 times" in error.reason and not error.retryable
    assert server.counts["/loop"] == 4


def test_forbidden_networks_are_refused_also_through_a_redirect(server, fetcher) -> None:
    error = failure(fetcher(forbidden_networks=("127.0.0.0/8",)), server.url("/file"))
    assert "forbidden network 127.0.0.0/8" in error.reason and not error.retryable
    assert server.hits == []
    # The provider's own address is allowed; the file it redirects to, 127.0.0.2, is not.
    guarded = fetcher(forbidden_networks=("127.0.0.2/32",), allowed_hosts=["127.0.0.2"])
    error = failure(guarded, server.url(f"/redirect?to={server.url('/file', '127.0.0.2')}"))
    assert "forbidden network 127.0.0.2/32" in error.reason and not error.retryable
    assert [route for route, _ in server.hits] == ["/redirect"]


def test_credentials_go_to_the_provider_origin_only(server, fetcher) -> None:
    secret = ProviderCredentials("harvester", "secret", headers={"X-Token": "t"})
    inner = server.url("/file", host="localhost")
    one = fetcher(credentials=secret, allowed_hosts=["localhost"])
    fetch(one, server.url(f"/redirect?to={inner}"))
    fetch(one, inner)
    (first, provider), (second, redirected), (third, direct) = server.hits
    assert first == "/redirect" and provider["Authorization"].startswith("Basic ")
    assert provider["X-Token"] == "t"
    for headers in (redirected, direct):
        assert "Authorization" not in headers and "X-Token" not in headers


# -- deadlines, retries, statuses, conditional requests --------------------------------------


def test_a_slow_drip_hits_the_whole_file_deadline(server, fetcher) -> None:
    started = time.monotonic()
    error = failure(fetcher(deadline=0.6, timeout=(2.0, 2.0)), server.url("/drip?size=200"))
    assert time.monotonic() - started < 2.0
    assert "deadline of 0.6s" in error.reason and error.retryable


def test_503_is_retried_honouring_retry_after(server, fetcher) -> None:
    started = time.monotonic()
    fetched, _ = fetch(fetcher(), server.url("/busy?fail=1&after=1"))
    assert time.monotonic() - started >= 1.0 and server.counts["/busy"] == 2
    assert fetched.size == 1000


def test_retry_after_as_an_http_date(server, fetcher) -> None:
    started = time.monotonic()
    fetch(fetcher(), server.url("/busy?fail=1&after=date"))
    assert time.monotonic() - started >= 0.9


def test_retries_end_and_say_so(server, fetcher) -> None:
    error = failure(fetcher(retries=2), server.url("/busy?fail=99"))
    assert "HTTP 503" in error.reason and "after 2 retries" in error.reason
    assert error.retryable and error.status_code == 503 and server.counts["/busy"] == 3
    error = failure(fetcher(max_retry_wait=5), server.url("/busy?fail=99&after=120"))
    assert "max_retry_wait" in error.reason and "Retry-After" in error.reason
    assert error.retryable


def test_a_server_that_is_not_there_is_retried(fetcher) -> None:
    error = failure(fetcher(retries=1), "http://127.0.0.1:9/file")
    assert "Could not fetch http://127.0.0.1:9/file" in error.reason and error.retryable


@pytest.mark.parametrize("code", [401, 403, 404, 410])
def test_refusals_are_not_retried(server, fetcher, code) -> None:
    error = failure(fetcher(), server.url(f"/status?code={code}"))
    assert f"HTTP {code}" in error.reason and not error.retryable
    assert error.status_code == code and server.counts["/status"] == 1
    assert pickle.loads(pickle.dumps(error)).retryable is False


def test_conditional_requests(server, fetcher) -> None:
    one = fetcher()
    fetched, _ = fetch(one, server.url("/conditional"))
    assert fetched.etag == '"v1"' and fetched.last_modified
    again = FileSource(server.url("/conditional"), etag=fetched.etag, last_modified="x")
    with pytest.raises(FileNotModified) as caught:
        fetch(one, again)
    assert server.url("/conditional") in str(caught.value)
    assert server.hits[-1][1]["If-None-Match"] == '"v1"'
    assert server.hits[-1][1]["If-Modified-Since"] == "x"
    assert pickle.loads(pickle.dumps(caught.value)).url == again.url


# -- politeness and memory ---------------------------------------------------------------------


def test_at_most_per_host_downloads_at_a_time(server, fetcher) -> None:
    shared = fetcher(per_host=2)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            fetch(shared if i % 2 else fetcher(per_host=2), server.url(f"/slow?size={i + 10}"))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert errors == [] and server.counts["/slow"] == 6
    assert server.peak == 2


def _fetch_in_processes(server: FileServer, slots_of: Callable[[], Any], processes: int) -> None:
    """`processes` forked processes (as a site's prefork workers are), each fetching two slow
    files at once from `server` with a fetcher whose slots `slots_of` makes in the child."""
    import multiprocessing

    def child(index: int) -> None:
        fetcher = FileFetcher(
            server.url("/oai"), max_size=10_000_000, forbidden_networks=(),
            timeout=(2.0, 5.0), deadline=10.0, per_host=2, host_slots=slots_of(),
        )  # fmt: skip
        threads = [
            threading.Thread(target=fetch, args=(fetcher, server.url(f"/slow?size={index}{i}")))
            for i in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)

    context = multiprocessing.get_context("fork")
    children = [context.Process(target=child, args=(index,)) for index in range(processes)]
    for process in children:
        process.start()
    for process in children:
        process.join(30)
    assert [process.exitcode for process in children] == [0] * processes
    assert server.counts["/slow"] == processes * 2


def test_per_host_holds_across_processes_that_count_in_redis(server) -> None:
    """Three forked processes, two downloads each: counted in Redis, two at a time reach the
    host; counted per process, more do (each process lets its own two through)."""
    redis = pytest.importorskip("redis")
    from oarepo_oaipmh_harvester.protocol.host_slots import ProcessHostSlots, RedisHostSlots

    url = "redis://127.0.0.1:6379/7"
    redis.Redis.from_url(url).flushdb()

    _fetch_in_processes(
        server, lambda: RedisHostSlots(redis.Redis.from_url(url), 2, lease=60.0), processes=3
    )
    assert server.peak == 2

    server.peak, server.counts = 0, {}
    _fetch_in_processes(server, lambda: ProcessHostSlots(2), processes=3)
    assert server.peak > 2
    assert redis.Redis.from_url(url).keys("oai-harvester:file-slots:*") == []


def test_a_slot_whose_holder_died_is_free_when_its_lease_ends(server) -> None:
    redis = pytest.importorskip("redis")
    from oarepo_oaipmh_harvester.protocol.host_slots import RedisHostSlots

    client = redis.Redis.from_url("redis://127.0.0.1:6379/7")
    client.flushdb()
    slots = RedisHostSlots(client, 1, lease=0.5, poll=0.02)
    held = slots.hold("files.example.org")
    held.__enter__()  # never released: its process "died"
    started = time.monotonic()
    with slots.hold("FILES.example.org"):
        waited = time.monotonic() - started
    assert 0.3 < waited < 3.0


def _rss() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def test_a_large_file_does_not_grow_memory(server, fetcher) -> None:
    size = 50 * 1024 * 1024
    baseline = _rss()
    peak = [baseline]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss())
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        source = FileSource(server.url(f"/big?size={size}"), expected_size=size)
        with fetcher(max_size=size).download(source) as (fetched, body):
            assert body.seek(0, 2) == size
    finally:
        done.set()
        sampler.join()
    assert fetched.size == size
    growth = peak[0] - baseline
    assert growth < 15 * 1024 * 1024, f"the resident set grew by {growth} bytes"
