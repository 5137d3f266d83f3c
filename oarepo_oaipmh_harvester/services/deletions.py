"""Held deletions (the mass-deletion guard) for every surface: list, confirm, reject.

Decision owned here: who may release held deletions (those who may change the harvester), that
nothing is released while a run of the harvester is in progress (it could hold or apply the
same rows), and what each answer holds. The rules of holding are the engine's
(:mod:`..harvest.deletion_guard`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from invenio_db import db

from ..harvest.deletion_guard import HELD, REJECTED, HeldDeletions
from .errors import HarvestRunInProgress
from .jobs import active_run

LISTED = 1000
"""Held deletions one answer lists (the count is always whole)."""


@dataclass(frozen=True)
class HeldDeletionsView:
    harvester_id: str
    held: int
    rejected: int
    records: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {
            "harvester": self.harvester_id,
            "held": self.held,
            "rejected": self.rejected,
            "records": self.records,
        }


def held_deletions(service: Any, identity: Any, harvester_id: str) -> HeldDeletionsView:
    """The deletions of a harvester that wait for an operator."""
    service.get_harvester(identity, harvester_id, "read")
    waiting = HeldDeletions(harvester_id)
    return HeldDeletionsView(
        harvester_id,
        held=waiting.count(HELD),
        rejected=waiting.count(REJECTED),
        records=[
            {
                "oai_identifier": row.oai_identifier,
                "local_pid": row.local_pid,
                "datestamp": row.datestamp,
            }
            for row in waiting.rows(HELD, LISTED)
        ],
    )


def confirm_deletions(service: Any, identity: Any, harvester_id: str) -> dict[str, Any]:
    """Apply every held deletion: the local records are deleted as a run would."""
    from ..harvest.assembly import current_settings, make_writer

    _may_release(service, identity, harvester_id)
    writer = make_writer(harvester_id, None)
    counts = HeldDeletions(harvester_id).apply(
        HELD, writer.target, batch_size=current_settings().default_batch_size
    )
    return {"harvester": harvester_id, "deleted": counts.deleted, "failed": counts.failed,
            "failures": [list(f) for f in counts.failures]}  # fmt: skip


def reject_deletions(service: Any, identity: Any, harvester_id: str) -> dict[str, Any]:
    """Drop every held deletion: the records stay, and no later run applies these deletions
    unless the source deletes a record again."""
    _may_release(service, identity, harvester_id)
    rejected = HeldDeletions(harvester_id).move(HELD, REJECTED)
    db.session.commit()
    return {"harvester": harvester_id, "rejected": rejected}


def _may_release(service: Any, identity: Any, harvester_id: str) -> None:
    service.get_harvester(identity, harvester_id, "update")
    running = active_run(harvester_id)
    if running is not None:
        raise HarvestRunInProgress(harvester_id, str(running.id), running.status.name)
