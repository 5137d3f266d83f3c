"""Retries of one HTTP exchange: which failures, how many, and how long to wait.

Decision owned here: the wait before each retry (the provider's ``Retry-After``, seconds
or an HTTP date, else exponential backoff with jitter), and the budget that bounds them.
urllib3's ``Retry`` does the retrying; :class:`BoundedRetry` adds what it lacks for
harvesting: a cap on ``Retry-After`` and a bound on the total time one request may spend
waiting.  :func:`describe_failure` turns what urllib3 and requests raise into a sentence.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Any

import requests
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

from . import deadline

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, *range(500, 600)} - {501, 505})

# Answers that say the provider did not do the work: flow control, sent before processing.
NOT_PROCESSED_STATUSES = frozenset({429, 503})

# Retrying these cannot help, and hammering a provider that refuses us is impolite.
FAIL_AT_ONCE = {
    401: "the provider requires authentication (give the harvester its credentials: auth, "
    "or a header such as an API token)",
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
        budget = deadline.current_budget()
        if budget is not None and wait >= budget.remaining():
            reason = error or ResponseError(
                f"giving up: no time left for a retry within {budget.seconds:g}s"
            )
            raise MaxRetryError(_pool, url, reason)  # type: ignore[arg-type]
        retry.waited += wait
        retry.next_wait = wait
        cause = f"HTTP {response.status}" if response is not None else describe_failure(error)
        where = f"{_pool.scheme}://{_pool.host}:{_pool.port}{url}" if _pool is not None else url
        log.warning("Retrying %s in %.2fs: %s", where, wait, cause)
        return retry

    def sleep(self, response: Any = None) -> None:
        exchange = deadline.current()
        if exchange is not None:
            exchange.pause()  # waiting to retry is not time the provider takes to answer
        if self.next_wait > 0:
            time.sleep(self.next_wait)

    def sleep_for_retry(self, response: Any) -> bool:
        self.sleep(response)
        return True


def may_have_been_processed(history: Any) -> bool:
    """Whether a failed attempt in urllib3's retry `history` may have reached the provider's
    application, which then did the work although its answer was lost.

    Not for a connection that was never made (refused, connect timeout, unknown host) nor for
    flow control (429, 503); yes for a read timeout, a dropped connection and any other 5xx (a
    502 or 504 from a proxy that gave up on a provider still at work, a 500 from a provider
    that failed half-way). This matters only to a provider whose resumption tokens point at
    state that a request moves on, such as invenio-oaiserver's search scroll.
    """
    for attempt in history:
        if attempt.status is not None:
            if attempt.status not in NOT_PROCESSED_STATUSES:
                return True
        # Refused connections and unknown hosts are ConnectTimeoutErrors to urllib3 too.
        elif attempt.error is not None and not isinstance(attempt.error, ConnectTimeoutError):
            return True
    return False


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


__all__ = [
    "FAIL_AT_ONCE",
    "NOT_PROCESSED_STATUSES",
    "RETRY_STATUSES",
    "BoundedRetry",
    "describe_failure",
    "may_have_been_processed",
]
