"""MARC 856 fields that are files of the record -> :class:`~..files.FileReference`.

Decision owned here: which 856 links are files - one with a size (``$s``) or a checksum
(``$z`` ``md5:…``, as InvenioRDM's serializer writes its files' 8564), else, unless its URL is
a landing page (a DOI, handle, URN or ARK resolver, a web page), one whose second indicator is
0 (the resource itself), whose ``$f`` (electronic name) is a file name or whose URL ends in
one (``report.pdf``, ``.../files/<key>/content``); a related resource (second indicator 2) is never one - and what
the reference takes from the field: ``$u`` the URL, ``$f``/``$y``/``$z`` the name where one
is a file name, ``$s`` the size, ``$z`` the checksum, ``$q`` the MIME type, and the access of
the record's files (506, 540, 542, an embargo end in 260/269).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..files import FileAccess, FileReference, checked_file_reference, url_file_name
from .marcxml_read import first, raw

if TYPE_CHECKING:
    import pymarc

    from .base import RDMTransformer

CHECKSUM = re.compile(r"^(md5|sha\d+):[0-9a-f]+$", re.I)
LANDING_HOSTS = re.compile(
    r"(^|\.)(doi\.org|hdl\.handle\.net|handle\.net|n2t\.net|nbn-resolving\.(org|de)|"
    r"urn\.nb\.no|resolver\.\w+\.\w+|purl\.org|arks?\.\w+\.\w+|identifiers\.org)$",
    re.I,
)
WEB_PAGE = re.compile(r"\.(s?html?|xhtml|php\d?|aspx?|jsp|cgi)$", re.I)
FILE_NAME = re.compile(r"^[^/\\]+\.[a-z][a-z0-9]{0,7}$", re.I)
"""A name with an extension and no path (``thesis.pdf``), not a sentence (``Full text.``)."""


def is_landing_page(url: str) -> bool:
    parts = urlsplit(url)
    return bool(
        LANDING_HOSTS.search(parts.hostname or "")
        or "/ark:" in parts.path
        or WEB_PAGE.search(parts.path)
    )


def is_file(field: pymarc.Field, url: str, size: str, checksum: str | None) -> bool:
    """Whether the 856 `field`'s `url` is a file of the record (see the module's rule)."""
    if size or checksum:
        return True
    indicator = field.indicator2.strip()
    if indicator == "2" or is_landing_page(url):
        return False
    named = any(FILE_NAME.match(v) for v in raw(field, "f"))  # $f: the file's name
    return indicator == "0" or named or bool(FILE_NAME.match(url_file_name(url)))


def file_access(access: dict[str, Any]) -> tuple[FileAccess, str | None]:
    """The files' access (and embargo end) of the record's RDM ``access``."""
    if access.get("files") == "public":
        return FileAccess.OPEN, None
    embargo = access.get("embargo") or {}
    if embargo.get("active") and embargo.get("until"):
        return FileAccess.EMBARGOED, embargo["until"]
    return FileAccess.RESTRICTED, None


def file_of(
    transformer: RDMTransformer,
    field: pymarc.Field,
    url: str,
    access: dict[str, Any],
    taken: set[str],
) -> FileReference | None:
    """The file the 856 `field` links at `url`, None for a link that is no file (or a URL
    that is not http(s), with a warning)."""
    notes = raw(field, "z")
    checksum = next((n for n in notes if CHECKSUM.match(n)), None)
    size = first(field, "s")
    if not is_file(field, url, size, checksum):
        return None
    name = next(
        (v for v in (*raw(field, "f"), *raw(field, "y"), *notes) if FILE_NAME.match(v.strip())),
        None,
    )
    kind, until = file_access(access)
    return checked_file_reference(
        "856 $u",
        url,
        transformer.warn,
        name=name,
        size=size or None,
        checksum=checksum,
        mimetype=first(field, "q") or None,
        access=kind,
        embargo_until=until,
        taken=taken,
    )
