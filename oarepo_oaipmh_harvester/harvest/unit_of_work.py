"""A unit of work that indexes a whole batch in one bulk request after the commit."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from invenio_db.uow import Operation, UnitOfWork
from invenio_records_resources.services.uow import RecordCommitOp, RecordDeleteOp
from opensearchpy.helpers import bulk

log = logging.getLogger(__name__)


@dataclass
class _Mark:
    operations: int
    index_actions: int


class BulkIndexingUnitOfWork(UnitOfWork):
    """Runs the service's components and database work as usual, but defers its indexing.

    ``service.create/update/delete`` register one index operation per record, each an HTTP
    round trip on commit. Here they are collected and sent as one ``_bulk`` request per
    indexer, built with the service's own indexer (same index, dumper and versioning).
    ``mark``/``discard_since`` let the writer drop the operations of a record whose
    savepoint was rolled back, so that nothing is indexed that was not committed.
    """

    def __init__(self, session=None) -> None:
        super().__init__(session)
        self._pending: list[tuple[str, object, object]] = []
        self.index_errors: list[str] = []

    def register(self, op: Operation) -> None:
        """Apply the operation's database part now; queue its indexing part."""
        if isinstance(op, RecordCommitOp) and op._indexer is not None:
            op.on_register(self)
            self._pending.append(("index", op._indexer, op._record))
        elif isinstance(op, RecordDeleteOp) and op._indexer is not None:
            op.on_register(self)
            self._pending.append(("delete", op._indexer, op._record))
        else:
            super().register(op)

    def mark(self) -> _Mark:
        """A position to roll the registered operations back to."""
        return _Mark(len(self._operations), len(self._pending))

    def discard_since(self, mark: _Mark) -> None:
        """Forget operations registered after `mark` (their savepoint was rolled back)."""
        del self._operations[mark.operations :]
        del self._pending[mark.index_actions :]

    def commit(self) -> None:
        """Commit the database transaction, then send the deferred indexing in bulk."""
        super().commit()
        # Grouped by search client, not by indexer: services build a new indexer object on
        # every access, and one request per record is exactly what this class avoids.
        by_client: dict[int, tuple[object, list[dict]]] = {}
        for action, indexer, record in self._pending:
            client = indexer.client
            actions = by_client.setdefault(id(client), (client, []))[1]
            actions.append(_bulk_action(action, indexer, record))
        for client, actions in by_client.values():
            _, errors = bulk(client, actions, raise_on_error=False, stats_only=False)
            for error in errors:
                # The database is the source of truth; a reindex repairs the index.
                log.error("Bulk indexing failed for %s", error)
                self.index_errors.append(str(error))
        self._pending = []


def _bulk_action(action: str, indexer, record) -> dict:
    index = indexer.record_to_index(record)
    common = {
        "_index": indexer._prepare_index(index),
        "_id": str(record.id),
        "version": record.revision_id,
        "version_type": indexer._version_type,
    }
    if action == "delete":
        return {"_op_type": "delete", **common}
    return {"_op_type": "index", "_source": indexer._prepare_record(record, index), **common}
