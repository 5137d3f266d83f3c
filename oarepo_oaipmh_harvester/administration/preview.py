"""The preview page of one harvester: what a run would do, without writing anything."""

from __future__ import annotations

from typing import Any

from flask import url_for
from invenio_administration.views.base import AdminResourceDetailView
from invenio_i18n import lazy_gettext as _

from .forms import PreviewFormSchema, in_form_order
from .harvesters import HarvesterAdminMixin


class HarvesterPreviewView(HarvesterAdminMixin, AdminResourceDetailView):
    """A dry run of one harvester: a form of run arguments that is posted to the harvester's
    ``links.preview`` by the panel's JavaScript, and the report it answers (counts, field
    changes, errors, notes) shown on the page. Nothing is written.

    A page of one harvester, so a detail view: invenio-administration keeps those out of the
    menu (any other view there needs a URL without arguments).
    """

    url = "/oai-harvesters/<pid_value>/preview"
    name = "oai-harvesters-preview"
    title = _("Preview a run")
    template = "oarepo_oaipmh_harvester/administration/harvester-preview.html"
    display_edit = False
    display_delete = False

    def get_context(self, pid_value: str | None = None) -> dict[str, Any]:
        harvester = self._harvester_or_404(pid_value)
        return {
            "title": self.title,
            "name": self.name,
            "harvester": harvester,
            "form_schema": in_form_order(self._schema_to_json(PreviewFormSchema())),
            "harvester_page": url_for(
                "administration.oai-harvesters-details", pid_value=harvester["id"]
            ),
        }
