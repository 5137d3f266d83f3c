"""A unit of work that indexes a whole batch in one bulk request after the commit.

Decision owned here: when search documents are built (before the commit, while the records
are loaded) and sent (one ``_bulk`` request per search client after it; deletions before it),
which records did not reach the index (:class:`IndexFailure`), never raised once the data is
committed, and that a draft-enabled service's re-index of a record's versions goes into the same
request instead of the indexer's queue (each record is indexed once, not twice).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from invenio_db.uow import Operation, UnitOfWork
from invenio_records_resources.services.uow import (
    RecordBulkIndexOp,
    RecordCommitOp,
    RecordDeleteOp,
)
from opensearchpy.helpers import bulk

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class IndexFailure:
    """A committed record whose document did not reach the search index."""

    record_id: str
    pid: str | None
    action: str
    message: str


@dataclass
class OperationsMark:
    """How many operations of each kind a unit of work held at one moment."""

    operations: int
    index_actions: int
    bulk_index_ops: int
    parent_ops: int


class BulkIndexingUnitOfWork(UnitOfWork):
    """Runs the service's components and database work as usual, but defers its indexing.

    ``service.create/update/delete`` register one index operation per record, each an HTTP
    round trip on commit, and ``create_or_update_many`` hands its ids to the indexer's
    message queue. Here both are collected and sent as one ``_bulk`` request per search
    client once the transaction has committed (deletions just before), built with the
    service's own indexer (same index, dumper and versioning). The documents are dumped
    just before the commit, while the records are still loaded: after it every record would
    be read again.
    A parent's commit (invenio-drafts-resources) would send the ids of all the record's
    versions and drafts to the indexer's queue, which a site's beat task consumes later:
    every harvested record would be read, dumped and indexed a second time. Here those
    versions join the batch's request, unless they are in it already.
    ``mark``/``discard_since`` let the writer drop the operations of records whose
    savepoint was rolled back, so that nothing is indexed that was not committed.
    """

    def __init__(self, session=None) -> None:
        super().__init__(session)
        self._pending: list[tuple[str, Any, Any]] = []
        self._bulk_index_ops: list[RecordBulkIndexOp] = []
        self._parent_ops: list[Any] = []
        self.index_errors: list[str] = []
        self.index_failures: list[IndexFailure] = []
        self.side_effect_errors: list[str] = []
        self._pids: dict[str, tuple[str | None, str]] = {}

    def register(self, op: Operation) -> None:
        """Apply the operation's database part now; queue its indexing part."""
        if _reindexes_versions(op):
            op.on_register(self)
            self._parent_ops.append(op)
        elif isinstance(op, RecordCommitOp) and op._indexer is not None:
            op.on_register(self)
            self._pending.append(("index", op._indexer, op._record))
        elif isinstance(op, RecordDeleteOp) and op._indexer is not None:
            op.on_register(self)
            self._pending.append(("delete", op._indexer, op._record))
        elif isinstance(op, RecordBulkIndexOp) and op._indexer is not None:
            self._bulk_index_ops.append(op)
        else:
            super().register(op)

    def index_records(self, indexer: Any, records: list[Any]) -> None:
        """Index these loaded records with the batch (e.g. those of `create_or_update_many`).

        A bulk index operation registered for the same records then costs nothing more.
        """
        self._pending.extend(("index", indexer, record) for record in records)

    def mark(self) -> OperationsMark:
        """A position to roll the registered operations back to."""
        return OperationsMark(
            len(self._operations),
            len(self._pending),
            len(self._bulk_index_ops),
            len(self._parent_ops),
        )

    def discard_since(self, mark: OperationsMark) -> None:
        """Forget operations registered after `mark` (their savepoint was rolled back)."""
        del self._operations[mark.operations :]
        del self._pending[mark.index_actions :]
        del self._bulk_index_ops[mark.bulk_index_ops :]
        del self._parent_ops[mark.parent_ops :]

    def withdraw_operations(
        self, since: OperationsMark, wanted: Callable[[Operation], bool]
    ) -> list[Operation]:
        """Remove and return the operations registered after `since` that `wanted` picks: a
        target does their work in the batch instead (they were the service's, not ours)."""
        kept: list[Operation] = []
        taken: list[Operation] = []
        for op in self._operations[since.operations :]:
            (taken if wanted(op) else kept).append(op)
        self._operations[since.operations :] = kept
        return taken

    def roll_back_everything(self) -> None:
        """Forget every operation and roll the transaction back (a dry run keeps nothing)."""
        self._operations.clear()
        self._pending.clear()
        self._bulk_index_ops.clear()
        self._parent_ops.clear()
        self.session.rollback()

    def commit(self) -> None:
        """Send the batch's document deletions, commit the database transaction, then send
        the rest of the deferred indexing in bulk.

        A process can die between the commit and the request that follows it. A document
        sent after the commit is then missing, which the writer's tracking rows remember
        (and the next run sends it); a deleted record's document would stay in the index
        with nothing left to tell. Deletions therefore go before the commit: a death after
        them leaves the records in the database, and the next run deletes them again.
        """
        self.session.flush()  # revision ids as they will be committed
        deletions, by_client = self._build_actions()
        self._send(deletions)
        self.session.commit()
        # The data is committed: a side effect of the target's components that fails now
        # (a notification that cannot be built, a task queue that is down) is logged, and
        # must not turn the batch into a failure that the next run would replay.
        for stage in ("on_commit", "on_post_commit"):
            for op in self._operations:
                try:
                    getattr(op, stage)(self)
                except Exception as error:  # noqa: BLE001 - reported, never raised
                    message = f"{type(op).__name__}.{stage} failed after the commit: {error!r}"
                    log.error(message, exc_info=error)
                    self.side_effect_errors.append(message)
                    # A failed statement would leave the next transaction aborted.
                    self.session.rollback()
        self._mark_dirty()
        self._pending = []
        self._bulk_index_ops = []
        self._parent_ops = []
        # From here on the data is committed: an indexing failure is reported, never raised
        # (the database is the source of truth; a reindex repairs the index).
        self._send(by_client)

    def _send(self, by_client: dict[int, tuple[Any, list[dict]]]) -> None:
        """One bulk request per search client; what failed is noted, never raised."""
        for client, actions in by_client.values():
            try:
                _, items = bulk(client, actions, raise_on_error=False, stats_only=False)
                # A draft created and published in one batch was never in the index.
                errors = [item for item in items if not _already_gone(item)]
                failed = [_failed_item(error) for error in errors]
            except Exception as error:  # noqa: BLE001 - e.g. the search engine is down
                errors = [f"{len(actions)} documents not indexed: {error!r}"]
                reason = f"the search engine did not answer ({type(error).__name__})"
                failed = [(action["_id"], reason) for action in actions]
            for error in errors:
                log.error("Bulk indexing failed for %s", error)
                self.index_errors.append(str(error))
            for record_id, reason in failed:
                self._note_failure(record_id, reason)

    def _note_failure(self, record_id: str | None, reason: str) -> None:
        pid, action = self._pids.get(str(record_id), (None, "index"))
        self.index_failures.append(IndexFailure(str(record_id), pid, action, reason))

    def _versions_of_parents(self) -> list[tuple[Any, tuple[list[Any], list[Any]]]]:
        """Each committed parent once, with the ids of its live records and drafts.

        What ``ParentRecordCommitOp._get_siblings`` reads, for all the batch's parents in
        two statements per service (records, drafts) instead of two per parent: on a site
        without an index on ``parent_id`` each of those statements reads a whole table.
        A read that fails leaves those parents to the indexer's queue, as the service
        would, and must not abort the batch's transaction: hence the savepoint.
        """
        by_service: dict[tuple[Any, Any], dict[str, Any]] = {}
        for op in self._parent_ops:
            by_service.setdefault((op._record_cls, op._draft_cls), {})[str(op._record.id)] = op
        versions = []
        for (record_cls, draft_cls), ops in by_service.items():
            try:
                with self.session.begin_nested(), self.session.no_autoflush:
                    records_ids = _live_ids_by_parent(self.session, record_cls, list(ops))
                    drafts_ids = _live_ids_by_parent(self.session, draft_cls, list(ops))
            except Exception as error:  # noqa: BLE001 - the records themselves are written
                log.error(
                    "versions of parents %s left to the indexer's queue: %r", list(ops), error
                )
                self._operations.extend(ops.values())  # queued after the commit, as RDM does
                continue
            versions.extend(
                (op, (records_ids.get(parent, []), drafts_ids.get(parent, [])))
                for parent, op in ops.items()
            )
        return versions

    def _build_actions(
        self,
    ) -> tuple[dict[int, tuple[Any, list[dict]]], dict[int, tuple[Any, list[dict]]]]:
        """(document deletions, documents to index), each grouped by search client."""
        pending = list(self._pending)
        # Keyed by record class too: a draft and its published record share their id.
        queued = {(type(r), str(r.id)) for action, _, r in pending if action == "index"}

        def add(indexer: Any, record_cls: Any, ids: Any) -> None:
            missing = [i for i in ids if (record_cls, str(i)) not in queued]
            if missing:
                records = record_cls.get_records(missing)
                pending.extend(("index", indexer, record) for record in records)
                queued.update((record_cls, str(i)) for i in missing)

        for op in self._bulk_index_ops:
            add(op._indexer, op._indexer.record_cls, op._records_iter)
        for op, (records_ids, drafts_ids) in self._versions_of_parents():
            add(op._record_indexer, op._record_cls, records_ids)
            add(op._draft_indexer, op._draft_cls, drafts_ids)
        # Grouped by search client, not by indexer: services build a new indexer object on
        # every access, and one request per record is exactly what this class avoids.
        # Only a document's last action counts: deletions are sent apart from (before) the
        # rest, so a draft indexed and then deleted in one batch would otherwise come back.
        last: dict[tuple[type, str], tuple[str, Any, Any]] = {}
        for action, indexer, record in pending:
            last[(type(record), str(record.id))] = (action, indexer, record)
        deletions: dict[int, tuple[Any, list[dict]]] = {}
        by_client: dict[int, tuple[Any, list[dict]]] = {}
        for action, indexer, record in last.values():
            pid = getattr(getattr(record, "pid", None), "pid_value", None)
            self._pids[str(record.id)] = (pid, action)
            try:
                document = _bulk_action(action, indexer, record)
            except Exception as error:  # noqa: BLE001 - the record itself is still written
                message = f"record {record.id} could not be prepared for indexing: {error!r}"
                log.error(message)
                self.index_errors.append(message)
                self._note_failure(
                    str(record.id), f"could not be prepared ({type(error).__name__})"
                )
                continue
            client = indexer.client
            grouped = deletions if action == "delete" else by_client
            grouped.setdefault(id(client), (client, []))[1].append(document)
        return deletions, by_client


def _live_ids_by_parent(session: Any, record_cls: Any, parent_ids: list[str]) -> dict[str, list]:
    """{parent id: ids of its records that are not deleted}: invenio-drafts-resources'
    ``get_records_by_parent(parent, with_deleted=False, ids_only=True)`` for many parents."""
    model = record_cls.model_cls
    rows = session.execute(
        sa.select(model.id, model.parent_id).where(
            model.parent_id.in_(parent_ids),
            model.is_deleted == False,  # noqa: E712 - the hybrid's SQL, as filter_by builds it
        )
    )
    ids: dict[str, list] = {}
    for record_id, parent_id in rows:
        ids.setdefault(str(parent_id), []).append(record_id)
    return ids


def _reindexes_versions(op: Operation) -> bool:
    """A parent's commit that re-indexes the record's versions and drafts
    (invenio-drafts-resources' ``ParentRecordCommitOp``, recognised by what it does: only the
    drafts adapter may import the drafts packages)."""
    return callable(getattr(op, "_get_siblings", None)) and bool(
        getattr(op, "_indexer_context", None)
    )


def _already_gone(error: Any) -> bool:
    """A delete that found no document: the index is as it should be."""
    details = error.get("delete") if isinstance(error, dict) else None
    return isinstance(details, dict) and details.get("status") == 404


def _failed_item(error: Any) -> tuple[str | None, str]:
    """(document id, reason) of one failed item of a bulk response."""
    if isinstance(error, dict) and error:
        details = next(iter(error.values()))
        if isinstance(details, dict):
            reason = details.get("error")
            if isinstance(reason, dict):
                reason = reason.get("type") or reason.get("reason")
            return details.get(
                "_id"
            ), f"the search engine refused it ({reason or details.get('status')})"
    return None, "the search engine refused it"


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
