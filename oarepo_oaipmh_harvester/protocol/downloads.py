"""Fetching a harvested record's files: from allowed hosts only, verified, bounded.

Decision owned here: how one file travels from a provider into a temporary file.  A URL is
fetched only over http(s) from the provider's own host or a host the harvester allows
(:func:`~.download_errors.check_file_url`); every connection goes through the
:class:`~.adapter.GuardedAdapter`, which refuses forbidden networks on the address actually
connected to; redirects are followed here, each target checked by the same rules, and the
provider's credentials go to its own origin only.  The body is streamed in chunks into a
temporary file while its size is counted and its digests computed: nothing holds the whole
file, a body larger than ``max_size`` is cut off, and the file is handed over only when its
size and checksum check out.  One deadline bounds the whole file, retries and waits included
(:mod:`.deadline`); connection failures and 429/5xx answers are retried with backoff,
honouring ``Retry-After``; a failure mid-body starts the file again.  At most ``per_host``
downloads run at the same time against one host: in this process, or across the site's
processes where the fetcher counts them in Redis (:mod:`.host_slots`).

The bytes are stored as sent: ``Accept-Encoding: identity`` is asked for and a
``Content-Encoding`` is not undone (a ``.gz`` file served as ``Content-Encoding: gzip``
stays the ``.gz`` file).  Each download uses a connection of its own, closed afterwards.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import BinaryIO
from urllib.parse import urljoin, urlsplit

import requests
from requests.utils import select_proxy

from . import deadline
from .adapter import GuardedAdapter
from .credentials import ProviderCredentials
from .download_body import AttemptFailed, FetchedFile, FileSource, receive
from .download_errors import (
    FileFetchError,
    FileNotModified,
    check_file_url,
    normalized_host,
    parse_checksum,
)
from .errors import ForbiddenAddress, OAITransportError, RequestDeadlineExceeded
from .host_slots import HostSlots, ProcessHostSlots
from .networks import DEFAULT_FORBIDDEN_NETWORKS, check_url_allowed, parse_networks
from .options import DEFAULT_USER_AGENT
from .retry import _backoff, describe_failure
from .transport import _socket_of, origin

log = logging.getLogger(__name__)

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# A malformed URL or header value: no retry can help.
_NOT_A_REQUEST = (
    requests.exceptions.InvalidURL,
    requests.exceptions.InvalidSchema,
    requests.exceptions.MissingSchema,
    requests.exceptions.InvalidHeader,
)


class FileFetcher:
    """Downloads the files of one provider's records (thread-safe: a session per thread)."""

    def __init__(
        self,
        provider_url: str,
        *,
        allowed_hosts: Sequence[str] = (),
        max_size: int,
        max_redirects: int = 5,
        deadline: float = 300.0,
        timeout: tuple[float, float] = (10.0, 60.0),
        forbidden_networks: Sequence[str] = DEFAULT_FORBIDDEN_NETWORKS,
        credentials: ProviderCredentials | None = None,
        per_host: int = 2,
        host_slots: HostSlots | None = None,
        retries: int = 3,
        max_retry_wait: float = 60.0,
        chunk_size: int = 1 << 20,
        user_agent: str | None = None,
        backoff_factor: float = 1.0,
    ) -> None:
        self.provider_url = provider_url
        self.provider_host = normalized_host(urlsplit(provider_url).hostname)
        self.origin = origin(provider_url)
        self.allowed_hosts = tuple(allowed_hosts)
        self.max_size = max_size
        self.max_redirects = max_redirects
        self.deadline = deadline
        self.timeout = timeout
        self.forbidden_networks = tuple(forbidden_networks)
        self.forbidden = parse_networks(self.forbidden_networks)
        self.per_host = per_host
        self.host_slots = host_slots or ProcessHostSlots(per_host)
        self.retries = retries
        self.max_retry_wait = max_retry_wait
        self.chunk_size = chunk_size
        self.backoff_factor = backoff_factor
        self.headers = {
            "User-Agent": user_agent or DEFAULT_USER_AGENT,
            "Accept": "*/*",
            "Accept-Encoding": "identity",  # the file's own bytes, for its size and checksum
        }
        # Only ever sent to self.origin (see _headers_for).
        self._own_origin_headers = credentials.request_headers() if credentials else {}
        self._local = threading.local()
        self._sessions: list[requests.Session] = []
        self._lock = threading.Lock()

    # -- sessions ------------------------------------------------------------------------------
    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            adapter = GuardedAdapter(self.forbidden)  # no urllib3 retries: retried here
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            self._local.session = session
            with self._lock:
                self._sessions.append(session)
        return session

    def close(self) -> None:
        with self._lock:
            sessions, self._sessions = self._sessions, []
        for session in sessions:
            session.close()
        self._local = threading.local()

    # -- the download --------------------------------------------------------------------------
    @contextmanager
    def download(self, source: FileSource) -> Iterator[tuple[FetchedFile, BinaryIO]]:
        """Fetch ``source`` into a temporary file; yield what arrived and the file (at 0).

        Yields only when everything checked out; otherwise raises FileFetchError (or
        FileNotModified). The temporary file is deleted when the block ends.
        """
        wanted = parse_checksum(source.checksum, source.url)
        host = check_file_url(source.url, self.provider_host, self.allowed_hosts)
        if source.expected_size is not None and source.expected_size > self.max_size:
            raise FileFetchError(
                f"The file at {source.url} is {source.expected_size} bytes according to its "
                f"record, more than the allowed {self.max_size} (max_size); not downloaded.",
                url=source.url,
            )
        with tempfile.TemporaryFile(prefix="oai-file-") as body:
            with self.host_slots.hold(host):
                fetched = self._fetch(source, body, wanted)
            body.seek(0)
            yield fetched, body

    def _fetch(
        self, source: FileSource, body: BinaryIO, wanted: tuple[str, str] | None
    ) -> FetchedFile:
        """Attempts until one succeeds, within the retries, max_retry_wait and the deadline."""
        failures = 0
        waited = 0.0
        with deadline.spending(self.deadline) as budget:
            assert budget is not None
            while True:
                body.seek(0)
                body.truncate()  # a retry starts the whole file again
                try:
                    return self._attempt(source, body, wanted)
                except AttemptFailed as failure:
                    failures += 1
                    wait = failure.after
                    if wait is None:
                        wait = _backoff(self.backoff_factor, failures)
                    self._may_retry(source, failure, failures, waited, wait, budget)
                    log.warning("Retrying %s in %.2fs: %s", source.url, wait, failure.reason)
                    waited += wait
                    time.sleep(wait)

    def _may_retry(
        self,
        source: FileSource,
        failure: AttemptFailed,
        failures: int,
        waited: float,
        wait: float,
        budget: deadline.Budget,
    ) -> None:
        reason = failure.reason.rstrip(".")
        if failures > self.retries:
            raise FileFetchError(
                f"{reason}; gave up after {self.retries} retries.",
                url=source.url,
                retryable=True,
                status_code=failure.status,
            )
        if waited + wait > self.max_retry_wait:
            asked = " (the server's Retry-After)" if failure.after is not None else ""
            raise FileFetchError(
                f"{reason}; waiting {wait:g}s more{asked} before retrying would pass the "
                f"{self.max_retry_wait:g}s all retries of one file may wait (max_retry_wait).",
                url=source.url,
                retryable=True,
                status_code=failure.status,
            )
        if wait >= budget.remaining():
            raise FileFetchError(
                f"{reason}; no time is left for a retry within the deadline of "
                f"{self.deadline:g}s for the whole file.",
                url=source.url,
                retryable=True,
                status_code=failure.status,
            )

    def _attempt(
        self, source: FileSource, body: BinaryIO, wanted: tuple[str, str] | None
    ) -> FetchedFile:
        """One attempt: the request and its redirects, then the body."""
        url = source.url
        redirects = 0
        while True:
            with deadline.active(deadline.Exchange(self.deadline)) as exchange:
                response = self._send(url, source, exchange)
                try:
                    status = response.status_code
                    if status not in REDIRECT_STATUSES:
                        return receive(
                            response,
                            url,
                            source,
                            body,
                            wanted,
                            max_size=self.max_size,
                            chunk_size=self.chunk_size,
                            exchange=exchange,
                            too_slow=self._deadline_error,
                        )
                    location = response.headers.get("Location")
                finally:
                    response.close()  # the connection too: each download its own
            if not location:
                raise FileFetchError(
                    f"{url} answered HTTP {status} (a redirect) without a Location; not followed.",
                    url=url,
                    status_code=status,
                )
            redirects += 1
            target = urljoin(url, location.strip())
            if redirects > self.max_redirects:
                raise FileFetchError(
                    f"Fetching {source.url} was redirected more than {self.max_redirects} "
                    f"times (max_redirects), the last time to {target}; given up.",
                    url=source.url,
                    status_code=status,
                )
            check_file_url(target, self.provider_host, self.allowed_hosts, redirected_from=url)
            log.info("%s redirected (HTTP %d) to %s", url, status, target)
            url = target

    def _headers_for(self, url: str, source: FileSource) -> dict[str, str]:
        headers = dict(self.headers)
        if source.etag:
            headers["If-None-Match"] = source.etag
        if source.last_modified:
            headers["If-Modified-Since"] = source.last_modified
        if self._own_origin_headers and origin(url) == self.origin:
            # The provider's credentials go to its own origin only, never after a redirect
            # elsewhere (an allowed host included).
            headers.update(self._own_origin_headers)
        return headers

    def _send(self, url: str, source: FileSource, exchange: deadline.Exchange) -> requests.Response:
        session = self._session()
        try:
            if self.forbidden and self._proxied(session, url):
                # A proxy's connection, not ours: check the name ourselves.
                check_url_allowed(url, self.forbidden_networks)
            response = session.get(
                url,
                headers=self._headers_for(url, source),
                timeout=self.timeout,
                stream=True,
                allow_redirects=False,
            )
        except ForbiddenAddress as error:
            raise FileFetchError(
                f"The file URL {url} leads to the address {error.address}, in the forbidden "
                f"network {error.network}; the harvester does not connect there "
                f"(forbidden_networks).",
                url=url,
            ) from None
        except RequestDeadlineExceeded:
            raise self._deadline_error(url, None) from None
        except OAITransportError as error:  # the proxied check could not resolve the name
            raise AttemptFailed(f"Could not fetch {url}: {error}") from None
        except _NOT_A_REQUEST as error:
            raise FileFetchError(
                f"The file URL {url} cannot be requested ({type(error).__name__}); not fetched.",
                url=url,
            ) from None
        except requests.RequestException as error:
            if exchange.passed():
                raise self._deadline_error(url, None) from None
            raise AttemptFailed(f"Could not fetch {url}: {describe_failure(error)}.") from None
        if not exchange.started:  # a proxy's connection: the deadline counts from the headers
            exchange.start(_socket_of(response))
        return response

    @staticmethod
    def _proxied(session: requests.Session, url: str) -> bool:
        settings = session.merge_environment_settings(url, {}, None, None, None)
        return select_proxy(url, settings.get("proxies") or {}) is not None

    def _deadline_error(self, url: str, received: int | None) -> FileFetchError:
        got = f"; {received} bytes had arrived" if received is not None else ""
        return FileFetchError(
            f"Fetching {url} took longer than the deadline of {self.deadline:g}s for the whole "
            f"file{got}. The server sends too slowly; try again later.",
            url=url,
            retryable=True,
        )


__all__ = ["FetchedFile", "FileFetchError", "FileFetcher", "FileNotModified", "FileSource"]
