"""REST resources (flask-resources): thin shells over the harvester and record services."""

from __future__ import annotations

from typing import Any

from flask import g
from flask_resources import Resource, resource_requestctx, response_handler, route
from invenio_records_resources.resources.errors import ErrorHandlersMixin
from invenio_records_resources.resources.records.resource import (
    request_data,
    request_extra_args,
    request_search_args,
    request_view_args,
)

from ..services.deletions import confirm_deletions, held_deletions, reject_deletions
from ..services.undo import undo_plan


class HarvesterResource(ErrorHandlersMixin, Resource):
    """``/api/oai-harvest/harvesters``: harvesters and their runs."""

    def __init__(self, config: Any, service: Any, runs_service: Any) -> None:
        super().__init__(config)
        self.service = service
        self.runs_service = runs_service

    def create_url_rules(self) -> list[dict]:
        routes = self.config.routes
        return [
            route("GET", routes["list"], self.search),
            route("POST", routes["list"], self.create),
            route("GET", routes["item"], self.read),
            route("PUT", routes["item"], self.update),
            route("DELETE", routes["item"], self.delete),
            route("POST", routes["run"], self.run),
            route("POST", routes["preview"], self.preview),
            route("POST", routes["purge"], self.purge),
            route("GET", routes["runs"], self.search_runs),
            route("GET", routes["run_history"], self.run_history),
            route("GET", routes["run_item"], self.read_run),
            route("POST", routes["run_undo"], self.undo_run),
            route("GET", routes["deletions"], self.held_deletions),
            route("POST", routes["deletions_confirm"], self.confirm_deletions),
            route("POST", routes["deletions_reject"], self.reject_deletions),
        ]

    @request_search_args
    @response_handler(many=True)
    def search(self) -> tuple[dict, int]:
        result = self.service.search(g.identity, params=resource_requestctx.args)
        return result.to_dict(), 200

    @request_extra_args
    @request_data
    @response_handler()
    def create(self) -> tuple[dict, int]:
        item = self.service.create(
            g.identity,
            resource_requestctx.data,
            check=resource_requestctx.args.get("check"),
        )
        return item.to_dict(), 201

    @request_view_args
    @response_handler()
    def read(self) -> tuple[dict, int]:
        item = self.service.read(g.identity, resource_requestctx.view_args["harvester_id"])
        return item.to_dict(), 200

    @request_extra_args
    @request_view_args
    @request_data
    @response_handler()
    def update(self) -> tuple[dict, int]:
        item = self.service.update(
            g.identity,
            resource_requestctx.view_args["harvester_id"],
            resource_requestctx.data,
            check=resource_requestctx.args.get("check"),
        )
        return item.to_dict(), 200

    @request_view_args
    def delete(self) -> tuple[str, int]:
        self.service.delete(g.identity, resource_requestctx.view_args["harvester_id"])
        return "", 204

    @request_view_args
    @request_data
    @response_handler()
    def run(self) -> tuple[dict, int]:
        """Run now; the body (optional) takes ``since``, ``full``, ``identifiers``, ``title``."""
        item = self.runs_service.start_run(
            g.identity,
            resource_requestctx.view_args["harvester_id"],
            resource_requestctx.data,
        )
        return item.to_dict(), 202

    @request_view_args
    @request_data
    @response_handler()
    def preview(self) -> tuple[dict, int]:
        """A dry run now: what a run with the body's arguments (and ``limit``) would do."""
        report = self.runs_service.preview(
            g.identity,
            resource_requestctx.view_args["harvester_id"],
            resource_requestctx.data,
        )
        return report, 200

    @request_view_args
    @request_data
    @response_handler()
    def purge(self) -> tuple[dict, int]:
        """Start a purge run; the body must give ``confirm`` (the harvester's id), and may
        give ``forget``."""
        item = self.runs_service.purge(
            g.identity,
            resource_requestctx.view_args["harvester_id"],
            resource_requestctx.data,
        )
        return item.to_dict(), 202

    @request_search_args
    @request_view_args
    @response_handler(many=True)
    def search_runs(self) -> tuple[dict, int]:
        result = self.runs_service.search_runs(
            g.identity,
            resource_requestctx.view_args["harvester_id"],
            params=resource_requestctx.args,
        )
        return result.to_dict(), 200

    @request_extra_args
    @request_view_args
    @response_handler()
    def run_history(self) -> tuple[dict, int]:
        """The last runs (``?size=``, 20 unless given) in numbers, the oldest first."""
        history = self.runs_service.run_history(
            g.identity,
            resource_requestctx.view_args["harvester_id"],
            resource_requestctx.args.get("size"),
        )
        return history, 200

    @request_view_args
    @response_handler()
    def read_run(self) -> tuple[dict, int]:
        item = self.runs_service.read_run(
            g.identity,
            resource_requestctx.view_args["harvester_id"],
            resource_requestctx.view_args["run_id"],
        )
        return item.to_dict(), 200

    @request_extra_args
    @request_view_args
    @response_handler()
    def undo_run(self) -> tuple[dict, int]:
        """Undo a run: with ``?dry_run=true`` what it would do; else the undo run, started."""
        harvester_id = resource_requestctx.view_args["harvester_id"]
        run_id = resource_requestctx.view_args["run_id"]
        if resource_requestctx.args.get("dry_run"):
            return undo_plan(self.service, g.identity, harvester_id, run_id), 200
        item = self.runs_service.start_run(g.identity, harvester_id, {"undo": run_id})
        return item.to_dict(), 202

    @request_view_args
    @response_handler()
    def held_deletions(self) -> tuple[dict, int]:
        """The deletions the mass-deletion guard held (up to 1,000 listed)."""
        view = held_deletions(
            self.service, g.identity, resource_requestctx.view_args["harvester_id"]
        )
        return view.as_dict(), 200

    @request_view_args
    @response_handler()
    def confirm_deletions(self) -> tuple[dict, int]:
        """Apply every held deletion."""
        harvester_id = resource_requestctx.view_args["harvester_id"]
        return confirm_deletions(self.service, g.identity, harvester_id), 200

    @request_view_args
    @response_handler()
    def reject_deletions(self) -> tuple[dict, int]:
        """Drop every held deletion."""
        harvester_id = resource_requestctx.view_args["harvester_id"]
        return reject_deletions(self.service, g.identity, harvester_id), 200


class HarvestedRecordResource(ErrorHandlersMixin, Resource):
    """``/api/oai-harvest/records``."""

    def __init__(self, config: Any, service: Any) -> None:
        super().__init__(config)
        self.service = service

    def create_url_rules(self) -> list[dict]:
        routes = self.config.routes
        return [
            route("GET", routes["list"], self.search),
            route("GET", routes["item"], self.read),
            route("POST", routes["reharvest"], self.reharvest),
        ]

    @request_search_args
    @response_handler(many=True)
    def search(self) -> tuple[dict, int]:
        result = self.service.search(g.identity, params=resource_requestctx.args)
        return result.to_dict(), 200

    @request_view_args
    @response_handler()
    def read(self) -> tuple[dict, int]:
        view_args = resource_requestctx.view_args
        item = self.service.read(g.identity, view_args["harvester_id"], view_args["oai_id"])
        return item.to_dict(), 200

    @request_view_args
    @request_data
    @response_handler()
    def reharvest(self) -> tuple[dict, int]:
        """Fetch the record again now (GetRecord); returns the run. No body, or an empty one."""
        view_args = resource_requestctx.view_args
        item = self.service.reharvest(
            g.identity, view_args["harvester_id"], view_args["oai_id"], resource_requestctx.data
        )
        return item.to_dict(), 202
