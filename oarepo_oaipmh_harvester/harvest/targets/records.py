"""Plain invenio-records-resources services (``RecordService``): create, update, delete.

Decision owned here: when such a service is written in bulk (``create_or_update_many``, if
its permission policy allows it) and which of its errors mean "the local record is gone".
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import cached_property
from typing import Any

from invenio_pidstore.errors import PIDDeletedError, PIDDoesNotExistError

from ..unit_of_work import BulkIndexingUnitOfWork
from .base import BulkWriteRefused, LocalRecordMissing, TargetAdapter, WrittenItem

log = logging.getLogger(__name__)

_GONE = (PIDDoesNotExistError, PIDDeletedError)


def index_records_of(
    service: Any,
    pids: Sequence[str],
    uow: BulkIndexingUnitOfWork,
    *,
    gone: tuple[type[BaseException], ...],
) -> set[str]:
    """Queue the records of these pids for indexing in `uow`; the pids that were found."""
    records = []
    for pid in pids:
        try:
            records.append(service.record_cls.pid.resolve(pid))
        except gone:
            continue
    uow.index_records(service.indexer, records)
    return {record.pid.pid_value for record in records}


class RecordsServiceTarget(TargetAdapter):
    """A records service written record by record, or in bulk with ``create_or_update_many``."""

    def create(self, data: dict[str, Any], uow: BulkIndexingUnitOfWork) -> str:
        return self.service.create(self.identity, data, uow=uow).id

    def update(self, pid: str, data: dict[str, Any], uow: BulkIndexingUnitOfWork) -> str:
        # A plain service deletes for good: there is no tombstone to restore or to respect.
        try:
            return self.service.update(self.identity, pid, data, uow=uow).id
        except _GONE as error:
            raise LocalRecordMissing(pid) from error

    def delete(self, pid: str, uow: BulkIndexingUnitOfWork) -> None:
        try:
            self.service.delete(self.identity, pid, uow=uow)
        except _GONE:
            pass  # already gone locally: the desired end state

    def reindex(self, pids: Sequence[str], uow: BulkIndexingUnitOfWork) -> set[str]:
        return index_records_of(self.service, pids, uow, gone=_GONE)

    def read(self, pid: str) -> dict[str, Any] | None:
        try:
            return self.service.read(self.identity, pid).data
        except _GONE:
            return None

    @cached_property
    def supports_bulk(self) -> bool:
        """Asked of the target's permission policy once: a policy without
        `can_create_or_update_many` gets its records one at a time."""
        supported = hasattr(self.service, "create_or_update_many") and bool(
            self.service.check_permission(self.identity, "create_or_update_many")
        )
        if not supported:
            log.warning(
                "Harvester %s: the target's permission policy has no "
                "create_or_update_many; writing one record at a time.",
                self.harvester_id,
            )
        return supported

    def write_many(
        self,
        items: Sequence[tuple[str | None, dict[str, Any]]],
        uow: BulkIndexingUnitOfWork,
    ) -> list[WrittenItem]:
        """One permission check and no savepoint per record; the records are indexed in bulk.

        Refused when any record raised rather than failing validation: what a raising
        component left in the session cannot be told apart from the rest.
        """
        result = self.service.create_or_update_many(self.identity, list(items), uow=uow)
        outcomes = list(result.results)
        if len(outcomes) != len(items) or any(outcome.exc is not None for outcome in outcomes):
            raise BulkWriteRefused
        written: list[WrittenItem] = []
        records = []
        for outcome in outcomes:
            if outcome.errors:
                written.append(WrittenItem(pid=None, created=False, errors=outcome.errors))
                continue
            records.append(outcome.record)
            written.append(
                WrittenItem(pid=outcome.record.pid.pid_value, created=outcome.op_type == "create")
            )
        uow.index_records(self.service.indexer, records)
        return written
