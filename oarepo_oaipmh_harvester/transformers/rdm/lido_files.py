"""LIDO digital resources -> the record's files (:class:`~..files.FileReference`).

Decision owned here: each ``resourceWrap/resourceSet`` gives one file, its best
``resourceRepresentation`` with a http(s) ``linkResource``: a master (``image_master``,
``masterfile``, ``master``, ``original``) before one of no known kind (``provided_image``, a
LIDO terminology URI), before a preview, before a thumbnail; among equals the largest by its
pixel measurements, then the first. ``linkResource/@lido:formatResource`` (``image/jpeg``,
``jpg``), else a representation type that is a MIME type, gives the MIME type; a set whose
``rightsResource`` says access is restricted (``restricted``, Europeana's ``rr-r``/``rr-p``)
gives a restricted file, any other an open one (rights statements such as "in copyright"
restrict reuse, not access). The links stay related identifiers (:mod:`.lido_rights`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..files import FileAccess, FileReference, checked_file_reference, is_http_url
from .lido_read import lido_attribute, terms
from .xml import children, line_of, text_of

if TYPE_CHECKING:
    from lxml import etree

    from .base import RDMTransformer

RANKS = (
    (re.compile(r"master|original|full|orig\b", re.I), 3),
    (re.compile(r"preview|display|screen|medium", re.I), 1),
    (re.compile(r"thumb", re.I), 0),
)
"""Representation type -> its rank (higher is preferred); any other type ranks 2."""
RESTRICTED = re.compile(
    r"restrict|/rr-r/?$|/rr-p/?$|closed access|no access|beschränkt|eingeschränkt|gesperrt",
    re.I,
)


def files(transformer: RDMTransformer, lido: etree._Element) -> None:
    """The record's files into ``transformer.last_files``, one per resource set."""
    taken = {f.name for f in transformer.last_files}
    for admin in children(lido, "administrativeMetadata"):
        for resource_set in children(admin, "resourceWrap", "resourceSet"):
            reference = set_file(transformer, resource_set, taken)
            if reference is not None:
                transformer.last_files.append(reference)


def set_file(
    transformer: RDMTransformer, resource_set: etree._Element, taken: set[str]
) -> FileReference | None:
    """The file of one resource set (None when it links none over http(s))."""
    candidates = []
    for order, representation in enumerate(children(resource_set, "resourceRepresentation")):
        kind = lido_attribute(representation, "type")
        for link in children(representation, "linkResource"):
            url = text_of(link)
            if url:
                key = (_rank(kind), _pixels(representation), -order)
                candidates.append((key, url, lido_attribute(link, "formatResource"), kind))
    usable = [c for c in candidates if is_http_url(c[1])]
    if not usable:
        for _, url, _, _ in candidates:
            if re.match(r"^[a-z][a-z0-9+.-]*://", url, re.I):  # a non-URL: lido_rights warned
                transformer.warn(f"resource {url!r}: not a http(s) URL; no file fetched.")
        return None
    _, url, format_resource, kind = max(usable, key=lambda c: c[0])
    restricted = any(
        RESTRICTED.search(value)
        for rights in children(resource_set, "rightsResource")
        for value in [*terms(rights, "rightsType"), *_concept_ids(rights)]
    )
    mimetype = format_resource or (kind if "/" in kind and "://" not in kind else "")
    return checked_file_reference(
        "resource",
        url,
        transformer.warn,
        mimetype=mimetype or None,
        access=FileAccess.RESTRICTED if restricted else FileAccess.OPEN,
        taken=taken,
    )


def _rank(kind: str) -> int:
    return next((rank for pattern, rank in RANKS if pattern.search(kind)), 2)


def _pixels(representation: etree._Element) -> float:
    """Width times height of the representation's measurements (0 when not given)."""
    sizes: dict[str, float] = {}
    for measurements in children(representation, "resourceMeasurementsSet"):
        name = " ".join(
            line_of(e) for e in measurements.iter() if e is not measurements and line_of(e)
        ).lower()
        value = line_of(next(iter(children(measurements, "measurementValue")), None))
        for dimension in ("width", "height"):
            if dimension in name and re.fullmatch(r"\d+(\.\d+)?", value):
                sizes[dimension] = float(value)
    return sizes.get("width", 0) * sizes.get("height", 0)


def _concept_ids(rights: etree._Element) -> list[str]:
    return [line_of(e) for e in children(rights, "rightsType", "conceptID") if line_of(e)]
