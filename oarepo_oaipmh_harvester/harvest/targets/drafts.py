"""Draft-enabled services (invenio-drafts-resources, InvenioRDM): every write goes via a draft.

Decision owned here: how a harvested record becomes a published record of such a service
(create a draft and publish it; edit, replace the draft and publish it), what a tombstone
leaves behind (an RDM tombstone where the service keeps them), how a record that comes back
after a tombstone is restored under its pid, and who wins when a local user has a draft of a
harvested record open (:class:`LocalDraftPolicy`). Nothing here is written in bulk: these
services have no bulk write for drafts, and ``create_or_update_many`` (which they inherit)
neither creates a parent record nor updates metadata.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from invenio_pidstore.errors import PIDDeletedError, PIDDoesNotExistError, PIDUnregistered
from sqlalchemy.orm.exc import NoResultFound

from ..counts import RecordValidationError
from ..unit_of_work import BulkIndexingUnitOfWork
from .base import LocalRecordMissing, TargetAdapter
from .records import index_records_of

try:  # InvenioRDM's soft deletion; a plain drafts service deletes for good
    from invenio_rdm_records.services.errors import (
        DeletionStatusException,
        RecordDeletedException,
    )
except ImportError:  # pragma: no cover - exercised only without invenio-rdm-records

    class DeletionStatusException(Exception):  # type: ignore[no-redef]
        """Never raised: the service has no deletion status."""

    class RecordDeletedException(Exception):  # type: ignore[no-redef]
        """Never raised: the service has no deletion status."""


log = logging.getLogger(__name__)

_GONE = (PIDDoesNotExistError, PIDDeletedError, PIDUnregistered, NoResultFound)


class LocalDraftPolicy(StrEnum):
    """What happens to a harvested record whose local draft a user has open."""

    HARVEST_WINS = "harvest-wins"
    """The draft is replaced by the harvested data and published (the source is the truth)."""
    LOCAL_WINS = "local-wins"
    """The record is not updated; the open draft is reported as the record's error."""


class LocalDraftOpen(Exception):
    """A local user's draft keeps a harvested record from being updated (local wins)."""


class DraftsServiceTarget(TargetAdapter):
    """Writes into a drafts service record by record: draft, then publish, in the caller's
    unit of work (and savepoint), so that a failure leaves neither draft nor record."""

    def __init__(
        self,
        service: Any,
        identity: Any,
        *,
        harvester_id: str = "",
        local_drafts: LocalDraftPolicy | str = LocalDraftPolicy.HARVEST_WINS,
    ) -> None:
        super().__init__(service, identity, harvester_id=harvester_id)
        self.local_drafts = LocalDraftPolicy(local_drafts)

    @property
    def keeps_deleted_pids(self) -> bool:
        """RDM keeps a tombstone under the pid and can restore it: the pid stays tracked."""
        return callable(getattr(self.service, "restore_record", None))

    def create(self, data: dict[str, Any], uow: BulkIndexingUnitOfWork) -> str:
        draft = self.service.create(self.identity, data, uow=uow)
        # RDM saves a draft with schema errors and reports them; publishing it would drop
        # the invalid fields silently.
        self._refuse_invalid(draft, uow, discard=True)
        return self.service.publish(self.identity, draft.id, uow=uow).id

    def update(self, pid: str, data: dict[str, Any], uow: BulkIndexingUnitOfWork) -> str:
        record = self._published(pid)
        local_draft = self._has_open_draft(pid)
        if local_draft and self.local_drafts is LocalDraftPolicy.LOCAL_WINS:
            raise LocalDraftOpen(
                f"A local draft is open for record {pid}; the harvested changes were not "
                f"applied (local wins). Publish or discard the draft, then harvest again."
            )
        if _is_deleted(record):
            if not self.keeps_deleted_pids:
                raise LocalRecordMissing(pid)
            self.service.restore_record(self.identity, pid, uow=uow)
        if local_draft:
            log.warning(
                "Harvester %s: the local draft of %s is replaced by the harvested record "
                "(harvest wins).",
                self.harvester_id,
                pid,
            )
        self.service.edit(self.identity, pid, uow=uow)
        draft = self.service.update_draft(self.identity, pid, data, uow=uow)
        # A local draft is not ours to delete: the writer's savepoint brings it back.
        self._refuse_invalid(draft, uow, discard=not local_draft)
        return self.service.publish(self.identity, pid, uow=uow).id

    def delete(self, pid: str, uow: BulkIndexingUnitOfWork) -> None:
        try:
            if callable(getattr(self.service, "delete_record", None)):
                # A tombstone, so that links to the record say it was removed, and why.
                note = f"Deleted at its OAI-PMH source; removed by harvester {self.harvester_id}."
                self.service.delete_record(self.identity, pid, {"note": note}, uow=uow)
            else:
                self.service.delete(self.identity, pid, uow=uow)
        except (*_GONE, DeletionStatusException):
            pass  # already deleted, or gone: the desired end state

    def reindex(self, pids: Sequence[str], uow: BulkIndexingUnitOfWork) -> set[str]:
        return index_records_of(self.service, pids, uow, gone=_GONE)

    def read(self, pid: str) -> dict[str, Any] | None:
        """The published record's data; None when it is gone or a tombstone."""
        try:
            return self.service.read(self.identity, pid).data
        except (*_GONE, RecordDeletedException):
            return None

    # -- helpers ------------------------------------------------------------------------
    def _published(self, pid: str) -> Any:
        try:
            return self.service.record_cls.pid.resolve(pid)
        except _GONE as error:
            raise LocalRecordMissing(pid) from error

    def _has_open_draft(self, pid: str) -> bool:
        """A draft of the published record exists (publishing soft-deletes ours)."""
        try:
            self.service.draft_cls.pid.resolve(pid, registered_only=False)
        except _GONE:
            return False
        return True

    def _refuse_invalid(self, draft: Any, uow: BulkIndexingUnitOfWork, *, discard: bool) -> None:
        errors = getattr(draft, "errors", None)
        if not errors:
            return
        if discard:
            self.service.delete_draft(self.identity, draft.id, uow=uow)
        raise RecordValidationError(list(errors))


def _is_deleted(record: Any) -> bool:
    status = getattr(record, "deletion_status", None)
    return bool(status is not None and status.is_deleted)
