"""Reading a LIDO record for the ``lido_rdm`` transformer (no application, no vocabulary).

Decision owned here: which ``<lido:lido>`` of a record is read (bare or the first in a
``lidoWrap``; LIDO 1.0 and 1.1 share the namespace ``http://www.lido-schema.org``, and
elements are matched by local name anyway), which of several values is the preferred one,
the language a value is in (its own ``xml:lang`` or the nearest one above it), what kind of
event an ``eventType`` names, whether an actor's role makes a creator or a contributor (and
which RDM role), what a LIDO date is as EDTF level 0 (``earliestDate``/``latestDate``, or a
``displayDate`` such as ``ca. 1650``, ``1890-1895`` or ``17th century``), the type table of
``objectWorkType`` / ``classification`` terms, and a place's coordinates from its GML.

invenio-rdm-records is an optional extra: nothing RDM-specific is imported here.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..base import TransformError
from .datacite_places import coordinate
from .helpers import level0_date, years_in_text
from .xml import children, line_of, localname, text_of

if TYPE_CHECKING:
    from lxml import etree

LIDO_NS = "http://www.lido-schema.org"
LIDO_TYPE = f"{{{LIDO_NS}}}type"
LIDO_PREF = f"{{{LIDO_NS}}}pref"
LIDO_SOURCE = f"{{{LIDO_NS}}}source"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"

# eventType terms (lower case; English, German, French) -> the kind of event. Designing,
# drawing, writing and taking a photograph make the object as production does (the
# designer, draughtsman, author or photographer is its creator); museum-digital names its
# events by the past participle ("Hergestellt", "Aufgenommen").
EVENT_KINDS: dict[str, str] = {
    **dict.fromkeys(("production", "creation", "herstellung", "entstehung", "création"), "made"),
    **dict.fromkeys(("production event", "manufacture", "making", "fabrication"), "made"),
    **dict.fromkeys(("designing", "design", "entwurf", "entworfen", "conception"), "made"),
    **dict.fromkeys(("hergestellt", "gezeichnet", "gemalt", "verfasst", "geschrieben"), "made"),
    **dict.fromkeys(("aufgenommen", "fotografiert", "fotografische aufnahme"), "made"),
    **dict.fromkeys(("photographing", "photography", "expression creation"), "made"),
    **dict.fromkeys(("finding", "excavation", "collecting", "fund", "ausgrabung"), "found"),
    **dict.fromkeys(("sammeln", "find", "discovery", "gefunden", "ausgegraben"), "found"),
    **dict.fromkeys(("gesammelt",), "found"),
}
# The last part of an eventType's conceptID or skos:Concept URI (lower case) -> the kind:
# LIDO's terminology (LIDO 1.1 names types by URI only) and CIDOC CRM classes.
EVENT_KIND_IDS: dict[str, str] = {
    **dict.fromkeys(("lido00007", "lido00012", "lido00224", "lido00484", "lido00486"), "made"),
    **dict.fromkeys(("lido00013", "e12_production", "e65_creation"), "made"),
    **dict.fromkeys(("production", "creation", "designing"), "made"),
    **dict.fromkeys(("lido00002", "finding"), "found"),
}
RDF_ABOUT = "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}about"
# kind of event -> RDM date types tried in order for its date (other events: "other").
EVENT_DATE_TYPES: dict[str, tuple[str, ...]] = {"found": ("collected", "other")}

# roleActor terms (lower case) of the production event that make a creator.
CREATOR_ROLES = frozenset(
    """artist author creator maker painter sculptor photographer designer draughtsman
    draftsman drawer engraver etcher lithographer architect illustrator potter goldsmith
    silversmith carver weaver inventor composer künstler künstlerin maler malerin bildhauer
    bildhauerin fotograf fotografin zeichner zeichnerin urheber urheberin autor autorin
    entwerfer stecher architekt artiste peintre auteur""".split()
)
# roleActor terms (lower case) -> RDM contributor role ids, tried in order.
CONTRIBUTOR_ROLES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("editor", "herausgeber", "herausgeberin"), ("editor",)),
    **dict.fromkeys(("translator", "übersetzer", "übersetzerin"), ("translator",)),
    **dict.fromkeys(("publisher", "verleger", "verlag", "distributor"), ("distributor",)),
    **dict.fromkeys(("printer", "drucker", "manufacturer", "hersteller"), ("producer",)),
    **dict.fromkeys(("workshop", "werkstatt", "manufaktur", "factory"), ("producer",)),
    **dict.fromkeys(("producer", "produzent"), ("producer",)),
    **dict.fromkeys(("commissioner", "auftraggeber", "patron", "sponsor"), ("sponsor",)),
    **dict.fromkeys(
        ("owner", "eigentümer", "rights holder", "copyright holder"), ("rightsholder",)
    ),
}

# objectWorkType / classification terms (lower case) -> RDM resource type ids tried in order.
RESOURCE_TYPES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        ("photograph", "photo", "fotografie", "foto", "photographie"), ("image-photo", "image")
    ),
    **dict.fromkeys(
        ("drawing", "zeichnung", "sketch", "skizze", "dessin"), ("image-drawing", "image")
    ),
    **dict.fromkeys(
        ("painting", "gemälde", "malerei", "peinture", "print", "druckgraphik"), ("image",)
    ),
    **dict.fromkeys(
        ("druckgrafik", "engraving", "kupferstich", "etching", "radierung"), ("image",)
    ),
    **dict.fromkeys(("poster", "plakat", "image", "bild", "picture", "map", "karte"), ("image",)),
    **dict.fromkeys(
        ("book", "buch", "manuscript", "handschrift", "livre"), ("publication-book", "publication")
    ),
    **dict.fromkeys(("document", "dokument", "letter", "brief", "text"), ("publication",)),
    **dict.fromkeys(("film", "video", "moving image"), ("video",)),
    **dict.fromkeys(("sound recording", "audio", "tonaufnahme"), ("audio",)),
    **dict.fromkeys(("dataset", "data set"), ("dataset",)),
    **dict.fromkeys(("3d model", "3d-modell", "model"), ("model", "physicalobject")),
    **dict.fromkeys(
        ("object", "objekt", "physical object", "sculpture", "skulptur"), ("physicalobject",)
    ),
    **dict.fromkeys(
        ("plastik", "coin", "münze", "medal", "medaille", "vase", "vessel"), ("physicalobject",)
    ),
    **dict.fromkeys(
        ("gefäß", "tool", "werkzeug", "furniture", "möbel", "textile"), ("physicalobject",)
    ),
    **dict.fromkeys(
        ("textil", "ceramics", "keramik", "jewellery", "schmuck", "weapon"), ("physicalobject",)
    ),
    **dict.fromkeys(
        ("waffe", "instrument", "specimen", "artefact", "artifact"), ("physicalobject",)
    ),
}
"""The documented type table (docs/lido.rst); a site adds its own terms by the
``resource_types`` option. ``category`` E22 (Man-Made Object) says ``physicalobject``."""

CIDOC_MAN_MADE_OBJECT = re.compile(r"(/E22$|E22[_ ]Man-Made[_ ]Object|Human-Made Object)", re.I)

_APPROXIMATE = r"(?:ca\.?|circa|c\.|um|approx\.?|about|vers|environ)"
_YEARS = re.compile(
    rf"^(?:{_APPROXIMATE}\s*)?(\d{{4}})(?:\s*[-–—/]\s*(?:{_APPROXIMATE}\s*)?(\d{{4}}))?$", re.I
)
_CENTURY = re.compile(r"^(\d{1,2})(?:st|nd|rd|th|\.)\s*(?:century|jahrhundert|jh\.?)$", re.I)
# A century in Roman numerals next to a word for century, in either order: "secolul al
# XV-lea", "sec. XX", "XVIe siècle", "saec. XII", "XIX century".
_CENTURY_WORD = r"(?:sec(?:olului|olul|\.)?|saec\.?|siècle|century|jahrhundert|jh\.?)"
_ROMAN_CENTURY = re.compile(
    rf"{_CENTURY_WORD}\s*(?:al\s+)?\b([IVX]{{1,5}})\b|\b([IVX]{{1,5}})(?:e|\.)?\s+{_CENTURY_WORD}",
    re.I,
)
_ROMAN = {"I": 1, "V": 5, "X": 10}


def lido_record(metadata: etree._Element | None, identifier: str) -> etree._Element:
    """The ``lido`` element of a record: the element itself or the first in a ``lidoWrap``."""
    if metadata is None:
        raise TransformError(f"Record {identifier} has no metadata to transform.")
    lido = metadata
    if localname(metadata) == "lidoWrap":
        lido = next(iter(children(metadata, "lido")), None)
    if lido is None or localname(lido) != "lido":
        raise TransformError(
            f"Record {identifier} has no LIDO record in its metadata (root element "
            f"{metadata.tag!r})."
        )
    return lido


def lido_attribute(element: etree._Element, name: str) -> str:
    """A ``lido:`` attribute (LIDO 1.0 and 1.1 qualify them; a careless writer may not)."""
    return (element.get(f"{{{LIDO_NS}}}{name}") or element.get(name) or "").strip()


def one(elements: list[etree._Element]) -> etree._Element | None:
    """The first of `elements`, None if there is none."""
    return elements[0] if elements else None


def preferred(elements: list[etree._Element]) -> etree._Element | None:
    """The value marked ``lido:pref="preferred"`` (with text), else the first with text."""
    with_text = [element for element in elements if text_of(element)]
    for element in with_text:
        if lido_attribute(element, "pref").lower() == "preferred":
            return element
    return with_text[0] if with_text else None


def preferred_text(parent: etree._Element | None, *path: str) -> str:
    """The preferred value's text on one line (names, types, repositories)."""
    return line_of(preferred(children(parent, *path)))


def language_of(element: etree._Element) -> str:
    """The element's ``xml:lang``, else the nearest one of its ancestors (a
    ``descriptiveMetadata`` block is in one language)."""
    for found in (element, *element.iterancestors()):
        code = (found.get(XML_LANG) or "").strip()
        if code:
            return code
    return ""


def terms(parent: etree._Element | None, *path: str) -> list[str]:
    """The texts of the ``term`` elements at `path` (preferred first), duplicates removed."""
    values = [line_of(element) for element in children(parent, *path, "term")]
    return list(dict.fromkeys(value for value in values if value))


def event_kind(event: etree._Element) -> tuple[str, str]:
    """(kind, label) of an event: ``made`` (production, creation, designing...), ``found``
    (finding, excavation, collecting) or ``other``, by its eventType's terms, conceptIDs
    and (LIDO 1.1) ``skos:Concept`` URIs and labels; the label is its first term."""
    event_type = next(iter(children(event, "eventType")), None)
    concepts = [
        element
        for element in (event_type if event_type is not None else ())
        if isinstance(element.tag, str) and localname(element) == "Concept"
    ]
    found = terms(event, "eventType") + [
        text_of(label)
        for concept in concepts
        for label in concept
        if isinstance(label.tag, str) and localname(label) == "prefLabel" and text_of(label)
    ]
    ids = [text_of(element) for element in children(event_type, "conceptID")]
    ids += [concept.get(RDF_ABOUT) or "" for concept in concepts]
    for term in found:
        kind = EVENT_KINDS.get(" ".join(term.lower().split()))
        if kind:
            return kind, term
    for uri in ids:
        kind = EVENT_KIND_IDS.get(uri.rstrip("/").rsplit("/", 1)[-1].lower())
        if kind:
            return kind, found[0] if found else uri
    return "other", found[0] if found else "event"


def actor_role(roles: list[str]) -> tuple[str, tuple[str, ...]]:
    """``creator`` or ``contributor`` for the roles of an actor of the production event,
    with the RDM contributor role ids to try; no role or a maker's role is a creator."""
    for role in roles:
        ids = CONTRIBUTOR_ROLES.get(role.strip().lower())
        if ids:
            return "contributor", ids
    return "creator", ()


def edtf_of(earliest: str, latest: str) -> str | None:
    """EDTF level 0 from ``earliestDate`` and ``latestDate``: one date when they agree or
    only one is usable, else the interval ``earliest/latest``."""
    first, last = (
        level0_date(earliest) if earliest else None,
        level0_date(latest) if latest else None,
    )
    if first and last and first != last:
        return level0_date(f"{first}/{last}")
    return first or last


def display_date(value: str) -> tuple[str | None, bool]:
    """(EDTF level 0, whether a qualifier was given up) of a ``displayDate``.

    ``1642``, ``1642-05``, ``1890-1895`` (or with an en dash), ``ca. 1650`` (RDM refuses
    approximate dates: ``1650``, and True), ``17th century`` / ``17. Jahrhundert``
    (``1600/1699``, and True), else the one year (or two in order) the text names
    (``Pusă în serviciu în 1914``: ``1914``, and True); anything else is (None, False).
    """
    value = " ".join(value.split())
    exact = level0_date(value)
    if exact:
        return exact, False
    years = _YEARS.match(value)
    if years:
        first, last = years.group(1), years.group(2)
        qualified = bool(re.search(_APPROXIMATE, value, re.I))
        found = edtf_of(first, last or first)
        return found, qualified and found is not None
    century = _CENTURY.match(value)
    if century and 1 <= int(century.group(1)) <= 21:
        start = (int(century.group(1)) - 1) * 100
        return f"{start:04d}/{start + 99:04d}", True
    roman = _ROMAN_CENTURY.search(value)
    number = _roman_number((roman.group(1) or roman.group(2)).upper()) if roman else 0
    if 1 <= number <= 21:
        start = (number - 1) * 100
        return f"{start:04d}/{start + 99:04d}", True
    years = years_in_text(value)  # "Pusă în serviciu în 1914", "circa;1812;;"
    return (years, True) if years else (None, False)


def _roman_number(numeral: str) -> int:
    """A Roman numeral of I, V and X (the centuries up to XXI) as a number; 0 if malformed."""
    values = [_ROMAN[letter] for letter in numeral]
    total = sum(
        -v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values)
    )
    return total if total > 0 else 0


def event_date(event: etree._Element) -> tuple[str | None, list[str], bool]:
    """(EDTF level 0 date, the values that were tried, whether a qualifier was given up)
    of an event: ``eventDate/date`` earliest and latest, else its ``displayDate``."""
    tried: list[str] = []
    for date in children(event, "eventDate", "date"):
        earliest, latest = text_of(next(iter(children(date, "earliestDate")), None)), ""
        latest = text_of(next(iter(children(date, "latestDate")), None))
        tried.extend(value for value in (earliest, latest) if value)
        found = edtf_of(earliest, latest)
        if found:
            return found, tried, False
    for element in children(event, "eventDate", "displayDate"):
        value = text_of(element)
        if value:
            tried.append(value)
            found, qualified = display_date(value)
            if found:
                return found, tried, qualified
    return None, tried, False


def _numbers(text: str) -> list[float] | None:
    try:
        return [float(part) for part in text.replace(",", " ").split()]
    except ValueError:
        return None


def gml_geometry(gml: etree._Element) -> dict[str, Any] | None:
    """A GeoJSON geometry of a ``gml`` element: a ``Point`` of its ``pos``, a ``Polygon`` of
    its ``posList`` (LIDO's examples write ``latitude longitude``, EPSG:4326 order)."""
    for element in gml.iter():
        if not isinstance(element.tag, str):
            continue
        name = localname(element)
        numbers = _numbers(text_of(element)) if name in ("pos", "posList") else None
        if name == "pos" and numbers and len(numbers) == 2:
            lat, lon = coordinate(str(numbers[0]), 90), coordinate(str(numbers[1]), 180)
            if lat is None or lon is None:
                return None
            return {"type": "Point", "coordinates": [lon, lat]}
        if name == "posList" and numbers and len(numbers) % 2 == 0 and len(numbers) >= 6:
            ring = [[numbers[i + 1], numbers[i]] for i in range(0, len(numbers), 2)]
            if any(abs(lon) > 180 or abs(lat) > 90 for lon, lat in ring):
                return None
            if ring[0] != ring[-1]:
                ring.append(ring[0])
            return {"type": "Polygon", "coordinates": [ring]} if len(ring) >= 4 else None
    return None


def place_name(place: etree._Element) -> str:
    """A place's preferred name with the names of the places it is part of: ``Delft,
    Netherlands``."""
    names = []
    while place is not None:
        name = preferred_text(place, "namePlaceSet", "appellationValue")
        if name:
            names.append(name)
        place = next(iter(children(place, "partOfPlace")), None)
    return ", ".join(dict.fromkeys(names))


def license_id_of_text(text: str) -> str | None:
    """The RDM license id a rights text names: ``CC BY-SA 4.0`` -> ``cc-by-sa-4.0``, ``CC0``
    -> ``cc0-1.0``, ``Public Domain Mark`` -> ``cc-pdm-1.0``; None if it names none."""
    lowered = " ".join(text.lower().replace("_", " ").split())
    if re.search(r"\bcc0\b|cc zero|public domain dedication", lowered):
        return "cc0-1.0"
    if re.search(r"public domain mark|\bpdm\b", lowered):
        return "cc-pdm-1.0"
    found = re.search(r"\bcc[ -]?(by(?:[ -](?:nc|sa|nd))*)[ -]?(\d\.\d)\b", lowered)
    if found:
        return f"cc-{found.group(1).replace(' ', '-')}-{found.group(2)}"
    return None
