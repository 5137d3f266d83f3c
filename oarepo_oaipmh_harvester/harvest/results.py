"""What a run tells the world: its progress while it goes, its summary and outcome at the end.

Decision owned here: when a run counts as successful, partial or failed, and the one message
that says why (the invenio-jobs run, the command line and the report all use it).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from .counts import WriteCounts
from .window import HarvestWindow

FAILURES_IN_MESSAGE = 5
"""Reasons (each with a few identifiers) a run's one-paragraph message names; notices too."""


class RunOutcome(enum.Enum):
    """How a run ended; the values are invenio-jobs' run statuses."""

    SUCCESS = "SUCCESS"
    PARTIAL_SUCCESS = "PARTIAL_SUCCESS"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


@dataclass
class HarvestProgress:
    """Reported after every batch."""

    counts: WriteCounts
    complete_list_size: int | None = None
    summary: HarvestSummary | None = None
    """The run's summary, in the last report of a run that ended (problems and warnings
    included), for a caller that shows more than the counts."""


ProgressCallback = Callable[[HarvestProgress], None]


@dataclass
class HarvestSummary:
    """The outcome of a run, for the job status, the command line and reports."""

    harvester_id: str
    window: HarvestWindow | None
    counts: WriteCounts = field(default_factory=WriteCounts)
    problems: list[str] = field(default_factory=list)
    """Run-level problems that make the run not fully successful (e.g. refused reconciliation)."""
    warnings: list[str] = field(default_factory=list)
    """Run-level warnings that do not (e.g. a provider clock that was not believed)."""
    reconciled: bool = False
    watermark_advanced: bool = False
    requests: int = 0
    retried: WriteCounts | None = None
    """Records of earlier runs asked for again at the end of this one (apart from `counts`:
    one that still fails was failing before and does not make this run partial)."""
    left_out: WriteCounts | None = None
    """Documents that earlier runs left out of the search index, sent before this one
    harvested (apart from `counts`, as `retried`)."""

    @property
    def succeeded(self) -> bool:
        return self.counts.failed == 0 and self.counts.not_indexed == 0 and not self.problems

    @property
    def outcome(self) -> RunOutcome:
        return RunOutcome.SUCCESS if self.succeeded else RunOutcome.PARTIAL_SUCCESS

    def describe(self) -> str:
        return self.counts.describe()

    def message(self) -> str:
        """What went wrong or deserves a look, in one paragraph ("" when nothing did): what
        to do first, then each reason once with its count."""
        return " ".join(part for part in self.message_parts() if part)

    def message_parts(self) -> list[str]:
        """The message's sentences: run-level problems, the counts' hints, the reasons,
        notices and warnings, in that order."""
        parts = [*self.problems, *self.hints()]
        if not self.succeeded:
            groups = self.counts.failure_groups()[:FAILURES_IN_MESSAGE]
            by_reason = "; ".join(group.describe() for group in groups)
            more = len(self.counts.reasons) - len(groups)
            if more > 0:
                by_reason += f"; and {more} more reasons"
            parts.append(f"By reason: {by_reason}." if by_reason else "")
        parts.extend(self.notes())
        parts.extend(self.warnings)
        return parts

    def hints(self, reindex: str = "a run with reindex", errors: str = "") -> list[str]:
        """What the failed and unindexed records of the run come to and what to do; the
        command line names its own commands in `reindex` and `errors`."""
        if self.succeeded:
            return []
        hints = []
        if self.counts.not_indexed:
            hints.append(
                f"{self.counts.not_indexed} written records could not be indexed: the next run "
                f"sends them first, or {reindex} sends them now."
            )
        if self.counts.failed or not self.counts.not_indexed:
            listed = f" {errors}" if errors else ""
            hints.append(
                f"{self.counts.failed} of {self.counts.total} records failed "
                f"({self.describe()}).{listed}"
            )
        return hints

    def notes(self) -> list[str]:
        if not self.counts.notices:
            return []
        noticed = "; ".join(
            f"{identifier}: {text}"
            for identifier, text in self.counts.notices[:FAILURES_IN_MESSAGE]
        )
        more = len(self.counts.notices) - FAILURES_IN_MESSAGE
        return [f"Note: {noticed}" + (f" (and {more} more)" if more > 0 else ".")]
