"""Undo of one run: what it wrote taken back, through the target like any write.

Decision owned here: what the undo of a run does to each record the run changed (from the
run's journal, :mod:`.journal`) - a record it created is deleted (a tombstone where the target
keeps them), one it updated is written again with the data the harvest had written before it,
one it deleted is restored (or created again where the target keeps no tombstone) - which
records are left alone (a later run changed them again, or a local user edited them after the
run: the record was updated after the last write of the harvester), and that the tracking
rows and the watermarks return to where they were before the run. The undo is a run itself
with a journal of its own, so that it can be undone too.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from invenio_db import db
from invenio_jobs.models import Run

from ..models import OAIHarvestedRecord, OAIHarvester, OAIRunChange, OAIRunJournal
from .counts import WriteCounts, describe_error
from .field_policy import FieldPolicies
from .journal import ROW_COLUMNS, SEEN, WRITTEN, journal_of
from .targets import TargetAdapter
from .tracking import TrackingStore
from .unit_of_work import BulkIndexingUnitOfWork

log = logging.getLogger(__name__)

_ROWS = OAIHarvestedRecord.__table__
_CHANGES = OAIRunChange.__table__
_JOURNALS = OAIRunJournal.__table__


class UndoRefused(Exception):
    """The run cannot be undone (why is the message)."""


@dataclass(frozen=True)
class UndoStep:
    """What the undo does to one record: ``delete`` (the run created it), ``revert`` (written
    again with the data before the run), ``restore`` (the run deleted it), ``tracking`` (only
    the tracking row goes back), or ``left`` (left alone, `reason` says why)."""

    identifier: str
    action: str
    pid: str | None = None
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        step = {"identifier": self.identifier, "action": self.action, "pid": self.pid}
        return {**step, "reason": self.reason} if self.reason else step


@dataclass
class UndoReport:
    """What an undo did (or, planned only, would do)."""

    run_id: str
    steps: list[UndoStep] = field(default_factory=list)
    failed: list[UndoStep] = field(default_factory=list)

    @property
    def left_alone(self) -> list[UndoStep]:
        return [step for step in self.steps if step.action == "left"]

    def count(self, action: str) -> int:
        return sum(1 for step in self.steps if step.action == action)

    def describe(self) -> str:
        parts = [
            f"{self.count('delete')} created records deleted",
            f"{self.count('revert')} updated records written back",
            f"{self.count('restore')} deleted records restored",
        ]
        text = f"Undid run {self.run_id}: " + ", ".join(parts)
        if self.left_alone:
            shown = "; ".join(f"{step.identifier} ({step.reason})" for step in self.left_alone[:10])
            more = len(self.left_alone) - 10
            text += f"; {len(self.left_alone)} left alone, changed after the run: {shown}"
            text += f" and {more} more" if more > 0 else ""
        if self.failed:
            text += f"; {len(self.failed)} could not be undone"
        return text + "."

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "counts": {
                action: self.count(action)
                for action in ("delete", "revert", "restore", "tracking", "left")
            }
            | {"failed": len(self.failed)},
            "steps": [step.as_dict() for step in self.steps],
            "failed": [step.as_dict() for step in self.failed],
            "message": self.describe(),
        }


def undoable_run(harvester_id: str, run_id: uuid.UUID) -> dict[str, Any]:
    """The journal's head of `run_id`, or UndoRefused saying why it cannot be undone."""
    journal = journal_of(run_id)
    if journal is None or journal["harvester_id"] != harvester_id:
        raise UndoRefused(
            f"Run {run_id} of harvester {harvester_id} has no journal to undo it from: only "
            f"the newest runs that wrote something can be undone (OAI_HARVESTER_UNDO_RUNS); a "
            f"preview, a purge and a reindex keep none."
        )
    if journal["undone_by"] is not None:
        raise UndoRefused(
            f"Run {run_id} was undone already, by run {journal['undone_by']}; undo that run "
            f"to bring its result back."
        )
    run = db.session.get(Run, run_id)
    if run is not None and run.finished_at is None:
        raise UndoRefused(f"Run {run_id} has not finished; stop it or wait for its end.")
    return journal


class RunUndo:
    """Takes back one run of one harvester, in batches, through its target."""

    def __init__(
        self,
        harvester_id: str,
        target: TargetAdapter,
        *,
        undo_run_id: uuid.UUID | None,
        batch_size: int = 100,
        field_policies: FieldPolicies | None = None,
    ) -> None:
        self.harvester_id = harvester_id
        self.target = target
        self.field_policies = field_policies or FieldPolicies()
        """A record written back keeps what its field policies kept of local edits."""
        self.undo_run_id = undo_run_id
        self.batch_size = batch_size
        self.tracking = TrackingStore(harvester_id, undo_run_id)

    def plan(self, run_id: uuid.UUID) -> UndoReport:
        """What undoing `run_id` would do; nothing is written."""
        journal = undoable_run(self.harvester_id, run_id)
        report = UndoReport(str(run_id))
        for changes in self._changes(run_id):
            current = self._current_rows(changes)
            for change in changes:
                report.steps.append(self._step(journal, change, current))
        db.session.rollback()
        return report

    def apply(self, run_id: uuid.UUID, counts: WriteCounts) -> UndoReport:
        """Undo `run_id`: records, tracking rows and watermarks back to before it."""
        journal = undoable_run(self.harvester_id, run_id)
        report = UndoReport(str(run_id))
        for changes in self._changes(run_id):
            current = self._current_rows(changes)
            steps = [self._step(journal, change, current) for change in changes]
            with BulkIndexingUnitOfWork(db.session) as uow:
                for change, step in zip(changes, steps, strict=True):
                    self._undo_one(uow, change, step, current, report, counts)
                uow.commit()
        self._settle_journals(journal, run_id)
        return report

    # -- deciding ---------------------------------------------------------------------------
    def _changes(self, run_id: uuid.UUID) -> Iterator[list[dict[str, Any]]]:
        after = ""
        while True:
            rows = db.session.execute(
                sa.select(_CHANGES)
                .where(_CHANGES.c.run_id == run_id, _CHANGES.c.oai_identifier > after)
                .order_by(_CHANGES.c.oai_identifier)
                .limit(self.batch_size)
            ).all()
            if not rows:
                return
            changes = [row._asdict() for row in rows]
            changed_later = self._changed_later(run_id, changes)
            last_write = self._last_harvester_write(changes)
            for change in changes:
                change["changed_later"] = change["oai_identifier"] in changed_later
                change["last_write"] = last_write.get(change["oai_identifier"])
            yield changes
            after = changes[-1]["oai_identifier"]

    def _changed_later(self, run_id: uuid.UUID, changes: list[dict[str, Any]]) -> set[str]:
        """Identifiers a later run wrote again (one that stands: not undone, not an undo)."""
        started = sa.select(_JOURNALS.c.started_at).where(_JOURNALS.c.run_id == run_id)
        query = (
            sa.select(_CHANGES.c.oai_identifier)
            .join(_JOURNALS, _JOURNALS.c.run_id == _CHANGES.c.run_id)
            .where(
                _CHANGES.c.harvester_id == self.harvester_id,
                _CHANGES.c.oai_identifier.in_([c["oai_identifier"] for c in changes]),
                _CHANGES.c.kind == WRITTEN,
                _JOURNALS.c.started_at > started.scalar_subquery(),
                _JOURNALS.c.undone_by.is_(None),
                _JOURNALS.c.undo_of.is_(None),
            )
        )
        return set(db.session.scalars(query))

    def _last_harvester_write(self, changes: list[dict[str, Any]]) -> dict[str, datetime]:
        """When a run of the harvester (an undo included) last wrote each record: the end of
        the newest finished run whose journal has it. A local record updated after that was
        changed by someone else."""
        query = (
            sa.select(_CHANGES.c.oai_identifier, sa.func.max(Run.finished_at))
            .join(Run, Run.id == _CHANGES.c.run_id)
            .where(
                _CHANGES.c.harvester_id == self.harvester_id,
                _CHANGES.c.oai_identifier.in_([c["oai_identifier"] for c in changes]),
                _CHANGES.c.kind == WRITTEN,
                Run.finished_at.is_not(None),
            )
            .group_by(_CHANGES.c.oai_identifier)
        )
        return {identifier: _utc(moment) for identifier, moment in db.session.execute(query)}

    def _current_rows(self, changes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        rows = db.session.execute(
            sa.select(_ROWS).where(
                _ROWS.c.harvester_id == self.harvester_id,
                _ROWS.c.oai_identifier.in_([c["oai_identifier"] for c in changes]),
            )
        )
        return {row.oai_identifier: row._asdict() for row in rows}

    def _step(
        self, journal: dict[str, Any], change: dict[str, Any], current: dict[str, dict]
    ) -> UndoStep:
        identifier = change["oai_identifier"]
        now = current.get(identifier)
        if change["changed_later"]:
            return UndoStep(identifier, "left", _pid(now), "a later run wrote it again")
        if change["kind"] == SEEN:
            return UndoStep(identifier, "tracking", _pid(now))
        if _is_live(now):
            edited = self._edited_locally(now["local_pid"], change["last_write"])
            if edited:
                return UndoStep(identifier, "left", now["local_pid"], edited)
        was_live = change["existed"] and _is_live(change)
        if not was_live:
            # A record taken over or joined (another harvester's) was not the run's to make.
            made = _is_live(now) and not now.get("adopted")
            return UndoStep(identifier, "delete" if made else "tracking", _pid(now))
        if change["transformed"] is None:
            return UndoStep(
                identifier, "left", _pid(now), "no data of the record before the run is kept"
            )
        if not _is_live(now):
            return UndoStep(identifier, "restore", change["local_pid"])
        if now["local_pid"] != change["local_pid"] or now["transformed"] != change["transformed"]:
            return UndoStep(identifier, "revert", change["local_pid"])
        return UndoStep(identifier, "tracking", now["local_pid"])

    def _edited_locally(self, pid: str, last_write: datetime | None) -> str | None:
        """Why the local record counts as changed after the harvester wrote it, if it does."""
        data = self.target.read(pid)
        if data is None or last_write is None or not data.get("updated"):
            return None
        updated = _utc(datetime.fromisoformat(str(data["updated"])))
        if updated > last_write:
            return f"record {pid} was changed locally at {updated.isoformat()}"
        return None

    # -- doing ------------------------------------------------------------------------------
    def _undo_one(
        self,
        uow: BulkIndexingUnitOfWork,
        change: dict[str, Any],
        step: UndoStep,
        current: dict[str, dict],
        report: UndoReport,
        counts: WriteCounts,
    ) -> None:
        if step.action == "left":
            report.steps.append(step)
            counts.unchanged += 1
            return
        identifier = change["oai_identifier"]
        now = current.get(identifier)
        mark = uow.mark()
        try:
            with db.session.begin_nested():
                pid = self._write_target(uow, change, step, now, counts)
                self._put_row_back(change, now, pid)
        except Exception as error:  # noqa: BLE001 - one record's failure stops nothing
            uow.discard_since(mark)
            message = describe_error(error)
            log.warning(
                "Harvester %s: undo of %s failed: %s", self.harvester_id, identifier, message
            )
            report.failed.append(UndoStep(identifier, step.action, step.pid, message))
            counts.fail(identifier, f"Could not undo ({step.action}): {message}")
            return
        report.steps.append(step)

    def _write_target(
        self,
        uow: BulkIndexingUnitOfWork,
        change: dict[str, Any],
        step: UndoStep,
        now: dict[str, Any] | None,
        counts: WriteCounts,
    ) -> str | None:
        """The local record as it was before the run; its pid now."""
        if step.action == "delete":
            self.target.delete(now["local_pid"], uow)
            counts.deleted += 1
            return change["local_pid"] if self.target.keeps_deleted_pids else None
        if step.action == "restore":
            pid, created = self.target.create_or_update(
                change["local_pid"], _as_written(change), uow, restore=True
            )
            counts.created += 1
            return pid
        if step.action == "revert":
            if now["local_pid"] != change["local_pid"]:
                # A version the run made (changed files): it goes, the earlier one stays.
                self.target.delete(now["local_pid"], uow)
            # What the run wrote was the source's data with local edits kept by the field
            # policies: the earlier data keeps them the same way.
            data, _conflicts = self.field_policies.with_local_edits(
                _as_written(change),
                now["transformed"],
                lambda: self.target.read(change["local_pid"]),
                references_by_id=self.target.expands_references,
            )
            pid, created = self.target.create_or_update(
                change["local_pid"], data, uow, restore=False
            )
            counts.updated += 1
            return pid
        return change["local_pid"] if change["existed"] else None

    def _put_row_back(
        self, change: dict[str, Any], now: dict[str, Any] | None, pid: str | None
    ) -> None:
        identifier = change["oai_identifier"]
        if change["kind"] == SEEN:
            if now is not None:
                self.tracking.update(
                    identifier,
                    run_id=change["previous_run_id"],
                    held_deletion=change["held_deletion"],
                )
            return
        if not change["existed"]:
            self.tracking.forget([identifier])
            return
        row = self.tracking.new_row(identifier, **{name: change[name] for name in ROW_COLUMNS})
        row["run_id"] = change["previous_run_id"]
        row["local_pid"] = pid if pid is not None else change["local_pid"]
        row["linked"] = bool(row["linked"])  # a journal older than the column has none
        self.tracking.save([row])

    def _settle_journals(self, journal: dict[str, Any], run_id: uuid.UUID) -> None:
        """The watermarks as they were before the run; the run marked undone (and, where it
        was itself an undo, the run it undid stands again)."""
        db.session.execute(
            sa.update(OAIHarvester)
            .where(OAIHarvester.id == self.harvester_id)
            .values(watermark=journal["watermark"], watermarks=journal["watermarks"])
        )
        db.session.execute(
            sa.update(_JOURNALS)
            .where(_JOURNALS.c.run_id == run_id)
            .values(undone_by=self.undo_run_id)
        )
        if journal["undo_of"] is not None:
            db.session.execute(
                sa.update(_JOURNALS)
                .where(_JOURNALS.c.run_id == journal["undo_of"])
                .values(undone_by=None)
            )
        db.session.commit()


HELD_FILE = ("fetched", "unchanged")
"""Statuses of a file the local record holds (the tracking row's ``files``)."""


def _as_written(change: dict[str, Any]) -> dict[str, Any]:
    """The data the harvest wrote before the run, as the record held it: the tracking row keeps
    the transformer's data, and a record that held files had them enabled."""
    data = change["transformed"]
    if any(entry.get("status") in HELD_FILE for entry in change["files"] or ()):
        data = {**data, "files": {**(data.get("files") or {}), "enabled": True}}
    return data


def _is_live(row: dict[str, Any] | None) -> bool:
    return bool(row and row["local_pid"] and not row["deleted"] and not row.get("purged"))


def _pid(row: dict[str, Any] | None) -> str | None:
    return row["local_pid"] if row else None


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
