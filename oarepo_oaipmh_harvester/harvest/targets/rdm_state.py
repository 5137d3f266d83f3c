"""What InvenioRDM says of a service and of a record: whether the service is RDM's, whether a
record is a tombstone and what its tombstone says (every helper a no-op without RDM)."""

from __future__ import annotations

from typing import Any


def is_rdm_service(service: Any) -> bool:
    try:
        from invenio_rdm_records.services import RDMRecordService
    except ImportError:
        return False
    return isinstance(service, RDMRecordService)


def is_deleted(record: Any) -> bool:
    status = getattr(record, "deletion_status", None)
    return bool(status is not None and status.is_deleted)


def why_deleted(record: Any) -> str:
    """The tombstone's note of a deleted record, for a message ("" when it has none)."""
    tombstone = getattr(record, "tombstone", None)
    note = getattr(tombstone, "note", None)
    return f" (tombstone note: {note})" if note else ""
