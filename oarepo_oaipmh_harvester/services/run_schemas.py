"""The schemas of runs: what "run now" and a preview take, and how a run is shown.

The run arguments themselves are ``oarepo_oaipmh_harvester.arguments.RunArgumentsSchema``
(one schema for every surface); these add what a surface adds to them.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any

from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate, validates_schema
from marshmallow_utils.fields import TZDateTime

from ..arguments import RunArgumentsSchema
from ..harvest.assembly import current_settings


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


class PreviewRequestSchema(RunArgumentsSchema):
    """Body of a preview (`POST .../harvesters/<id>/preview`): run arguments and a limit."""

    limit = fields.Integer(
        load_default=None,
        allow_none=True,
        validate=validate.Range(min=1),
        metadata={"description": "Records to examine at most."},
    )

    @validates_schema
    def _previewable(self, data: dict[str, Any], **kwargs: Any) -> None:
        if data.get("purge"):
            raise ValidationError("A purge cannot be previewed.", field_name="purge")
        if data.get("undo"):
            raise ValidationError(
                "An undo is previewed by its own dry run (undo with dry_run).", field_name="undo"
            )
        limit = data.get("limit")
        maximum = current_settings().preview_max_limit
        if limit is not None and limit > maximum:
            raise ValidationError(
                f"At most {maximum} records per preview (OAI_HARVESTER_PREVIEW_MAX_LIMIT).",
                field_name="limit",
            )
