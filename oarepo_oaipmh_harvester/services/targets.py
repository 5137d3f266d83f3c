"""Which records services a harvester may write to (the choice offered to operators)."""

from __future__ import annotations

from flask import current_app
from invenio_records.api import Record
from invenio_records_resources.proxies import current_service_registry
from invenio_records_resources.services import RecordService


def writable_target_ids() -> list[str]:
    """Ids of the registered records services that harvesters may write to, sorted."""
    allowed = current_app.config.get("OAI_HARVESTER_TARGETS")
    excluded = set(current_app.config.get("OAI_HARVESTER_TARGET_EXCLUDE") or ())
    ids = []
    for service_id, service in current_service_registry._services.items():
        if allowed is not None:
            if service_id in allowed:
                ids.append(service_id)
            continue
        record_cls = getattr(service.config, "record_cls", None)
        if (
            service_id not in excluded
            and isinstance(service, RecordService)
            and isinstance(record_cls, type)
            and issubclass(record_cls, Record)
        ):
            ids.append(service_id)
    return sorted(ids)
