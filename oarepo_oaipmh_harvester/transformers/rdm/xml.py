"""Reading harvested metadata XML for the InvenioRDM transformers (no application needed).

Decision owned here: elements are matched by their local name, so the namespace of a schema's
version (DataCite kernel 4.0 to 4.5, kernel 3) does not matter; an element's text is taken
either plain or as RDM's HTML fields take it (escaped, a ``<br/>`` kept as a line break); an
``xml:lang`` is found in either of the namespaces writers put it in.
"""

from __future__ import annotations

from html import escape

from lxml import etree

XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


def localname(element: etree._Element) -> str:
    return etree.QName(element).localname


def children(parent: etree._Element | None, *path: str) -> list[etree._Element]:
    """The elements at `path` (local names) below `parent`, in document order."""
    found = [parent] if parent is not None else []
    for name in path:
        found = [
            child
            for element in found
            for child in element
            if isinstance(child.tag, str) and localname(child) == name
        ]
    return found


def text_of(element: etree._Element | None, as_html: bool = False) -> str:
    """The element's text, stripped; `as_html` for RDM's HTML fields (descriptions): the
    text escaped and a ``<br/>`` kept as a line break."""
    if element is None:
        return ""
    if not as_html:
        return "".join(element.itertext()).strip()
    parts = [escape(element.text or "", quote=False)]
    for child in element:
        if isinstance(child.tag, str):
            is_break = localname(child) == "br"
            parts.append("<br>" if is_break else escape("".join(child.itertext()), quote=False))
        parts.append(escape(child.tail or "", quote=False))
    return "".join(parts).strip()


def line_of(element: etree._Element | None) -> str:
    """The element's text on one line: a name or title that an exporter wrapped and
    indented over several lines is one value, its line breaks only layout."""
    return " ".join(text_of(element).split())


def first_text(parent: etree._Element | None, *path: str) -> str:
    found = children(parent, *path)
    return text_of(found[0]) if found else ""


def attribute(element: etree._Element, name: str) -> str:
    return (element.get(name) or "").strip()


def language_attribute(element: etree._Element) -> str:
    # The datacite library writes xml:lang in a namespace of its own ("xml") in memory.
    return (element.get(XML_LANG) or element.get("{xml}lang") or "").strip()
