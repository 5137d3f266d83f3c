"""OpenAIRE v4 ``oaire:fundingReference`` -> RDM ``funding``.

Decision owned here: a funder is the ``funders`` vocabulary's entry when the instance has its
identifier (a ROR is the id; a Crossref Funder ID is found among the entries' identifiers, as for
DataCite), else its name, else the funder of an OpenAIRE project id; an award is the
``awards`` vocabulary's entry (``<funder id>::<number>``) when the instance has it, else its
number, title and ``awardURI``. The OpenAIRE project id (``info:eu-repo/grantAgreement/EC/FP7/
283595/...``, the awardURI DSpace and OJS write) is kept as the award's number: RDM's award
identifiers take only DOIs and URLs, and the project id is what OpenAIRE links projects by.
A funding stream has no place in a record's funding (RDM's record schema refuses ``program``).

Each rule is a function of the :class:`~.base.RDMTransformer` of the run, called by
:class:`~.openaire.OpenAIRERDMTransformer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .datacite_funding import award as datacite_award
from .xml import attribute, children, first_text, text_of

if TYPE_CHECKING:
    from lxml import etree

    from .base import RDMTransformer

GRANT_AGREEMENT = "info:eu-repo/grantAgreement/"


def grant_parts(value: str) -> list[str]:
    """The segments of an OpenAIRE project id (funder, programme, number, jurisdiction,
    title, acronym), [] for any other value."""
    value = value.strip()
    if not value.startswith(GRANT_AGREEMENT):
        return []
    return value[len(GRANT_AGREEMENT) :].split("/")


def funding(
    transformer: RDMTransformer, resource: etree._Element, metadata: dict[str, Any]
) -> None:
    found_funding = []
    for element in children(resource, "fundingReferences", "fundingReference"):
        name = first_text(element, "funderName")
        found = children(element, "funderIdentifier")
        identifier = text_of(found[0]) if found else ""
        kind = attribute(found[0], "funderIdentifierType") if found else ""
        numbers = children(element, "awardNumber")
        award_uri = attribute(numbers[0], "awardURI") if numbers else ""
        grant = grant_parts(award_uri)
        name = name or (grant[0] if grant and grant[0] else "")
        label = f"fundingReference {name or identifier!r}"
        funder_id = transformer.organisation_id("funders", identifier, kind) if identifier else None
        if identifier and funder_id is None:
            transformer.warn(
                f"{label}: funder identifier {identifier!r} is not in the funders vocabulary; "
                f"{'kept the name' if name else 'dropped'}."
            )
        stream = first_text(element, "fundingStream")
        if stream:
            transformer.warn(f"{label}: fundingStream {stream!r} has no RDM field; dropped.")
        if not (funder_id or name):
            transformer.warn(f"{label}: no funder name or known identifier; dropped.")
            continue
        entry: dict[str, Any] = {"funder": {"id": funder_id} if funder_id else {"name": name}}
        found_award = award(transformer, element, funder_id, label)
        if found_award:
            entry["award"] = found_award
        if entry not in found_funding:
            found_funding.append(entry)
    if found_funding:
        metadata["funding"] = found_funding


def award(
    transformer: RDMTransformer, element: etree._Element, funder_id: str | None, label: str
) -> dict[str, Any] | None:
    """DataCite's award, unless the awardURI is an OpenAIRE project id."""
    numbers = children(element, "awardNumber")
    uri = attribute(numbers[0], "awardURI") if numbers else ""
    grant = grant_parts(uri)
    if not grant:
        return datacite_award(transformer, element, funder_id, label)
    number = text_of(numbers[0]) if numbers else ""
    grant_number = grant[2] if len(grant) > 2 else ""
    number = number or grant_number
    # invenio-vocabularies' award ids are "<funder id>::<number>" (OpenAIRE's projects too).
    if funder_id and number and transformer.vocabularies.exists("awards", f"{funder_id}::{number}"):
        return {"id": f"{funder_id}::{number}"}
    found: dict[str, Any] = {}
    if number in ("", grant_number):
        found["number"] = uri  # the project id holds the number: nothing is lost
    else:
        found["number"] = number
        transformer.warn(
            f"{label}: awardURI {uri!r} names another number than {number!r}; kept the number."
        )
    title = first_text(element, "awardTitle")
    if title:
        found["title"] = {"en": title}
    return found
