"""What a run's writes leave behind: kept (a run), or rolled back and reported (a dry run).

Decision owned here: everything a dry run (preview) does differently from a run. The run,
the writer and the repairs are handed one of these two collaborators and never ask which
one they have: a dry run writes every batch as a run would, in a transaction it rolls back,
notes per record what it would have done, stamps and tracks nothing, and stops at its limit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

from ..protocol.records import OAIRecord
from .changes import tracking_key
from .counts import WriteCounts
from .preview import PreviewReport
from .targets import TargetAdapter
from .tracking import TrackingStore
from .unit_of_work import BulkIndexingUnitOfWork

CommitHook = Callable[[WriteCounts], None]
"""Runs inside a batch's transaction just before it commits, with that batch's counts."""

ANALYZE_FIRST_AFTER = 1000
"""Written records after which a run first refreshes the tracking table's statistics."""


class Writes(Protocol):
    """What the engine is handed: a run's :class:`KeptWrites` or a :class:`DryRun`."""

    is_dry_run: bool
    compares_with_written: bool
    """Whether a batch loads what the harvest wrote last time (for field changes)."""
    one_record_at_a_time: bool
    """Whether a batch must write each record alone (to note each record's outcome)."""
    stamps_seen: bool
    """Whether unchanged records may be stamped with the run (for reconciliation)."""

    def records(self, records: Iterable[OAIRecord]) -> Iterator[OAIRecord]: ...
    def rows(self, rows: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]: ...
    def examined(self, count: int = 1) -> None: ...
    def note(self, identifier: str, action: str, **details: Any) -> None: ...
    def note_files(self, identifier: str, files: list[dict[str, Any]]) -> None: ...
    def note_notices(self, identifier: str, notices: list[str]) -> None: ...
    def image_before(self, target: TargetAdapter, pid: str | None) -> dict[str, Any] | None: ...

    def end_batch(
        self, uow: BulkIndexingUnitOfWork, on_commit: CommitHook | None, counts: WriteCounts
    ) -> bool: ...

    def update_row(self, tracking: TrackingStore, identifier: str, **values: Any) -> None: ...

    def track_failure(
        self,
        tracking: TrackingStore,
        identifier: str,
        message: str,
        *,
        retry_backoff: float,
        tracked_only: bool = False,
    ) -> None: ...

    def mark_seen(self, tracking: TrackingStore, identifiers: Sequence[str]) -> None: ...
    def written(self, tracking: TrackingStore, count: int) -> None: ...


class KeptWrites:
    """A run: every batch commits, and the tracking table keeps what happened."""

    is_dry_run = False
    compares_with_written = False
    one_record_at_a_time = False
    stamps_seen = True

    def __init__(self) -> None:
        self._written = 0
        self._analyze_at = ANALYZE_FIRST_AFTER

    def records(self, records: Iterable[OAIRecord]) -> Iterator[OAIRecord]:
        """The records a run handles: all of them."""
        yield from records

    def rows(self, rows: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]:
        """The stored records a rewrite handles next: all of them."""
        return rows

    def examined(self, count: int = 1) -> None:
        """A record was looked at (only a dry run counts them against its limit)."""

    def note_files(self, identifier: str, files: list[dict[str, Any]]) -> None:
        """What a record's write did to its files (only a dry run reports it)."""

    def note_notices(self, identifier: str, notices: list[str]) -> None:
        """What the target did that an operator should know of (a local twin taken over):
        only a dry run reports it here (a run keeps it on the row and in its report)."""

    def note(self, identifier: str, action: str, **details: Any) -> None:
        """What a record's write did (only a dry run reports it)."""

    def image_before(self, target: TargetAdapter, pid: str | None) -> dict[str, Any] | None:
        """The local record as it was before a write (only a dry run compares)."""
        return None

    def end_batch(
        self, uow: BulkIndexingUnitOfWork, on_commit: CommitHook | None, counts: WriteCounts
    ) -> bool:
        """Commit the batch (with its counters, through `on_commit`); True: it was kept."""
        if on_commit is not None:
            on_commit(counts)
        uow.commit()
        return True

    def update_row(self, tracking: TrackingStore, identifier: str, **values: Any) -> None:
        tracking.update(identifier, **values)

    def track_failure(
        self,
        tracking: TrackingStore,
        identifier: str,
        message: str,
        *,
        retry_backoff: float,
        tracked_only: bool = False,
    ) -> None:
        """A record the provider would not serve: its error on its row."""
        tracking.track_failure(
            identifier, message, retry_backoff=retry_backoff, tracked_only=tracked_only
        )

    def mark_seen(self, tracking: TrackingStore, identifiers: Sequence[str]) -> None:
        """Live identifiers listed by a reconciliation: stamped with the run."""
        tracking.mark_seen(identifiers)

    def written(self, tracking: TrackingStore, count: int) -> None:
        """`count` more records written: the tracking table's statistics are refreshed each
        time the run has doubled its writes (the planner must not go on believing that a
        table that grows from nothing during a run is empty)."""
        self._written += count
        if self._written >= self._analyze_at:
            tracking.refresh_statistics()
            self._analyze_at = 2 * self._written


class DryRun:
    """A preview: nothing is kept; what a run would do is noted in `report`."""

    is_dry_run = True
    compares_with_written = True
    one_record_at_a_time = True
    stamps_seen = False

    def __init__(self, report: PreviewReport) -> None:
        self.report = report
        self.seen: set[str] = set()
        """Identifiers it listed (it stamps no row), to predict a reconciliation."""

    def records(self, records: Iterable[OAIRecord]) -> Iterator[OAIRecord]:
        """The records up to the preview's limit (remembered, for reconciliation)."""
        for record in records:
            if self.report.room() <= 0:
                self.report.stopped_early = True
                return
            self.report.examined += 1
            self.seen.add(tracking_key(record.identifier or ""))
            yield record

    def rows(self, rows: Sequence[dict[str, Any]]) -> Sequence[dict[str, Any]]:
        room = self.report.room()
        if room < len(rows):
            self.report.stopped_early = True
        return rows[:room]

    def examined(self, count: int = 1) -> None:
        self.report.examined += count

    def note(self, identifier: str, action: str, **details: Any) -> None:
        self.report.note(identifier, action, **details)

    def note_files(self, identifier: str, files: list[dict[str, Any]]) -> None:
        self.report.note_files(identifier, files)

    def note_notices(self, identifier: str, notices: list[str]) -> None:
        self.report.note_notices(identifier, notices)

    def image_before(self, target: TargetAdapter, pid: str | None) -> dict[str, Any] | None:
        return target.read(pid) if pid else None

    def end_batch(
        self, uow: BulkIndexingUnitOfWork, on_commit: CommitHook | None, counts: WriteCounts
    ) -> bool:
        """Keeps nothing: no record, no tracking row, no index change."""
        uow.roll_back_everything()
        return False

    def update_row(self, tracking: TrackingStore, identifier: str, **values: Any) -> None:
        """Nothing is stamped on a row."""

    def track_failure(
        self,
        tracking: TrackingStore,
        identifier: str,
        message: str,
        *,
        retry_backoff: float,
        tracked_only: bool = False,
    ) -> None:
        self.report.examined += 1
        self.report.note(identifier, "fail", errors=[message])

    def mark_seen(self, tracking: TrackingStore, identifiers: Sequence[str]) -> None:
        self.seen.update(tracking_key(identifier) for identifier in identifiers if identifier)

    def written(self, tracking: TrackingStore, count: int) -> None:
        """Nothing was kept: the statistics stay as they are."""

    def predict_reconciliation(self, tracking: TrackingStore) -> None:
        """How many local records a reconciliation after this full window would delete."""
        if self.report.stopped_early:
            self.report.notes.append(
                "The preview stopped at its limit: reconciliation was not predicted."
            )
            return
        self.report.predicted_reconciliation = len(tracking.live_identifiers() - self.seen)
