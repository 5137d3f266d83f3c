"""MARC names (1XX, 7XX) -> RDM ``creators`` and ``contributors``.

Decision owned here: the main entry (100 person, 110 organisation, 111 meeting) is always a
creator; an added entry (700, 710, 711) is a creator when its relator says author or creator
or says nothing - InvenioRDM's own MARCXML serializer writes the creators after the first as
700 without a relator, and catalogues add co-authors so -, else a contributor whose role is the
relator's RDM role (the vocabulary's ``props.marc``, then the table in
:mod:`.marcxml_read`), else the default role with a warning. A person's name is ``Family,
Given`` (first indicator 1) or a forename only (0); ``$0``/``$1`` identifiers are kept where
RDM takes their scheme for people (ORCID, GND, ISNI; ROR for organisations), every other one
(VIAF, LCNAF, a local id) is a warning; each ``$u`` is an affiliation.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .marcxml_read import CREATOR_RELATORS, RELATORS, clean, raw, relator, values

if TYPE_CHECKING:
    import pymarc

    from ...protocol.records import OAIRecord
    from .base import RDMTransformer
    from .marcxml_read import MARC

# "(orcid)0000-...", "(DE-588)118547739", "https://orcid.org/..." -> (scheme hint, value)
PREFIXED = re.compile(r"^\((?P<source>[^)]+)\)\s*(?P<value>.+)$")
SOURCE_SCHEMES = {
    "orcid": "orcid",
    "gnd": "gnd",
    "de-588": "gnd",
    "isni": "isni",
    "ror": "ror",
    "viaf": "viaf",
    "uri": "",
}
URI_SCHEMES = (
    ("orcid.org/", "orcid"),
    ("d-nb.info/gnd/", "gnd"),
    ("isni.org/isni/", "isni"),
    ("ror.org/", "ror"),
    ("viaf.org/", "viaf"),
    ("id.loc.gov/", "lcnaf"),
)


def names(
    transformer: RDMTransformer, marc: MARC, metadata: dict[str, Any], record: OAIRecord
) -> None:
    creators: list[dict[str, Any]] = []
    contributors: list[dict[str, Any]] = []
    for found in marc.get("100", "110", "111"):
        entry = _entry(transformer, found)
        code = relator(found)
        if entry and code and code not in CREATOR_RELATORS:
            transformer.warn(
                f"{found.tag} {_shown(entry)!r}: relator {code!r} not kept (the main entry is "
                f"a creator; RDM's creators take no contributor role)."
            )
        if entry:
            creators.append(entry)
    for found in marc.get("700", "710", "711"):
        entry = _entry(transformer, found)
        if not entry:
            continue
        code = relator(found)
        if not code or code in CREATOR_RELATORS:
            creators.append(entry)
            continue
        entry["role"] = {"id": _role(transformer, found.tag, entry, code)}
        contributors.append(entry)
    if contributors:
        metadata["contributors"] = contributors
    if not creators:
        publisher = metadata.get("publisher")
        creators = transformer.stand_in_creators(
            record,
            "100, 110, 111 or author's 7XX",
            contributors=contributors,
            holders=[publisher] if publisher else [],
            error=(
                f"Record {record.identifier} names no creator (no 100, 110, 111 and no 7XX "
                f"author); RDM needs at least one."
            ),
        )
    metadata["creators"] = creators


def _shown(entry: dict[str, Any]) -> str:
    person = entry["person_or_org"]
    return person.get("name") or ", ".join(
        p for p in (person.get("family_name"), person.get("given_name")) if p
    )


def _entry(transformer: RDMTransformer, found: pymarc.Field) -> dict[str, Any] | None:
    if found.tag in ("100", "700"):
        name = first(found)
        if not name:
            transformer.warn(f"{found.tag}: no name ($a); dropped.")
            return None
        family, comma, given = (part.strip() for part in name.partition(","))
        person: dict[str, Any]
        if not comma and found.indicator1 not in ("0", "1", "3"):
            # InvenioRDM writes every creator and contributor as 100/700 with blank
            # indicators: a name without a comma there is an organisation's, as in oai_dc.
            person = {"type": "organizational", "name": name}
        else:
            person = {"type": "personal", "family_name": family or name}
        if comma and given and found.indicator1 != "0":
            person["given_name"] = given
        elif comma and given:
            person["family_name"] = name
    else:
        parts = values(found, "a", "b")
        if not parts:
            transformer.warn(f"{found.tag}: no name ($a); dropped.")
            return None
        person = {"type": "organizational", "name": ". ".join(parts)}
    entry: dict[str, Any] = {"person_or_org": person}
    label = f"{found.tag} {_shown(entry)!r}"
    identifiers = _identifiers(transformer, found, person["type"], label)
    if identifiers:
        person["identifiers"] = identifiers
    affiliations = [{"name": name} for name in dict.fromkeys(values(found, "u"))]
    if affiliations:
        entry["affiliations"] = affiliations
    return entry


def first(found: pymarc.Field) -> str:
    """A name's ``$a`` without the ISBD comma or stop that ends it."""
    got = values(found, "a")
    return clean(got[0]) if got else ""


def _identifiers(
    transformer: RDMTransformer, found: pymarc.Field, kind: str, label: str
) -> list[dict[str, str]]:
    import idutils
    from flask import current_app

    schemes = current_app.config.get("RDM_RECORDS_PERSONORG_SCHEMES") or {}
    # GND and ISNI name organisations too; ORCID only people, ROR only organisations.
    wanted = {"ror", "gnd", "isni"} if kind == "organizational" else {"orcid", "gnd", "isni"}
    kept: list[dict[str, str]] = []
    for value in raw(found, "0") + raw(found, "1"):
        scheme, bare = _scheme_of(value)
        validator = (schemes.get(scheme) or {}).get("validator") if scheme else None
        if scheme in wanted and scheme in schemes and (validator is None or validator(bare)):
            identifier = idutils.normalize_pid(bare, scheme)
            entry = {"scheme": scheme, "identifier": identifier}
            if entry not in kept:
                kept.append(entry)
            continue
        transformer.warn(
            f"{label}: identifier {value!r}"
            f"{f' ({scheme})' if scheme else ''} is not one RDM takes for "
            f"{'organisations' if kind == 'organizational' else 'people'}; dropped."
        )
    return kept


def _scheme_of(value: str) -> tuple[str, str]:
    """(scheme, value) of a ``$0``/``$1``: a ``(source)`` prefix or a known URI."""
    match = PREFIXED.match(value)
    if match:
        source = match.group("source").strip().lower()
        value = match.group("value").strip()
        scheme = SOURCE_SCHEMES.get(source)
        if scheme:
            return scheme, value
        if scheme is None:
            return source, value
    lowered = value.lower()
    for marker, scheme in URI_SCHEMES:
        if marker in lowered:
            bare = value[lowered.index(marker) + len(marker) :].strip("/")
            return scheme, bare
    return "", value


def _role(transformer: RDMTransformer, tag: str, entry: dict[str, Any], code: str) -> str:
    vocabulary = transformer.vocabularies
    by_prop = vocabulary.by_prop("contributorsroles", "marc", code, lambda v: v.lower() == code)
    if by_prop:
        return by_prop[0]
    role = RELATORS.get(code)
    if role and vocabulary.exists("contributorsroles", role):
        return role
    default = transformer.default_contributor_role
    transformer.warn(
        f"{tag} {_shown(entry)!r}: relator {code!r} has no contributor role here; "
        f"using {default!r}."
    )
    return default
