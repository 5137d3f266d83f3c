"""What a run tells its operator while it goes: the log on its page in Administration → Jobs.

Decision owned here: which lines a run logs. invenio-jobs shows every line its application
logger receives during a run; a run of 200,000 records must stay readable there, so a run
logs its windows, a progress line at most every ``interval`` seconds (and the first batch),
the failures of each batch grouped by reason with a few identifiers, and how it ended -
never a line per record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from .counts import WriteCounts
from .results import HarvestSummary


class RunLog:
    """The lines one run logs to `logger` (the application's, which invenio-jobs records)."""

    def __init__(
        self,
        logger: logging.Logger,
        harvester_id: str,
        *,
        interval: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.harvester_id = harvester_id
        self.interval = interval
        self.clock = clock
        self._batches = 0
        self._last_progress: float | None = None

    def info(self, text: str) -> None:
        self.logger.info("Harvester %s: %s", self.harvester_id, text)

    def warning(self, text: str) -> None:
        self.logger.warning("Harvester %s: %s", self.harvester_id, text)

    def progress(self, text: str) -> None:
        """`text` if no progress line was logged for `interval` seconds (the first always)."""
        now = self.clock()
        if self._last_progress is None or now - self._last_progress >= self.interval:
            self._last_progress = now
            self.info(text)

    def batch_written(
        self, batch: WriteCounts, total: WriteCounts, expected: int | None = None
    ) -> None:
        """After each batch: its failures, grouped; progress when it is time for a line."""
        self._batches += 1
        if batch.failed:
            reasons = "; ".join(group.describe() for group in batch.failure_groups())
            self.warning(
                f"batch {self._batches}: {batch.failed} of {batch.total} failed: {reasons}"
            )
        of = f" of about {expected}" if expected else ""
        self.progress(
            f"{total.total}{of} records after {self._batches} batches ({total.describe()})"
        )

    def finished(self, summary: HarvestSummary) -> None:
        """The run's end: its outcome, counts, failures by reason, problems and warnings."""
        counts = summary.counts
        outcome = summary.outcome.value
        text = f"{outcome.lower().replace('_', ' ')}: {counts.total} records ({counts.describe()})"
        if counts.reasons:
            text += "; " + "; ".join(group.describe() for group in counts.failure_groups())
        remarks = [*summary.problems, *summary.warnings]
        if remarks:
            text += ". " + " ".join(remarks)
        (self.info if summary.succeeded else self.warning)(text)
