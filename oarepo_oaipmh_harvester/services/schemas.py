"""Validation of harvester input and the JSON shapes of harvesters, records and runs."""

from __future__ import annotations

from datetime import UTC
from typing import Any

from flask import current_app
from invenio_accounts.models import User
from invenio_db import db
from invenio_i18n import lazy_gettext as _
from marshmallow import (
    EXCLUDE,
    Schema,
    ValidationError,
    fields,
    pre_load,
    validate,
    validates,
)
from marshmallow_utils.fields import TZDateTime

from ..arguments import PlainList, RunArgumentsSchema
from ..models import OAIHarvester
from ..proxies import current_oai_harvester
from ..text import StorableText, echoed
from .targets import writable_target_ids

HARVESTER_ID_PATTERN = r"^[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?$"


def column_length(column: Any) -> int:
    """The length of a String column: what the database refuses beyond (with a 500)."""
    return column.property.columns[0].type.length


BASE_URL_LENGTH = column_length(OAIHarvester.base_url)
TEXT_LENGTH = column_length(OAIHarvester.name)
"""name and metadata_prefix; each set spec is held to it too."""


class ProviderUrl(fields.Url):
    """An http(s) URL that fits its column, measured before the URL pattern is tried on it."""

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> str:
        url = super()._deserialize(value, attr, data, **kwargs)
        if len(url) > BASE_URL_LENGTH:
            raise ValidationError(
                f"Give a URL of at most {BASE_URL_LENGTH} characters (this one has {len(url)})."
            )
        return url


OPTIONAL_FIELDS = ("comment", "transformer", "batch_size", "request_delay")


class HarvesterSchema(Schema):
    """A harvester as operators write it (load) and as the API shows it (dump)."""

    id = fields.String(
        required=True,
        validate=validate.Regexp(
            HARVESTER_ID_PATTERN,
            error="Use 1-64 lowercase letters, digits, '-' or '_' (a short slug).",
        ),
        metadata={"create_only": True, "title": _("Id")},
    )
    name = fields.String(
        required=True, validate=[validate.Length(min=1, max=TEXT_LENGTH), StorableText()]
    )
    comment = fields.String(load_default=None, allow_none=True, validate=StorableText())
    base_url = ProviderUrl(
        required=True,
        schemes={"http", "https"},
        require_tld=False,
        validate=StorableText(),
        error_messages={"invalid": "Give an http:// or https:// URL of the OAI-PMH endpoint."},
    )
    metadata_prefix = fields.String(
        required=True, validate=[validate.Length(min=1, max=TEXT_LENGTH), StorableText()]
    )
    setspecs = PlainList(
        fields.String(validate=[validate.Length(min=1, max=TEXT_LENGTH), StorableText()]),
        load_default=list,
    )
    target = fields.String(required=True)
    transformer = fields.String(load_default=None, allow_none=True)
    batch_size = fields.Integer(
        load_default=None, allow_none=True, validate=validate.Range(min=1, max=10000)
    )
    harvest_managers = PlainList(fields.Integer(strict=False), load_default=list)
    request_delay = fields.Float(
        load_default=None, allow_none=True, validate=validate.Range(min=0, max=600)
    )

    # Shown, never written by a client.
    watermark = TZDateTime(timezone=UTC, format="iso", dump_only=True)
    created = TZDateTime(timezone=UTC, format="iso", dump_only=True)
    updated = TZDateTime(timezone=UTC, format="iso", dump_only=True)
    job = fields.Raw(dump_only=True)
    jobs = fields.Raw(dump_only=True)
    # In words, for pages that show values as text.
    setspecs_text = fields.Method("_setspecs_text", dump_only=True)
    harvest_managers_text = fields.Method("_harvest_managers_text", dump_only=True)

    def _setspecs_text(self, harvester: Any) -> str:
        return ", ".join(harvester.setspecs or []) or "all (no set)"

    def _harvest_managers_text(self, harvester: Any) -> str:
        ids = list(harvester.harvest_managers or [])
        if not ids:
            return "none"
        emails = dict(
            db.session.execute(db.select(User.id, User.email).where(User.id.in_(ids))).all()
        )
        return ", ".join(f"{emails.get(user_id, '?')} (id {user_id})" for user_id in ids)

    last_run = fields.Raw(dump_only=True)

    @pre_load
    def _drop_dump_only(self, data: Any, **kwargs: Any) -> Any:
        # What the API returned may be sent back (admin edit form, scripts doing GET-edit-PUT).
        if not isinstance(data, dict):
            return data
        ignored = {name for name, field in self.fields.items() if field.dump_only} | {"links"}
        cleaned = {key: value for key, value in data.items() if key not in ignored}
        # Forms send empty optional fields as "": that means "not set" (use the default).
        for name in OPTIONAL_FIELDS:
            if cleaned.get(name) == "":
                cleaned[name] = None
        return cleaned

    @validates("target")
    def _known_target(self, value: str, **kwargs: Any) -> None:
        writable = writable_target_ids()
        if value not in writable:
            known = ", ".join(writable) or "none"
            raise ValidationError(
                f"No record service with id {echoed(value)} can be written to; "
                f"choose one of: {known}."
            )

    @validates("harvest_managers")
    def _known_users(self, value: list[int], **kwargs: Any) -> None:
        wanted = set(value or [])
        if not wanted:
            return
        known = set(db.session.scalars(db.select(User.id).where(User.id.in_(wanted))))
        missing = sorted(wanted - known)
        if missing:
            raise ValidationError(f"No user with id {', '.join(map(str, missing))}.")

    @validates("transformer")
    def _known_transformer(self, value: str | None, **kwargs: Any) -> None:
        transformers = current_oai_harvester.transformers
        if value is not None and value not in transformers:
            raise ValidationError(
                f"Unknown transformer {echoed(value)} (known: {', '.join(transformers.names())})."
            )


def apply_defaults(data: dict) -> dict:
    """Fill what the operator left out from the configuration."""
    config = current_app.config
    data = dict(data)
    if data.get("transformer") is None:
        data["transformer"] = config["OAI_HARVESTER_DEFAULT_TRANSFORMER"]
    if data.get("batch_size") is None:
        data["batch_size"] = config["OAI_HARVESTER_DEFAULT_BATCH_SIZE"]
    # Order kept, duplicates dropped: the same set twice would be harvested twice.
    data["setspecs"] = list(dict.fromkeys(data.get("setspecs") or []))
    data["harvest_managers"] = list(dict.fromkeys(data.get("harvest_managers") or []))
    return data


class RunRequestSchema(RunArgumentsSchema):
    """Body of "run now" (`POST .../harvesters/<id>/run`): the run arguments and a title."""

    title = fields.String(validate=validate.Length(min=1, max=250))


class HarvestRunSchema(Schema):
    """An invenio-jobs run of a harvester's job, with its counters."""

    class Meta:
        unknown = EXCLUDE

    id = fields.UUID(dump_only=True)
    job_id = fields.UUID(dump_only=True)
    harvester_id = fields.String(dump_only=True)
    title = fields.String(dump_only=True)
    status = fields.Function(lambda run: run.status.name if run.status else None)
    message = fields.String(dump_only=True)
    args = fields.Raw(dump_only=True)
    started_by_id = fields.Integer(dump_only=True, allow_none=True)
    created = TZDateTime(timezone=UTC, format="iso", dump_only=True)
    started_at = TZDateTime(timezone=UTC, format="iso", dump_only=True)
    finished_at = TZDateTime(timezone=UTC, format="iso", dump_only=True)
    total_entries = fields.Integer(dump_only=True)
    inserted_entries = fields.Integer(dump_only=True)
    updated_entries = fields.Integer(dump_only=True)
    errored_entries = fields.Integer(dump_only=True)


class HarvestedRecordSchema(Schema):
    """What a harvester last saw of one OAI identifier (read only)."""

    id = fields.String(dump_only=True)
    harvester = fields.String(attribute="harvester_id", dump_only=True)
    oai_identifier = fields.String(dump_only=True)
    datestamp = fields.String(dump_only=True)
    deleted = fields.Boolean(dump_only=True)
    local_pid = fields.String(dump_only=True, allow_none=True)
    has_errors = fields.Boolean(dump_only=True)
    state = fields.Method("_state", dump_only=True)
    errors_summary = fields.Method("_errors_summary", dump_only=True)
    errors = fields.List(fields.String(), dump_only=True)
    warnings = fields.List(fields.String(), dump_only=True)
    harvested_at = TZDateTime(timezone=UTC, format="iso", dump_only=True)
    run_id = fields.UUID(dump_only=True, allow_none=True)
    original_xml = fields.String(dump_only=True, allow_none=True)
    transformed = fields.Raw(dump_only=True, allow_none=True)

    def _state(self, row: Any) -> str:
        """In words, for lists: what the source says of the record."""
        return "deleted at the source" if row.deleted else "live"

    def _errors_summary(self, row: Any) -> str:
        errors = row.errors or []
        if not errors:
            return "none"
        first = errors[0] if len(errors[0]) <= 80 else errors[0][:79] + "…"
        return first if len(errors) == 1 else f"{first} (+{len(errors) - 1} more)"


class HarvestedRecordListSchema(HarvestedRecordSchema):
    """A search hit: without the bulky XML and transformed data (read the record for those)."""

    class Meta:
        exclude = ("original_xml", "transformed")
