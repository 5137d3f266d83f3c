"""The request window of a run: which `from` and `until` the provider is asked for.

Decision owned here: every rule about windows and watermarks - where a run's `since` came
from, how far back the window reaches, whether the provider's clock can be trusted, and which
watermark (if any) a successful run stores.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

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
class Scope:
    """What a watermark was earned on: one endpoint, one metadata prefix, one set (None: all).

    A watermark only says "everything of this scope up to here is harvested": a new set, a
    new endpoint or a new prefix has none and is harvested in full.
    """

    base_url: str
    metadata_prefix: str
    set_spec: str | None

    @property
    def key(self) -> str:
        return json.dumps([self.base_url, self.metadata_prefix, self.set_spec or ""])

    @classmethod
    def from_key(cls, key: str) -> Scope:
        base_url, metadata_prefix, set_spec = json.loads(key)
        return cls(base_url, metadata_prefix, set_spec or None)

    def describe(self) -> str:
        what = f"set {self.set_spec!r}" if self.set_spec else "the whole repository"
        return f"{what} of {self.base_url} ({self.metadata_prefix})"


def stored_watermarks(
    watermarks: Mapping[str, str] | None,
    legacy_watermark: datetime | None,
    scopes: Sequence[Scope],
) -> dict[str, datetime]:
    """The watermark of each scope, by key; a harvester stored before watermarks had scopes
    has one watermark, taken for its current scopes."""
    if watermarks is None:
        if legacy_watermark is None:
            return {}
        return {scope.key: _utc(legacy_watermark) for scope in scopes}
    return {key: _utc(datetime.fromisoformat(value)) for key, value in watermarks.items()}


def scope_changes(stored: Mapping[str, datetime], scopes: Sequence[Scope]) -> list[str]:
    """Sentences for an operator about scopes that are new (harvested in full) or gone."""
    current = {scope.key for scope in scopes}
    notes = []
    if stored:
        for scope in scopes:
            if scope.key not in stored:
                notes.append(
                    f"{_sentence(scope.describe())} was not harvested before: it is "
                    f"harvested in full."
                )
    for key in stored:
        if key not in current:
            notes.append(
                f"{_sentence(Scope.from_key(key).describe())} is no longer harvested: the "
                f"records harvested from it stay (a reconciliation, where the rules allow "
                f"one, removes those no source lists)."
            )
    return notes


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def since_source_of(since: datetime | str | None, default: SinceSource) -> SinceSource:
    """A `since` that somebody gave is taken as given; without one the caller's default rules."""
    return SinceSource.MANUAL if since else default


@dataclass(frozen=True)
class HarvestWindow:
    """A closed interval [from_, until] of provider datestamps; from_ None = from the start.

    ``until`` is None when the provider's clock could not be trusted (``clock_problem``
    says why): the window is then open-ended and the run stores no watermark.
    """

    from_: datetime | None
    until: datetime | None
    granularity: Granularity
    clock_problem: str | None = None

    @property
    def is_full(self) -> bool:
        return self.from_ is None

    def arguments(self) -> dict[str, str | None]:
        """`from`/`until` formatted to the provider's granularity."""
        return {
            "from_": format_datestamp(self.from_, self.granularity) if self.from_ else None,
            "until": format_datestamp(self.until, self.granularity) if self.until else None,
        }

    def describe(self) -> str:
        arguments = self.arguments()
        return f"from={arguments['from_'] or '(start)'} until={arguments['until'] or '(open)'}"

    def next_watermark(self, previous: datetime | None) -> datetime | None:
        """The watermark a successful run of this window stores; None keeps `previous`.

        Never a value from an untrusted clock, never one earlier than `previous`, and never
        one for a window that started later than `previous` (a `since` typed by a person):
        what lies between was not harvested.
        """
        if self.until is None:
            return None
        previous = _utc(previous)
        if self.from_ is not None and (previous is None or self.from_ > previous):
            return None
        if previous is not None and self.until < previous:
            return None
        return self.until


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
    now: datetime | None = None,
    clock_tolerance: timedelta = timedelta(minutes=10),
) -> HarvestWindow:
    """Decide the window of a run.

    `until` is the provider's responseDate at run start, frozen, so that records changed
    while the run goes on fall into the next window. `from` is `since`; an automatic
    `since` (our clock) is moved back to the scope's stored server-clock watermark when that
    is earlier, so that a provider whose clock lags ours cannot open a gap. An automatic run
    continues from the watermark; only `full`, or a scope that was never harvested to the end
    (no watermark), harvests everything.

    A responseDate later than our clock (`now`) plus `clock_tolerance`, or earlier than the
    stored watermark less it, is not believed: the window then has no `until` (everything
    from `from` on) and stores no watermark, so a provider's bad clock can neither empty the
    window nor move the watermark.
    """
    until = _utc(response_date)
    since = _utc(since)
    watermark = _utc(watermark)
    now = _utc(now) or datetime.now(UTC)
    if full:
        from_ = None
    elif since_source is SinceSource.WATERMARK:
        from_ = watermark
    elif since_source is SinceSource.LAST_SUCCESS and since and watermark:
        from_ = min(since, watermark)
    elif since_source is SinceSource.LAST_SUCCESS:
        # The watermark belongs to what was harvested, not to a job: a new job continues
        # where the harvester stopped, and a scope without a watermark (a set just added, a
        # new endpoint) is harvested in full whatever the job's last success was.
        from_ = watermark
    else:
        from_ = since
    clock_problem = _clock_problem(until, now, watermark, clock_tolerance)
    if clock_problem:
        return HarvestWindow(
            from_=from_, until=None, granularity=granularity, clock_problem=clock_problem
        )
    if from_ is not None and from_ > until:
        # Our clock is ahead of the provider's: ask for the latest moment it knows.
        from_ = until
    return HarvestWindow(from_=from_, until=until, granularity=granularity)


def _clock_problem(
    response_date: datetime, now: datetime, watermark: datetime | None, tolerance: timedelta
) -> str | None:
    said = response_date.strftime("%Y-%m-%dT%H:%M:%SZ")
    if response_date > now + tolerance:
        return (
            f"The provider's clock says {said}, later than ours "
            f"({now.strftime('%Y-%m-%dT%H:%M:%SZ')}); the window was left open-ended and "
            f"the watermark was not moved."
        )
    if watermark is not None and response_date < watermark - tolerance:
        return (
            f"The provider's clock says {said}, earlier than the watermark of the last "
            f"successful run ({watermark.strftime('%Y-%m-%dT%H:%M:%SZ')}); the window was "
            f"left open-ended and the watermark was not moved."
        )
    return None
