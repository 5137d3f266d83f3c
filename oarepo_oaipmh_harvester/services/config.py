"""Configuration of the harvester and harvested-record services (invenio-records-resources style)."""

from __future__ import annotations

from typing import Any

from invenio_i18n import lazy_gettext as _
from invenio_records_resources.services import EndpointLink, ExternalLink
from invenio_records_resources.services.base import ServiceConfig
from invenio_records_resources.services.base.config import ConfiguratorMixin, FromConfig
from invenio_records_resources.services.records.links import pagination_endpoint_links

from ..permissions import HarvestedRecordPermissionPolicy, HarvesterPermissionPolicy
from .record_schemas import HarvestedRecordListSchema, HarvestedRecordSchema
from .results import HarvesterItem, SQLItem, SQLList
from .run_schemas import HarvestRunSchema
from .schemas import HarvesterSchema

ADMIN_URL = "{+ui}/administration"
"""Base of the administration panel (invenio-administration mounts it at /administration)."""


class SQLSearchOptions:
    """Sorting and paging of a SQL-backed search.

    A sort option's fields name model columns; a leading ``-`` sorts descending (as in
    invenio-records-resources' search options).
    """

    sort_options: dict[str, dict[str, Any]] = {}
    sort_default = ""
    sort_default_no_query = ""
    default_size = 20
    max_size = 1000
    facets: dict[str, dict[str, Any]] = {}


class HarvesterSearchOptions(SQLSearchOptions):
    """Harvesters: query string on id, name and base URL."""

    sort_options = {
        "name": {"title": _("Name"), "fields": ["name", "id"]},
        "id": {"title": _("Id"), "fields": ["id"]},
        "newest": {"title": _("Newest"), "fields": ["-created", "id"]},
        "updated": {"title": _("Recently updated"), "fields": ["-updated", "id"]},
    }
    sort_default = "name"
    sort_default_no_query = "name"


class HarvestedRecordSearchOptions(SQLSearchOptions):
    """Harvested records: filters, facets, query string on OAI identifier and local pid."""

    sort_options = {
        "newest": {
            "title": _("Recently harvested"),
            "fields": ["-harvested_at", "harvester_id", "oai_identifier"],
        },
        "oldest": {
            "title": _("Least recently harvested"),
            "fields": ["harvested_at", "harvester_id", "oai_identifier"],
        },
        "identifier": {
            "title": _("OAI identifier"),
            "fields": ["harvester_id", "oai_identifier"],
        },
        "datestamp": {
            "title": _("Newest datestamp"),
            "fields": ["-datestamp", "harvester_id", "oai_identifier"],
        },
    }
    sort_default = "newest"
    sort_default_no_query = "newest"
    facets = {
        "harvester": {"label": _("Harvester")},
        "deleted": {"label": _("Deleted at the source")},
        "has_errors": {"label": _("With errors")},
        "has_warnings": {"label": _("With warnings")},
        "has_conflicts": {"label": _("With conflicts")},
    }


def _harvester_vars(obj: Any, vars: dict) -> None:
    vars.update({"harvester_id": obj.id})


def _record_vars(obj: Any, vars: dict) -> None:
    vars.update(
        {
            "harvester_id": obj.harvester_id,
            "oai_id": obj.oai_identifier,
            "id": obj.id,
        }
    )


def _run_vars(obj: Any, vars: dict) -> None:
    vars.update(
        {"harvester_id": obj.harvester_id, "run_id": str(obj.id), "job_id": str(obj.job_id)}
    )


HARVESTER_PERMISSIONS = FromConfig(
    "OAI_HARVESTER_PERMISSION_POLICY", default=HarvesterPermissionPolicy, import_string=True
)
"""The harvesters' policy, which also rules their runs (a run is an action on its harvester)."""


class SQLServiceConfig(ServiceConfig, ConfiguratorMixin):
    """What the services of SQL rows (:class:`~.base.SQLService`) have in common."""

    result_item_cls = SQLItem
    result_list_cls = SQLList


class HarvesterServiceConfig(SQLServiceConfig):
    """Harvesters."""

    service_id = "oai-harvesters"
    permission_policy_cls = HARVESTER_PERMISSIONS
    schema = HarvesterSchema
    search = HarvesterSearchOptions
    result_item_cls = HarvesterItem

    links_item = {
        "self": EndpointLink("oai_harvesters.read", params=["harvester_id"], vars=_harvester_vars),
        "run": EndpointLink("oai_harvesters.run", params=["harvester_id"], vars=_harvester_vars),
        "preview": EndpointLink(
            "oai_harvesters.preview", params=["harvester_id"], vars=_harvester_vars
        ),
        "purge": EndpointLink(
            "oai_harvesters.purge", params=["harvester_id"], vars=_harvester_vars
        ),
        "runs": EndpointLink(
            "oai_harvesters.search_runs", params=["harvester_id"], vars=_harvester_vars
        ),
        "runs_history": EndpointLink(
            "oai_harvesters.run_history", params=["harvester_id"], vars=_harvester_vars
        ),
        "records": EndpointLink(
            "oai_harvested_records.search",
            vars=lambda obj, vars: vars.update({"args": {"harvester": obj.id}}),
        ),
        "self_html": ExternalLink(
            f"{ADMIN_URL}/oai-harvesters/{{harvester_id}}", vars=_harvester_vars
        ),
        "records_html": ExternalLink(
            f"{ADMIN_URL}/oai-harvested-records{{?f}}",
            vars=lambda obj, vars: vars.update({"f": f"harvester:{obj.id}"}),
        ),
        "job_html": ExternalLink(
            f"{ADMIN_URL}/jobs/{{job_id}}",
            when=lambda obj, ctx: obj.job is not None,
            vars=lambda obj, vars: vars.update({"job_id": obj.job and obj.job["id"]}),
        ),
    }
    links_search = pagination_endpoint_links("oai_harvesters.search")


class HarvestRunServiceConfig(SQLServiceConfig):
    """Runs of harvesters (invenio-jobs runs of their jobs); the harvesters' permissions."""

    service_id = "oai-harvest-runs"
    permission_policy_cls = HARVESTER_PERMISSIONS
    schema = HarvestRunSchema

    links_item = {
        "self": EndpointLink(
            "oai_harvesters.read_run", params=["harvester_id", "run_id"], vars=_run_vars
        ),
        "harvester": EndpointLink("oai_harvesters.read", params=["harvester_id"], vars=_run_vars),
        "records": EndpointLink(
            "oai_harvested_records.search",
            vars=lambda obj, vars: vars.update(
                {"args": {"harvester": obj.harvester_id, "run": str(obj.id)}}
            ),
        ),
        "self_html": ExternalLink(f"{ADMIN_URL}/runs/{{run_id}}", vars=_run_vars),
    }
    links_search = pagination_endpoint_links("oai_harvesters.search_runs", params=["harvester_id"])


class HarvestedRecordServiceConfig(SQLServiceConfig):
    """Tracking rows of harvested records."""

    service_id = "oai-harvested-records"
    permission_policy_cls = FromConfig(
        "OAI_HARVESTER_RECORDS_PERMISSION_POLICY",
        default=HarvestedRecordPermissionPolicy,
        import_string=True,
    )
    schema = HarvestedRecordSchema
    list_schema = HarvestedRecordListSchema
    search = HarvestedRecordSearchOptions

    links_item = {
        "self": EndpointLink(
            "oai_harvested_records.read", params=["harvester_id", "oai_id"], vars=_record_vars
        ),
        "reharvest": EndpointLink(
            "oai_harvested_records.reharvest",
            params=["harvester_id", "oai_id"],
            vars=_record_vars,
        ),
        "harvester": EndpointLink(
            "oai_harvesters.read", params=["harvester_id"], vars=_record_vars
        ),
        "run": EndpointLink(
            "oai_harvesters.read_run",
            params=["harvester_id", "run_id"],
            when=lambda obj, ctx: obj.run_id is not None,
            vars=lambda obj, vars: vars.update(
                {"harvester_id": obj.harvester_id, "run_id": str(obj.run_id)}
            ),
        ),
        "local_record": ExternalLink(
            "{+url}",
            when=lambda obj, ctx: bool(obj.local_links.get("self")),
            vars=lambda obj, vars: vars.update({"url": obj.local_links["self"]}),
        ),
        "local_record_html": ExternalLink(
            "{+url}",
            when=lambda obj, ctx: bool(obj.local_links.get("self_html")),
            vars=lambda obj, vars: vars.update({"url": obj.local_links["self_html"]}),
        ),
        "self_html": ExternalLink(f"{ADMIN_URL}/oai-harvested-records/{{+id}}", vars=_record_vars),
        "harvester_html": ExternalLink(
            f"{ADMIN_URL}/oai-harvesters/{{harvester_id}}", vars=_record_vars
        ),
        "run_html": ExternalLink(
            f"{ADMIN_URL}/runs/{{run_id}}",
            when=lambda obj, ctx: obj.run_id is not None,
            vars=lambda obj, vars: vars.update({"run_id": str(obj.run_id)}),
        ),
    }
    links_search = pagination_endpoint_links("oai_harvested_records.search")
