"""The lists an RDM record must hold without repeats, made so.

Decision owned here: which lists of record data InvenioRDM refuses with a repeat in them (its
JSON Schema's ``uniqueItems`` and its marshmallow schema's identifier sets) and how a repeat is
dropped: the first entry is kept, in order. Real records repeat values (KENOM's banknotes give
their place's GeoNames id as an http and an https URI, a DSpace record lists one ISSN twice):
RDM refuses the whole record for it ("has non-unique elements"), which loses a record for a
value it already holds. Creators and contributors named twice are kept once too. An exact
repeat loses nothing and goes silently; a second identifier of a scheme that allows one per
person or organisation is another value, so dropping it warns.

Pure functions on the data: no application, no vocabulary.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable
from typing import Any

Warn = Callable[[str], None]


def unique_lists(data: dict[str, Any], warn: Warn) -> dict[str, Any]:
    """`data` with every list RDM requires unique made so (changed in place, returned)."""
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        return data
    _dedupe(metadata, "languages", lambda entry: entry.get("id"))
    _dedupe(metadata, "identifiers", _identifier_key)
    _dedupe(
        metadata,
        "related_identifiers",
        lambda entry: (*_identifier_key(entry), _canonical(entry.get("relation_type"))),
    )
    _dedupe(metadata, "subjects", lambda entry: entry.get("id") or entry.get("subject"))
    for field in ("creators", "contributors"):
        # The same person twice (a repository listing an adviser in two roles' fields): once
        # as written, once more after their own lists are made unique.
        _dedupe(metadata, field, _canonical)
        for entry in _dicts(metadata.get(field)):
            _person_or_org(entry, warn)
        _dedupe(metadata, field, _canonical)
    for location in _dicts((metadata.get("locations") or {}).get("features")):
        _dedupe(location, "identifiers", _identifier_key)
    return data


def _person_or_org(entry: dict[str, Any], warn: Warn) -> None:
    """One identifier per scheme (RDM's IdentifierSet), affiliations by id or name."""
    person = entry.get("person_or_org")
    if isinstance(person, dict) and isinstance(person.get("identifiers"), list):
        kept: dict[str, dict[str, Any]] = {}
        for identifier in _dicts(person["identifiers"]):
            scheme = identifier.get("scheme")
            first = kept.get(scheme)
            if first is None:
                kept[scheme] = identifier
            elif _identifier_key(first) != _identifier_key(identifier):
                name = person.get("name") or ", ".join(
                    part for part in (person.get("family_name"), person.get("given_name")) if part
                )
                warn(
                    f"{name!r}: {scheme} identifier {identifier.get('identifier')!r} besides "
                    f"{first.get('identifier')!r}; RDM keeps one per scheme; dropped."
                )
        person["identifiers"] = list(kept.values())
    _dedupe(
        entry, "affiliations", lambda affiliation: affiliation.get("id") or affiliation.get("name")
    )
    for affiliation in _dicts(entry.get("affiliations")):
        _dedupe(affiliation, "identifiers", _identifier_key)


def _dedupe(container: dict[str, Any], field: str, key: Callable[[dict], Hashable]) -> None:
    values = container.get(field)
    if not isinstance(values, list) or len(values) < 2:
        return
    seen: set[Hashable] = set()
    kept = []
    for value in values:
        marker = _canonical(value) if not isinstance(value, dict) else key(value)
        if marker is None:
            marker = _canonical(value)
        if marker in seen:
            continue
        seen.add(marker)
        kept.append(value)
    container[field] = kept


def _identifier_key(entry: dict[str, Any]) -> tuple[Hashable, ...]:
    """Scheme and value; a DOI's value without case (DOIs ignore it)."""
    scheme = entry.get("scheme")
    value = entry.get("identifier")
    if isinstance(value, str):
        value = value.strip()
        if scheme == "doi":
            value = value.lower()
    return (scheme, _canonical(value))


def _canonical(value: Any) -> Hashable:
    """A hashable stand-in for a JSON value, equal for equal values."""
    if isinstance(value, Hashable) and not isinstance(value, tuple):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def _dicts(values: Any) -> Iterable[dict[str, Any]]:
    return [value for value in values or () if isinstance(value, dict)]
