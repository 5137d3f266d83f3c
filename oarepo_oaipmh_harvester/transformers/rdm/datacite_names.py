"""DataCite creators and contributors -> RDM ``creators`` and ``contributors``.

Decision owned here: whether a DataCite name is a person or an organisation (its ``nameType``;
without one, the name parts, an ORCID or a ROR, else the ``Family, Given`` form as for Dublin
Core), how a person's name is split, which name identifiers RDM takes, which affiliations are
kept (with the vocabulary's id where it has one), and a contributor's role. A creator is
required: none with a name fails the record.

Each rule is a function of the :class:`~.base.RDMTransformer` of the run (its vocabulary cache
and the warnings of the record being transformed), called by
:class:`~.datacite.DataCiteRDMTransformer` in the order of the README's mapping table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..base import TransformError
from .base import MissingCreatorChoice
from .datacite_funding import funder_contributor
from .helpers import person_or_org, scheme_for_type, valid_for
from .xml import attribute, children, first_text, line_of, text_of

if TYPE_CHECKING:
    from lxml import etree

    from ...protocol.records import OAIRecord
    from .base import RDMTransformer


def creators(
    transformer: RDMTransformer,
    resource: etree._Element,
    metadata: dict[str, Any],
    record: OAIRecord,
) -> None:
    """The creators with a name (an empty list when there are none and ``missing_creator``
    gives stand-ins: see :func:`stand_in_creators`)."""
    found = []
    for element in children(resource, "creators", "creator"):
        creator = person(transformer, element, "creator")
        if creator is not None:
            found.append(creator)
    if not found and transformer.missing_creator.choice is MissingCreatorChoice.FAIL:
        raise TransformError(_no_creator(record))  # before the contributors' warnings
    metadata["creators"] = found


def stand_in_creators(
    transformer: RDMTransformer,
    resource: etree._Element,
    metadata: dict[str, Any],
    record: OAIRecord,
) -> None:
    """For a record without a named creator, the stand-ins ``missing_creator`` says (after
    :func:`contributors`, whose entries may stand in)."""
    if metadata.get("creators"):
        return
    metadata["creators"] = transformer.stand_in_creators(
        record,
        "DataCite creator with a name",
        contributors=metadata.get("contributors", ()),
        holders=[line_of(element) for element in children(resource, "publisher")],
        error=_no_creator(record),
    )


def _no_creator(record: OAIRecord) -> str:
    return (
        f"Record {record.identifier} has no DataCite creator with a name (RDM needs at least one)."
    )


def contributors(
    transformer: RDMTransformer, resource: etree._Element, metadata: dict[str, Any]
) -> None:
    found = []
    for element in children(resource, "contributors", "contributor"):
        kind = attribute(element, "contributorType")
        if kind == "Funder":  # kernel 3: funders were contributors
            funder_contributor(element, metadata)
            continue
        entry = person(transformer, element, "contributor")
        if entry is None:
            continue
        label = f"contributor {first_text(element, 'contributorName')!r}"
        role = transformer.datacite_term("contributorsroles", kind) if kind else None
        if role is None:
            role = transformer.default_contributor_role
            if not transformer.vocabularies.exists("contributorsroles", role):
                # RDM requires a role on every contributor: without one they cannot be kept.
                transformer.warn(
                    f"{label}: no contributor role {kind or 'given'} nor {role!r}; dropped."
                )
                continue
            transformer.warn(f"{label}: no contributor role {kind or 'given'}; using {role!r}.")
        found.append({**entry, "role": {"id": role}})
    if found:
        metadata["contributors"] = found


def person(
    transformer: RDMTransformer, element: etree._Element, role: str
) -> dict[str, Any] | None:
    """A creator or contributor: person or organisation, identifiers, affiliations."""
    name_element = next(iter(children(element, f"{role}Name")), None)
    name = line_of(name_element)
    given, family = first_text(element, "givenName"), first_text(element, "familyName")
    label = f"{role} {name or family!r}"
    identifiers = name_identifiers(transformer, element, label)
    name_type = attribute(name_element, "nameType").lower() if name_element is not None else ""
    schemes = {identifier["scheme"] for identifier in identifiers}
    if not name_type:
        # Kernel 3 and careless providers leave it out: the name parts, an ORCID or a ROR
        # say which it is, else the "Family, Given" form does (as for Dublin Core).
        if given or family or "orcid" in schemes:
            name_type = "personal"
        elif "ror" in schemes:
            name_type = "organizational"
        else:
            name_type = person_or_org(name)["type"] if name else ""
    if not (name or family):
        transformer.warn(f"{role} without a name; dropped.")
        return None
    if name_type == "organizational":
        found: dict[str, Any] = {"type": "organizational", "name": name or family}
    else:
        found = {"type": "personal", **personal_name(name, given, family)}
    if identifiers:
        found["identifiers"] = identifiers
    entry: dict[str, Any] = {"person_or_org": found}
    found_affiliations = affiliations(transformer, element, label)
    if found_affiliations:
        entry["affiliations"] = found_affiliations
    return entry


def personal_name(name: str, given: str, family: str) -> dict[str, str]:
    if not family:
        inverted_family, comma, inverted_given = (part.strip() for part in name.partition(","))
        if comma and inverted_family:
            family, given = inverted_family, given or inverted_given
        elif given and name.startswith(given + " "):
            family = name[len(given) :].strip()
        else:
            family = name  # no way to tell the parts apart: all of it, nothing lost
    parts = {"family_name": family}
    if given:
        parts["given_name"] = given
    return parts


def name_identifiers(
    transformer: RDMTransformer, element: etree._Element, label: str
) -> list[dict[str, str]]:
    import idutils
    from flask import current_app

    schemes = current_app.config.get("RDM_RECORDS_PERSONORG_SCHEMES") or {}
    identifiers: list[dict[str, str]] = []
    for found in children(element, "nameIdentifier"):
        value, kind = text_of(found), attribute(found, "nameIdentifierScheme")
        scheme = scheme_for_type(kind, schemes) or scheme_of_uri(
            attribute(found, "schemeURI"), schemes
        )
        if not value or scheme is None or not valid_for(schemes, scheme, value):
            transformer.warn(
                f"{label}: nameIdentifier {value!r} ({kind}) is not one RDM takes; dropped."
            )
            continue
        if any(known["scheme"] == scheme for known in identifiers):
            transformer.warn(
                f"{label}: a second {kind} {value!r}; RDM keeps one per scheme; dropped."
            )
            continue
        identifiers.append({"scheme": scheme, "identifier": idutils.normalize_pid(value, scheme)})
    return identifiers


# Hosts of the schemeURIs that name a scheme RDM takes when nameIdentifierScheme is a label
# of the repository's own ("ORCID iD", "Scopus" aside): OpenAIRE v4 records carry both.
SCHEME_URI_HOSTS = {
    "orcid.org": "orcid",
    "isni.org": "isni",
    "www.isni.org": "isni",
    "d-nb.info": "gnd",
    "ror.org": "ror",
}


def scheme_of_uri(uri: str, schemes: Mapping[str, Any]) -> str | None:
    """The RDM scheme a nameIdentifier's ``schemeURI`` names, if the site has it."""
    host = urlsplit(uri.strip()).hostname or ""
    scheme = SCHEME_URI_HOSTS.get(host)
    return scheme if scheme in schemes else None


def affiliations(
    transformer: RDMTransformer, element: etree._Element, label: str
) -> list[dict[str, str]]:
    found_affiliations: list[dict[str, str]] = []
    for found in children(element, "affiliation"):
        name = text_of(found)
        identifier = attribute(found, "affiliationIdentifier")
        kind = attribute(found, "affiliationIdentifierScheme")
        id_ = transformer.organisation_id("affiliations", identifier, kind) if identifier else None
        if identifier and id_ is None:
            transformer.warn(
                f"{label}: affiliation identifier {identifier!r} is not in the affiliations "
                f"vocabulary; {'kept the name' if name else 'dropped'}."
            )
        entry = {"id": id_} if id_ else {}
        if name:
            entry["name"] = name
        # RDM refuses the same affiliation twice (compared by name, else by id).
        key = entry.get("name", id_)
        if entry and all(known.get("name", known.get("id")) != key for known in found_affiliations):
            found_affiliations.append(entry)
    return found_affiliations
