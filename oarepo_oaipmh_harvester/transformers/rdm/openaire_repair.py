"""Real exporters' misplaced DataCite wrappers in an ``oaire:resource``, put back.

Decision owned here: which schema-invalid shapes seen in real ``oai_openaire`` records are
read as the guidelines mean them rather than dropped. Each repair is a warning.

- ``datacite:title`` and ``datacite:date`` directly under the resource, without their
  ``datacite:titles`` / ``datacite:dates`` wrapper (PUB, Bielefeld University's LibreCat,
  2021): read as if wrapped, in document order.
- ``datacite:creator`` used as the wrapper of the ``datacite:creator`` elements, instead of
  ``datacite:creators`` (IRIS, Universita degli Studi di Milano, 2024): read as creators.

The record's element is not changed; a repaired copy is returned.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from lxml import etree

from .xml import localname

BARE_IN_WRAPPER = {"title": "titles", "date": "dates"}
"""A DataCite element found directly under the resource -> the wrapper it belongs in."""


def repaired(resource: etree._Element, warn: Callable[[str], None]) -> etree._Element:
    """The resource with misplaced wrappers put back (the resource itself if none is)."""
    elements = [child for child in resource if isinstance(child.tag, str)]
    bare = [child for child in elements if localname(child) in BARE_IN_WRAPPER]
    nested = [
        child
        for child in elements
        if localname(child) == "creator"
        and any(isinstance(inner.tag, str) and localname(inner) == "creator" for inner in child)
    ]
    if not bare and not nested:
        return resource
    fixed = copy.deepcopy(resource)
    wrappers: dict[str, etree._Element] = {}
    for child in [child for child in fixed if isinstance(child.tag, str)]:
        name = localname(child)
        if name in BARE_IN_WRAPPER:
            wrapper_name = BARE_IN_WRAPPER[name]
            if wrapper_name not in wrappers:
                namespace = etree.QName(child).namespace
                tag = f"{{{namespace}}}{wrapper_name}" if namespace else wrapper_name
                wrappers[wrapper_name] = etree.Element(tag)
                child.addprevious(wrappers[wrapper_name])
            wrappers[wrapper_name].append(child)
        elif name == "creator" and any(
            isinstance(inner.tag, str) and localname(inner) == "creator" for inner in child
        ):
            namespace = etree.QName(child).namespace
            child.tag = f"{{{namespace}}}creators" if namespace else "creators"
    for wrapper_name, wrapper in wrappers.items():
        element = localname(wrapper[0])
        warn(
            f"datacite:{element} outside datacite:{wrapper_name} ({len(wrapper)}): "
            f"read as if in datacite:{wrapper_name}."
        )
    if nested:
        warn("datacite:creator wrapping datacite:creator elements: read as datacite:creators.")
    return fixed
