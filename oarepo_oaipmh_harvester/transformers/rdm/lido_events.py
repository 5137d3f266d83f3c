"""LIDO events -> RDM ``creators``, ``contributors``, ``publication_date``, ``dates``,
``locations`` and the materials and techniques.

Decision owned here: the production (or creation) event makes the object - its actors are the
creators (a maker's role or none) or contributors (a role the contributor table knows), its
date is the publication date, its place a location -; any other event (acquisition, finding,
use, exhibition...) keeps its date as an RDM date (``collected`` for a finding, else ``other``,
described by the event's type) and its places as locations, while its actors have no home in
RDM (a warning). Actor identifiers are kept where RDM's person/org schemes take them.

Each rule is a function of the :class:`~.lido.RDMTransformer` of the run (its vocabulary
cache and the warnings of the record being transformed).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .datacite_names import personal_name
from .helpers import display_name, person_or_org
from .lido_read import (
    EVENT_DATE_TYPES,
    actor_role,
    event_date,
    event_kind,
    gml_geometry,
    lido_attribute,
    place_name,
    preferred_text,
    terms,
)
from .xml import children, text_of

if TYPE_CHECKING:
    from lxml import etree

    from ...protocol.records import OAIRecord
    from .base import RDMTransformer

PERSON_TYPES = frozenset({"person", "individual", "personal", "person/individual"})
ORGANISATION_TYPES = frozenset(
    {"corporation", "corporate body", "organization", "organisation", "group", "family"}
    | {"körperschaft", "institution", "organizational", "organisational"}
)
# actorID sources (lower case) and URI patterns -> the identifier scheme they name.
ACTOR_SOURCES = {"gnd": "gnd", "pnd": "gnd", "orcid": "orcid", "isni": "isni", "ror": "ror"}
ACTOR_SOURCES |= {"ulan": "ulan", "viaf": "viaf", "wikidata": "wikidata"}
ACTOR_URIS = (
    (re.compile(r"d-nb\.info/gnd/"), "gnd"),
    (re.compile(r"orcid\.org/"), "orcid"),
    (re.compile(r"isni\.org/"), "isni"),
    (re.compile(r"ror\.org/"), "ror"),
    (re.compile(r"vocab\.getty\.edu/(page/)?ulan/"), "ulan"),
    (re.compile(r"viaf\.org/viaf/"), "viaf"),
    (re.compile(r"wikidata\.org/(wiki|entity)/"), "wikidata"),
)
PLACE_URIS = (
    (re.compile(r"geonames\.org/(\d+)"), "geonames"),
    (re.compile(r"wikidata\.org/(?:wiki|entity)/(Q\d+)"), "wikidata"),
)


def events(lido: etree._Element) -> list[etree._Element]:
    """The events of the first ``descriptiveMetadata`` block (another language's block
    repeats them)."""
    first = next(iter(children(lido, "descriptiveMetadata")), None)
    return children(first, "eventWrap", "eventSet", "event")


# -- actors -----------------------------------------------------------------------------------
def actors(
    transformer: RDMTransformer,
    lido: etree._Element,
    metadata: dict[str, Any],
    record: OAIRecord,
    holders: list[str],
) -> None:
    """Creators and contributors from the production event; a record whose production event
    names no maker gets the stand-ins ``missing_creator`` says: the production event's
    actors in other roles (a producer, a printer), else `holders` (the holding or publishing
    institutions the record names). The actors of other events are never creators: an
    acquisition's seller or a find's excavator did not make the object."""
    creators: list[dict[str, Any]] = []
    contributors: list[dict[str, Any]] = []
    for event in events(lido):
        kind, label = event_kind(event)
        for element in children(event, "eventActor"):
            entry, roles = actor(transformer, element)
            if entry is None:
                continue
            name = display_name(entry["person_or_org"])
            if kind != "made":
                transformer.warn(
                    f"event {label!r}: actor {name!r} ({', '.join(roles) or 'no role'}): RDM "
                    f"keeps the actors of the production event only; dropped."
                )
                continue
            side, role_ids = actor_role(roles)
            if side == "contributor":
                role = _first_existing(transformer, "contributorsroles", role_ids)
                if role is None:
                    role = transformer.default_contributor_role
                    transformer.warn(
                        f"actor {name!r}: no contributor role {roles[0]!r}; using {role!r}."
                    )
                contributors.append({**entry, "role": {"id": role}})
                continue
            for role in roles:
                role_id = role.strip().lower()
                if transformer.vocabularies.exists("creatorsroles", role_id):
                    entry["role"] = {"id": role_id}
                    break
                transformer.warn(f"actor {name!r}: no creator role {role!r}; kept without it.")
            creators.append(entry)
    metadata["creators"] = creators or transformer.stand_in_creators(
        record,
        "actor of a production or creation event in a maker's role",
        makers=contributors,
        holders=holders,
        error=(
            f"Record {record.identifier} has no actor of a production or creation event "
            f"(RDM needs at least one creator)."
        ),
    )
    if contributors:
        metadata["contributors"] = contributors


def _first_existing(
    transformer: RDMTransformer, vocabulary: str, ids: tuple[str, ...]
) -> str | None:
    return next((id_ for id_ in ids if transformer.vocabularies.exists(vocabulary, id_)), None)


def actor(
    transformer: RDMTransformer, event_actor: etree._Element
) -> tuple[dict[str, Any] | None, list[str]]:
    """An ``eventActor`` as an RDM creator (without role) and the texts of its roles."""
    in_role = next(iter(children(event_actor, "actorInRole")), None)
    found = next(iter(children(in_role, "actor")), None)
    roles = terms(in_role, "roleActor")
    name = preferred_text(found, "nameActorSet", "appellationValue")
    if not name:
        display = text_of(next(iter(children(event_actor, "displayActorInRole")), None))
        if not display:
            transformer.warn("eventActor without a name; dropped.")
            return None, roles
        transformer.warn(f"actor {display!r}: only a displayActorInRole; kept as written.")
        return {"person_or_org": person_or_org(display)}, roles
    kind = lido_attribute(found, "type").lower() if found is not None else ""
    if kind in PERSON_TYPES:
        person: dict[str, Any] = {"type": "personal", **personal_name(name, "", "")}
    elif kind in ORGANISATION_TYPES:
        person = {"type": "organizational", "name": name}
    else:
        person = person_or_org(name)  # no type: "Family, Given" is a person, as for DC
    identifiers = actor_identifiers(transformer, found, name)
    if identifiers:
        person["identifiers"] = identifiers
    for qualifier in children(in_role, "attributionQualifierActor"):
        transformer.warn(
            f"actor {name!r}: attribution {text_of(qualifier)!r} has no RDM field; dropped."
        )
    return {"person_or_org": person}, roles


def actor_identifiers(
    transformer: RDMTransformer, found: etree._Element | None, name: str
) -> list[dict[str, str]]:
    import idutils
    from flask import current_app

    schemes = current_app.config.get("RDM_RECORDS_PERSONORG_SCHEMES") or {}
    identifiers: list[dict[str, str]] = []
    for element in children(found, "actorID"):
        value = text_of(element)
        source = (lido_attribute(element, "source") or lido_attribute(element, "type")).lower()
        scheme = ACTOR_SOURCES.get(source) or next(
            (scheme for pattern, scheme in ACTOR_URIS if pattern.search(value)), None
        )
        label = f"actor {name!r}: actorID {value!r} ({source or 'no source'})"
        validator = schemes.get(scheme, {}).get("validator") if scheme else None
        if not value or scheme not in schemes or (callable(validator) and not validator(value)):
            transformer.warn(f"{label} is not an identifier RDM takes for people; dropped.")
            continue
        if any(known["scheme"] == scheme for known in identifiers):
            transformer.warn(f"{label}: RDM keeps one per scheme; dropped.")
            continue
        try:
            normalised = idutils.normalize_pid(value, scheme)
        except Exception:  # noqa: BLE001 - idutils raises what its normaliser raises
            normalised = value
        identifiers.append({"scheme": scheme, "identifier": normalised})
    return identifiers


# -- dates ------------------------------------------------------------------------------------
def dates(
    transformer: RDMTransformer,
    lido: etree._Element,
    metadata: dict[str, Any],
    record: OAIRecord,
) -> None:
    found_dates: list[dict[str, Any]] = []
    unusable: list[str] = []
    for event in events(lido):
        kind, label = event_kind(event)
        value, tried, qualified = event_date(event)
        if value is None:
            if tried:
                transformer.warn(
                    f"event {label!r}: date {', '.join(map(repr, tried))} is not an EDTF "
                    f"level 0 date; dropped."
                )
                if kind == "made":
                    unusable.extend(tried)
            continue
        if qualified:
            transformer.warn(
                f"event {label!r}: date {tried[-1]!r} kept as {value!r} (RDM takes no "
                f"approximate dates)."
            )
        if kind == "made" and "publication_date" not in metadata:
            metadata["publication_date"] = value
            continue
        types = EVENT_DATE_TYPES.get(kind, ("other",))
        type_id = _first_existing(transformer, "datetypes", types)
        if type_id is None:
            transformer.warn(f"event {label!r}: date {value!r}: no date type 'other'; dropped.")
            continue
        entry = {"date": value, "type": {"id": type_id}, "description": label}
        if entry not in found_dates:
            found_dates.append(entry)
    for subject_date in children(lido, "descriptiveMetadata", "objectRelationWrap"):
        for element in children(
            subject_date, "subjectWrap", "subjectSet", "subject", "subjectDate"
        ):
            _subject_date(transformer, element, found_dates)
    if "publication_date" not in metadata:
        metadata["publication_date"] = transformer.stand_in_publication_date(
            record,
            "production event date",
            unusable,
            f"Record {record.identifier} has no production or creation event with an EDTF "
            f"date (RDM needs a publication date); found {unusable!r}.",
        )
    if found_dates:
        metadata["dates"] = found_dates


def _subject_date(
    transformer: RDMTransformer, element: etree._Element, found: list[dict[str, Any]]
) -> None:
    """A date the object is about (``subjectDate``): RDM's ``coverage`` date type, if any."""
    from .lido_read import display_date, edtf_of

    date = next(iter(children(element, "date")), None)
    display = text_of(next(iter(children(element, "displayDate")), None))
    value = edtf_of(
        text_of(next(iter(children(date, "earliestDate")), None)),
        text_of(next(iter(children(date, "latestDate")), None)),
    ) or (display_date(display)[0] if display else None)
    type_id = _first_existing(transformer, "datetypes", ("coverage",))
    if value is None or type_id is None:
        reason = "not an EDTF level 0 date" if value is None else "no date type 'coverage'"
        transformer.warn(f"subjectDate {display or value!r}: {reason}; dropped.")
        return
    entry = {"date": value, "type": {"id": type_id}}
    if display:
        entry["description"] = display
    found.append(entry)


# -- places -----------------------------------------------------------------------------------
def locations(transformer: RDMTransformer, lido: etree._Element, metadata: dict[str, Any]) -> None:
    features: list[dict[str, Any]] = []
    places: list[tuple[etree._Element, str]] = []
    for event in events(lido):
        label = event_kind(event)[1]
        places += [(element, f"{label} place") for element in children(event, "eventPlace")]
    for wrap in children(lido, "descriptiveMetadata", "objectRelationWrap"):
        for element in children(wrap, "subjectWrap", "subjectSet", "subject", "subjectPlace"):
            places.append((element, "subject place"))
    for element, description in places:
        feature = location(transformer, element, description)
        if feature and feature not in features:
            features.append(feature)
    if features:
        metadata["locations"] = {"features": features}


def location(
    transformer: RDMTransformer, element: etree._Element, description: str
) -> dict[str, Any] | None:
    """An ``eventPlace`` or ``subjectPlace`` as a GeoJSON feature of RDM's locations."""
    from flask import current_app

    place = next(iter(children(element, "place")), None)
    name = (place_name(place) if place is not None else "") or text_of(
        next(iter(children(element, "displayPlace")), None)
    )
    feature: dict[str, Any] = {}
    if name:
        feature["place"] = name
    for gml in children(place, "gml"):
        geometry = gml_geometry(gml)
        if geometry is None:
            shown = " ".join(" ".join(gml.itertext()).split())
            transformer.warn(f"place {name!r}: gml {shown!r} is not valid coordinates; dropped.")
        elif "geometry" not in feature:
            feature["geometry"] = geometry
    schemes = current_app.config.get("RDM_RECORDS_LOCATION_SCHEMES") or {}
    for place_id in children(place, "placeID"):
        value = text_of(place_id)
        match = next(
            (
                (m.group(1), scheme)
                for pattern, scheme in PLACE_URIS
                if (m := pattern.search(value))
            ),
            None,
        )
        if match and match[1] in schemes:
            feature.setdefault("identifiers", []).append(
                {"scheme": match[1], "identifier": match[0]}
            )
        else:
            transformer.warn(
                f"place {name!r}: placeID {value!r} is not a scheme RDM takes; dropped."
            )
    if not feature:
        return None
    return {**feature, "description": description}


# -- materials and techniques -----------------------------------------------------------------
def materials(lido: etree._Element) -> list[etree._Element | str]:
    """What the events say of materials and techniques: each ``displayMaterialsTech``, else
    the ``termMaterialsTech`` terms of an ``eventMaterialsTech`` joined."""
    found: list[etree._Element | str] = []
    for event in events(lido):
        for element in children(event, "eventMaterialsTech"):
            displays = [d for d in children(element, "displayMaterialsTech") if text_of(d)]
            if displays:
                found.extend(displays)
            else:
                joined = ", ".join(terms(element, "materialsTech", "termMaterialsTech"))
                if joined:
                    found.append(joined)
    return found


def event_subjects(lido: etree._Element) -> list[str]:
    """The cultures and periods of the events, as free-text subjects."""
    found: list[str] = []
    for event in events(lido):
        found += terms(event, "culture") + terms(event, "periodName")
    return found
