"""The panel's forms: the harvester's create and edit form (its fields and what they offer
to choose from), the run forms - Run now, Purge..., the preview page's form - and the actions
that open them: their schemas as invenio-administration's form renderer gets them, their
labels and the order of their fields."""

from __future__ import annotations

from typing import Any

from invenio_accounts.models import User
from invenio_db import db
from invenio_i18n import lazy_gettext as _
from marshmallow import Schema, fields

from ..arguments import flag
from ..harvest.assembly import current_settings
from ..harvest.targets.options import POLICY_FIELDS
from ..proxies import current_oai_harvester
from ..services.run_schemas import PreviewRequestSchema, RunRequestSchema
from ..services.targets import writable_target_ids
from ..transformers.rdm.base import MissingCreatorChoice
from .guard_fields import GUARD_FIELDS

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
    typed confirmation (Purge...), and an undo, which has its button on each run.

    The REST run body (`RunRequestSchema`) still takes ``purge``, ``forget`` and ``confirm``:
    it is the same body as the harvester's invenio-jobs job arguments, the purge endpoint
    starts its run through it, and the service refuses a purge whose ``confirm`` is not the
    harvester's id, whichever way it comes.
    """

    class Meta:
        exclude = ("purge", "forget", "confirm", "undo")

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
    forget = flag(
        _(
            "Also delete what the harvester knows of each OAI identifier (datestamp, "
            "stored XML, errors). Unticked, that stays, marked purged."
        ),
        title=_("Forget the tracked records too"),
    )


class PreviewFormSchema(PreviewRequestSchema):
    """The preview page's form: the arguments a dry run can take that change what a run
    would write, and the limit. A purge is never previewed; reindex and reconcile only
    write nothing a preview could show."""

    class Meta:
        exclude = (
            *("purge", "forget", "confirm", "reindex", "reconcile_only", "retry_errors", "undo"),
        )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _with_titles(self)
        settings = current_settings()
        self.fields["limit"].metadata = {
            **self.fields["limit"].metadata,
            "description": _(
                "Records to examine at most; empty: %(default)s (OAI_HARVESTER_PREVIEW_LIMIT), "
                "at most %(maximum)s. The counts then cover only the records examined.",
                default=settings.preview_limit,
                maximum=settings.preview_max_limit,
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


# -- the harvester's create and edit form ---------------------------------------------------
FORM_FIELDS = {
    "id": {
        "order": 1,
        "text": _("Id"),
        # Rendered as HTML by the form: angle brackets must be escaped.
        "description": _(
            "A short slug (lowercase letters, digits, '-', '_'). It names the job type "
            "<code>harvest_oaipmh_records_&lt;id&gt;</code> and cannot change later."
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
    "metadata_prefix": {
        "order": 4,
        "text": _("Metadata prefix"),
        "placeholder": "oai_dc",
        "description": _(
            "Empty: the check picks the richest format the provider offers that a transformer "
            "reads into the target (lido, oai_datacite, oai_openaire, marcxml, then oai_dc for "
            "InvenioRDM; OAI_HARVESTER_PREFERRED_PREFIXES) and its transformer; the harvester's "
            "page says which and why."
        ),
    },
    "setspecs": {
        "order": 5,
        "text": _("Sets"),
        # A list of plain values: the form's array widget needs items with sub-fields.
        "type": "dropdown",
        "multiple": True,
        "search": True,
        "allowAdditions": True,
        "options": [],
        "description": _(
            "Type a set spec and press Enter, once per set; the sets are harvested one after "
            "another. None harvests the whole repository."
        ),
    },
    "target": {
        "order": 6,
        "text": _("Target service"),
        "description": _("The records service that harvested records are written to."),
    },
    "transformer": {
        "order": 7,
        "text": _("Transformer"),
        "description": _(
            "Empty: into InvenioRDM's records the one for the metadata prefix (oai_dc_rdm for "
            "oai_dc), else the site's default (oai_dc)."
        ),
    },
    "batch_size": {"order": 8, "text": _("Batch size")},
    "request_delay": {
        "order": 8.5,
        "text": _("Pause between requests (seconds)"),
        # A float has no widget in the form renderer; the API reads decimal text.
        "type": "string",
        "description": _("Politeness towards this provider; empty uses the site default."),
    },
    "harvest_managers": {
        "order": 9,
        "text": _("Harvest managers"),
        "type": "dropdown",
        "multiple": True,
        "search": True,
        "allowAdditions": True,
        "description": _(
            "Users who may see this harvester, its records and runs, start it, and who "
            "receive its run reports (choose by e-mail, or type a user id or e-mail address)."
        ),
    },
    "owner": {
        "order": 9.1,
        "text": _("Owner of the records"),
        "type": "dropdown",
        "search": True,
        "clearable": True,
        "description": _(
            "The user who owns the harvested records (InvenioRDM shows them as theirs); "
            "empty: the system. A dedicated harvester account is a good choice."
        ),
    },
    "community": {
        "order": 9.2,
        "text": _("Community"),
        "description": _(
            "InvenioRDM: the community (slug or id) that new harvested records are included in."
        ),
    },
    "target_adapter": {
        "order": 9.3,
        "text": _("Write records through"),
        "description": _(
            "auto: drafts for a draft-enabled service (InvenioRDM), else create/update."
        ),
    },
    "local_drafts": {
        "order": 9.4,
        "text": _("A local draft of a harvested record"),
        "description": _(
            "harvest-wins: the harvested data replaces the draft and is published (the run "
            "report names the record); local-wins: the record is skipped and reported."
        ),
    },
    "invalid_drafts": {
        "order": 9.5,
        "text": _("A new record the target refuses"),
        "description": _(
            "discard: no draft is left behind; keep: the draft stays for a curator to fix. "
            "The errors are on the harvested record either way."
        ),
    },
    "doi_conflicts": {
        "order": 9.6,
        "text": _("A DOI held by another local record"),
        "description": _(
            "fail: the harvested record fails, naming the holder (which is never changed); "
            "take-over: the holder becomes this harvester's record."
        ),
    },
    "missing_creator": {
        "order": 9.7,
        "text": _("A record that names no creator"),
        "type": "dropdown",
        "search": True,
        "clearable": True,
        "allowAdditions": True,
        "description": _(
            "InvenioRDM transformers (RDM requires a creator): fail; contributors (its "
            "contributors, else its publisher); holder (the holding or publishing institution, "
            "else its contributors); or type a fixed name such as Unknown. Every choice but "
            "fail warns on the record. Empty: the transformer's default."
        ),
    },
    "files": {
        "order": 9.71,
        "text": _("Files of the records"),
        "description": _(
            "InvenioRDM: none (metadata only, the default); link (the file URLs kept on the "
            "record, nothing downloaded); copy (the files fetched into this site's storage, "
            "checked against the source's size and checksum)."
        ),
    },
    "files_failure": {
        "order": 9.72,
        "text": _("A file that cannot be fetched"),
        "description": _(
            "metadata-only: the record is published without it, with a warning naming it and "
            "why (the default); fail: the record fails and is retried like any failed record."
        ),
    },
    "files_changes": {
        "order": 9.73,
        "text": _("Files changed at the source"),
        "description": _(
            "new-version: a new version of the record, unchanged files carried over (the "
            "default); replace: the files of the published record are replaced in place."
        ),
    },
    "files_max_size": {
        "order": 9.74,
        "text": _("Largest file (bytes)"),
        "description": _("A larger file is not fetched. Empty: OAI_HARVESTER_FILES_MAX_SIZE."),
    },
    "files_hosts": {
        "order": 9.75,
        "text": _("Hosts files may come from"),
        "type": "dropdown",
        "multiple": True,
        "search": True,
        "allowAdditions": True,
        "options": [],
        "description": _(
            "Besides the provider's own host; *.example.org allows its subdomains. The "
            "provider's credentials are sent to its own host only."
        ),
    },
    "files_restricted": {
        "order": 9.76,
        "text": _("Fetch restricted files"),
        "description": _(
            "Fetch the files the source marks restricted too; they are stored restricted."
        ),
    },
    "set_communities": {
        "order": 9.25,
        "text": _("Communities of sets"),
        "rows": 3,
        "description": _(
            "InvenioRDM: records in a set also join a community, one <code>set = community"
            "</code> per line (slug or id of the community)."
        ),
    },
    "active": {
        "order": 9.8,
        "text": _("Active"),
        "description": _("A paused harvester is left out of the run-all job."),
    },
    "auth_username": {
        "order": 9.85,
        "text": _("Provider user name (HTTP Basic)"),
        "description": _(
            "With the password: stored encrypted and never shown again; leave both empty to "
            "keep what is set."
        ),
    },
    "auth_password": {"order": 9.86, "text": _("Provider password")},
    "headers": {
        "order": 9.9,
        "text": _("Request headers"),
        "rows": 2,
        "description": _(
            "Sent to the provider with every request, one <code>Name: value</code> per line "
            "(an API token, say). Stored encrypted and never shown again; leave empty to keep "
            "what is set."
        ),
    },
    "clear_credentials": {
        "order": 9.95,
        "text": _("Forget the provider's login and headers"),
    },
    "comment": {"order": 10, "text": _("Comment"), "rows": 3},
    "take_over_records": {
        "order": 10.5,
        "text": _("Take over the records a deleted harvester of this provider left"),
        "description": _(
            "A new harvester of the same provider, metadata prefix and target takes over the "
            "local records a deleted one left when it harvests the same sets; with other sets, "
            "tick this to take them over anyway (else the form says which harvester left them)."
        ),
    },
    **GUARD_FIELDS,
}

MAX_USER_OPTIONS = 500
"""Users offered as harvest managers; a larger site types the user id of the others."""


def harvester_form_fields() -> dict[str, Any]:
    """FORM_FIELDS with what the operator chooses from: targets, transformers, users."""
    fields = {name: dict(config) for name, config in FORM_FIELDS.items()}
    fields["target"]["options"] = [
        {"id": service_id, "title_l10n": service_id} for service_id in writable_target_ids()
    ]
    fields["transformer"]["options"] = [
        {"id": name, "title_l10n": name} for name in current_oai_harvester.transformers.names()
    ]
    users = db.session.execute(
        db.select(User.id, User.email).order_by(User.email).limit(MAX_USER_OPTIONS)
    ).all()
    fields["harvest_managers"]["options"] = [
        {"id": user_id, "title_l10n": f"{email} (id {user_id})"} for user_id, email in users
    ]
    fields["owner"]["options"] = fields["harvest_managers"]["options"]
    fields["missing_creator"]["options"] = [
        {"id": choice.value, "title_l10n": choice.value} for choice in MissingCreatorChoice
    ]
    for name, choices in POLICY_FIELDS.items():
        fields[name]["options"] = [
            {"id": member.value, "title_l10n": member.value} for member in choices
        ]
    return fields
