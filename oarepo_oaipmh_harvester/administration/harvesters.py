"""Admin views of harvesters: list, details (job, last runs, run now), create and edit."""

from __future__ import annotations

from typing import Any

from flask import abort, g
from invenio_administration.views.base import (
    AdminResourceCreateView,
    AdminResourceDetailView,
    AdminResourceEditView,
    AdminResourceListView,
)
from invenio_i18n import lazy_gettext as _

from ..proxies import current_harvested_records_service, current_harvester_service
from ..services.errors import HarvesterNotFound
from ..services.schemas import RunRequestSchema

EXTENSION_NAME = "oarepo-oaipmh-harvester"
CATEGORY = _("OAI-PMH")

RUN_ACTION = {
    "run": {
        "text": _("Run now"),
        "modal_text": _("Start a harvest now"),
        "payload_schema": RunRequestSchema,
        "order": 1,
        "icon": "play",
    }
}
"""Posts the form to the harvester's ``links.run`` (``POST /api/oai-harvest/harvesters/<id>/run``)."""


class HarvesterAdminMixin:
    """What every harvester view shares."""

    extension_name = EXTENSION_NAME
    resource_config = "harvesters_resource"
    api_endpoint_name = "oai_harvesters.search"
    pid_path = "id"
    list_view_name = "oai-harvesters"


class HarvesterListView(HarvesterAdminMixin, AdminResourceListView):
    """OAI-PMH harvesters: search, sort, run now, edit, delete."""

    name = "oai-harvesters"
    title = _("OAI-PMH harvesters")
    menu_label = _("OAI-PMH harvesters")
    category = CATEGORY
    icon = "cloud download"
    order = 1
    create_view_name = "oai-harvesters-create"
    resource_name = "name"

    display_search = True
    display_create = True
    display_edit = True
    display_delete = True

    search_config_name = "OAI_HARVESTER_ADMIN_HARVESTERS_SEARCH"
    search_sort_config_name = "OAI_HARVESTER_ADMIN_HARVESTERS_SORT_OPTIONS"
    search_facets_config_name = None

    item_field_list = {
        "id": {"text": _("Id"), "order": 1, "width": 2},
        "name": {"text": _("Name"), "order": 2, "width": 3},
        "base_url": {"text": _("Provider"), "order": 3, "width": 4},
        "target": {"text": _("Target"), "order": 4, "width": 2},
        "last_run.status": {"text": _("Last run"), "order": 5, "width": 2},
        "updated": {"text": _("Updated"), "order": 6, "width": 2},
    }
    actions = RUN_ACTION


class HarvesterDetailView(HarvesterAdminMixin, AdminResourceDetailView):
    """One harvester: its fields, its invenio-jobs job, its last runs and their counts."""

    url = "/oai-harvesters/<pid_value>"
    name = "oai-harvesters-details"
    title = _("OAI-PMH harvester")
    template = "oarepo_oaipmh_harvester/administration/harvester-details.html"
    resource_name = "name"
    display_edit = True
    display_delete = True
    last_runs = 10

    item_field_list = {
        "id": {"text": _("Id"), "order": 1},
        "name": {"text": _("Name"), "order": 2},
        "comment": {"text": _("Comment"), "order": 3},
        "base_url": {"text": _("Provider endpoint"), "order": 4},
        "metadata_prefix": {"text": _("Metadata prefix"), "order": 5},
        "setspecs": {"text": _("Sets"), "order": 6},
        "target": {"text": _("Target service"), "order": 7},
        "transformer": {"text": _("Transformer"), "order": 8},
        "batch_size": {"text": _("Batch size"), "order": 9},
        "request_delay": {"text": _("Pause between requests (s)"), "order": 9.5},
        "harvest_managers": {"text": _("Harvest managers (user ids)"), "order": 10},
        "watermark": {"text": _("Watermark (provider time)"), "order": 11},
        "created": {"text": _("Created"), "order": 12},
        "updated": {"text": _("Updated"), "order": 13},
    }
    actions = RUN_ACTION

    def get_context(self, pid_value: str | None = None) -> dict[str, Any]:
        context = super().get_context(pid_value=pid_value)
        try:
            harvester = current_harvester_service.read(g.identity, pid_value).to_dict()
        except HarvesterNotFound:
            abort(404)
        runs = current_harvester_service.search_runs(
            g.identity, pid_value, {"size": self.last_runs}
        ).to_dict()
        records = current_harvested_records_service.search(
            g.identity, {"harvester": [pid_value], "size": 1}
        )
        with_errors = current_harvested_records_service.search(
            g.identity, {"harvester": [pid_value], "has_errors": ["true"], "size": 1}
        )
        context.update(
            {
                "harvester": harvester,
                "runs": runs["hits"]["hits"],
                "runs_total": runs["hits"]["total"],
                "records_total": records.total,
                "records_with_errors": with_errors.total,
            }
        )
        return context


FORM_FIELDS = {
    "id": {
        "order": 1,
        "text": _("Id"),
        "description": _(
            "A short slug (lowercase letters, digits, '-', '_'); it names the job type "
            "harvest_oaipmh_records_<id> and cannot change later."
        ),
    },
    "name": {"order": 2, "text": _("Name")},
    "base_url": {
        "order": 3,
        "text": _("Provider endpoint"),
        "description": _(
            "The OAI-PMH base URL (http or https). The provider is asked (Identify, "
            "ListMetadataFormats, ListSets) before the harvester is saved."
        ),
    },
    "metadata_prefix": {"order": 4, "text": _("Metadata prefix"), "placeholder": "oai_dc"},
    "setspecs": {
        "order": 5,
        "text": _("Sets"),
        "description": _("Set specs harvested one after another; none harvests everything."),
    },
    "target": {
        "order": 6,
        "text": _("Target service"),
        "description": _("Service id of the invenio-records-resources service to write to."),
    },
    "transformer": {"order": 7, "text": _("Transformer"), "placeholder": "oai_dc"},
    "batch_size": {"order": 8, "text": _("Batch size")},
    "request_delay": {
        "order": 8.5,
        "text": _("Pause between requests (seconds)"),
        "description": _("Politeness towards this provider; empty uses the site default."),
    },
    "harvest_managers": {
        "order": 9,
        "text": _("Harvest managers"),
        "description": _(
            "User ids who may see this harvester, its records and runs, start it, and who "
            "receive its run reports."
        ),
    },
    "comment": {"order": 10, "text": _("Comment")},
}


class HarvesterCreateView(HarvesterAdminMixin, AdminResourceCreateView):
    """Register a harvester (the API's 400 field errors, preflight included, show in the form)."""

    name = "oai-harvesters-create"
    url = "/oai-harvesters/create"
    title = _("New OAI-PMH harvester")
    form_fields = FORM_FIELDS


class HarvesterEditView(HarvesterAdminMixin, AdminResourceEditView):
    """Change a harvester; the id stays."""

    name = "oai-harvesters-edit"
    url = "/oai-harvesters/<pid_value>/edit"
    title = _("Edit OAI-PMH harvester")
    form_fields = FORM_FIELDS
