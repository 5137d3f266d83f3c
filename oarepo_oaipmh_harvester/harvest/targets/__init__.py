"""Target adapters: how the batch writer talks to the service it writes into.

Decision owned here: which adapter serves a target service.  The writer knows only the
:class:`~.base.TargetAdapter` interface (create, update, delete, bulk write, read by pid);
each kind of service gets an implementation: plain invenio-records-resources services today
(:class:`~.records.RecordsServiceTarget`).
"""

from __future__ import annotations

from typing import Any

from .base import BulkWriteRefused, LocalRecordMissing, TargetAdapter, WrittenItem
from .records import RecordsServiceTarget


def adapter_for(service: Any, identity: Any, *, harvester_id: str = "") -> TargetAdapter:
    """The adapter that writes into `service` as `identity`."""
    return RecordsServiceTarget(service, identity, harvester_id=harvester_id)


__all__ = [
    "BulkWriteRefused",
    "LocalRecordMissing",
    "RecordsServiceTarget",
    "TargetAdapter",
    "WrittenItem",
    "adapter_for",
]
