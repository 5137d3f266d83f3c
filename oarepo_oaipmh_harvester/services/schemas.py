"""Validation of harvester input."""

from __future__ import annotations

from flask import current_app
from invenio_records_resources.proxies import current_service_registry
from marshmallow import Schema, ValidationError, fields, validate, validates

from ..proxies import current_oai_harvester

HARVESTER_ID_PATTERN = r"^[a-z0-9](?:[a-z0-9_-]{0,62}[a-z0-9])?$"


class HarvesterSchema(Schema):
    """A harvester as operators write it."""

    id = fields.String(
        required=True,
        validate=validate.Regexp(
            HARVESTER_ID_PATTERN,
            error="Use 1-64 lowercase letters, digits, '-' or '_' (a short slug).",
        ),
    )
    name = fields.String(required=True, validate=validate.Length(min=1, max=255))
    comment = fields.String(load_default=None, allow_none=True)
    base_url = fields.Url(
        required=True,
        schemes={"http", "https"},
        require_tld=False,
        error_messages={"invalid": "Give an http:// or https:// URL of the OAI-PMH endpoint."},
    )
    metadata_prefix = fields.String(required=True, validate=validate.Length(min=1, max=255))
    setspecs = fields.List(fields.String(validate=validate.Length(min=1)), load_default=list)
    target = fields.String(required=True)
    transformer = fields.String(load_default=None)
    batch_size = fields.Integer(load_default=None, validate=validate.Range(min=1, max=10000))
    harvest_managers = fields.List(fields.Integer(), load_default=list)

    @validates("target")
    def _known_target(self, value: str, **kwargs) -> None:
        try:
            current_service_registry.get(value)
        except KeyError:
            known = ", ".join(sorted(current_service_registry._services)) or "none"
            raise ValidationError(
                f"No record service with id {value!r} is registered (known: {known})."
            ) from None

    @validates("transformer")
    def _known_transformer(self, value: str | None, **kwargs) -> None:
        transformers = current_oai_harvester.transformers
        if value is not None and value not in transformers:
            raise ValidationError(
                f"Unknown transformer {value!r} (known: {', '.join(transformers.names())})."
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
    return data
