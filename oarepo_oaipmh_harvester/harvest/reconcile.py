"""Deleting the local records whose source records the provider no longer lists.

Decision owned here: when a run reconciles (after a complete, error-free full window, for
providers that keep no tombstones, or when told to), when it refuses (more than a share of the
records would go), and how the vanished records are removed, batch by batch.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from invenio_db import db

from .counts import WriteCounts, describe_error
from .settings import ReconcileMode
from .targets import TargetAdapter
from .tracking import TrackingStore
from .unindexed import UnindexedRecords
from .unit_of_work import BulkIndexingUnitOfWork


def reconciles_after_full(mode: ReconcileMode, deleted_record: str) -> bool:
    """Whether a full window of a provider with this deletedRecord policy is reconciled."""
    if mode is ReconcileMode.AUTO:
        return deleted_record in ("no", "transient")
    return mode is ReconcileMode.ALWAYS


class Reconciler:
    """Removes what one run did not see, once that run has seen everything."""

    def __init__(
        self,
        tracking: TrackingStore,
        target: TargetAdapter,
        *,
        max_share: float,
        batch_size: int,
    ) -> None:
        self.tracking = tracking
        self.unindexed = UnindexedRecords(tracking)
        self.target = target
        self.max_share = max_share
        self.batch_size = batch_size

    def refusal(self) -> str | None:
        """Why reconciling now would be wrong (too much would go), or None."""
        unseen, live = self.tracking.count_unseen()
        if unseen and unseen > self.max_share * live:
            return (
                f"Reconciliation refused: {unseen} of {live} local records "
                f"({unseen / live:.0%}) are no longer listed by the provider, more than the "
                f"limit of {self.max_share:.0%}. Nothing was deleted; check the provider, "
                f"then raise OAI_HARVESTER_RECONCILE_MAX_SHARE if this is right."
            )
        return None

    def remove_unseen(self, on_commit: Callable[[WriteCounts], Any] | None = None) -> WriteCounts:
        """Delete the local records of identifiers this run did not see, a batch per commit.

        Only called after a complete, error-free full window: everything the provider
        holds was seen by this run, so what was not seen is gone at the source.
        """
        totals = WriteCounts()
        while rows := self.tracking.unseen(self.batch_size):
            counts = WriteCounts()
            now = datetime.now(UTC)
            awaiting: list[str] = []  # tombstones whose document is sent after the commit
            with BulkIndexingUnitOfWork(db.session) as uow:
                for identifier, local_pid in rows:
                    mark = uow.mark()
                    try:
                        # False: another harvester's source still brings it (dedupe)
                        deleted = bool(local_pid) and self.target.delete_alone(local_pid, uow)
                        counts.deleted += deleted
                        change = {"deleted": True, "errors": None, "harvested_at": now}
                        if not (deleted and self.target.keeps_deleted_pids):
                            change["local_pid"] = None
                        else:
                            awaiting.append(identifier)
                    except Exception as error:  # noqa: BLE001 - tracked on the record
                        uow.discard_since(mark)
                        message = f"Could not remove the vanished record: {describe_error(error)}"
                        change = {"errors": [message]}
                        counts.fail(identifier, message)
                    self.tracking.update(identifier, run_id=self.tracking.run_id, **change)
                self.unindexed.expect(awaiting)
                if on_commit is not None:
                    on_commit(counts)
                uow.commit()
            by_pid = {pid: identifier for identifier, pid in rows if pid}
            self.unindexed.settle(awaiting, uow.index_failures, by_pid, counts)
            totals.add(counts)
        return totals
