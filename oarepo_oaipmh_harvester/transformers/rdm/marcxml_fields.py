"""MARC identifiers, rights, host item, links and funding -> RDM record data.

Decision owned here: 020 ISBN, 022 ISSN, 024 standard identifiers (a ``$2 doi`` one is the
record's ``pids.doi`` where the site takes external DOIs), 035/037 system numbers, 001 with
its 003 and 909CO's OAI identifier become ``identifiers`` under the scheme their field, ``$2``
or idutils names (``other`` for a catalogue's own number); 540 names a license by its URL or
id, else is free-text rights; 506, 542 ``$l`` and an eu-repo access term in 540 set
``access.files``; 773 is the journal custom field where the site has it, a related identifier
in InvenioRDM's own form (``$a`` identifier, ``$i`` relation, ``$n`` scheme), else a warning;
856 links are related identifiers (relation by the second indicator) and those that are
files also the transformer's ``last_files`` (:mod:`.marcxml_files`); 536 is funding.

Each rule is a function of the :class:`~.marcxml.MARCXMLRDMTransformer` of the run (typed
as its base class here: importing the subclass would make an import cycle; the rules also
call its ``has_scheme``, ``has_custom_field``, ``relation``, ``relation_by_title`` and
``last_files``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .helpers import EUREPO_ACCESS, doi_of, eurepo_term, is_web_url, pid_doi, valid_for
from .marcxml_files import CHECKSUM, FILE_NAME, file_of
from .marcxml_read import clean, first, raw, values

if TYPE_CHECKING:
    import pymarc

    from ...protocol.records import OAIRecord
    from .base import RDMTransformer as MARCXMLRDMTransformer
    from .marcxml_read import MARC

# 024 first indicator -> the scheme it names (7: the scheme is in $2).
STANDARD_NUMBERS = {"0": "isrc", "1": "upc", "2": "ismn", "3": "ean13", "4": "sici"}
# 856 second indicator -> relation types tried in order (a file of InvenioRDM's own 8564,
# with a size or checksum, is ``haspart`` whatever its indicator).
LINK_RELATIONS: dict[str, tuple[str, ...]] = {
    "0": ("isvariantformof", "other"),
    "1": ("isversionof", "other"),
    "2": ("references", "other"),
    "": ("isvariantformof", "other"),
}
FILE_RELATIONS = ("haspart", "other")
ACCESS_STATUS = {"open": "public", "restricted": "restricted", "embargoed": "restricted"}
JOURNAL_FIELD = "journal:journal"


# -- identifiers ------------------------------------------------------------------------------
def identifiers(
    transformer: MARCXMLRDMTransformer, marc: MARC, data: dict[str, Any], record: OAIRecord
) -> None:
    found: list[dict[str, str]] = list(data["metadata"].get("identifiers", []))
    # A set beside the list: a record of thousands of 035s must not compare each with all.
    seen = {(i["scheme"], i["identifier"].lower()) for i in found}

    def keep(tag: str, value: str, scheme: str | None) -> None:
        import idutils

        doi = doi_of(value) if scheme in (None, "doi") else None
        if doi and tag == "024" and transformer.doi_as_pid(doi, data):
            return
        if doi and doi.lower() == pid_doi(data):
            return
        scheme = "doi" if doi else scheme or transformer.detected_scheme(value)
        schemes = transformer._identifier_schemes or {}
        if scheme and scheme not in schemes:
            scheme = None
        if scheme and not doi and not valid_for(schemes, scheme, value):
            transformer.warn(
                f"{tag} {value!r}: not a valid {scheme}; kept as other if the site has it."
            )
            scheme = None
        if scheme is None and transformer.has_scheme("other"):
            scheme = "other"
        if scheme is None:
            transformer.warn(f"{tag} {value!r}: scheme unknown; dropped.")
            return
        if scheme in ("isbn", "issn") and not doi:
            # RDM stores them normalised (hyphenated); so compares are equal.
            value = idutils.normalize_pid(value, scheme)
        key = (scheme, (doi or value).lower())
        if key not in seen:
            seen.add(key)
            found.append({"identifier": doi or value, "scheme": scheme})

    for field in marc.get("020"):
        for value in raw(field, "a"):
            keep("020", value.split()[0].rstrip(":;"), "isbn")
        for value in raw(field, "z"):
            transformer.warn(f"020 $z {value!r}: a cancelled or invalid ISBN; dropped.")
    for field in marc.get("022"):
        for value in raw(field, "a") + raw(field, "l"):
            keep("022", value, "issn")
        for code in "yz":
            for value in raw(field, code):
                transformer.warn(f"022 ${code} {value!r}: an incorrect or cancelled ISSN; dropped.")
    for field in marc.get("024"):
        named = (first(field, "2") or "").lower()
        scheme = STANDARD_NUMBERS.get(field.indicator1) or named or None
        scheme = {"hdl": "handle", "uri": "url"}.get(scheme or "", scheme)
        for value in raw(field, "a") + raw(field, "o"):
            keep("024", value, scheme)
    for tag in ("035", "037"):
        for field in marc.get(tag):
            for value in raw(field, "a"):
                keep(tag, value, transformer.detected_scheme(value))
            for value in raw(field, "z"):
                transformer.warn(f"{tag} $z {value!r}: a cancelled number; dropped.")
    control, organisation = marc.control("001").strip(), marc.control("003").strip()
    if control and organisation:
        keep("001", f"({organisation}){control}", None)
    elif control:
        transformer.warn(
            f"001 {control!r}: a control number without 003 (whose number it is); dropped."
        )
    for field in marc.get("909"):
        if (field.indicator1, field.indicator2) != ("C", "O"):
            continue
        for value in raw(field, "o"):
            if value != record.identifier:
                keep("909CO", value, None)
        for value in raw(field, "p"):
            transformer.warn(f"909CO $p {value!r}: the source's community; not kept.")
    if found:
        data["metadata"]["identifiers"] = found


# -- rights and access ------------------------------------------------------------------------
def rights(transformer: MARCXMLRDMTransformer, marc: MARC, data: dict[str, Any]) -> None:
    metadata, access = data["metadata"], data["access"]
    found: list[dict[str, Any]] = []

    def add(entry: dict[str, Any]) -> None:
        if entry not in found:
            found.append(entry)

    for field in marc.get("540"):
        texts = [v for v in raw(field, "a") if not _access_term(transformer, v, access)]
        urls = raw(field, "u")
        license_id = next((i for url in urls if (i := transformer.license_by_url(url))), None)
        if license_id is None:
            license_id = next(
                (
                    t.lower()
                    for t in texts
                    if transformer.vocabularies.exists("licenses", t.lower())
                ),
                None,
            )
        if license_id:
            add({"id": license_id})
        elif texts or urls:
            entry: dict[str, Any] = {"title": {"en": " ".join(texts) if texts else urls[0]}}
            link = next((url for url in urls if is_web_url(url)), None)
            if link:
                entry["link"] = link
            add(entry)
    for field in marc.get("650"):
        if (field.indicator1, field.indicator2) == ("1", "7") and _is_license(transformer, field):
            add({"id": first(field, "a").lower()})
    if found:
        metadata["rights"] = found
    for field in marc.get("542"):
        for status in raw(field, "l"):
            if status in ACCESS_STATUS:
                _restrict(access, ACCESS_STATUS[status])
            elif status != "metadata-only":
                transformer.warn(f"542 $l {status!r}: no such access status; dropped.")
    for field in marc.get("506"):
        text = "; ".join(values(field, "a"))
        if field.indicator1 == "1":
            _restrict(access, "restricted")
            transformer.warn(f"506 {text!r}: files restricted; the terms are not kept.")
        elif field.indicator1 != "0" and text:
            transformer.warn(f"506 {text!r}: access terms without indicator; not kept.")


def _restrict(access: dict[str, Any], files: str) -> None:
    """RDM has one files access per record: the most restrictive the record names holds
    (an open 506 never opens files a 540 or 542 restricted)."""
    if files == "restricted":
        access["files"] = "restricted"


def _access_term(transformer: MARCXMLRDMTransformer, value: str, access: dict[str, Any]) -> bool:
    """Whether `value` is an eu-repo access term (InvenioRDM writes its access status so
    into 540), applied to `access`."""
    term = eurepo_term(value)
    if term is None:
        return False
    if term in EUREPO_ACCESS:
        _restrict(access, EUREPO_ACCESS[term])
    elif term != "metadata-onlyAccess":
        transformer.warn(f"540 {value!r}: no such access term; dropped.")
    return True


def _is_license(transformer: MARCXMLRDMTransformer, field: pymarc.Field) -> bool:
    """InvenioRDM writes each license's id as a 650 with indicators 1 and 7 too."""
    value = first(field, "a").lower()
    return bool(value) and transformer.vocabularies.exists("licenses", value)


# The 773 subfields the journal field takes (the others are named in a warning).
JOURNAL_CODES = frozenset("tpvncxgq")


# -- the host item ----------------------------------------------------------------------------
def host(transformer: MARCXMLRDMTransformer, marc: MARC, data: dict[str, Any]) -> None:
    metadata = data["metadata"]
    for field in marc.get("773"):
        # InvenioRDM's form has no title; a catalogue's 773 may have an $i and an $a (the
        # host's relationship and main entry) too, with its title in $t.
        if raw(field, "i") and raw(field, "a") and not (raw(field, "t") or raw(field, "p")):
            _related_of_rdm(transformer, field, metadata)
            continue
        # The host's full title ($t) before its abbreviated one ($p): a later key wins.
        journal = {
            key: value
            for key, code in (
                ("title", "p"),
                ("title", "t"),
                ("volume", "v"),
                ("issue", "n"),
                ("pages", "c"),
                ("issn", "x"),
            )
            if (value := first(field, code))
        }
        parts = " ".join(values(field, "g", "q"))
        parsed = _related_parts(parts)
        for key, value in parsed.items():
            journal.setdefault(key, value)
        unparsed = f", $g {parts!r}" if parts and not parsed else ""
        shown = journal.get("title") or parts or "?"
        skipped = [
            f"${sub.code} {cleaned!r}"
            for sub in field.subfields
            if sub.code not in JOURNAL_CODES and (cleaned := clean(sub.value or ""))
        ]
        if first(field, "t") and first(field, "p"):
            skipped.append(f"$p {first(field, 'p')!r} (the abbreviated title)")
        if skipped:
            transformer.warn(f"773 {shown!r}: {', '.join(skipped)} not kept.")
        current = data.get("custom_fields", {})
        if journal and transformer.has_custom_field(JOURNAL_FIELD):
            if JOURNAL_FIELD not in current:
                data.setdefault("custom_fields", {})[JOURNAL_FIELD] = journal
                if unparsed:
                    transformer.warn(f"773 {shown!r}: $g {parts!r} not kept.")
                continue
            reason = f"a second host item ({JOURNAL_FIELD} holds the first)"
        else:
            reason = f"the site has no {JOURNAL_FIELD} custom field"
        issn = journal.get("issn")
        if issn and not valid_for(transformer._related_schemes or {}, "issn", issn):
            issn = None  # named in the warning below
        relation = transformer.relation("ispublishedin", "ispartof", "other")
        if issn and relation:
            entry = {"identifier": issn, "scheme": "issn", "relation_type": {"id": relation}}
            metadata.setdefault("related_identifiers", []).append(entry)
        kept = f"kept its ISSN as a related identifier ({relation})" if issn and relation else ""
        transformer.warn(
            f"773 {shown!r}: {reason}; {kept or 'dropped'} "
            f"({', '.join(f'{k} {v!r}' for k, v in journal.items())}{unparsed})."
        )


# "Vol. 5, no. 2 (2021), p. 33-45", "Bd. 12, H. 3, S. 101-120": a catalogue's 773 $g.
RELATED_PARTS = {
    "volume": re.compile(r"\b(?:vol(?:ume)?|v|bd|jg|band)\.?\s*(\d+[\w/-]*)", re.I),
    "issue": re.compile(r"\b(?:no|nr|number|issue|heft|h)\.?\s*(\d+[\w/-]*)", re.I),
    "pages": re.compile(r"\b(?:pp|p|s|pages?)\.?\s*(\d+(?:\s*-\s*\d+)?)", re.I),
}


def _related_parts(text: str) -> dict[str, str]:
    """Volume, issue and pages a 773 ``$g`` names (none it does not)."""
    found = {}
    for key, pattern in RELATED_PARTS.items():
        match = pattern.search(text)
        if match:
            found[key] = match.group(1).replace(" ", "")
    return found


def _related_of_rdm(
    transformer: MARCXMLRDMTransformer, field: pymarc.Field, metadata: dict[str, Any]
) -> None:
    """A 773 as InvenioRDM writes its related identifiers: ``$a`` the identifier, ``$i``
    the relation type's English title (or a DataCite term), ``$n`` the scheme."""
    value, title = raw(field, "a")[0], raw(field, "i")[0]
    scheme = (raw(field, "n") or [""])[0].lower() or transformer.detected_scheme(value, True)
    relation = transformer.relation_by_title(title)
    if relation is None:
        transformer.warn(f"773 {value!r}: relation {title!r} is not a relation type here; dropped.")
        return
    if not scheme or scheme not in (transformer._related_schemes or {}):
        transformer.warn(f"773 {value!r}: scheme {scheme!r} is not one RDM takes; dropped.")
        return
    entry = {"identifier": value, "scheme": scheme, "relation_type": {"id": relation}}
    related = metadata.setdefault("related_identifiers", [])
    if entry not in related:
        related.append(entry)


# -- links ------------------------------------------------------------------------------------
def links(transformer: MARCXMLRDMTransformer, marc: MARC, data: dict[str, Any]) -> None:
    """856: related identifiers of the record; those that are files
    (:func:`.marcxml_files.is_file`) its ``last_files`` too, with the files' access."""
    metadata = data["metadata"]
    related: list[dict[str, Any]] = metadata.setdefault("related_identifiers", [])
    known = {f"{r['scheme']}:{r['identifier']}" for r in related}
    seen = {(r["scheme"], r["identifier"], r["relation_type"]["id"]) for r in related}
    taken: set[str] = {f.name for f in transformer.last_files}
    for field in marc.get("856"):
        for value in raw(field, "a"):
            # InvenioRDM's 856 with second indicator 2: "scheme:identifier" of a related
            # identifier its 773 gives with the relation.
            if value not in known:
                transformer.warn(f"856 $a {value!r}: not a related identifier of 773; dropped.")
        notes = raw(field, "z")
        checksum = next((n for n in notes if CHECKSUM.match(n)), None)
        is_file = bool(checksum or first(field, "s"))
        for code in ("y", "3", "z"):
            for text in raw(field, code):
                if text != checksum and not FILE_NAME.match(text):
                    transformer.warn(
                        f"856 ${code} {text!r}: a link's text has no RDM field; dropped."
                    )
        for url in raw(field, "u"):
            if not is_web_url(url):
                transformer.warn(f"856 $u {url!r}: not a URL; dropped.")
                continue
            kinds = FILE_RELATIONS if is_file else LINK_RELATIONS.get(field.indicator2.strip(), ())
            kinds = kinds or LINK_RELATIONS[""]  # an indicator the table lacks: a plain link
            relation = transformer.relation(*kinds)
            if relation is None:
                transformer.warn(f"856 $u {url!r}: no relation type {kinds[0]!r}; dropped.")
            elif ("url", url, relation) not in seen:
                seen.add(("url", url, relation))
                related.append(
                    {"identifier": url, "scheme": "url", "relation_type": {"id": relation}}
                )
            reference = file_of(transformer, field, url, data["access"], taken)
            if reference is not None:
                transformer.last_files.append(reference)
    if not related:
        del metadata["related_identifiers"]


# -- funding ----------------------------------------------------------------------------------
def funding(transformer: MARCXMLRDMTransformer, marc: MARC, metadata: dict[str, Any]) -> None:
    """536: ``$a`` the funder (InvenioRDM writes ``funder: award title``), ``$c`` (``$b``,
    ``$f``) the award's number."""
    for field in marc.get("536"):
        text = " ".join(values(field, "a"))
        funder, colon, title = text.partition(": ")
        numbers = values(field, "c", "b", "f")
        number = first(field, "c") or first(field, "b") or first(field, "f")
        if len(numbers) > 1:
            transformer.warn(f"536 {'; '.join(numbers)!r}: one award number kept, {number!r}.")
        if not funder:
            transformer.warn(f"536 {number!r}: no funder ($a); dropped.")
            continue
        entry: dict[str, Any] = {"funder": {"name": clean(funder)}}
        award: dict[str, Any] = {}
        if number:
            award["number"] = number
        if colon and title:
            award["title"] = {"en": title}
        if award:
            entry["award"] = award
        metadata.setdefault("funding", []).append(entry)
