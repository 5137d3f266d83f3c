"""One file's body and what is said of it: read, counted, digested, checked.

Decision owned here: when a response is a file to take (its status), and when what arrived
is the file the record describes: not larger than ``max_size`` (refused on the announced
Content-Length before reading, and cut off while reading as soon as it passes), exactly as
long as its Content-Length (a body that ends early, or goes on after it, is refused), as long
as the record's size and matching the record's checksum.  The body is read as sent, without
undoing a Content-Encoding, in chunks straight into the caller's temporary file.
"""

from __future__ import annotations

import hashlib
import http.client
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

import requests
from urllib3.exceptions import InvalidHeader
from urllib3.util.retry import Retry

from . import deadline
from .download_errors import FileFetchError, FileNotModified
from .retry import describe_failure
from .transport import reason_phrase

RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504})
_RETRY_AFTER = Retry(0)  # only its parser of Retry-After (seconds or an HTTP date) is used


@dataclass(frozen=True)
class FileSource:
    """Where a file is and what the record says of it."""

    url: str
    expected_size: int | None = None
    checksum: str | None = None
    """``"md5:<hex>"``, ``"sha1:"``, ``"sha256:"`` or ``"sha512:"`` (any case)."""
    etag: str | None = None
    """From an earlier fetch: sent as ``If-None-Match``."""
    last_modified: str | None = None
    """From an earlier fetch: sent as ``If-Modified-Since``."""


@dataclass(frozen=True)
class FetchedFile:
    """A file that arrived whole and checked out."""

    url: str
    """The final URL, after redirects."""
    size: int
    checksum: str
    """``"md5:<hex>"``, always (InvenioRDM stores md5)."""
    verified: bool
    """The source gave a checksum, and the file matched it."""
    mimetype: str | None
    etag: str | None
    last_modified: str | None


class AttemptFailed(Exception):
    """A failure worth another attempt; ``after`` is the server's Retry-After."""

    def __init__(self, reason: str, *, after: float | None = None, status: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.after = after
        self.status = status


def check_status(response: requests.Response, url: str, source: FileSource) -> None:
    """Raise unless the status is a file to read."""
    status = response.status_code
    if status in (200, 203):
        return
    if status == 304 and (source.etag or source.last_modified):
        raise FileNotModified(
            f"{url} has not changed since it was fetched (HTTP 304 Not Modified).", url=url
        )
    if status in RETRIED_STATUSES:
        raise AttemptFailed(
            f"{url} answered HTTP {status} {reason_phrase(status)}",
            after=_retry_after(response.headers.get("Retry-After")),
            status=status,
        )
    why = {
        401: "the server asks for credentials",
        403: "the server refuses access",
        404: "there is no file at this address",
        410: "the file has been removed for good",
    }.get(status, "not a file to download")
    raise FileFetchError(
        f"{url} answered HTTP {status} {reason_phrase(status)}: {why}.".replace("  ", " "),
        url=url,
        status_code=status,
    )


def receive(
    response: requests.Response,
    url: str,
    source: FileSource,
    body: BinaryIO,
    wanted: tuple[str, str] | None,
    *,
    max_size: int,
    chunk_size: int,
    exchange: deadline.Exchange,
    too_slow: Callable[[str, int | None], FileFetchError],
) -> FetchedFile:
    """Read the body of ``response`` into ``body``, counting and digesting it, and check it
    against what the response and the source announced.

    AttemptFailed when another attempt may do better (a broken or short body), FileFetchError
    otherwise; ``too_slow`` words the error of an exchange whose deadline passed.
    """
    check_status(response, url, source)
    declared = _content_length(response)
    if declared is not None:
        _check_declared(declared, url, source, max_size)
    md5 = hashlib.md5(usedforsecurity=False)
    other = hashlib.new(wanted[0]) if wanted and wanted[0] != "md5" else None
    raw: http.client.HTTPResponse = response.raw._fp  # read as sent, without decoding
    received = 0
    try:
        while True:
            chunk = raw.read1(chunk_size)
            if exchange.passed():
                raise too_slow(url, received)
            if not chunk:
                break
            received += len(chunk)
            if received > max_size:
                raise FileFetchError(
                    f"The file at {url} is larger than the allowed {max_size} bytes "
                    f"(max_size); the download was stopped there.",
                    url=url,
                )
            body.write(chunk)
            md5.update(chunk)
            if other is not None:
                other.update(chunk)
    except (OSError, http.client.HTTPException) as error:
        if exchange.passed():
            raise too_slow(url, received) from None
        raise AttemptFailed(
            f"Reading {url} failed after {received} bytes: {describe_failure(error)}."
        ) from None
    if declared is not None:
        if raw.length:  # what Content-Length announced and did not arrive
            raise AttemptFailed(
                f"The body of {url} ended after {received} of the {declared} bytes its "
                f"Content-Length announced."
            )
        if _more_after_body(raw):
            raise FileFetchError(
                f"{url} sent more bytes than the {declared} its Content-Length announced; "
                f"the file is not trusted.",
                url=url,
            )
    return _verified(response, url, source, received, md5, other, wanted)


def _check_declared(declared: int, url: str, source: FileSource, max_size: int) -> None:
    if declared > max_size:
        raise FileFetchError(
            f"The file at {url} is {declared} bytes long (Content-Length), more than the "
            f"allowed {max_size} (max_size); not downloaded.",
            url=url,
        )
    if source.expected_size is not None and declared != source.expected_size:
        raise FileFetchError(
            f"The file at {url} is {declared} bytes long (Content-Length), but its record "
            f"says {source.expected_size}; not downloaded.",
            url=url,
        )


def _verified(
    response: requests.Response,
    url: str,
    source: FileSource,
    size: int,
    md5: hashlib._Hash,
    other: hashlib._Hash | None,
    wanted: tuple[str, str] | None,
) -> FetchedFile:
    if source.expected_size is not None and size != source.expected_size:
        raise FileFetchError(
            f"The file at {url} arrived with {size} bytes, but its record says "
            f"{source.expected_size}; discarded.",
            url=url,
        )
    if wanted is not None:
        algorithm, expected = wanted
        actual = (other or md5).hexdigest()
        if actual != expected:
            raise FileFetchError(
                f"The file at {url} does not match its {algorithm} checksum (expected "
                f"{expected}, got {actual}); discarded.",
                url=url,
            )
    content_type = response.headers.get("Content-Type") or ""
    return FetchedFile(
        url=url,
        size=size,
        checksum=f"md5:{md5.hexdigest()}",
        verified=wanted is not None,
        mimetype=content_type.split(";", 1)[0].strip().lower() or None,
        etag=response.headers.get("ETag"),
        last_modified=response.headers.get("Last-Modified"),
    )


def _content_length(response: requests.Response) -> int | None:
    declared = (response.headers.get("Content-Length") or "").strip()
    if response.headers.get("Transfer-Encoding") or not declared.isdigit():
        return None
    return int(declared)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(_RETRY_AFTER.parse_retry_after(value))
    except InvalidHeader:
        return None  # garbage: our own backoff


def _more_after_body(raw: http.client.HTTPResponse) -> bool:
    """Whether bytes beyond the announced Content-Length have arrived (buffered or waiting
    on the socket); looked at without waiting. The connection is closed afterwards."""
    buffered = raw.fp
    sock = getattr(getattr(buffered, "raw", None), "_sock", None)
    if buffered is None or sock is None:
        return False
    try:
        sock.settimeout(0)
        return bool(buffered.peek(1))
    except (OSError, ValueError):
        return False


__all__ = [
    "RETRIED_STATUSES",
    "AttemptFailed",
    "FetchedFile",
    "FileSource",
    "check_status",
    "receive",
]
