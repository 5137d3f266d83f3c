"""The request window of a run: which `from` and `until` the provider is asked for.

Every rule about windows and watermarks lives here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import UTC, datetime

from ..protocol.datestamps import Granularity, format_datestamp


class SinceSource(enum.Enum):
    """Where the `since` of a run came from; it decides how far back the window reaches."""

    LAST_SUCCESS = "last_success"
    """invenio-jobs: the start of the last successful run, measured by our clock."""
    MANUAL = "manual"
    """Typed by a person (run form, command line): taken exactly as given."""
    WATERMARK = "watermark"
    """The harvester's stored server-clock watermark (command-line default)."""


@dataclass(frozen=True)
class HarvestWindow:
    """A closed interval [from_, until] of provider datestamps; from_ None = from the start."""

    from_: datetime | None
    until: datetime
    granularity: Granularity

    @property
    def is_full(self) -> bool:
        return self.from_ is None

    def arguments(self) -> dict[str, str | None]:
        """`from`/`until` formatted to the provider's granularity."""
        return {
            "from_": format_datestamp(self.from_, self.granularity) if self.from_ else None,
            "until": format_datestamp(self.until, self.granularity),
        }

    def describe(self) -> str:
        arguments = self.arguments()
        return f"from={arguments['from_'] or '(start)'} until={arguments['until']}"


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def plan_window(
    *,
    response_date: datetime,
    granularity: Granularity,
    since: datetime | None,
    since_source: SinceSource,
    watermark: datetime | None,
    full: bool = False,
) -> HarvestWindow:
    """Decide the window of a run.

    `until` is the provider's responseDate at run start, frozen, so that records changed
    while the run goes on fall into the next window. `from` is `since`; an automatic
    `since` (our clock) is moved back to the stored server-clock watermark when that is
    earlier, so that a provider whose clock lags ours cannot open a gap. An automatic run
    without `since` continues from the watermark; only `full` (or a harvester that never
    succeeded) harvests everything.
    """
    until = _utc(response_date)
    since = _utc(since)
    watermark = _utc(watermark)
    if full:
        from_ = None
    elif since_source is SinceSource.WATERMARK:
        from_ = watermark
    elif since_source is SinceSource.LAST_SUCCESS and since and watermark:
        from_ = min(since, watermark)
    elif since_source is SinceSource.LAST_SUCCESS and since is None:
        # The watermark belongs to the harvester, not to a job: a new job (no successful run
        # of its own yet) continues where the harvester stopped.
        from_ = watermark
    else:
        from_ = since
    if from_ is not None and from_ > until:
        # Our clock is ahead of the provider's: ask for the latest moment it knows.
        from_ = until
    return HarvestWindow(from_=from_, until=until, granularity=granularity)
