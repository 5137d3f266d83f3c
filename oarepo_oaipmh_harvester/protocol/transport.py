"""HTTP transport of the OAI-PMH client: one logical request, retried where that helps.

Decision owned here: which HTTP exchanges are retried, how long we wait, and how much we
read.  Retries of the HTTP exchange itself (connection errors, timeouts, 429 and 5xx) are done by
urllib3 through :class:`BoundedRetry`, which adds what urllib3's ``Retry`` lacks for
harvesting: a cap on ``Retry-After`` and a bound on the total time one request may spend
waiting.  Failures while reading the body (connection dropped mid-response) happen after
urllib3 has handed the response over, so :class:`Transport` retries those itself.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import (
    ConnectTimeoutError,
    InvalidHeader,
    MaxRetryError,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    ResponseError,
    SSLError,
)
from urllib3.util.retry import Retry

from .. import __version__
from .errors import MalformedResponse, OAITransportError
from .options import ProtocolOptions

log = logging.getLogger(__name__)

DEFAULT_USER_AGENT = (
    f"oarepo-oaipmh-harvester/{__version__} (+https://github.com/oarepo/oarepo-oaipmh-harvester)"
)

# 501 and 505 say the server will never do this; retrying them only delays the failure.
RETRY_STATUSES = frozenset({429, *range(500, 600)} - {501, 505})

# Retrying these cannot help, and hammering a provider that refuses us is impolite.
FAIL_AT_ONCE = {
    401: "the provider requires authentication",
    403: "the provider refuses access (is this harvester's User-Agent or address blocked?)",
    404: "there is nothing at this address; check the base URL",
}


def _backoff(factor: float, retry_number: int) -> float:
    """Exponential backoff with "equal jitter", so that harvesters do not retry in step."""
    if factor <= 0:
        return 0.0
    base = factor * 2 ** max(0, retry_number - 1)
    return base / 2 + random.uniform(0, base / 2)


class BoundedRetry(Retry):
    """urllib3 ``Retry`` that also bounds the time spent waiting.

    Each wait is the provider's ``Retry-After`` (seconds or an HTTP date) when present,
    otherwise exponential backoff with jitter; no wait is longer than ``max_wait``, and once
    the waits of one request would add up to more than ``max_wait`` the request fails.
    """

    def __init__(self, *args: Any, max_wait: float, waited: float = 0.0, **kw: Any):
        super().__init__(*args, **kw)
        self.max_wait = max_wait
        self.waited = waited
        self.next_wait = 0.0

    def new(self, **kw: Any) -> BoundedRetry:
        kw.setdefault("max_wait", self.max_wait)
        kw.setdefault("waited", self.waited)
        return super().new(**kw)

    def planned_wait(self, response: Any = None) -> float:
        """How long to wait before the next attempt (this object's history included)."""
        if response is not None and self.respect_retry_after_header:
            try:
                retry_after = self.get_retry_after(response)
            except InvalidHeader:
                retry_after = None  # garbage in Retry-After: fall back to our own backoff
            if retry_after is not None:
                return min(float(retry_after), self.max_wait)
        return min(_backoff(self.backoff_factor, len(self.history)), self.max_wait)

    def increment(
        self, method=None, url=None, response=None, error=None, _pool=None, _stacktrace=None
    ):  # type: ignore[no-untyped-def]  # noqa: E501
        retry = super().increment(method, url, response, error, _pool, _stacktrace)
        wait = retry.planned_wait(response)
        if retry.waited + wait > retry.max_wait:
            reason = error or ResponseError(
                f"giving up: waiting {wait:.1f}s more would exceed the retry budget of "
                f"{retry.max_wait:.0f}s"
            )
            raise MaxRetryError(_pool, url, reason)  # type: ignore[arg-type]
        retry.waited += wait
        retry.next_wait = wait
        cause = f"HTTP {response.status}" if response is not None else describe_failure(error)
        where = f"{_pool.scheme}://{_pool.host}:{_pool.port}{url}" if _pool is not None else url
        log.warning("Retrying %s in %.2fs: %s", where, wait, cause)
        return retry

    def sleep(self, response: Any = None) -> None:
        if self.next_wait > 0:
            time.sleep(self.next_wait)

    def sleep_for_retry(self, response: Any) -> bool:
        self.sleep(response)
        return True


@dataclass
class RawResponse:
    """A fully read HTTP response."""

    url: str
    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes
    retries: int

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def content_type(self) -> str | None:
        return self.headers.get("Content-Type")


def describe_failure(error: BaseException) -> str:
    """An operator-facing reason for a requests/urllib3 exception."""
    reason: BaseException | None = error
    # requests wraps urllib3's MaxRetryError, which wraps the real cause.
    for _ in range(4):
        inner = reason.args[0] if reason is not None and reason.args else None
        if isinstance(reason, MaxRetryError):
            reason = reason.reason
        elif isinstance(inner, BaseException):
            reason = inner
        else:
            break
    if isinstance(reason, NameResolutionError):
        return "the host name could not be resolved"
    # NewConnectionError subclasses ConnectTimeoutError, so it must be tested first.
    if isinstance(reason, NewConnectionError):
        return f"the connection failed ({_strip_pool(str(reason))})"
    if isinstance(reason, ConnectTimeoutError) or isinstance(error, requests.ConnectTimeout):
        return "connecting timed out"
    if isinstance(reason, ReadTimeoutError) or isinstance(error, requests.ReadTimeout):
        return "the provider did not answer in time (read timeout)"
    if isinstance(reason, SSLError) or isinstance(error, requests.exceptions.SSLError):
        return f"TLS failed ({reason})"
    if isinstance(reason, ResponseError):
        return str(reason)
    if isinstance(reason, ProtocolError):
        return f"the connection broke ({reason.args[0] if reason.args else reason})"
    return str(reason or error) or type(error).__name__


def _strip_pool(text: str) -> str:
    # "<HTTPConnection(host=..., port=...)>: Failed to establish ..." -> the useful part.
    return text.split(">: ", 1)[-1]


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
    ) -> None:
        self.base_url = base_url
        self.options = options
        self.timeout = options.timeout
        self.max_retries = options.max_retries
        self.backoff_factor = options.backoff_factor
        self.max_retry_wait = options.max_retry_wait
        self.request_delay = options.request_delay
        self.max_response_bytes = options.max_response_bytes
        self.request_count = 0
        self.headers = {
            "User-Agent": user_agent or DEFAULT_USER_AGENT,
            # Explicit, so that we never advertise an encoding urllib3 might not decode.
            "Accept-Encoding": "gzip, deflate",
            "Accept": "text/xml, application/xml;q=0.9, */*;q=0.1",
        }
        self._own_session = session is None
        self.session = session or requests.Session()
        self.retry = BoundedRetry(
            total=self.max_retries,
            connect=self.max_retries,
            read=self.max_retries,
            status=self.max_retries,
            other=0,
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
        adapter = HTTPAdapter(max_retries=self.retry)
        if self._own_session:
            self.session.mount("http://", adapter)
            self.session.mount("https://", adapter)
            return
        # A caller's session keeps any custom adapter (a mock, a proxy shim) for our URL;
        # otherwise it gets our retries, for this provider's origin only.
        if type(self.session.get_adapter(self.base_url)) is HTTPAdapter:
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
                    return self._get_once(params)
                except _BodyReadError as error:
                    # urllib3 has already handed the response over: retry the whole request.
                    body_failures += 1
                    wait = _backoff(self.backoff_factor, body_failures)
                    if body_failures > self.max_retries or waited + wait > self.max_retry_wait:
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
        request_url = f"{self.base_url}{'&' if '?' in self.base_url else '?'}{query}"
        try:
            response = self.session.get(
                request_url,
                headers=self.headers,
                timeout=self.timeout,
                stream=True,
            )
        except requests.RequestException as error:
            raise OAITransportError(
                f"Could not get a response from the OAI-PMH provider at {request_url}: "
                f"{describe_failure(error)} (gave up after at most {self.max_retries} retries "
                f"within {self.max_retry_wait:g}s).",
                url=request_url,
            ) from error
        with response:
            url = response.url or request_url
            status = response.status_code
            retries = len(getattr(getattr(response.raw, "retries", None), "history", ()) or ())
            if status in FAIL_AT_ONCE:
                raise OAITransportError(
                    f"HTTP {status} {response.reason or ''} from {url}: {FAIL_AT_ONCE[status]}.",
                    url=url,
                    status_code=status,
                )
            body = self._read_body(response, url)
        return RawResponse(
            url=url,
            status=status,
            reason=response.reason or "",
            headers=response.headers,
            body=body,
            retries=retries,
        )

    def _read_body(self, response: requests.Response, url: str) -> bytes:
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
            raise _BodyReadError(url, error) from error
        return bytes(body)


class _BodyReadError(Exception):
    def __init__(self, url: str, cause: BaseException) -> None:
        super().__init__(url, cause)
        self.url = url
        self.cause = cause


__all__ = ["DEFAULT_USER_AGENT", "RETRY_STATUSES", "BoundedRetry", "RawResponse", "Transport"]
