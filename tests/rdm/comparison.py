"""What must survive RDM -> DataCite (``oai_datacite``) -> RDM, as plain comparable values.

``comparable_fields(record)`` takes a published RDM record as a dict (``service.read(...)
.to_dict()`` or ``publish(...).to_dict()``) and keeps the fields a DataCite round trip
carries, with vocabulary entries reduced to their ids (the dereferenced titles are the
instance's, not the record's) and HTML reduced to its text (RDM's DataCite serializer strips
markup from descriptions). Two records whose comparable fields are equal say the same in
every field listed here.

What DataCite kernel 4 cannot carry, so a record meant to round-trip leaves it out:
- more than one language (``<language>`` is single), creators' roles (DataCite creators have
  none), the language of the main title and of the main description;
- a record without an ``updated`` date gains one: RDM's serializer writes the record's
  modification day as an Updated date when the metadata has none;
- access beyond eu-repo terms, which RDM writes only with
  ``RDM_DATACITE_DUMP_OPENAIRE_ACCESS_RIGHTS``;
- an external DOI survives (``pids.doi``), but one instance cannot publish it twice.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any


def comparable_fields(record: Mapping[str, Any]) -> dict[str, Any]:
    """The round-trip fields of a published RDM record, as comparable values."""
    metadata = record["metadata"]
    return {
        "title": metadata.get("title"),
        "additional_titles": [
            (title["title"], _id(title.get("type")), _id(title.get("lang")))
            for title in metadata.get("additional_titles", [])
        ],
        "creators": [_name(creator) for creator in metadata.get("creators", [])],
        "contributors": [
            (*_name(contributor), _id(contributor.get("role")))
            for contributor in metadata.get("contributors", [])
        ],
        "resource_type": _id(metadata.get("resource_type")),
        "languages": [_id(language) for language in metadata.get("languages", [])],
        "publication_date": metadata.get("publication_date"),
        "dates": [
            (date["date"], _id(date.get("type")), date.get("description"))
            for date in metadata.get("dates", [])
        ],
        "rights": [
            _id(right) or (right.get("title"), right.get("link"))
            for right in metadata.get("rights", [])
        ],
        "copyright": metadata.get("copyright"),
        "doi": record.get("pids", {}).get("doi", {}).get("identifier"),
        "identifiers": sorted(
            (identifier["scheme"], identifier["identifier"])
            for identifier in metadata.get("identifiers", [])
        ),
        "related_identifiers": [
            (
                related["identifier"],
                related["scheme"],
                _id(related.get("relation_type")),
                _id(related.get("resource_type")),
            )
            for related in metadata.get("related_identifiers", [])
        ],
        "subjects": [
            subject.get("id") or subject["subject"] for subject in metadata.get("subjects", [])
        ],
        "description": _text(metadata.get("description")),
        "additional_descriptions": [
            (
                _text(description["description"]),
                _id(description.get("type")),
                _id(description.get("lang")),
            )
            for description in metadata.get("additional_descriptions", [])
        ],
        "publisher": metadata.get("publisher"),
        "version": metadata.get("version"),
        "sizes": metadata.get("sizes", []),
        "formats": metadata.get("formats", []),
        "funding": [_funding(funding) for funding in metadata.get("funding", [])],
        "locations": [
            (feature.get("place"), feature.get("geometry"))
            for feature in metadata.get("locations", {}).get("features", [])
        ],
    }


def _id(entry: Mapping[str, Any] | None) -> str | None:
    return entry.get("id") if entry else None


def _name(entry: Mapping[str, Any]) -> tuple[Any, ...]:
    person = entry["person_or_org"]
    return (
        person["type"],
        person.get("name"),
        person.get("given_name"),
        person.get("family_name"),
        sorted(
            (identifier["scheme"], identifier["identifier"])
            for identifier in person.get("identifiers", [])
        ),
        # A vocabulary affiliation is its id (its name is the vocabulary's); a free one its name.
        [
            affiliation.get("id") or affiliation.get("name")
            for affiliation in entry.get("affiliations", [])
        ],
    )


def _funding(funding: Mapping[str, Any]) -> tuple[Any, ...]:
    funder, award = funding["funder"], funding.get("award") or {}
    award_value = _id(award) or (award.get("number"), (award.get("title") or {}).get("en"))
    return (_id(funder) or funder.get("name"), award_value if award else None)


def _text(value: str | None) -> str | None:
    """HTML as its text: tags dropped, entities resolved, white space folded."""
    if value is None:
        return None
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", value)).split())
