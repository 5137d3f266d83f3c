"""The panel's run forms - Run now, Purge..., the preview page's form - and the actions that
open them: their schemas as invenio-administration's form renderer gets them, their labels and
the order of their fields."""

from __future__ import annotations

from typing import Any

from flask import current_app
from invenio_i18n import lazy_gettext as _
from marshmallow import Schema, fields

from ..services.runs import PreviewRequestSchema
from ..services.schemas import RunRequestSchema

FORM_TITLES = {
    "since": _("Since"),
    "full": _("Full harvest"),
    "identifiers": _("Identifiers"),
    "reconcile_only": _("Reconcile only"),
    "reindex": _("Reindex"),
    "rewrite": _("Rewrite"),
    "errors_only": _("Errors only"),
    "force": _("Force"),
    "retry_errors": _("Retry failed records"),
    "title": _("Title of the run"),
    "limit": _("Limit"),
}
"""Labels of the run arguments in the panel's forms (the renderer shows the field name else;
it capitalises the first letter and lowers the others)."""

FORM_ORDER = (
    *("since", "full", "identifiers", "reconcile_only", "reindex"),
    *("rewrite", "errors_only", "force", "retry_errors", "limit", "title"),
    *("confirm", "forget"),
)
"""The order of the fields in the panel's run forms."""


def in_form_order(form: dict[str, Any]) -> dict[str, Any]:
    """A form schema as the panel's renderer gets it, with each field's place in FORM_ORDER.

    The renderer sorts the fields by an ``order`` that schemas do not have; without one they
    come in the order of the page's JSON, which is sorted by name.
    """
    for name, field in form.items():
        field["order"] = FORM_ORDER.index(name) if name in FORM_ORDER else len(FORM_ORDER)
    return form


def _with_titles(schema: Schema) -> None:
    # The fields are the schema instance's own deep copies: the run arguments schema that the
    # REST API and invenio-jobs describe keeps its metadata.
    for name, field in schema.fields.items():
        if name in FORM_TITLES:
            field.metadata = {**field.metadata, "title": FORM_TITLES[name]}


class RunNowFormSchema(RunRequestSchema):
    """The Run now form: every run argument except a purge, which has its own action with a
    typed confirmation (Purge...).

    The REST run body (`RunRequestSchema`) still takes ``purge``, ``forget`` and ``confirm``:
    it is the same body as the harvester's invenio-jobs job arguments, the purge endpoint
    starts its run through it, and the service refuses a purge whose ``confirm`` is not the
    harvester's id, whichever way it comes.
    """

    class Meta:
        exclude = ("purge", "forget", "confirm")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _with_titles(self)


class PurgeFormSchema(Schema):
    """The Purge... form (posted to the harvester's ``links.purge``): the harvester's id typed
    again, and whether the tracked records are forgotten too. Only describes the form; the
    service loads and checks the body."""

    confirm = fields.String(
        required=True,
        metadata={
            "title": _("The harvester's id, to confirm"),
            # Rendered as HTML by the form; the detail page puts the id in (escaped).
            "description": _(
                "<strong>Deletes every local record that this harvester created</strong>, "
                "through its target service; records it took over stay. The next run is a "
                "full one and harvests them again."
            ),
        },
    )
    forget = fields.Boolean(
        load_default=False,
        metadata={
            "title": _("Forget the tracked records too"),
            "description": _(
                "Also delete what the harvester knows of each OAI identifier (datestamp, "
                "stored XML, errors). Unticked, that stays, marked purged."
            ),
        },
    )


class PreviewFormSchema(PreviewRequestSchema):
    """The preview page's form: the arguments a dry run can take that change what a run
    would write, and the limit. A purge is never previewed; reindex and reconcile only
    write nothing a preview could show."""

    class Meta:
        exclude = ("purge", "forget", "confirm", "reindex", "reconcile_only", "retry_errors")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _with_titles(self)
        config = current_app.config
        self.fields["limit"].metadata = {
            **self.fields["limit"].metadata,
            "description": _(
                "Records to examine at most; empty: %(default)s (OAI_HARVESTER_PREVIEW_LIMIT), "
                "at most %(maximum)s. The counts then cover only the records examined.",
                default=config["OAI_HARVESTER_PREVIEW_LIMIT"],
                maximum=config["OAI_HARVESTER_PREVIEW_MAX_LIMIT"],
            ),
        }


RUN_ACTION = {
    "run": {
        "text": _("Run now"),
        "modal_text": _("Start a harvest now"),
        "payload_schema": RunNowFormSchema,
        "order": 1,
        "icon": "play",
    }
}
"""Posts the form to the harvester's ``links.run`` (``POST /api/oai-harvest/harvesters/<id>/run``)."""

DETAIL_ACTIONS = {
    **RUN_ACTION,
    # The page renders its actions in the order of their keys (the data attribute's JSON is
    # sorted), as a menu: Purge..., Run now..., Preview..., Edit, Delete. "run_preview" puts
    # Preview next to Run now; it has no endpoint, the panel's JavaScript opens the page.
    "run_preview": {
        "text": _("Preview"),
        "modal_text": _("What a run would do, without writing anything"),
        "payload_schema": None,
        "order": 2,
        "icon": "eye",
        "page": None,
    },
    # The key names the link the form is posted to (``links.purge``).
    "purge": {
        "text": _("Purge"),
        "modal_text": _("Delete every local record that this harvester created"),
        "payload_schema": PurgeFormSchema,
        "order": 3,
        "icon": "trash alternate outline",
    },
}
"""The detail page's actions. A purge is offered there only, beside what the harvester has
harvested, not on every row of the list (where it would also turn Run now into a menu)."""
