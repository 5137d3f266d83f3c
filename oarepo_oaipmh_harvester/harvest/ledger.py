"""What a run keeps of itself while it goes: its invenio-jobs run row, progress and log.

Decision owned here: when a run's counters reach its invenio-jobs run (inside each batch's
transaction, so that they count only what was committed; on their own at most every
COUNTERS_INTERVAL seconds while batches write nothing), where a run keeps its counts of each
kind (invenio-jobs' columns have none for deletions: they go to the run's ``args`` under
COUNTS_ARG, with the columns), and what a run reports after each batch and at its end (its
progress listener, its log, its message).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import sqlalchemy as sa
from invenio_db import db
from invenio_jobs.models import Run

from .counts import WriteCounts
from .effects import CommitHook
from .results import HarvestProgress, HarvestSummary, ProgressCallback
from .run_log import RunLog

COUNTERS_INTERVAL = 2.0
"""Seconds between saves of the run's progress counters while batches write nothing."""

COUNTS_ARG = "counts"
"""The key of a run's ``args`` that holds its counts by kind (created, updated, deleted,
unchanged, failed, ...: every number of :meth:`WriteCounts.as_dict`), saved with its columns.
The subtasks of a fanned-out run keep theirs under the same key. No column of invenio-jobs'
Run has room for them and a column of ours would need a migration of its table."""


def counts_by_kind(counts: WriteCounts) -> dict[str, int]:
    """The numbers of `counts` as a run keeps them under COUNTS_ARG (no identifiers)."""
    return {key: value for key, value in counts.as_dict().items() if isinstance(value, int)}


class RunLedger:
    """The books of one run. Without a run row (a dry run, or a run outside invenio-jobs
    that has none) counters are not saved; without a log nothing is logged."""

    def __init__(
        self,
        run_id: uuid.UUID | None,
        *,
        progress: ProgressCallback | None = None,
        run_log: RunLog | None = None,
        list_size: Callable[[], int | None] = lambda: None,
    ) -> None:
        self.run_id = run_id
        self.progress = progress
        self.run_log = run_log
        self.list_size = list_size
        """The provider's completeListSize of the list being read, if it gave one."""
        self._saved_at = time.monotonic()
        self._behind = False

    # -- counters --------------------------------------------------------------------------
    def counters_with(self, summary: HarvestSummary) -> CommitHook:
        """The hook that puts the counters, this batch included, in the batch's transaction."""

        def save_with_batch(batch: WriteCounts) -> None:
            self._update(summary, batch)
            self._saved_at, self._behind = time.monotonic(), False

        self._behind = True
        return save_with_batch

    def save(self, summary: HarvestSummary) -> None:
        """The counters now, in a transaction of their own."""
        if self.run_id is None:
            return
        self._update(summary, WriteCounts())
        db.session.commit()
        self._saved_at, self._behind = time.monotonic(), False

    def settle(self, summary: HarvestSummary) -> None:
        """After the last batch: counters that are still behind are saved."""
        if self._behind:
            self.save(summary)

    def _update(self, summary: HarvestSummary, batch: WriteCounts) -> None:
        if self.run_id is None:
            return
        counts = summary.counts.plus(batch)
        args = db.session.scalar(sa.select(Run.args).where(Run.id == self.run_id)) or {}
        db.session.execute(
            sa.update(Run)
            .where(Run.id == self.run_id)
            .values(**counts.run_columns(), args={**args, COUNTS_ARG: counts_by_kind(counts)})
        )

    # -- after each batch, and at the end --------------------------------------------------
    def batch_done(self, summary: HarvestSummary, batch: WriteCounts | None = None) -> None:
        """After a batch: counters a batch that wrote nothing could not carry (at most every
        few seconds), the log, the progress listener."""
        if self._behind and time.monotonic() - self._saved_at > COUNTERS_INTERVAL:
            self.save(summary)
        if batch is not None and self.run_log is not None:
            self.run_log.batch_written(batch, summary.counts, self.list_size())
        self.report(summary)

    def progress_line(self, text: str) -> None:
        """`text` in the run's log, unless a progress line went there a moment ago."""
        if self.run_log is not None:
            self.run_log.progress(text)

    def say(self, text: str) -> None:
        if self.run_log is not None:
            self.run_log.info(text)

    def warn(self, text: str) -> None:
        if self.run_log is not None:
            self.run_log.warning(text)

    def report(self, summary: HarvestSummary, final: bool = False) -> None:
        if self.progress is not None:
            self.progress(
                HarvestProgress(
                    counts=summary.counts,
                    complete_list_size=self.list_size(),
                    summary=summary if final else None,
                )
            )

    def finish(self, summary: HarvestSummary) -> None:
        """The end of a run: its message (kept by a successful run too, when it has warnings
        or notices), its final counters, a last report and its last log line."""
        if self.run_log is not None:
            self.run_log.finished(summary)
        if (summary.warnings or summary.counts.notices) and self.run_id is not None:
            # A successful run keeps this message; a partial one gets summary.message().
            db.session.execute(
                sa.update(Run).where(Run.id == self.run_id).values(message=summary.message())
            )
        self.save(summary)  # the final counts, reconciliation included
        self.report(summary, final=True)

    def on_commit(self, summary: HarvestSummary) -> Callable[[WriteCounts], None]:
        """For reconciliation, which commits batch by batch itself."""
        return lambda counts: self._update(summary, counts)
