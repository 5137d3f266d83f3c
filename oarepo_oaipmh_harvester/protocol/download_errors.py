"""What a file download raises, and the rules it checks before any byte is sent.

Decision owned here: how a failed file download is worded and whether it is worth retrying
later (:class:`FileFetchError`), which hosts a record's files may come from
(:func:`host_allowed`), and which checksums a source may give (:func:`parse_checksum`).
Every message is one or two sentences that name the URL; nothing a server sends in a body
ends up in one.  Both exceptions pickle with their attributes (Celery moves them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from .errors import OAIHarvestError, _restore

CHECKSUM_ALGORITHMS = ("md5", "sha1", "sha256", "sha512")
_HEX_LENGTHS = {"md5": 32, "sha1": 40, "sha256": 64, "sha512": 128}
_CHECKSUM = re.compile(r"^\s*([A-Za-z0-9-]+)\s*:\s*([0-9A-Fa-f]+)\s*$")


class FileFetchError(OAIHarvestError):
    """A record's file could not be fetched, or what arrived did not check out.

    ``reason`` is one sentence naming the URL and why; ``retryable`` says whether trying
    again later may succeed (a server that is down, too slow, or asked us to wait) or not
    (a refused host, a missing file, a wrong checksum: the configuration or the provider's
    data has to change).  ``status_code`` is the last HTTP status, when there was one.
    """

    def __init__(
        self,
        reason: str,
        *,
        url: str | None = None,
        retryable: bool = False,
        status_code: int | None = None,
    ) -> None:
        super().__init__(reason, url=url)
        self.retryable = retryable
        self.status_code = status_code

    @property
    def reason(self) -> str:
        return str(self)


class FileNotModified(Exception):
    """A conditional request (the source's ETag or Last-Modified) was answered 304: the
    copy fetched earlier is still current."""

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(message)
        self.url = url

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), self.args, dict(self.__dict__)))


def parse_checksum(checksum: str | None, url: str) -> tuple[str, str] | None:
    """``("sha256", "<lower-case hex>")`` of ``"SHA256:<hex>"``; None for no checksum.

    A checksum of another form is the provider's data error: FileFetchError, not retryable.
    """
    if checksum is None or not checksum.strip():
        return None
    match = _CHECKSUM.match(checksum)
    algorithm = match.group(1).lower() if match else ""
    if not match or algorithm not in CHECKSUM_ALGORITHMS:
        raise FileFetchError(
            f"The checksum given for {url} is not of the form '<algorithm>:<hex>' with one of "
            f"{', '.join(CHECKSUM_ALGORITHMS)}; the file was not downloaded.",
            url=url,
        )
    digest = match.group(2).lower()
    if len(digest) != _HEX_LENGTHS[algorithm]:
        raise FileFetchError(
            f"The {algorithm} checksum given for {url} has {len(digest)} hex digits instead "
            f"of {_HEX_LENGTHS[algorithm]}; the file was not downloaded.",
            url=url,
        )
    return algorithm, digest


def normalized_host(host: str | None) -> str:
    return (host or "").strip().strip("[]").rstrip(".").lower()


def host_allowed(host: str, provider_host: str, allowed_hosts: Sequence[str]) -> bool:
    """Whether files may come from ``host``: the provider's own host, or one of
    ``allowed_hosts`` (exact names, case-insensitive; ``*.example.org`` allows every
    subdomain of example.org, not example.org itself)."""
    host = normalized_host(host)
    if not host:
        return False
    if host == normalized_host(provider_host):
        return True
    for pattern in allowed_hosts:
        pattern = normalized_host(pattern)
        if pattern.startswith("*."):
            if host.endswith(pattern[1:]) and len(host) > len(pattern) - 1:
                return True
        elif pattern and host == pattern:
            return True
    return False


def check_file_url(
    url: str,
    provider_host: str,
    allowed_hosts: Sequence[str],
    *,
    redirected_from: str | None = None,
) -> str:
    """The URL's host when a file may be fetched from ``url`` (scheme and host rules);
    FileFetchError (not retryable) otherwise."""
    parts = urlsplit(url)
    how = f"{redirected_from} redirected to {url}, which" if redirected_from else f"{url}"
    subject = redirected_from or url
    if parts.scheme.lower() not in ("http", "https"):
        raise FileFetchError(
            f"The file URL {how} is not an http(s) URL; only http and https are fetched.",
            url=subject,
        )
    host = normalized_host(parts.hostname)
    if not host:
        raise FileFetchError(f"The file URL {how} has no host; not fetched.", url=subject)
    if not host_allowed(host, provider_host, allowed_hosts):
        raise FileFetchError(
            f"The file URL {how} is on the host {host}, which is neither the provider's host "
            f"({normalized_host(provider_host)}) nor allowed; add {host} (or '*.' and its "
            f"domain) to the harvester's files_hosts to fetch files from it.",
            url=subject,
        )
    return host


__all__ = [
    "CHECKSUM_ALGORITHMS",
    "FileFetchError",
    "FileNotModified",
    "check_file_url",
    "host_allowed",
    "parse_checksum",
]
