"""Configuration of the REST resources under ``/api/oai-harvest/``."""

from __future__ import annotations

from typing import Any

import marshmallow as ma
from flask_resources import (
    HTTPJSONException,
    JSONSerializer,
    ResourceConfig,
    ResponseHandler,
    create_error_handler,
)
from invenio_records_resources.resources.errors import ErrorHandlersMixin
from invenio_records_resources.resources.records.args import SearchRequestArgsSchema
from invenio_records_resources.services.base.config import ConfiguratorMixin

from ..services.errors import (
    HarvestedRecordNotFound,
    HarvesterAlreadyExists,
    HarvesterInUse,
    HarvesterNotFound,
    HarvestRunInProgress,
    HarvestRunNotFound,
)
from ..services.fields import field_policy_text, set_communities_text
from ..services.run_history import MAX_HISTORY_SIZE

# The administration panel's HTTP client (react-invenio-forms) asks for and sends this media type
# on every form and action request; it is JSON, as invenio-jobs' resources serve it.
INVENIO_JSON = "application/vnd.inveniordm.v1+json"

response_handlers = {
    **ResourceConfig.response_handlers,
    INVENIO_JSON: ResourceConfig.response_handlers["application/json"],
}


class FormJSONSerializer(JSONSerializer):
    """Harvesters as the panel's forms show them: the communities of sets as the text the
    form's textarea holds and sends back (its renderer has no widget for a mapping)."""

    def serialize_object(self, obj: Any) -> str:
        return super().serialize_object(_for_forms(obj))

    def serialize_object_list(self, obj_list: Any) -> str:
        hits = obj_list.get("hits", {})
        if isinstance(hits.get("hits"), list):
            hits = {**hits, "hits": [_for_forms(hit) for hit in hits["hits"]]}
            obj_list = {**obj_list, "hits": hits}
        return super().serialize_object_list(obj_list)


def _for_forms(harvester: Any) -> Any:
    if not isinstance(harvester, dict):
        return harvester
    for name, as_text in (
        ("set_communities", set_communities_text),
        ("field_policy", field_policy_text),
    ):
        if isinstance(harvester.get(name), dict):
            harvester = {**harvester, name: as_text(harvester[name])}
    return harvester


harvester_response_handlers = {
    **response_handlers,
    INVENIO_JSON: ResponseHandler(FormJSONSerializer()),
}
request_body_parsers = {
    **ResourceConfig.request_body_parsers,
    INVENIO_JSON: ResourceConfig.request_body_parsers["application/json"],
}


def _json_error(code: int):
    return create_error_handler(lambda error: HTTPJSONException(code=code, description=str(error)))


error_handlers = {
    **ErrorHandlersMixin.error_handlers,
    HarvesterNotFound: _json_error(404),
    HarvestedRecordNotFound: _json_error(404),
    HarvestRunNotFound: _json_error(404),
    HarvesterAlreadyExists: _json_error(409),
    HarvestRunInProgress: _json_error(409),
    HarvesterInUse: _json_error(409),
}
"""Validation 400 (with field errors), permission 403, not found 404, conflicts 409."""


class HarvestedRecordSearchArgsSchema(SearchRequestArgsSchema):
    """Filters of the records search; facets (harvester, deleted, has_errors, has_warnings,
    has_conflicts) are collected."""

    error = ma.fields.String()
    datestamp_from = ma.fields.String()
    datestamp_until = ma.fields.String()
    run = ma.fields.String()


def string_view_args(*names: str) -> dict[str, ma.fields.String]:
    """The view arguments of a resource's routes: each is a plain string of the URL path."""
    return {name: ma.fields.String() for name in names}


class ApiResourceConfig(ResourceConfig, ConfiguratorMixin):
    """What both resources answer alike: the panel's media type, and the services' errors."""

    error_handlers = error_handlers
    response_handlers = response_handlers
    request_body_parsers = request_body_parsers


class HarvesterResourceConfig(ApiResourceConfig):
    """Harvesters and their runs."""

    blueprint_name = "oai_harvesters"
    url_prefix = "/oai-harvest/harvesters"
    routes = {
        "list": "",
        "item": "/<harvester_id>",
        "run": "/<harvester_id>/run",
        "preview": "/<harvester_id>/preview",
        "purge": "/<harvester_id>/purge",
        "runs": "/<harvester_id>/runs",
        "run_history": "/<harvester_id>/runs/history",
        "run_item": "/<harvester_id>/runs/<run_id>",
        "run_undo": "/<harvester_id>/runs/<run_id>/undo",
        "deletions": "/<harvester_id>/deletions",
        "deletions_confirm": "/<harvester_id>/deletions/confirm",
        "deletions_reject": "/<harvester_id>/deletions/reject",
    }
    request_view_args = string_view_args("harvester_id", "run_id")
    request_search_args = SearchRequestArgsSchema
    # ``?check=false`` skips the preflight check of the provider on create and update;
    # ``?size=`` is the number of runs of a run history; ``?dry_run=true`` plans an undo.
    request_extra_args = {
        "check": ma.fields.Boolean(),
        "size": ma.fields.Integer(validate=ma.validate.Range(min=1, max=MAX_HISTORY_SIZE)),
        "dry_run": ma.fields.Boolean(),
    }
    response_handlers = harvester_response_handlers


class HarvestedRecordResourceConfig(ApiResourceConfig):
    """What the harvesters track of each OAI identifier."""

    blueprint_name = "oai_harvested_records"
    url_prefix = "/oai-harvest/records"
    routes = {
        "list": "",
        # OAI identifiers contain ':' and may contain '/': the path converter keeps them whole.
        "item": "/<harvester_id>/<path:oai_id>",
        "reharvest": "/<harvester_id>/<path:oai_id>/reharvest",
    }
    request_view_args = string_view_args("harvester_id", "oai_id")
    request_search_args = HarvestedRecordSearchArgsSchema
