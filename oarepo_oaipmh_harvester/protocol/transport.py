"""HTTP transport of the OAI-PMH client: one logical request, sent safely and fully read.

Decision owned here: how one OAI-PMH request travels - which redirects are followed
(same origin only, unless the caller allows more), which addresses may be reached
(:mod:`.networks`, enforced by :mod:`.adapter`), how long an exchange may take
(:mod:`.deadline`), how much is read, and which failures are retried.  Retries of the HTTP
exchange itself (connection errors, timeouts, 429 and 5xx) are done by urllib3 through
:class:`~.retry.BoundedRetry`; failures while reading the body (connection dropped
mid-response) happen after urllib3 has handed the response over, so :class:`Transport`
retries those itself.  Nothing a response says in its body ends up in an exception
message (those reach harvest managers); a short digest of a refused body is logged.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from urllib.parse import quote, urlencode, urljoin, urlsplit

import requests
from requests.adapters import HTTPAdapter
from requests.utils import select_proxy

from . import deadline
from .adapter import GuardedAdapter
from .credentials import ProviderCredentials
from .errors import (
    ForbiddenAddress,
    MalformedResponse,
    OAITransportError,
    RedirectNotAllowed,
    RequestDeadlineExceeded,
)
from .networks import check_url_allowed, parse_networks
from .options import DEFAULT_USER_AGENT, ProtocolOptions
from .retry import (
    FAIL_AT_ONCE,
    RETRY_STATUSES,
    BoundedRetry,
    _backoff,
    describe_failure,
    may_have_been_processed,
)

log = logging.getLogger(__name__)


def origin(url: str) -> str:
    """``scheme://host:port`` of a URL, lower-case, with the default port made explicit."""
    parts = urlsplit(url)
    scheme = (parts.scheme or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    port = port or {"http": 80, "https": 443}.get(scheme)
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def reason_phrase(status: int) -> str:
    """The standard phrase of a status (the provider's own reason text is never repeated)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


@dataclass
class RawResponse:
    """A fully read HTTP response."""

    url: str
    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes
    retries: int
    resent: bool = False
    """An earlier attempt of this request may have been processed by the provider (see
    :func:`~.retry.may_have_been_processed`): a provider that keeps state behind its
    resumption tokens has then moved on."""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def content_type(self) -> str | None:
        return self.headers.get("Content-Type")


class Transport:
    """Sends OAI-PMH requests to one base URL over a retrying ``requests`` session.

    Not thread-safe (neither is ``requests.Session``): use one per thread.
    """

    def __init__(
        self,
        base_url: str,
        options: ProtocolOptions,
        *,
        user_agent: str | None,
        session: requests.Session | None,
        credentials: ProviderCredentials | None = None,
    ) -> None:
        self.base_url = base_url
        self.origin = origin(base_url)
        self.options = options
        self.timeout = options.timeout
        self.max_retries = options.max_retries
        self.backoff_factor = options.backoff_factor
        self.max_retry_wait = options.max_retry_wait
        self.request_delay = options.request_delay
        self.max_response_bytes = options.max_response_bytes
        self.forbidden = parse_networks(options.forbidden_networks)
        self.redirect_origins = frozenset(origin(o) for o in options.allowed_redirect_origins)
        self.request_count = 0
        self.headers = {
            "User-Agent": user_agent or DEFAULT_USER_AGENT,
            # Explicit, so that we never advertise an encoding urllib3 might not decode.
            "Accept-Encoding": "gzip, deflate",
            "Accept": "text/xml, application/xml;q=0.9, */*;q=0.1",
        }
        # Only ever sent to self.origin (see _headers_for).
        self._own_origin_headers = credentials.request_headers() if credentials else {}
        self._own_session = session is None
        self.session = session or requests.Session()
        self.retry = BoundedRetry(
            total=self.max_retries,
            connect=self.max_retries,
            read=self.max_retries,
            status=self.max_retries,
            other=0,
            redirect=0,  # redirects are followed (and checked) by Transport, not urllib3
            allowed_methods=frozenset({"GET"}),
            status_forcelist=RETRY_STATUSES,
            backoff_factor=self.backoff_factor,
            backoff_max=self.max_retry_wait,
            respect_retry_after_header=True,
            raise_on_status=False,  # we want the last response to report its status
            max_wait=self.max_retry_wait,
        )
        self._mount()
        self._last_request_end: float | None = None

    def _mount(self) -> None:
        self._adapter = adapter = GuardedAdapter(self.forbidden, max_retries=self.retry)
        if self._own_session:
            self.session.mount("http://", adapter)
            self.session.mount("https://", adapter)
            return
        # A caller's session keeps any custom adapter (a mock, a proxy shim) for our URL;
        # otherwise it gets ours (replacing another client's), for this origin only.
        if type(self.session.get_adapter(self.base_url)) in (HTTPAdapter, GuardedAdapter):
            parts = urlsplit(self.base_url)
            self.session.mount(f"{parts.scheme}://{parts.netloc}/", adapter)

    def close(self) -> None:
        if self._own_session:
            self.session.close()

    # -- requests ------------------------------------------------------------------------------
    def get(self, params: Mapping[str, str]) -> RawResponse:
        """One logical OAI-PMH request, fully read; raises OAITransportError if it failed.

        Returns non-2xx responses other than 401/403/404 too, after the retries, so that the
        caller can look for an OAI-PMH error document in them.
        """
        self.request_count += 1
        self._polite_pause()
        body_failures = 0
        waited = 0.0
        try:
            while True:
                try:
                    raw = self._get_once(params)
                    if body_failures:
                        raw.resent = True  # the provider had answered: it did the work
                    return raw
                except _BodyReadError as error:
                    # urllib3 has already handed the response over: retry the whole request.
                    body_failures += 1
                    wait = _backoff(self.backoff_factor, body_failures)
                    budget = deadline.current_budget()
                    if (
                        body_failures > self.max_retries
                        or waited + wait > self.max_retry_wait
                        or (budget is not None and wait >= budget.remaining())
                    ):
                        raise OAITransportError(
                            f"Reading the response from {error.url} failed: "
                            f"{describe_failure(error.cause)} (after {body_failures - 1} retries).",
                            url=error.url,
                        ) from error.cause
                    log.warning(
                        "Retrying %s in %.2fs: reading the body failed: %s",
                        error.url,
                        wait,
                        describe_failure(error.cause),
                    )
                    waited += wait
                    time.sleep(wait)
        finally:
            self._last_request_end = time.monotonic()

    def _polite_pause(self) -> None:
        if self.request_delay > 0 and self._last_request_end is not None:
            remaining = self.request_delay - (time.monotonic() - self._last_request_end)
            if remaining > 0:
                time.sleep(remaining)

    def _get_once(self, params: Mapping[str, str]) -> RawResponse:
        # Encoded here rather than by requests, which writes a space as "+": a provider that
        # decodes by RFC 3986 only would then see a "+" that was never in its token.
        query = urlencode(params, quote_via=quote, safe="")
        url = f"{self.base_url}{'&' if '?' in self.base_url else '?'}{query}"
        redirects = 0
        while True:
            with deadline.active(deadline.Exchange(self.options.request_deadline)) as exchange:
                response = self._send(url, exchange)
                with response:
                    target = self.session.get_redirect_target(response)
                    if target is None:
                        return self._read(response, url, exchange)
                    status = response.status_code
            redirects += 1
            url = self._follow(url, urljoin(response.url or url, target), status, redirects)

    def _send(self, url: str, exchange: deadline.Exchange) -> requests.Response:
        guarded = self.session.get_adapter(url) is self._adapter
        if self.forbidden and (not guarded or self._proxied(url)):
            # Not our connections (a proxy, a caller's adapter): check the name ourselves.
            check_url_allowed(url, self.options.forbidden_networks)
        try:
            response = self.session.get(
                url,
                headers=self._headers_for(url),
                timeout=self.timeout,
                stream=True,
                allow_redirects=False,
            )
        except requests.RequestException as error:
            if exchange.passed():
                raise self._deadline_error(url, exchange) from error
            raise OAITransportError(
                f"Could not get a response from the OAI-PMH provider at {url}: "
                f"{describe_failure(error)} (gave up after at most {self.max_retries} retries "
                f"within {self.max_retry_wait:g}s).",
                url=url,
            ) from error
        except (ForbiddenAddress, RequestDeadlineExceeded) as error:
            error.url = url
            if isinstance(error, ForbiddenAddress):
                raise ForbiddenAddress.for_address(
                    error.address, error.network, host=error.host, url=url
                ) from None
            raise self._deadline_error(url, exchange) from None
        if not exchange.started:  # a caller's adapter: the deadline counts from the headers
            exchange.start(_socket_of(response))
        return response

    def _headers_for(self, url: str) -> dict[str, str]:
        """The provider's credentials go to its own origin only, never to a redirect target
        elsewhere (an allowed one included)."""
        if self._own_origin_headers and origin(url) == self.origin:
            return {**self.headers, **self._own_origin_headers}
        return self.headers

    def _proxied(self, url: str) -> bool:
        settings = self.session.merge_environment_settings(url, {}, None, None, None)
        return select_proxy(url, settings.get("proxies") or {}) is not None

    def _follow(self, url: str, target: str, status: int, redirects: int) -> str:
        """The next URL after a redirect from ``url``, if that redirect may be followed."""
        if redirects > self.options.max_redirects:
            raise OAITransportError(
                f"The provider at {url} redirected more than {self.options.max_redirects} "
                f"times (max_redirects).",
                url=url,
                status_code=status,
            )
        target_origin = origin(target)
        if urlsplit(target).scheme.lower() not in ("http", "https"):
            raise RedirectNotAllowed(
                f"The provider at {url} redirected (HTTP {status}) to a URL that is not "
                f"http(s); not followed.",
                url=url,
                status_code=status,
                target_origin=target_origin,
            )
        if not (
            target_origin == self.origin
            or self.options.allow_cross_origin_redirects
            or target_origin in self.redirect_origins
        ):
            raise RedirectNotAllowed(
                f"The provider at {url} redirected (HTTP {status}) to another origin, "
                f"{target_origin}; only redirects within {self.origin} are followed. If the "
                f"provider has moved, change the base URL (or allow the origin: "
                f"allowed_redirect_origins, allow_cross_origin_redirects).",
                url=url,
                status_code=status,
                target_origin=target_origin,
            )
        log.info("%s redirected (HTTP %d) to %s", url, status, target)
        return target

    def _read(
        self, response: requests.Response, url: str, exchange: deadline.Exchange
    ) -> RawResponse:
        url = response.url or url
        status = response.status_code
        history = getattr(getattr(response.raw, "retries", None), "history", ()) or ()
        if status in FAIL_AT_ONCE:
            raise OAITransportError(
                f"HTTP {status} {reason_phrase(status)} from {url}: {FAIL_AT_ONCE[status]}.",
                url=url,
                status_code=status,
            )
        body = self._read_body(response, url, exchange)
        return RawResponse(
            url=url,
            status=status,
            reason=reason_phrase(status),
            headers=response.headers,
            body=body,
            retries=len(history),
            resent=may_have_been_processed(history),
        )

    def _read_body(
        self, response: requests.Response, url: str, exchange: deadline.Exchange
    ) -> bytes:
        limit = self.max_response_bytes
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            raise MalformedResponse(
                f"The response from {url} is {int(declared)} bytes long, more than the "
                f"allowed {limit} (max_response_bytes).",
                url=url,
            )
        body = bytearray()
        try:
            # Counted after decompression, which is what a gzip bomb would inflate.
            for chunk in response.iter_content(chunk_size=64 * 1024):
                body += chunk
                if exchange.passed():
                    raise self._deadline_error(url, exchange, len(body))
                if len(body) > limit:
                    raise MalformedResponse(
                        f"The response from {url} is larger than the allowed {limit} bytes "
                        f"(max_response_bytes).",
                        url=url,
                    )
        except (
            requests.exceptions.ChunkedEncodingError,
            requests.exceptions.ConnectionError,
            requests.exceptions.ContentDecodingError,
        ) as error:
            if exchange.passed():
                raise self._deadline_error(url, exchange, len(body)) from error
            raise _BodyReadError(url, error) from error
        if exchange.passed():  # the shut-down socket looked like the end of the body
            raise self._deadline_error(url, exchange, len(body))
        return bytes(body)

    def _deadline_error(
        self, url: str, exchange: deadline.Exchange, received: int | None = None
    ) -> RequestDeadlineExceeded:
        got = f"; {received} bytes of the body had arrived" if received is not None else ""
        return RequestDeadlineExceeded(
            f"The response from {url} took longer than the request deadline of "
            f"{exchange.seconds:g}s (request_deadline){got}. The provider sends too slowly "
            f"(the read timeout of {self.timeout[1]:g}s applies to each read, not to the "
            f"whole response); not retried.",
            url=url,
            deadline=exchange.seconds,
        )


def _socket_of(response: requests.Response) -> socket.socket | None:
    """The socket a response is read from, if it can be found (for a caller's adapter)."""
    connection = getattr(response.raw, "connection", None)
    sock = getattr(connection, "sock", None)
    if sock is None:  # handed over to the response: urllib3 -> http.client -> socket file
        try:
            sock = response.raw._fp.fp.raw._sock  # type: ignore[union-attr]
        except AttributeError:
            return None
    return sock if isinstance(sock, socket.socket) else None


class _BodyReadError(Exception):
    def __init__(self, url: str, cause: BaseException) -> None:
        super().__init__(url, cause)
        self.url = url
        self.cause = cause


__all__ = [
    "RETRY_STATUSES",
    "BoundedRetry",
    "RawResponse",
    "Transport",
    "describe_failure",
    "origin",
]
