"""The files of a harvested record, as its transformer reports them beside its data.

Decision owned here: how a transformer tells the engine which files a record has - a list of
:class:`FileReference` in ``last_files``, set in every ``transform`` call as ``last_warnings``
is (:func:`transform_files` reads it) - and what a reference is: a http(s) URL, the key the
file gets in the target (made safe and unique within the record), and what the source says
of it (size in bytes, checksum ``<algorithm>:<hex>``, MIME type, access, embargo end). The
values a source writes are read leniently (:func:`parse_size`, :func:`parse_checksum`); one
that cannot be used is None and the transformer warns (:func:`checked_file_reference` does
both). Fetching, verifying and storing the files is the engine's; nothing here does I/O.
"""

from __future__ import annotations

import mimetypes
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import unquote, urlsplit


class FileAccess(StrEnum):
    """Who may have the file, as the source says (the engine maps it onto the target's)."""

    OPEN = "open"
    EMBARGOED = "embargoed"
    RESTRICTED = "restricted"
    METADATA_ONLY = "metadata-only"


CHECKSUM_ALGORITHMS = {"md5": 32, "sha1": 40, "sha256": 64, "sha512": 128}
"""Algorithms a checksum may name -> the length of its hex digest."""

MAX_NAME_LENGTH = 200
ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
IIIF_QUALITY = re.compile(r"^(?:default|native|color|gray|grey|bitonal)\.(\w+)$")


@dataclass(frozen=True)
class FileReference:
    """One file of a harvested record: where to fetch it and what the source says of it."""

    url: str
    name: str
    """The key the file gets in the target: safe (no ``/``, no ``..``, not empty) and unique
    within the record (:func:`file_reference` makes it so)."""
    size: int | None = None
    """In bytes, when the source gives an exact count."""
    checksum: str | None = None
    """``<algorithm>:<hex>``, the algorithm lower case among md5, sha1, sha256, sha512."""
    mimetype: str | None = None
    access: FileAccess = FileAccess.OPEN
    embargo_until: str | None = None
    """ISO date (``YYYY-MM-DD``) the embargo of an :attr:`FileAccess.EMBARGOED` file ends."""

    def as_json(self) -> dict[str, Any]:
        """The reference as JSON (for a JSON column); None values are left out."""
        found: dict[str, Any] = {"url": self.url, "name": self.name, "access": str(self.access)}
        for key in ("size", "checksum", "mimetype", "embargo_until"):
            value = getattr(self, key)
            if value is not None:
                found[key] = value
        return found

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FileReference:
        """The reference :meth:`as_json` gave (ValueError for one without url or name)."""
        if not data.get("url") or not data.get("name"):
            raise ValueError(f"A file reference needs 'url' and 'name'; got {sorted(data)}.")
        size = data.get("size")
        return cls(
            url=data["url"],
            name=data["name"],
            size=int(size) if size is not None else None,
            checksum=data.get("checksum"),
            mimetype=data.get("mimetype"),
            access=FileAccess(data.get("access") or FileAccess.OPEN),
            embargo_until=data.get("embargo_until"),
        )


def transform_files(transformer: Any) -> list[FileReference]:
    """The files of the record `transformer` transformed last (empty when it names none).

    A transformer that knows a record's files sets ``last_files`` (a list of
    :class:`FileReference`) in each ``transform`` call, as it sets ``last_warnings``: an
    attribute rather than a key of the returned data, which reaches the target unchanged.
    """
    return list(getattr(transformer, "last_files", None) or ())


def is_http_url(url: str) -> bool:
    """Whether `url` is an absolute http(s) URL with a host (what the engine can fetch)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


def url_file_name(url: str) -> str:
    """The file name a URL gives: its last path segment, percent-decoded; for a
    ``.../files/<key>/content`` link (InvenioRDM's, Zenodo's) the key; for a IIIF image
    (``<identifier>/full/max/0/default.jpg``) the identifier with the image's extension."""
    segments = [unquote(s) for s in urlsplit(url.strip()).path.split("/") if s]
    if len(segments) >= 3 and segments[-1] == "content" and segments[-3] == "files":
        return segments[-2]
    iiif = IIIF_QUALITY.match(segments[-1]) if len(segments) >= 5 else None
    if iiif and segments[-4] in ("full", "square"):
        identifier = segments[-5]
        return identifier if "." in identifier else f"{identifier}.{iiif.group(1)}"
    return segments[-1] if segments else ""


def safe_name(name: str) -> str:
    """`name` as a key: path separators and control characters replaced, no ``..``, no
    leading dot or space, at most 200 characters (its extension kept), never empty."""
    name = unicodedata.normalize("NFC", name)
    name = "".join("_" if unicodedata.category(c).startswith("C") else c for c in name)
    name = re.sub(r"[/\\]", "_", name)
    name = re.sub(r"\.{2,}", ".", name).strip(" ._")
    if len(name) > MAX_NAME_LENGTH:
        stem, dot, extension = name.rpartition(".")
        if dot and 0 < len(extension) <= 16:
            name = f"{stem[: MAX_NAME_LENGTH - len(extension) - 1]}.{extension}"
        else:
            name = name[:MAX_NAME_LENGTH]
    return name or "file"


def unique_name(name: str, taken: set[str]) -> str:
    """`name`, or ``stem-2.ext``, ``stem-3.ext``... the first not in `taken` (added to it)."""
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem:
        stem, dot, extension = name, "", ""
    found, number = name, 1
    while found in taken:
        number += 1
        found = f"{stem}-{number}{dot}{extension}"
    taken.add(found)
    return found


def parse_size(value: Any) -> int | None:
    """A size in bytes: an int, or a text that is an exact count (``"1234"``, ``"1234
    bytes"``, ``"1 234 B"``); None for anything else. A size with a larger unit (``"1.2
    MB"``) is None too: it is rounded, and a size serves to verify the fetched file."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if not isinstance(value, str):
        return None
    match = re.fullmatch(
        r"(\d{1,3}(?:[ \u00a0\u202f]\d{3})+|\d+)\s*(b|bytes?|octets?)?\.?", value.strip(), re.I
    )
    return int(re.sub(r"\D", "", match.group(1))) if match else None


def parse_checksum(value: Any) -> str | None:
    """``<algorithm>:<hex>`` from ``md5:…``, ``MD5:…``, ``sha-256:…``, ``sha256=…``,
    ``{md5}…`` or a bare hex digest (its algorithm by its length); None for anything else
    (an unknown algorithm, a digest of the wrong length)."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if re.fullmatch(r"[0-9a-fA-F]+", text):
        digest = text.lower()
        algorithm = next((a for a, n in CHECKSUM_ALGORITHMS.items() if n == len(digest)), None)
    else:
        match = re.fullmatch(r"\{?([a-z]+)-?(\d*)(?:\}\s*|\s*[:=]\s*|\s+)([0-9a-f]+)", text, re.I)
        if not match:
            return None
        algorithm = f"{match.group(1)}{match.group(2)}".lower()
        digest = match.group(3).lower()
    if algorithm is None or CHECKSUM_ALGORITHMS.get(algorithm) != len(digest):
        return None
    return f"{algorithm}:{digest}"


def parse_mimetype(value: Any) -> str | None:
    """A MIME type (``type/subtype``, lower case) from one or from a format name a catalogue
    writes (``PDF``, ``.tif``); None when neither."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().split(";")[0].strip().lower()
    if re.fullmatch(r"[a-z]+/[a-z0-9][a-z0-9.+_-]*", text):
        return text
    guessed = mimetypes.types_map.get(f".{text.lstrip('.')}")
    return guessed


def file_reference(
    url: str,
    *,
    name: str | None = None,
    size: Any = None,
    checksum: Any = None,
    mimetype: str | None = None,
    access: FileAccess = FileAccess.OPEN,
    embargo_until: str | None = None,
    taken: set[str],
) -> FileReference | None:
    """A reference to the file at `url`; None when `url` is not http(s).

    The name is `name`, else the URL's last path segment (percent-decoded; a name without an
    extension gets the one of its MIME type), made safe (:func:`safe_name`) and unique
    against `taken` (``a.pdf``, ``a-2.pdf``), to which it is added. Size, checksum and MIME
    type are read leniently: a value that cannot be used is None (the caller warns,
    :func:`unusable_values` says which). `embargo_until` is kept when it is an ISO date.
    """
    url = (url or "").strip().replace(" ", "%20")  # a careless writer's spaces
    if not is_http_url(url):
        return None
    kind = parse_mimetype(mimetype)
    if name and name.strip():
        found = safe_name(name)
    else:
        found = safe_name(url_file_name(url))
        extension = mimetypes.guess_extension(kind) if kind else None
        if extension and "." not in found.lstrip("."):
            found = f"{found}{extension}"
    until = embargo_until.strip()[:10] if embargo_until else None
    return FileReference(
        url=url,
        name=unique_name(found, taken),
        size=parse_size(size),
        checksum=parse_checksum(checksum),
        mimetype=kind,
        access=FileAccess(access),
        embargo_until=until if until and ISO_DATE.match(until) else None,
    )


def unusable_values(
    reference: FileReference | None, *, size: Any = None, checksum: Any = None, mimetype: Any = None
) -> list[str]:
    """What the source gave that `reference` could not take (``size '1.2 MB'``)."""
    if reference is None:
        return []
    given = {"size": size, "checksum": checksum, "MIME type": mimetype}
    kept = {"size": reference.size, "checksum": reference.checksum, "MIME type": reference.mimetype}
    return [
        f"{label} {value!r}"
        for label, value in given.items()
        if value not in (None, "") and kept[label] is None
    ]


def checked_file_reference(
    where: str, url: str, warn: Callable[[str], None], **values: Any
) -> FileReference | None:
    """:func:`file_reference`, with a warning (labelled `where`, ``856 $u``) for a URL that is
    not http(s) and for each value given that cannot be used (the file is kept without it)."""
    reference = file_reference(url, **values)
    if reference is None:
        warn(f"{where} {url!r}: not a http(s) URL; no file fetched.")
        return None
    unusable = unusable_values(
        reference,
        size=values.get("size"),
        checksum=values.get("checksum"),
        mimetype=values.get("mimetype"),
    )
    if unusable:
        warn(f"{where} {url!r}: {', '.join(unusable)} not usable; the file is kept without.")
    return reference
