"""Target adapters: how the batch writer talks to the service it writes into.

Decision owned here: which adapter serves a target service.  The writer knows only the
:class:`~.base.TargetAdapter` interface (create, update, delete, bulk write, read by pid);
each kind of service gets an implementation: plain invenio-records-resources services
(:class:`~.records.RecordsServiceTarget`) and draft-enabled ones such as InvenioRDM's
(:class:`~.drafts.DraftsServiceTarget`, imported only for such a service, so that the plain
path needs neither invenio-drafts-resources nor invenio-rdm-records).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .base import (
    BulkWriteRefused,
    KeptWithErrors,
    LocalRecordMissing,
    TargetAdapter,
    WrittenItem,
)
from .matching import records_created_in_a_batch
from .options import AdapterKind, TargetOptions
from .records import RecordsServiceTarget
from .schema_references import schema_references_resolved_once
from .vocabulary_relations import vocabulary_entries_resolved_once

DRAFT_METHODS = ("edit", "update_draft", "publish")
"""A service with these methods writes its records through drafts."""


def is_rdm_service(service: Any) -> bool:
    """Whether `service` keeps InvenioRDM's records (its record class is rdm-records' own).

    Asked of the modules already imported: a site without invenio-rdm-records has no such
    service, and the check must not import it."""
    api = sys.modules.get("invenio_rdm_records.records.api")
    record_cls = getattr(getattr(service, "config", None), "record_cls", None)
    return (
        api is not None
        and isinstance(record_cls, type)
        and issubclass(record_cls, (api.RDMRecord, api.RDMDraft))
    )


def is_draft_service(service: Any) -> bool:
    """Whether `service` writes its records through drafts (invenio-drafts-resources)."""
    return all(callable(getattr(service, name, None)) for name in DRAFT_METHODS)


@contextmanager
def lookups_shared_by_a_batch() -> Iterator[None]:
    """While a batch is written: what every record of it looks up the same way, its JSON
    Schema's references and the vocabulary entries it names, is resolved once; the records it
    creates are known (never a local twin of its other records)."""
    with (
        schema_references_resolved_once(),
        vocabulary_entries_resolved_once(),
        records_created_in_a_batch(),
    ):
        yield


class AdapterNotApplicable(ValueError):
    """The adapter a harvester asks for cannot write into its target service."""


def adapter_for(
    service: Any,
    identity: Any,
    *,
    harvester_id: str = "",
    options: TargetOptions | None = None,
    custom_fields: frozenset[str] = frozenset(),
    record_files: Any = None,
) -> TargetAdapter:
    """The adapter that writes into `service` as `identity`: the one `options` name, or
    (``auto``) the one that what the service can do calls for (`record_files`: what fetches
    the files of a harvester that copies them)."""
    options = options or TargetOptions()
    kind = options.adapter
    if kind is AdapterKind.AUTO:
        kind = AdapterKind.DRAFTS if is_draft_service(service) else AdapterKind.RECORDS
    if kind is AdapterKind.DRAFTS:
        if not is_draft_service(service):
            raise AdapterNotApplicable(
                f"The target service has no {', '.join(DRAFT_METHODS)}: it cannot be written "
                f"through drafts."
            )
        from .draft_files import DraftFiles
        from .drafts import DraftsServiceTarget

        return DraftsServiceTarget(
            service,
            identity,
            harvester_id=harvester_id,
            options=options,
            custom_fields=custom_fields,
            files=DraftFiles(service, identity, options.files, record_files),
        )
    return RecordsServiceTarget(service, identity, harvester_id=harvester_id, options=options)


__all__ = [
    "AdapterKind",
    "AdapterNotApplicable",
    "BulkWriteRefused",
    "KeptWithErrors",
    "TargetOptions",
    "LocalRecordMissing",
    "RecordsServiceTarget",
    "TargetAdapter",
    "WrittenItem",
    "adapter_for",
    "is_draft_service",
]
