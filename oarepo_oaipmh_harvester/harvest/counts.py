"""What happened to the records of a run: counters, kept failures, and how they map onto Run.

Decision owned here: how a run's counts are added up, how many failures are kept with them,
how one failure is put in words, and which invenio-jobs ``Run`` column carries which count
(the run itself, fanned-out batches and the e-mail report all go through :class:`WriteCounts`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from marshmallow import ValidationError

MAX_KEPT_FAILURES = 100
"""Failed identifiers (with their errors) a run keeps in memory for its message and report."""

EXAMPLES_PER_REASON = 3
"""Identifiers named with each reason records failed for."""

MAX_REASONS = 50
"""Distinct reasons a run tells apart; the rest are counted under OTHER_REASONS."""

OTHER_REASONS = "other reasons"

REASON_LENGTH = 300
"""Characters of a reason shown; the records list in the panel has each error whole."""


def failure_reason(error: str) -> str:
    """What records that failed alike have in common: the first line of the error."""
    first_line = (error.strip().splitlines() or [""])[0].strip()
    if len(first_line) > REASON_LENGTH:
        return first_line[: REASON_LENGTH - 1] + "…"
    return first_line


@dataclass
class FailureGroup:
    """Records that failed for one reason: how many, and a few of their identifiers."""

    reason: str
    count: int = 0
    examples: list[str] = field(default_factory=list)

    def describe(self) -> str:
        named = ", ".join(self.examples)
        more = ", ..." if self.count > len(self.examples) else ""
        return f"{self.count} × {self.reason} ({named}{more})"

    def add(self, count: int, examples: list[str]) -> None:
        self.count += count
        room = EXAMPLES_PER_REASON - len(self.examples)
        self.examples.extend(example for example in examples[: max(room, 0)])


class RecordValidationError(Exception):
    """Schema errors of one record, as a service reports them without raising."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        super().__init__(errors)
        self.messages = {error.get("field") or "_schema": error.get("messages") for error in errors}


def describe_error(error: BaseException) -> str:
    """An operator-readable one-line description of why something failed."""
    if isinstance(error, ValidationError | RecordValidationError):
        return f"Validation failed: {error.messages}"
    message = str(error) or repr(error)
    return f"{type(error).__name__}: {message}"


@dataclass
class WriteCounts:
    """What happened to the records of one or more batches."""

    created: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    failed: int = 0
    not_indexed: int = 0
    """Written records whose search document could not be sent (repaired by the next run)."""
    reindexed: int = 0
    """Records sent to the search index again by a reindexing run (arrived or not)."""
    held: int = 0
    """Deletions held back by the mass-deletion guard (the records stay published)."""
    files: dict[str, int] = field(default_factory=dict)
    """Files fetched, bytes fetched, unchanged and failed (harvesters that copy files)."""
    failures: list[tuple[str, str]] = field(default_factory=list)
    reasons: dict[str, FailureGroup] = field(default_factory=dict)
    """Every failed (or not indexed) record counted by reason, whatever MAX_KEPT_FAILURES."""
    notices: list[tuple[str, str]] = field(default_factory=list)
    """(identifier, what happened) of written records that an operator should know of, such
    as a local draft replaced by the harvested data; kept up to MAX_KEPT_FAILURES."""

    @property
    def total(self) -> int:
        return self.created + self.updated + self.deleted + self.unchanged + self.failed

    def add(self, other: WriteCounts) -> None:
        self.created += other.created
        self.updated += other.updated
        self.deleted += other.deleted
        self.unchanged += other.unchanged
        self.failed += other.failed
        self.not_indexed += other.not_indexed
        self.reindexed += other.reindexed
        self.held += other.held
        self.count_files(other.files)
        room = MAX_KEPT_FAILURES - len(self.failures)
        self.failures.extend(other.failures[: max(room, 0)])
        for group in other.reasons.values():
            self._tally(group.reason, group.count, group.examples)
        room = MAX_KEPT_FAILURES - len(self.notices)
        self.notices.extend(other.notices[: max(room, 0)])

    def plus(self, other: WriteCounts) -> WriteCounts:
        """A new total of both; neither is changed."""
        total = WriteCounts()
        total.add(self)
        total.add(other)
        return total

    def fail(self, identifier: str, error: str, records: int = 1) -> None:
        """Count `records` failed records under one message (a whole batch fails at once)."""
        self.failed += records
        self._keep(identifier, error, records)

    def not_indexed_one(self, identifier: str, error: str) -> None:
        self.not_indexed += 1
        self._keep(identifier, error)

    def count_files(self, counts: dict[str, int]) -> None:
        for name, value in counts.items():
            self.files[name] = self.files.get(name, 0) + int(value)

    def notice(self, identifier: str, text: str) -> None:
        """Remember something an operator should know of a record that was written."""
        if len(self.notices) < MAX_KEPT_FAILURES:
            self.notices.append((identifier, text))

    def _keep(self, identifier: str, error: str, records: int = 1) -> None:
        if len(self.failures) < MAX_KEPT_FAILURES:
            self.failures.append((identifier, error))
        self._tally(failure_reason(error), records, [identifier])

    def _tally(self, reason: str, count: int, examples: list[str]) -> None:
        if reason not in self.reasons and len(self.reasons) >= MAX_REASONS:
            reason = OTHER_REASONS
        self.reasons.setdefault(reason, FailureGroup(reason)).add(count, examples)

    def failure_groups(self) -> list[FailureGroup]:
        """The reasons records failed for, the most frequent first."""
        return sorted(self.reasons.values(), key=lambda group: -group.count)

    def describe(self) -> str:
        text = (
            f"created {self.created}, updated {self.updated}, deleted {self.deleted}, "
            f"unchanged {self.unchanged}, failed {self.failed}"
        )
        if self.not_indexed:
            text += f", not indexed {self.not_indexed}"
        if self.reindexed:
            text += f", reindexed {self.reindexed}"
        if self.held:
            text += f", deletions held {self.held}"
        if any(self.files.values()):
            files = self.files
            text += (
                f"; files fetched {files.get('fetched', 0)} ({files.get('bytes', 0):,} bytes), "
                f"unchanged {files.get('unchanged', 0)}, failed {files.get('failed', 0)}"
            )
        return text

    # -- invenio-jobs Run columns ---------------------------------------------------------
    def run_columns(self) -> dict[str, int]:
        """The counts as invenio-jobs ``Run`` columns (it has no column for deletions)."""
        # A reindexing run counts the records it sent in `reindexed`, those that did not
        # arrive in `not_indexed` too; a harvest's `not_indexed` are among created/updated.
        reindexed_fine = max(self.reindexed - self.not_indexed, 0) if self.reindexed else 0
        return {
            "total_entries": self.total + self.reindexed,
            "inserted_entries": self.created,
            "updated_entries": self.updated + self.deleted + reindexed_fine,
            "errored_entries": self.failed + self.not_indexed,
        }

    @classmethod
    def from_run_columns(cls, run: Any) -> WriteCounts:
        """What a Run's columns say (deletions are among updates; unchanged not told apart)."""
        if run is None:
            return cls()
        total = run.total_entries or 0
        created, updated = run.inserted_entries or 0, run.updated_entries or 0
        failed = run.errored_entries or 0
        return cls(
            created=created,
            updated=updated,
            failed=failed,
            unchanged=max(total - created - updated - failed, 0),
        )

    # -- transport between processes (fanned-out batches) ---------------------------------
    def as_dict(self) -> dict[str, Any]:
        return {
            "created": self.created,
            "updated": self.updated,
            "deleted": self.deleted,
            "unchanged": self.unchanged,
            "failed": self.failed,
            "not_indexed": self.not_indexed,
            "reindexed": self.reindexed,
            "held": self.held,
            "files": dict(self.files),
            "failures": [list(failure) for failure in self.failures],
            "reasons": [[g.reason, g.count, g.examples] for g in self.reasons.values()],
            "notices": [list(notice) for notice in self.notices],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WriteCounts:
        counts = cls._from_dict(data)
        for reason, count, examples in data.get("reasons", []):
            counts._tally(str(reason), int(count), [str(e) for e in examples])
        return counts

    @classmethod
    def _from_dict(cls, data: dict[str, Any]) -> WriteCounts:
        return cls(
            created=int(data.get("created", 0)),
            updated=int(data.get("updated", 0)),
            deleted=int(data.get("deleted", 0)),
            unchanged=int(data.get("unchanged", 0)),
            failed=int(data.get("failed", 0)),
            not_indexed=int(data.get("not_indexed", 0)),
            reindexed=int(data.get("reindexed", 0)),
            held=int(data.get("held", 0)),
            files={str(k): int(v) for k, v in (data.get("files") or {}).items()},
            failures=[(str(i), str(e)) for i, e in data.get("failures", [])][:MAX_KEPT_FAILURES],
            notices=[(str(i), str(n)) for i, n in data.get("notices", [])][:MAX_KEPT_FAILURES],
        )
