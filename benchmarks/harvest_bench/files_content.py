"""The files phase's records and files: OpenAIRE records each naming one file the provider
makes chunk by chunk (a 1 GiB file never sits whole in the provider's memory).

A file's path says which record it belongs to and its size, `/files/<number>/<size>/
record-<number>.bin`; its bytes are a 1 MiB block derived from the record's number, repeated
(and cut) to the size, so that every record's file differs and anyone can compute its MD5.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from typing import Any

BLOCK = 1 << 20
OPEN_ACCESS = "c_abf2"


def file_name(number: str, size: int) -> str:
    """The name under /files/ of record `number`'s file of `size` bytes."""
    return f"{number}/{size}/record-{number}.bin"


def file_key(number: str) -> str:
    """The key the file gets in the record (the URL's last part)."""
    return f"record-{number}.bin"


def _block(number: str) -> bytes:
    return hashlib.shake_256(f"benchmark file {number}".encode()).digest(BLOCK)


def chunks(number: str, size: int) -> Iterator[bytes]:
    """The bytes of record `number`'s file of `size` bytes, in chunks of at most 1 MiB."""
    block = _block(number)
    left = size
    while left > 0:
        piece = block if left >= BLOCK else block[:left]
        left -= len(piece)
        yield piece


def md5_of(number: str, size: int) -> str:
    """The checksum InvenioRDM stores for that file ("md5:...")."""
    digest = hashlib.md5(usedforsecurity=False)
    for chunk in chunks(number, size):
        digest.update(chunk)
    return "md5:" + digest.hexdigest()


def streamed_file(path: str) -> Any:
    """The provider's `file_maker`: the file at `path` (None: not one of ours, 404)."""
    from oarepo_oaipmh_harvester.testing.provider import StreamedFile

    parts = path.split("/")  # "", "files", number, size, name
    if len(parts) != 5 or not parts[3].isdigit():
        return None
    number, size = parts[2], int(parts[3])
    return StreamedFile(
        size=size,
        chunks=lambda: chunks(number, size),
        etag=f'"bench-{number}-{size}"',
    )


def record_number(record: Any) -> str:
    """The number of a `Corpus.generate` record (the last part of its identifier)."""
    return record.identifier.rsplit(":", 1)[-1]


def openaire_formats(file_url: Callable[[str], str], file_size: int) -> dict[str, Any]:
    """The provider's oai_openaire renderer: every record names its one open-access file."""
    from oarepo_oaipmh_harvester.testing.corpus_openaire import (
        OPENAIRE_NS,
        OPENAIRE_PREFIX,
        OPENAIRE_SCHEMA,
        openaire_document,
    )
    from oarepo_oaipmh_harvester.testing.provider import ServedFormat

    def render(record: Any) -> str:
        number = record_number(record)
        url = file_url(file_name(number, file_size))
        title = (record.metadata.get("title") or [record.identifier])[0]
        files = ((url, "application/octet-stream", "fulltext", OPEN_ACCESS),)
        return openaire_document(number, title=title, files=files)

    return {OPENAIRE_PREFIX: ServedFormat(OPENAIRE_SCHEMA, OPENAIRE_NS, render)}
