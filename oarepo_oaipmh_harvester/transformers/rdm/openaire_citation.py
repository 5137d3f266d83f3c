"""OpenAIRE v4 citation elements -> RDM's journal, imprint and meeting custom fields.

Decision owned here: ``oaire:citationTitle``, ``citationVolume``, ``citationIssue`` and the pages
(``citationStartPage``-``citationEndPage``) go into ``journal:journal``; ``citationEdition`` into
``imprint:imprint`` (``edition``); ``citationConferencePlace`` and ``citationConferenceDate``
into ``meeting:meeting`` (``place``, ``dates``) - each only when the site defines that custom
field (``RDM_CUSTOM_FIELDS``, invenio-rdm-records' contrib fields), else a warning per value:
RDM refuses custom fields a site has not defined.

Called by :class:`~.openaire.OpenAIRERDMTransformer` with the run's
:class:`~.base.RDMTransformer` (for its warnings).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .xml import first_text

if TYPE_CHECKING:
    from lxml import etree

    from .base import RDMTransformer

JOURNAL, IMPRINT, MEETING = "journal:journal", "imprint:imprint", "meeting:meeting"

# element -> (custom field, its key)
CITATION_FIELDS: dict[str, tuple[str, str]] = {
    "citationTitle": (JOURNAL, "title"),
    "citationVolume": (JOURNAL, "volume"),
    "citationIssue": (JOURNAL, "issue"),
    "citationEdition": (IMPRINT, "edition"),
    "citationConferencePlace": (MEETING, "place"),
    "citationConferenceDate": (MEETING, "dates"),
}
PAGES = ("citationStartPage", "citationEndPage")
CITATION_ELEMENTS = frozenset((*CITATION_FIELDS, *PAGES))


def site_custom_fields() -> frozenset[str]:
    """The names of the custom fields this site defines."""
    from flask import current_app

    return frozenset(
        getattr(field, "name", "") for field in current_app.config.get("RDM_CUSTOM_FIELDS") or ()
    )


def citation(
    transformer: RDMTransformer,
    resource: etree._Element,
    data: dict[str, Any],
    defined: frozenset[str],
) -> None:
    values: dict[str, dict[str, str]] = {}
    for element, (field, key) in CITATION_FIELDS.items():
        value = " ".join(first_text(resource, element).split())
        if value:
            values.setdefault(field, {})[key] = value
            _unless_defined(transformer, field, defined, element, value)
    start, end = (" ".join(first_text(resource, name).split()) for name in PAGES)
    pages = "-".join(page for page in (start, end) if page)
    if pages:
        values.setdefault(JOURNAL, {})["pages"] = pages
        _unless_defined(transformer, JOURNAL, defined, "citationStartPage/EndPage", pages)
    if JOURNAL in values:
        issn = _journal_issn(data.get("metadata", {}))
        if issn:
            values[JOURNAL]["issn"] = issn
    custom = {field: value for field, value in values.items() if field in defined}
    if custom:
        data.setdefault("custom_fields", {}).update(custom)


def _journal_issn(metadata: dict[str, Any]) -> str | None:
    """The ISSN of the journal the record is part of (a related identifier, which stays):
    RDM's journal field shows it beside the journal's title."""
    for related in metadata.get("related_identifiers", ()):
        if related.get("scheme") == "issn" and related["relation_type"]["id"] == "ispartof":
            return str(related["identifier"])
    return None


def _unless_defined(
    transformer: RDMTransformer, field: str, defined: frozenset[str], element: str, value: str
) -> None:
    if field not in defined:
        transformer.warn(f"{element} {value!r}: the site defines no {field} custom field; dropped.")
