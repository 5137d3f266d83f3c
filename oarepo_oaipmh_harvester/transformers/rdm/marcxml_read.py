"""Reading MARCXML for the ``marcxml_rdm`` transformer (no application needed).

Decision owned here: a MARCXML document (a bare ``record`` or the first ``record`` of a
``collection``, any namespace or prefix) becomes a :class:`pymarc.Record` built straight from
the lxml element the harvester already parsed - serialising it again for pymarc's SAX reader
would cost a second parse (docs/marcxml.rst has the numbers) -; fields are indexed by tag once;
ISBD punctuation that ends a MARC subfield (`` /``, `` :``, ``;``, ``,``, a final full stop) is
cut; the leader's type of record and bibliographic level, the 336 content type and the 980
collection terms name a resource type through the tables below; MARC relator codes and terms
name an RDM role; and which subfields of which tags have a rule (every other one is a warning).
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pymarc

from ..base import TransformError

if TYPE_CHECKING:
    from lxml import etree

# (leader/06 type of record, leader/07 bibliographic level) -> resource type ids tried in
# order; "" as the level matches any level. Docs: docs/marcxml.rst, "Resource types".
LEADER_TYPES: dict[tuple[str, str], tuple[str, ...]] = {
    ("a", "a"): ("publication-section", "publication"),
    ("a", "b"): ("publication-article", "publication"),
    ("a", "m"): ("publication-book", "publication"),
    ("a", "s"): ("publication-journal", "publication"),
    ("a", "i"): ("publication", "other"),
    ("a", ""): ("publication",),
    ("t", "m"): ("publication-book", "publication"),
    ("t", ""): ("publication",),
    ("c", ""): ("other",),
    ("d", ""): ("other",),
    ("e", ""): ("image",),
    ("f", ""): ("image",),
    ("g", ""): ("video",),
    ("i", ""): ("audio",),
    ("j", ""): ("audio",),
    ("k", ""): ("image",),
    ("m", ""): ("dataset", "software"),
    ("o", ""): ("other",),
    ("p", ""): ("other",),
    ("r", ""): ("physicalobject", "other"),
}
# 980 collection terms of Invenio v1 sites (CDS, INSPIRE), most specific first (a record is
# in several: "arXiv", "Citeable", "CORE", "HEP", "Published") -> resource type ids.
COLLECTIONS: dict[str, tuple[str, ...]] = {
    "conferencepaper": ("publication-conferencepaper", "publication"),
    "thesis": ("publication-thesis", "publication"),
    "proceedings": ("publication-conferenceproceeding", "publication"),
    "bookchapter": ("publication-section", "publication"),
    "book": ("publication-book", "publication"),
    "report": ("publication-report", "publication"),
    "published": ("publication-article", "publication"),
    "article": ("publication-article", "publication"),
    "arxiv": ("publication-preprint", "publication"),
    "preprint": ("publication-preprint", "publication"),
}
# 336 $b RDA content type codes -> resource type ids tried in order.
CONTENT_TYPES: dict[str, tuple[str, ...]] = {
    "txt": ("publication",),
    "tct": ("publication",),
    "sti": ("image",),
    "tdi": ("video",),
    "tdm": ("video",),
    "cri": ("image",),
    "crm": ("image",),
    "cod": ("dataset",),
    "cop": ("software",),
    "snd": ("audio",),
    "spw": ("audio",),
    "prm": ("audio",),
    "tdf": ("physicalobject",),
}
# MARC relator codes (and the terms of $e) whose 7XX name is a creator, not a contributor.
CREATOR_RELATORS = frozenset({"aut", "cre", "author", "creator"})
# MARC relator code -> RDM contributor role id; other codes take the default role and warn.
RELATORS: dict[str, str] = {
    "edt": "editor",
    "ths": "supervisor",
    "dgs": "supervisor",
    "spn": "sponsor",
    "fnd": "sponsor",
    "pro": "producer",
    "prn": "producer",
    "dst": "distributor",
    "cph": "rightsholder",
    "his": "hostinginstitution",
    "dgg": "hostinginstitution",
    "col": "datacollector",
    "cur": "datacurator",
    "res": "researcher",
    "rth": "projectleader",
    "rtm": "projectmember",
    "pdr": "projectmanager",
    "prc": "contactperson",
    "ctb": "other",
}
# Relator terms ($e) -> relator codes.
RELATOR_TERMS: dict[str, str] = {
    "editor": "edt",
    "ed": "edt",
    "hrsg": "edt",
    "herausgeber": "edt",
    "thesis advisor": "ths",
    "degree supervisor": "dgs",
    "sponsor": "spn",
    "funder": "fnd",
    "producer": "pro",
    "distributor": "dst",
    "copyright holder": "cph",
    "host institution": "his",
    "degree granting institution": "dgg",
    "collector": "col",
    "curator": "cur",
    "researcher": "res",
    "contributor": "ctb",
    "translator": "trl",
    "illustrator": "ill",
    "compiler": "com",
}
# Subfields with a rule, by tag; any other subfield of these tags, and every other tag, is a
# warning counted per record. Control fields: 001/003 identify, 005 is the source's change
# time (its own record keeping, as the OAI datestamp is), 008 dates and language.
HANDLED: dict[str, str] = {
    "001": "",
    "003": "",
    "005": "",
    "008": "",
    "020": "az",
    "022": "alyz",
    "024": "a2o",
    "035": "az",
    "037": "a9",
    "041": "a",
    "100": "a0146eu",
    "110": "ab0146eu",
    "111": "a0146eu",
    "130": "a",
    "210": "a",
    "240": "a",
    "242": "aby",
    "245": "abnp",
    "246": "abnp",
    "250": "a",
    "260": "abc",
    "264": "abc",
    "269": "c",
    "300": "abc",
    "336": "ab2",
    "490": "av",
    "500": "a",
    "502": "bc",
    "505": "a",
    "506": "a",
    "520": "a",
    "536": "abcf",
    "540": "au",
    "542": "l",
    "600": "abcdxyz02",
    "610": "abxyz02",
    "611": "axyz02",
    "630": "axyz02",
    "648": "axyz02",
    "650": "axyz02",
    "651": "axyz02",
    "653": "a",
    "655": "axyz02",
    "690": "a",
    "700": "a0146eu",
    "710": "ab0146eu",
    "711": "a0146eu",
    "773": "acginopqtvwxy",
    "856": "afqsuyz3",
    "880": "6ab",
    "909": "op",
    "980": "ab",
    "999": "x",
}
ISBD_RUN = re.compile(r"(?:\s*[/:;,=])+\s*$")
ISBD_END = re.compile(r"[\s]*[/:;,=]\s*$|(?<![\s.][A-Z])(?<!\.\.)\.\s*$")
LEADER_BLANK = " " * 24


@dataclass
class MARC:
    """A MARC record as pymarc reads it, with its fields indexed by tag."""

    record: pymarc.Record
    fields: dict[str, list[pymarc.Field]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        indexed: dict[str, list[pymarc.Field]] = defaultdict(list)
        for found in self.record.fields:
            indexed[found.tag].append(found)
        self.fields = dict(indexed)

    def get(self, *tags: str) -> list[pymarc.Field]:
        """The fields of `tags`, in the order of the tags given, each tag's in record order."""
        return [found for tag in tags for found in self.fields.get(tag, ())]

    def control(self, tag: str) -> str:
        found = self.fields.get(tag)
        return (found[0].data or "") if found and found[0].is_control_field() else ""

    @property
    def leader(self) -> str:
        return str(self.record.leader or "").ljust(24)


def _local(element: etree._Element) -> str:
    tag = element.tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def marc_record(metadata: etree._Element | None, identifier: str) -> MARC:
    """The MARC record in `metadata` as pymarc's Record; TransformError if there is none."""
    if metadata is None:
        raise TransformError(f"Record {identifier} has no metadata.")
    element = metadata
    if _local(element) == "collection":
        element = next((child for child in element if _local(child) == "record"), None)
    if element is None or _local(element) != "record":
        raise TransformError(f"Record {identifier} holds no MARCXML record.")
    record = pymarc.Record(leader=LEADER_BLANK)
    for child in element:
        name = _local(child)
        if name == "leader":
            record.leader = pymarc.Leader((child.text or "").ljust(24)[:24])
        elif name == "controlfield":
            record.add_field(pymarc.Field(tag=child.get("tag", ""), data=child.text or ""))
        elif name == "datafield":
            subfields = [
                pymarc.Subfield(code=sub.get("code", ""), value=sub.text or "")
                for sub in child
                if _local(sub) == "subfield"
            ]
            record.add_field(
                pymarc.Field(
                    tag=child.get("tag", ""),
                    indicators=pymarc.Indicators(
                        child.get("ind1") or " ", child.get("ind2") or " "
                    ),
                    subfields=subfields,
                )
            )
    return MARC(record)


def clean(value: str) -> str:
    """A subfield's value without the ISBD punctuation that ends it and extra spaces
    (``Traffic :`` -> ``Traffic``, ``Vanderbilt, Tom.`` -> ``Vanderbilt, Tom``); an initial's
    full stop (``Fecko, M.``) and an ellipsis stay."""
    # MARC-8 data converted to UTF-8 keeps its decomposed diacritics ("fu\u0308r").
    value = unicodedata.normalize("NFC", " ".join(value.split()))
    # One anchored pass: a loop of one mark a pass was quadratic on a value ending in
    # thousands of them.
    value = ISBD_RUN.sub("", value).strip()
    value = ISBD_END.sub("", value).strip()
    return value.strip("[] ") if value.startswith("[") and value.endswith("]") else value


def values(found: pymarc.Field, *codes: str) -> list[str]:
    """The cleaned non-empty values of `codes` in `found`, in field order."""
    return [
        cleaned
        for sub in found.subfields
        if sub.code in codes and (cleaned := clean(sub.value or ""))
    ]


def first(found: pymarc.Field, code: str) -> str:
    got = values(found, code)
    return got[0] if got else ""


def raw(found: pymarc.Field, code: str) -> list[str]:
    """The values of `code`, stripped only (identifiers and URLs keep their punctuation)."""
    return [
        unicodedata.normalize("NFC", sub.value.strip())
        for sub in found.subfields
        if sub.code == code and sub.value and sub.value.strip()
    ]


def relator(found: pymarc.Field) -> str:
    """The relator code of a name field ($4 code or URI, else a $e term), lower case."""
    for code in raw(found, "4"):
        return code.rstrip("/").rsplit("/", 1)[-1].lower()
    for term in values(found, "e"):
        term = term.lower().strip(" .")
        return RELATOR_TERMS.get(term, term)
    return ""


def unhandled(marc: MARC) -> dict[str, int]:
    """``tag`` or ``tag $code`` -> how often a field or subfield without a rule occurs."""
    counts: dict[str, int] = defaultdict(int)
    for tag, found in marc.fields.items():
        codes = HANDLED.get(tag)
        if codes is None:
            counts[tag] += len(found)
            continue
        for each in found:
            if each.is_control_field():
                continue
            unruled = _unruled_variant(each)
            if unruled:
                counts[unruled] += 1
                continue
            for sub in each.subfields:
                if sub.code not in codes:
                    counts[f"{tag} ${sub.code}"] += 1
    return dict(counts)


# Tags whose rule covers only some of their fields: the indicators InvenioRDM and Invenio v1
# give their 909 (OAI) and 999 (references), and an 880 linked to a title.
ONLY_INDICATORS = {"909": ("C", "O"), "999": ("C", "5")}


def _unruled_variant(found: pymarc.Field) -> str:
    """``909C4``, ``999  ``, ``880 linked to 100``: a field of a tag with a rule that does not
    cover it (counted as a whole), else ``""``."""
    wanted = ONLY_INDICATORS.get(found.tag)
    if wanted and (found.indicator1, found.indicator2) != wanted:
        return f"{found.tag}{found.indicator1}{found.indicator2}".rstrip()
    if found.tag == "880" and not is_linked_title(found):
        linked = (raw(found, "6") or ["?"])[0][:3]
        return f"880 linked to {linked}"
    return ""


def is_linked_title(found: pymarc.Field) -> bool:
    """An 880 (alternate script) of a 245 or 246 title."""
    return any(value.startswith(("245", "246")) for value in raw(found, "6"))
