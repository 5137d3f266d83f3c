"""Target adapters: how the batch writer talks to the service it writes into.

Decision owned here: which adapter serves a target service.  The writer knows only the
:class:`~.base.TargetAdapter` interface (create, update, delete, bulk write, read by pid);
each kind of service gets an implementation: plain invenio-records-resources services
(:class:`~.records.RecordsServiceTarget`) and draft-enabled ones such as InvenioRDM's
(:class:`~.drafts.DraftsServiceTarget`, imported only for such a service, so that the plain
path needs neither invenio-drafts-resources nor invenio-rdm-records).
"""

from __future__ import annotations

from typing import Any

from .base import BulkWriteRefused, LocalRecordMissing, TargetAdapter, WrittenItem
from .records import RecordsServiceTarget

DRAFT_METHODS = ("edit", "update_draft", "publish")
"""A service with these methods writes its records through drafts."""


def is_draft_service(service: Any) -> bool:
    """Whether `service` writes its records through drafts (invenio-drafts-resources)."""
    return all(callable(getattr(service, name, None)) for name in DRAFT_METHODS)


def adapter_for(
    service: Any, identity: Any, *, harvester_id: str = "", **options: Any
) -> TargetAdapter:
    """The adapter that writes into `service` as `identity`, chosen by what the service can
    do; `options` go to a drafts adapter (``local_drafts``: a :class:`~.drafts.LocalDraftPolicy`)."""
    if is_draft_service(service):
        from .drafts import DraftsServiceTarget

        return DraftsServiceTarget(service, identity, harvester_id=harvester_id, **options)
    return RecordsServiceTarget(service, identity, harvester_id=harvester_id)


__all__ = [
    "BulkWriteRefused",
    "LocalRecordMissing",
    "RecordsServiceTarget",
    "TargetAdapter",
    "WrittenItem",
    "adapter_for",
    "is_draft_service",
]
