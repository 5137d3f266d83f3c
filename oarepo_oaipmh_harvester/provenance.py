"""Where a harvested record came from, said on the record itself.

Decision owned here: what every written record says of its source - the harvester, the OAI
identifier, the datestamp and a link to the record at the source (its landing page when the
metadata names one, else the provider's GetRecord URL) - and how InvenioRDM holds it:

- the link as a related identifier (``isderivedfrom``, scheme ``url``), which RDM's landing
  page shows under related works;
- the rest in custom fields, when the site defines them (:data:`RDM_CUSTOM_FIELDS` here, added
  to the site's ``RDM_CUSTOM_FIELDS``): ``harvest:source`` (the harvester's name, which RDM's
  search can facet on: :func:`harvested_from_facet`), ``harvest:harvester``,
  ``harvest:identifier`` and ``harvest:datestamp``. RDM refuses custom fields a site did not
  define, so they are written only where the site defined them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

SOURCE_FIELD = "harvest:source"
"""Custom field: the name of the harvester (the source) that wrote the record."""
HARVESTER_FIELD = "harvest:harvester"
IDENTIFIER_FIELD = "harvest:identifier"
DATESTAMP_FIELD = "harvest:datestamp"
FIELDS = (SOURCE_FIELD, HARVESTER_FIELD, IDENTIFIER_FIELD, DATESTAMP_FIELD)

RDM_NAMESPACES = {"harvest": "https://github.com/oarepo/oarepo-oaipmh-harvester#provenance-"}
"""To add to the site's ``RDM_NAMESPACES``: the namespace of the provenance custom fields."""

SOURCE_RELATION = "isderivedfrom"
"""How the record relates to the record at its source (RDM's relation types vocabulary)."""


@dataclass(frozen=True)
class Provenance:
    """What a written record says of its source."""

    harvester_id: str
    harvester_name: str
    oai_identifier: str
    datestamp: str
    getrecord_url: str

    def source_url(self, landing_page: str | None) -> str:
        """The link to the record at the source: its landing page, else GetRecord."""
        return landing_page or self.getrecord_url


def getrecord_url(base_url: str, metadata_prefix: str, identifier: str) -> str:
    """The provider's URL of one record (what a browser can open)."""
    query = urlencode(
        {"verb": "GetRecord", "metadataPrefix": metadata_prefix, "identifier": identifier}
    )
    return f"{base_url}{'&' if '?' in base_url else '?'}{query}"


def stamp_rdm(
    data: dict[str, Any], provenance: Provenance, defined: set[str] | frozenset[str]
) -> dict[str, Any]:
    """`data` (an RDM record's) saying where it came from; `defined`: the custom fields the
    site defined."""
    metadata = dict(data.get("metadata") or {})
    landing_page = _landing_page(metadata)
    link = provenance.source_url(landing_page)
    related = [dict(entry) for entry in metadata.get("related_identifiers") or ()]
    if not any(entry.get("identifier") == link for entry in related):
        related.append(
            {
                "identifier": link,
                "scheme": "url",
                "relation_type": {"id": SOURCE_RELATION},
            }
        )
    metadata["related_identifiers"] = related
    custom = dict(data.get("custom_fields") or {})
    values = {
        SOURCE_FIELD: provenance.harvester_name,
        HARVESTER_FIELD: provenance.harvester_id,
        IDENTIFIER_FIELD: provenance.oai_identifier,
        DATESTAMP_FIELD: provenance.datestamp,
    }
    custom.update({name: value for name, value in values.items() if name in defined and value})
    stamped = {**data, "metadata": metadata}
    if custom:
        stamped["custom_fields"] = custom
    return stamped


def _landing_page(metadata: Mapping[str, Any]) -> str | None:
    """The record's page at the source, where its metadata names one (an http(s) URL)."""
    for entry in metadata.get("identifiers") or ():
        value = str(entry.get("identifier") or "")
        if entry.get("scheme") == "url" and value.startswith(("http://", "https://")):
            return value
    return None


def rdm_custom_fields() -> list[Any]:
    """The custom fields to add to the site's ``RDM_CUSTOM_FIELDS`` (then run
    ``invenio rdm-records custom-fields init``)."""
    from invenio_records_resources.services.custom_fields import KeywordCF

    return [KeywordCF(name=name) for name in FIELDS]


RDM_CUSTOM_FIELDS_UI = [
    {
        "section": "Harvested from",
        "fields": [
            {
                "field": SOURCE_FIELD,
                "ui_widget": "Input",
                "props": {"label": "Source", "description": "The OAI-PMH source"},
            },
            {
                "field": IDENTIFIER_FIELD,
                "ui_widget": "Input",
                "props": {"label": "OAI identifier", "description": "At the source"},
            },
            {
                "field": DATESTAMP_FIELD,
                "ui_widget": "Input",
                "props": {"label": "Datestamp", "description": "At the source"},
            },
        ],
    }
]
"""To add to the site's ``RDM_CUSTOM_FIELDS_UI`` (the record's landing page and deposit form)."""


def harvested_from_facet() -> dict[str, Any]:
    """The ``harvested_from`` facet to add to the site's ``RDM_FACETS`` (and its name to
    ``RDM_SEARCH["facets"]``): records by the source they were harvested from."""
    from invenio_records_resources.services.records.facets import TermsFacet

    field = f"custom_fields.{SOURCE_FIELD}"
    return {
        "facet": TermsFacet(field=field, label="Harvested from"),
        "ui": {"field": field},
    }
