"""Admin views of harvested records: list with facets, and one record with its XML and errors."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from flask import abort, current_app, g
from invenio_administration.views.base import AdminResourceDetailView, AdminResourceListView
from invenio_i18n import lazy_gettext as _
from lxml import etree

from ..proxies import current_harvested_records_service
from ..services.errors import HarvestedRecordNotFound
from .compat import ApiEndpointByName
from .field_lists import field_list
from .harvesters import CATEGORY, EXTENSION_NAME

REHARVEST_ACTION = {
    "reharvest": {
        "text": _("Re-harvest"),
        "modal_text": _("Fetch this record again now (GetRecord)"),
        "payload_schema": None,
        "order": 1,
        "icon": "redo",
    }
}
"""Posts to the record's ``links.reharvest``."""


class HarvestedRecordAdminMixin(ApiEndpointByName):
    """What both record views share."""

    extension_name = EXTENSION_NAME
    resource_config = "records_resource"
    api_endpoint_name = "oai_harvested_records.search"
    pid_path = "id"
    list_view_name = "oai-harvested-records"
    display_edit = False
    display_delete = False


class HarvestedRecordListView(HarvestedRecordAdminMixin, AdminResourceListView):
    """OAI-PMH harvested records, with facets: harvester, deleted, with errors, with warnings."""

    name = "oai-harvested-records"
    title = _("OAI-PMH harvested records")
    menu_label = _("OAI-PMH harvested records")
    category = CATEGORY
    icon = "file alternate outline"
    order = 2
    display_create = False
    template = "oarepo_oaipmh_harvester/administration/search.html"
    display_search = True
    resource_name = "oai_identifier"

    search_config_name = "OAI_HARVESTER_ADMIN_RECORDS_SEARCH"
    search_sort_config_name = "OAI_HARVESTER_ADMIN_RECORDS_SORT_OPTIONS"
    search_facets_config_name = "OAI_HARVESTER_ADMIN_RECORDS_FACETS"

    item_field_list = field_list(
        ("oai_identifier", _("OAI identifier"), 4),
        ("harvester", _("Harvester"), 2),
        ("datestamp", _("Datestamp"), 2),
        ("state", _("At the source"), 1),
        ("errors_summary", _("Errors"), 2),
        ("files_summary", _("Files"), 1),
        ("local_pid", _("Local record"), 2),
        ("harvested_at", _("Harvested"), 2),
    )
    actions = REHARVEST_ACTION

    def init_search_config(self, **kwargs: Any) -> partial:
        # The facets come from the records API's aggregations (SQL, not a search index):
        # invenio-search-ui only needs their titles and UI settings, but reads the title from
        # a facet object unless one is given. Give it one.
        config = super().init_search_config(**kwargs)
        facets = {
            name: {"facet": _FacetLabel(str(option.get("title", name))), **option}
            for name, option in (
                current_app.config.get(self.search_facets_config_name) or {}
            ).items()
        }
        return partial(config.func, *config.args, **{**config.keywords, "available_facets": facets})


class _FacetLabel:
    """What invenio-search-ui reads of a facet: its label."""

    def __init__(self, label: str) -> None:
        self._label = label


class HarvestedRecordDetailView(HarvestedRecordAdminMixin, AdminResourceDetailView):
    """One harvested record: original XML (indented), transformed data, errors, links."""

    url = "/oai-harvested-records/<path:pid_value>"
    name = "oai-harvested-records-details"
    title = _("OAI-PMH harvested record")
    template = "oarepo_oaipmh_harvester/administration/record-details.html"
    resource_name = "oai_identifier"

    item_field_list = field_list(
        ("oai_identifier", _("OAI identifier")),
        ("harvester", _("Harvester")),
        ("datestamp", _("Datestamp")),
        ("state", _("At the source")),
        ("errors_summary", _("Errors")),
        ("files_text", _("Files")),
        ("conflicts_text", _("Conflicts with local edits")),
        ("local_pid", _("Local record")),
        ("harvested_at", _("Harvested")),
        ("run_id", _("Run")),
    )
    actions = REHARVEST_ACTION

    def get_context(self, pid_value: str | None = None) -> dict[str, Any]:
        context = super().get_context(pid_value=pid_value)
        harvester_id, _sep, oai_identifier = (pid_value or "").partition("/")
        if not oai_identifier:
            abort(404)
        try:
            record = current_harvested_records_service.read(
                g.identity, harvester_id, oai_identifier
            ).to_dict()
        except HarvestedRecordNotFound:
            abort(404)
        context.update(
            {
                "record": record,
                "original_xml": readable_xml(record.get("original_xml")),
                "transformed_json": (
                    json.dumps(record["transformed"], indent=2, ensure_ascii=False)
                    if record.get("transformed") is not None
                    else None
                ),
            }
        )
        return context


def readable_xml(xml: str | None) -> str | None:
    """The record XML indented for reading; as stored when it does not parse."""
    if not xml:
        return xml
    # No entities, no network, no DTD: this is text from a remote provider.
    parser = etree.XMLParser(
        remove_blank_text=True, resolve_entities=False, no_network=True, load_dtd=False
    )
    try:
        element = etree.fromstring(xml.encode("utf-8"), parser)
    except (etree.XMLSyntaxError, ValueError):
        return xml
    return etree.tostring(element, pretty_print=True, encoding="unicode")
