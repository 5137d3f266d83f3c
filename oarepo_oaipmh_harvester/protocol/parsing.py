"""Turning the bytes of an OAI-PMH response into a parsed tree, once and safely.

Decision owned here: which bytes are an OAI-PMH document, and how much broken input is
repaired rather than refused.  Real providers send characters that XML 1.0 forbids (DSpace is notorious for vertical tabs
and other C0 controls copied from PDFs).  Rejecting the page would stop a harvest forever
over one character, and a recovering parser would silently drop records, so instead each
forbidden character is swapped for a placeholder before parsing; after parsing the
placeholders are removed again and counted per record, so the affected records can carry
an error.  Placeholders are Unicode noncharacters absent from the document: legal in XML,
never meaningful in data, so nothing genuine is ever mistaken for one.  Byte sequences that
are invalid in the document's encoding are handled the same way and become U+FFFD.
"""

from __future__ import annotations

import codecs
import hashlib
import logging
import re
from collections import Counter
from dataclasses import dataclass, field

from lxml import etree

from .errors import MalformedResponse

log = logging.getLogger(__name__)

OAI_NAMESPACE = "http://www.openarchives.org/OAI/2.0/"


def oai(tag: str) -> str:
    """The Clark name of an element in the OAI-PMH namespace."""
    return f"{{{OAI_NAMESPACE}}}{tag}"


def text_of(element: etree._Element, tag: str) -> str:
    """The stripped text of ``element``'s first child ``tag`` (a Clark name), "" if none."""
    child = element.find(tag)
    return (child.text or "").strip() if child is not None else ""


def child_text(element: etree._Element | None, tag: str) -> str:
    """Like :func:`text_of` for a child in the OAI-PMH namespace; "" for no element."""
    return text_of(element, oai(tag)) if element is not None else ""


_INVALID_BYTES = -1  # the "kind" of a placeholder that stands for undecodable bytes

# XML 1.0 Char excludes C0 controls except TAB, LF, CR, and U+FFFE/U+FFFF.  C1 controls
# (U+0080-U+009F) are legal XML 1.0 and are kept.  Surrogates only appear here as the
# "surrogateescape" stand-ins for undecodable bytes.
_FORBIDDEN = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]"
    r"|[\ud800-\udfff]+"
    r"|&#(?:[xX]0*([0-9a-fA-F]{1,8})|0*([0-9]{1,10}));"
)

_PLACEHOLDERS = [chr(c) for c in range(0xFDD0, 0xFDF0)] + [
    chr((plane << 16) | low) for plane in range(1, 17) for low in (0xFFFE, 0xFFFF)
]

_ENCODING_DECLARATION = re.compile(rb"""^<\?xml[^>]*?\bencoding\s*=\s*["']([A-Za-z0-9._:-]+)["']""")
_CHARSET = re.compile(r"""charset\s*=\s*["']?([A-Za-z0-9._:-]+)""", re.IGNORECASE)


def _is_forbidden(code: int) -> bool:
    return (
        (code < 0x20 and code not in (0x09, 0x0A, 0x0D))
        or code in (0xFFFE, 0xFFFF)
        or 0xD800 <= code <= 0xDFFF
    )


@dataclass
class ParsedDocument:
    """A parsed OAI-PMH response.

    ``item_errors`` maps each item element (a direct child of the verb element, e.g. a
    ``<record>``) to the problems found in it; ``errors`` lists problems outside any item.
    """

    root: etree._Element
    encoding: str
    item_errors: dict[etree._Element, list[str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    repaired_characters: bool = False
    """Characters XML forbids (or undecodable bytes) were taken out before parsing."""


def detect_encoding(body: bytes, content_type: str | None) -> str:
    """BOM, then the XML declaration, then the HTTP charset, then UTF-8.

    The declaration wins over HTTP because it is written by the software that produced the
    bytes, while the HTTP charset is often a web server default (ISO-8859-1 in Tomcat).
    """
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if body.startswith(bom):
            return name
    candidates = []
    match = _ENCODING_DECLARATION.match(body.lstrip()[:512])
    if match:
        candidates.append(match.group(1).decode("ascii"))
    if content_type:
        charset = _CHARSET.search(content_type)
        if charset:
            candidates.append(charset.group(1))
    for candidate in candidates:
        try:
            return codecs.lookup(candidate).name
        except LookupError:
            continue
    return "utf-8"


_LIBXML2_ERRORS = {
    value: name for name, value in vars(etree.ErrorTypes).items() if isinstance(value, int)
}


def _describe_body(body: bytes, content_type: str | None) -> str:
    """What an operator may learn about a refused body: its size and type, never its text."""
    kind = f", content type {content_type.split(';')[0].strip()}" if content_type else ""
    return f"{len(body)} bytes{kind}"


def _log_digest(url: str, body: bytes, content_type: str | None, problem: str) -> None:
    # For the site's logs only: enough to recognise the same body again, nothing of its text.
    log.warning(
        "%s: %s (%d bytes, sha256 %s, content type %s)",
        url or "response",
        problem,
        len(body),
        hashlib.sha256(body).hexdigest()[:16],
        content_type or "none",
    )


# Our own words for the commonest libxml2 errors (its messages may quote the document).
_SYNTAX_HINTS = {
    "ERR_RESOURCE_LIMIT": "entity expansion or another parser limit exceeded",
    "ERR_ENTITY_LOOP": "an entity refers to itself",
    "ERR_UNDECLARED_ENTITY": "an undeclared entity",
    "ERR_TAG_NAME_MISMATCH": "an end tag does not match its start tag",
    "ERR_TAG_NOT_FINISHED": "an element is not closed",
    "ERR_DOCUMENT_END": "content after the end of the document",
    "ERR_DOCUMENT_EMPTY": "no document",
    "ERR_NAME_REQUIRED": "a malformed name",
    "ERR_GT_REQUIRED": "a malformed tag",
    "ERR_INVALID_CHAR": "a character XML forbids",
}


def _syntax_error(error: etree.XMLSyntaxError) -> str:
    """libxml2's error code and position; its message may quote the document, so not that."""
    name = _LIBXML2_ERRORS.get(error.code, f"error {error.code}")
    hint = f" ({_SYNTAX_HINTS[name]})" if name in _SYNTAX_HINTS else ""
    line, column = error.position if error.position else (error.lineno, error.offset)
    return f"libxml2 {name}{hint} at line {line}, column {column}"


def parse_document(
    body: bytes, *, content_type: str | None = None, url: str = ""
) -> ParsedDocument:
    """Parse an OAI-PMH response; MalformedResponse if it is not one.

    The parser resolves no entities, loads no DTD and touches no network, so a hostile
    provider cannot read local files or expand entities without bound.
    """
    where = f" from {url}" if url else ""
    if not body.strip():
        raise MalformedResponse(
            f"The response{where} is empty ({_describe_body(body, content_type)}), not an "
            f"OAI-PMH document.",
            url=url,
        )
    encoding = detect_encoding(body, content_type)
    try:
        # Fast path: almost every response is clean, and scanning a page for forbidden
        # characters costs more than parsing it. Anything lxml refuses takes the slow path,
        # which repairs what can be repaired and reports what cannot.
        root = etree.fromstring(body, safe_parser(encoding))
    except (etree.XMLSyntaxError, LookupError, ValueError):
        pass
    else:
        if root.tag == oai("OAI-PMH"):
            return ParsedDocument(root=root, encoding=encoding)
    try:
        text = body.decode(encoding, errors="surrogateescape")
    except UnicodeDecodeError as error:  # only multi-byte codecs get here (e.g. UTF-16)
        _log_digest(url, body, content_type, f"not decodable as {encoding}")
        raise MalformedResponse(
            f"The response{where} cannot be decoded as {encoding} ({error.reason} at byte "
            f"{error.start}; {_describe_body(body, content_type)}); not an OAI-PMH response.",
            url=url,
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]

    placeholders: dict[str, int] = {}
    if _FORBIDDEN.search(text):
        text, placeholders = _replace_forbidden(text, url)

    try:
        # We decoded ourselves: "utf-8" overrides the (now wrong) declaration.
        root = etree.fromstring(text.encode("utf-8"), safe_parser("utf-8"))
    except etree.XMLSyntaxError as error:
        _log_digest(url, body, content_type, "not well-formed XML")
        raise MalformedResponse(
            f"The response{where} is not well-formed XML ({_syntax_error(error)}; "
            f"{_describe_body(body, content_type)}); not an OAI-PMH response.",
            url=url,
        ) from None
    if root.tag != oai("OAI-PMH"):
        _log_digest(url, body, content_type, "not an OAI-PMH document")
        raise MalformedResponse(
            f"The response{where} is not an OAI-PMH 2.0 document: {_root_kind(root)} "
            f"({_describe_body(body, content_type)}). Is the base URL right?",
            url=url,
        )
    document = ParsedDocument(root=root, encoding=encoding, repaired_characters=bool(placeholders))
    if placeholders:
        _remove_placeholders(document, placeholders)
    return document


def _root_kind(root: etree._Element) -> str:
    # A classification, never the element's name: the body is not ours to repeat.
    name = etree.QName(root.tag).localname if isinstance(root.tag, str) else ""
    if name.lower() == "html":
        return "it is an HTML page"
    if name == "OAI-PMH":
        return "its root element <OAI-PMH> is not in the OAI-PMH 2.0 namespace"
    return "its root element is not <OAI-PMH>"


def safe_parser(encoding: str | None = None) -> etree.XMLParser:
    """A parser that resolves no entities, loads no DTD and touches no network."""
    return etree.XMLParser(
        encoding=encoding,
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        remove_blank_text=False,
        recover=False,
    )


def _replace_forbidden(text: str, url: str) -> tuple[str, dict[str, int]]:
    available = iter(p for p in _PLACEHOLDERS if p not in text)
    placeholders: dict[str, int] = {}
    by_kind: dict[int, str] = {}

    def placeholder(kind: int) -> str:
        if kind not in by_kind:
            try:
                by_kind[kind] = next(available)
            except StopIteration:  # pragma: no cover - needs 32+ noncharacters in the data
                raise MalformedResponse(
                    f"The response from {url} contains too many kinds of characters that XML "
                    f"forbids to repair it.",
                    url=url,
                ) from None
            placeholders[by_kind[kind]] = kind
        return by_kind[kind]

    def replace(match: re.Match[str]) -> str:
        value = match.group(0)
        if value.startswith("&#"):
            hex_digits, dec_digits = match.group(1), match.group(2)
            code = int(hex_digits, 16) if hex_digits else int(dec_digits)
            if not _is_forbidden(code):
                return value  # an ordinary character reference
            return placeholder(code)
        if "\ud800" <= value[0] <= "\udfff":
            # One placeholder per undecodable byte, as a decoder with "replace" would do.
            return placeholder(_INVALID_BYTES) * len(value)
        return placeholder(ord(value))

    return _FORBIDDEN.sub(replace, text), placeholders


def _remove_placeholders(document: ParsedDocument, placeholders: dict[str, int]) -> None:
    root = document.root
    verb_element = next(
        (
            child
            for child in root
            if isinstance(child.tag, str)
            and child.tag not in (oai("responseDate"), oai("request"), oai("error"))
        ),
        None,
    )
    found: dict[etree._Element | None, Counter[int]] = {}

    def clean(value: str) -> tuple[str, Counter[int]]:
        counts: Counter[int] = Counter()
        for char, kind in placeholders.items():
            if char in value:
                counts[kind] += value.count(char)
                value = value.replace(char, "\ufffd" if kind == _INVALID_BYTES else "")
        return value, counts

    def item_of(node: etree._Element | None) -> etree._Element | None:
        while node is not None:
            parent = node.getparent()
            if parent is not None and parent is verb_element:
                return node
            node = parent
        return None

    def note(owner: etree._Element | None, counts: Counter[int]) -> None:
        if counts:
            found.setdefault(item_of(owner), Counter()).update(counts)

    for node in root.iter():
        if node.text and any(p in node.text for p in placeholders):
            node.text, counts = clean(node.text)
            note(node, counts)
        if node.tail and any(p in node.tail for p in placeholders):
            node.tail, counts = clean(node.tail)
            note(node.getparent(), counts)
        if isinstance(node.tag, str):
            for name, value in node.attrib.items():
                if any(p in value for p in placeholders):
                    node.attrib[name], counts = clean(value)
                    note(node, counts)

    for item, counts in found.items():
        messages = _describe(counts, document.encoding)
        if item is None:
            document.errors.extend(messages)
        else:
            document.item_errors.setdefault(item, []).extend(messages)


def _describe(counts: Counter[int], encoding: str) -> list[str]:
    messages = []
    invalid = counts.pop(_INVALID_BYTES, 0)
    if counts:
        total = sum(counts.values())
        codes = ", ".join(f"U+{code:04X}" for code in sorted(counts))
        messages.append(
            f"removed {total} character{'s' if total != 1 else ''} that XML forbids ({codes})"
        )
    if invalid:
        messages.append(
            f"replaced {invalid} byte{'s' if invalid != 1 else ''} that are not valid "
            f"{encoding} with U+FFFD"
        )
    return messages


__all__ = [
    "OAI_NAMESPACE",
    "ParsedDocument",
    "child_text",
    "detect_encoding",
    "oai",
    "parse_document",
    "safe_parser",
    "text_of",
]
