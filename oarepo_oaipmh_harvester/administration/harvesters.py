"""Admin views of harvesters: list, details (job, last runs, run now, preview, purge), create
and edit. The preview page is in `preview`, the run forms in `forms`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from flask import abort, g, url_for
from invenio_administration.views.base import (
    AdminResourceCreateView,
    AdminResourceDetailView,
    AdminResourceEditView,
    AdminResourceListView,
)
from invenio_i18n import lazy_gettext as _
from markupsafe import Markup, escape

from ..jobs import job_type_id
from ..proxies import (
    current_harvest_runs_service,
    current_harvested_records_service,
    current_harvester_service,
)
from ..services.deletions import held_deletions
from ..services.errors import HarvesterNotFound
from ..services.undo import undo_states
from .compat import ApiEndpointByName
from .field_lists import field_list
from .forms import DETAIL_ACTIONS, RUN_ACTION, harvester_form_fields, in_form_order
from .run_chart import run_chart_svg

EXTENSION_NAME = "oarepo-oaipmh-harvester"
CATEGORY = _("OAI-PMH")


class HarvesterAdminMixin(ApiEndpointByName):
    """What every harvester view shares."""

    extension_name = EXTENSION_NAME
    resource_config = "harvesters_resource"
    api_endpoint_name = "oai_harvesters.search"
    pid_path = "id"
    list_view_name = "oai-harvesters"

    def serialize_actions(self) -> dict[str, Any]:
        actions = super().serialize_actions()
        for action in actions.values():
            if action.get("payload_schema"):
                in_form_order(action["payload_schema"])
        return actions

    def _harvester_or_404(self, pid_value: str | None) -> dict[str, Any]:
        """The harvester as the signed-in user may see it, or a 404 page."""
        try:
            return current_harvester_service.read(g.identity, pid_value).to_dict()
        except HarvesterNotFound:
            abort(404)


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

    template = "oarepo_oaipmh_harvester/administration/search.html"
    display_search = True
    display_create = True
    display_edit = True
    display_delete = True

    search_config_name = "OAI_HARVESTER_ADMIN_HARVESTERS_SEARCH"
    search_sort_config_name = "OAI_HARVESTER_ADMIN_HARVESTERS_SORT_OPTIONS"
    search_facets_config_name = None

    item_field_list = field_list(
        ("id", _("Id"), 2),
        ("name", _("Name"), 3),
        ("base_url", _("Provider"), 4),
        ("target", _("Target"), 2),
        ("last_run.status", _("Last run"), 2),
        ("updated", _("Updated"), 2),
    )
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
    charted_runs = 20

    item_field_list = field_list(
        ("id", _("Id")),
        ("name", _("Name")),
        ("comment", _("Comment")),
        ("base_url", _("Provider endpoint")),
        ("metadata_prefix", _("Metadata prefix")),
        ("metadata_prefix_choice", _("Why this metadata prefix")),
        ("setspecs_text", _("Sets")),
        ("target", _("Target service")),
        ("transformer", _("Transformer")),
        ("batch_size", _("Batch size")),
        ("request_delay", _("Pause between requests (s)")),
        ("harvest_managers_text", _("Harvest managers")),
        ("owner_text", _("Owner of the records")),
        ("community", _("Community")),
        ("target_adapter", _("Written through")),
        ("local_drafts", _("Open local drafts")),
        ("invalid_drafts", _("Invalid drafts")),
        ("doi_conflicts", _("DOI held by another record")),
        ("missing_creator_text", _("A record without a creator")),
        ("files_text", _("Files of the records")),
        ("watermark", _("Watermark (provider time)")),
        ("created", _("Created")),
        ("updated", _("Updated")),
    )
    actions = DETAIL_ACTIONS

    def get_context(self, pid_value: str | None = None) -> dict[str, Any]:
        context = super().get_context(pid_value=pid_value)
        harvester = self._harvester_or_404(pid_value)
        actions = context["actions"]  # serialised for this request: ours to fill in
        actions["run_preview"]["page"] = url_for(
            "administration.oai-harvesters-preview", pid_value=harvester["id"]
        )
        confirm = actions["purge"]["payload_schema"]["confirm"]
        typed = _("Type %(id)s to confirm.", id=f"<code>{escape(harvester['id'])}</code>")
        confirm["metadata"] = {
            **confirm["metadata"],
            "description": f"{confirm['metadata']['description']} {typed}",
        }
        runs = current_harvest_runs_service.search_runs(
            g.identity, pid_value, {"size": self.last_runs}
        ).to_dict()
        records = current_harvested_records_service.search(
            g.identity, {"harvester": [pid_value], "size": 1}
        )
        with_errors = current_harvested_records_service.search(
            g.identity, {"harvester": [pid_value], "has_errors": ["true"], "size": 1}
        )
        history = current_harvest_runs_service.run_history(g.identity, pid_value, self.charted_runs)
        undo = undo_states(pid_value, [run["id"] for run in runs["hits"]["hits"]])
        admin_url = harvester["links"]["self_html"].split("/oai-harvesters/")[0]
        context.update(
            {
                "harvester": harvester,
                "job_task": job_type_id(harvester["id"]),
                "jobs": [
                    {
                        **job,
                        "link": f"{admin_url}/jobs/{job['id']}",
                        "schedule_text": describe_schedule(job.get("schedule")),
                    }
                    for job in harvester.get("jobs") or []
                ],
                # A run can be undone once it has finished (its journal says what it changed).
                "runs": [
                    {**_displayed_run(run), "undo": run.get("finished_at") and undo.get(run["id"])}
                    for run in runs["hits"]["hits"]
                ],
                "runs_total": runs["hits"]["total"],
                # Drawn here from numbers and escaped text: safe to put in the page as it is.
                "run_chart": Markup(run_chart_svg(history["runs"])),
                "records_total": records.total,
                "held_deletions": held_deletions(
                    current_harvester_service, g.identity, harvester["id"]
                ).held,
                "records_with_errors": with_errors.total,
                "error_reasons": [
                    {
                        "reason": group.reason,
                        "count": group.count,
                        "examples": group.examples,
                        "records_link": harvester["links"]["records_html"]
                        + "&"
                        + urlencode({"f": f"error:{group.reason}"}),
                    }
                    for group in (
                        current_harvested_records_service.error_reasons(g.identity, pid_value)
                        if with_errors.total
                        else []
                    )
                ],
            }
        )
        return context


def format_time(value: str | None) -> str:
    """An ISO time of the API as the panel shows dates: to the second, in UTC."""
    if not value:
        return ""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def describe_schedule(schedule: dict[str, Any] | None) -> str:
    """An invenio-jobs schedule in words: "every 6 hours", "crontab 0 3 * * *"."""
    if not schedule:
        return ""
    if schedule.get("type") == "interval":
        parts = [
            f"{schedule[unit]} {unit}"
            for unit in ("weeks", "days", "hours", "minutes", "seconds", "microseconds")
            if schedule.get(unit)
        ]
        return "every " + ", ".join(parts) if parts else "interval"
    if schedule.get("type") == "crontab":
        fields = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
        return "crontab " + " ".join(str(schedule.get(name, "*")) for name in fields)
    return str(schedule)


def _displayed_run(run: dict[str, Any]) -> dict[str, Any]:
    counted = sum(
        run.get(name) or 0 for name in ("inserted_entries", "updated_entries", "errored_entries")
    )
    scheduled = not run.get("title") and run.get("started_by_id") is None
    return {
        **run,
        "display_title": run.get("title") or (_("Scheduled run") if scheduled else _("Run")),
        "started_display": format_time(run.get("started_at")),
        "finished_display": format_time(run.get("finished_at")),
        "unchanged_entries": max((run.get("total_entries") or 0) - counted, 0),
    }


class HarvesterFormMixin:
    """Create and edit: the form fields with their current choices."""

    @property
    def form_fields(self) -> dict[str, Any]:
        return harvester_form_fields()


class HarvesterCreateView(HarvesterFormMixin, HarvesterAdminMixin, AdminResourceCreateView):
    """Register a harvester (the API's 400 field errors, preflight included, show in the form)."""

    name = "oai-harvesters-create"
    url = "/oai-harvesters/create"
    title = _("New OAI-PMH harvester")


class HarvesterEditView(HarvesterFormMixin, HarvesterAdminMixin, AdminResourceEditView):
    """Change a harvester; the id stays."""

    name = "oai-harvesters-edit"
    url = "/oai-harvesters/<pid_value>/edit"
    title = _("Edit OAI-PMH harvester")
