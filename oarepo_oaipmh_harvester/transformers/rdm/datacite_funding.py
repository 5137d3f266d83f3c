"""DataCite funding references -> RDM ``funding``.

Decision owned here: a funder is the ``funders`` vocabulary's entry when the instance has its
identifier (a ROR is the id; a Crossref Funder ID is found among the entries' identifiers),
else its name; an award is the ``awards`` vocabulary's entry (``<funder id>::<number>``) when
the instance has it, else its number, title and ``awardURI`` (a DOI or a URL); kernel 3's
``Funder`` contributors are funders by name.

Each rule is a function of the :class:`~.base.RDMTransformer` of the run, called by
:class:`~.datacite.DataCiteRDMTransformer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .helpers import doi_of, is_web_url
from .xml import attribute, children, first_text, text_of

if TYPE_CHECKING:
    from lxml import etree

    from .base import RDMTransformer


def funding(
    transformer: RDMTransformer, resource: etree._Element, metadata: dict[str, Any]
) -> None:
    for element in children(resource, "fundingReferences", "fundingReference"):
        name = first_text(element, "funderName")
        found = children(element, "funderIdentifier")
        identifier = text_of(found[0]) if found else ""
        kind = attribute(found[0], "funderIdentifierType") if found else ""
        label = f"fundingReference {name or identifier!r}"
        funder_id = transformer.organisation_id("funders", identifier, kind) if identifier else None
        if identifier and funder_id is None:
            transformer.warn(
                f"{label}: funder identifier {identifier!r} is not in the funders vocabulary; "
                f"{'kept the name' if name else 'dropped'}."
            )
        if not (funder_id or name):
            transformer.warn(f"{label}: no funder name or known identifier; dropped.")
            continue
        entry: dict[str, Any] = {"funder": {"id": funder_id} if funder_id else {"name": name}}
        found_award = award(transformer, element, funder_id, label)
        if found_award:
            entry["award"] = found_award
        metadata.setdefault("funding", []).append(entry)


def award(
    transformer: RDMTransformer, element: etree._Element, funder_id: str | None, label: str
) -> dict[str, Any] | None:
    numbers = children(element, "awardNumber")
    number = text_of(numbers[0]) if numbers else ""
    uri = attribute(numbers[0], "awardURI") if numbers else ""
    title = first_text(element, "awardTitle")
    # invenio-vocabularies' award ids are "<funder id>::<number>".
    if funder_id and number and transformer.vocabularies.exists("awards", f"{funder_id}::{number}"):
        return {"id": f"{funder_id}::{number}"}
    if not (number or title):
        return None
    found: dict[str, Any] = {}
    if number:
        found["number"] = number
    if title:
        found["title"] = {"en": title}
    doi = doi_of(uri) if uri else None
    if doi or (uri and is_web_url(uri)):
        found["identifiers"] = [{"scheme": "doi" if doi else "url", "identifier": doi or uri}]
    elif uri:
        transformer.warn(f"{label}: awardURI {uri!r} is neither a DOI nor a URL; dropped.")
    return found


def funder_contributor(element: etree._Element, metadata: dict[str, Any]) -> None:
    """A kernel 3 contributor of type ``Funder``: a funder by its name."""
    name = first_text(element, "contributorName")
    if name:
        metadata.setdefault("funding", []).append({"funder": {"name": name}})
