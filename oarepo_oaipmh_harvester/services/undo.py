"""Undo of a run for every surface: what it would do (a plan), and the undo run itself.

Decision owned here: who may undo a run (those who may change the harvester), that a run is
checked undoable before an undo run is started (so that every surface refuses alike, with the
reason), and that the undo itself is a run of the harvester's job (started as any other run).
The rules of undoing are the engine's (:mod:`..harvest.undo`).
"""

from __future__ import annotations

import uuid
from typing import Any

from invenio_db import db

from ..harvest.undo import RunUndo, UndoRefused, undoable_run
from .errors import HarvesterValidationError, HarvestRunNotFound


def run_id_of(harvester_id: str, run_id: str | uuid.UUID) -> uuid.UUID:
    """The run id as a UUID (a 404 for one that is not)."""
    try:
        return uuid.UUID(str(run_id))
    except ValueError:
        raise HarvestRunNotFound(harvester_id, str(run_id)) from None


def check_undoable(harvester_id: str, run_id: str | uuid.UUID) -> None:
    """HarvesterValidationError (on the ``undo`` argument) unless the run can be undone."""
    try:
        undoable_run(harvester_id, run_id_of(harvester_id, run_id))
    except UndoRefused as refused:
        db.session.rollback()
        raise HarvesterValidationError({"undo": [str(refused)]}) from None


def undo_plan(service: Any, identity: Any, harvester_id: str, run_id: str) -> dict[str, Any]:
    """What undoing the run would do to each record it changed; nothing is written."""
    from ..harvest.assembly import current_settings, make_writer

    service.get_harvester(identity, harvester_id, "update")
    check_undoable(harvester_id, run_id)
    writer = make_writer(harvester_id, None)
    undo = RunUndo(
        harvester_id,
        writer.target,
        undo_run_id=None,
        batch_size=current_settings().default_batch_size,
    )
    report = undo.plan(run_id_of(harvester_id, run_id))
    return {"harvester": harvester_id, "dry_run": True, **report.as_dict()}


def undo_states(harvester_id: str, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """For each of these runs that keeps a journal: whether it can be undone now, the run
    that undid it, the run it undid (what the panel shows next to each run)."""
    from ..harvest.journal import journals_of

    states = {}
    for journal in journals_of(harvester_id, [run_id_of(harvester_id, r) for r in run_ids]):
        states[str(journal["run_id"])] = {
            "undoable": journal["undone_by"] is None,
            "undone_by": str(journal["undone_by"]) if journal["undone_by"] else None,
            "undo_of": str(journal["undo_of"]) if journal["undo_of"] else None,
        }
    return states
