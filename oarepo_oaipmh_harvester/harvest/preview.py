"""What a dry run (preview) found: the report of a run that commits nothing.

Decision owned here: what a preview tells an operator - per record the action a real run
would take (create, update with the field changes, delete, fail with the errors, unchanged
is only counted) with the fields in conflict with local edits and what the target noted (a
local twin matched), bounded to the first entries while the counts cover everything examined,
and whether it stopped early at its limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .diffs import Change


class PreviewLimitReached(Exception):
    """A preview examined as many records as it was allowed to."""


@dataclass
class PreviewReport:
    """Collected by the writer of a dry run, record by record."""

    limit: int
    """Records the preview examines at most."""
    max_entries: int
    """Per-record entries kept (the counts cover every record examined)."""
    examined: int = 0
    stopped_early: bool = False
    entries: list[dict[str, Any]] = field(default_factory=list)
    predicted_reconciliation: int | None = None
    """Local records a reconciliation after this window would delete (None: not predicted)."""
    notes: list[str] = field(default_factory=list)

    def room(self) -> int:
        """Records that may still be examined."""
        return max(self.limit - self.examined, 0)

    def note(
        self,
        identifier: str,
        action: str,
        *,
        pid: str | None = None,
        changes: list[Change] | None = None,
        errors: list[str] | None = None,
        conflicts: list[dict[str, Any]] | None = None,
    ) -> None:
        if len(self.entries) >= self.max_entries:
            return
        if action == "create":
            pid = None  # minted in the rolled-back transaction: the real run mints another
        entry: dict[str, Any] = {"identifier": identifier, "action": action, "pid": pid}
        if changes is not None:
            entry["changes"] = changes
        if errors:
            entry["errors"] = errors
        if conflicts:
            entry["conflicts"] = conflicts
        self.entries.append(entry)

    def note_files(self, identifier: str, files: list[dict[str, Any]]) -> None:
        """The files of the record noted last under `identifier`: each one's key, status
        (unchanged, to fetch, skipped, linked) and why where it is not fetched."""
        for entry in reversed(self.entries):
            if entry["identifier"] == identifier:
                entry["files"] = [
                    {k: f.get(k) for k in ("key", "url", "status", "error") if f.get(k)}
                    for f in files
                ]
                return

    def note_notices(self, identifier: str, notices: list[str]) -> None:
        """What the target did to the record noted last under `identifier` that an operator
        should know of (a local twin matched and taken over)."""
        for entry in reversed(self.entries):
            if entry["identifier"] == identifier:
                entry["notices"] = [*entry.get("notices", ()), *notices]
                return

    def as_dict(self, counts: Any) -> dict[str, Any]:
        """The report as the REST API, the command line (``--json``) and the panel show it."""
        return {
            "dry_run": True,
            "counts": {
                "examined": self.examined,
                "created": counts.created,
                "updated": counts.updated,
                "deleted": counts.deleted,
                "unchanged": counts.unchanged,
                "failed": counts.failed,
            },
            "stopped_early": self.stopped_early,
            "limit": self.limit,
            "predicted_reconciliation": self.predicted_reconciliation,
            "entries": self.entries,
            "entries_shown": len(self.entries),
            "notes": self.notes,
        }
