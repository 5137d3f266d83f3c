"""What one run is asked to do: one value from every surface to the engine.

Decision owned here: the kinds of run, and which request a set of run arguments is. The
arguments themselves (their names, their validation, which combine) are described once, by
``oarepo_oaipmh_harvester.arguments.RunArgumentsSchema``, which builds a :class:`RunRequest`;
the job type, the Celery task, the services, the command line and the preview all hand the
engine this value and nothing else.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .window import SinceSource


class RunKind(enum.Enum):
    """What a run does; every run is exactly one of these. The values are the names of the
    run arguments that ask for them (a plain harvest is asked for by none)."""

    HARVEST = "harvest"
    """List what changed since the watermark (or everything: `full`) and write it."""
    IDENTIFIERS = "identifiers"
    """GetRecord of some identifiers, and write them."""
    RECONCILE = "reconcile_only"
    """List identifiers only; delete the local records the provider no longer has."""
    REINDEX = "reindex"
    """Send every local record of the harvester to the search index again."""
    REWRITE = "rewrite"
    """Transform the stored XML again and write what differs (no provider request)."""
    RETRY_ERRORS = "retry_errors"
    """GetRecord of every record whose last attempt failed."""
    PURGE = "purge"
    """Delete every local record the harvester created; it starts again from nothing."""
    UNDO = "undo"
    """Take back what one earlier run wrote (:mod:`.undo`); its value is that run's id."""

    @property
    def asks_the_provider(self) -> bool:
        return self not in (RunKind.REINDEX, RunKind.REWRITE, RunKind.PURGE, RunKind.UNDO)


REPAIR_KINDS = (RunKind.REWRITE, RunKind.RETRY_ERRORS, RunKind.PURGE, RunKind.UNDO)
"""Kinds of run only those who may change the harvester may ask for (with `force`)."""

OPTION_KINDS: dict[str, tuple[RunKind, ...]] = {
    "errors_only": (RunKind.REWRITE,),
    "forget": (RunKind.PURGE,),
    "confirm": (RunKind.PURGE,),
    "force": (RunKind.HARVEST, RunKind.IDENTIFIERS, RunKind.RECONCILE, RunKind.RETRY_ERRORS),
}
"""The kinds of run each option goes with (those that ask the provider, for `force`)."""


@dataclass(frozen=True)
class RunRequest:
    """One run's request, validated (build it with ``arguments.run_request``)."""

    kind: RunKind = RunKind.HARVEST
    since: datetime | None = None
    since_source: SinceSource = SinceSource.LAST_SUCCESS
    """Where `since` came from: only an automatic one may be moved back to the watermark."""
    full: bool = False
    """A harvest or reconciliation of everything, whatever `since` and the watermark say."""
    identifiers: tuple[str, ...] = field(default=())
    """Of an IDENTIFIERS run; of a REWRITE, the records to rewrite (none: all)."""
    errors_only: bool = False
    """A REWRITE of the records whose last attempt failed."""
    force: bool = False
    """Write what the provider lists even where it did not change it."""
    forget: bool = False
    """A PURGE that forgets the tracked records too."""
    confirm: str | None = None
    """A PURGE's confirmation: the harvester's id, typed."""
    undo: str | None = None
    """Of an UNDO: the id of the run it takes back."""

    @property
    def is_repair(self) -> bool:
        """Asks for the right to change the harvester, not only to run it."""
        return self.kind in REPAIR_KINDS or self.force

    def arguments(self) -> dict[str, Any]:
        """The request as run arguments (JSON, by their one name), as invenio-jobs keeps them
        in a run; :meth:`from_arguments` reads them back once the schema has loaded them."""
        arguments: dict[str, Any] = {
            "since": self.since.isoformat() if self.since else None,
            "full": self.full,
            "identifiers": list(self.identifiers) or None,
            "errors_only": self.errors_only,
            "force": self.force,
            "forget": self.forget,
            "confirm": self.confirm,
            "undo": self.undo,
        }
        for kind in RunKind:
            if kind not in (RunKind.HARVEST, RunKind.IDENTIFIERS, RunKind.UNDO):
                arguments[kind.value] = kind is self.kind
        return arguments

    @classmethod
    def from_arguments(cls, loaded: Mapping[str, Any], since_source: SinceSource) -> RunRequest:
        """The request of run arguments that `RunArgumentsSchema` has loaded (and so checked:
        at most one kind of run, options only with the kind they belong to); `since_source`
        says where their `since` came from (``window.since_source_of``)."""
        kind = RunKind.HARVEST
        for candidate in RunKind:
            if candidate is not RunKind.HARVEST and loaded.get(candidate.value):
                kind = candidate
                if candidate is not RunKind.IDENTIFIERS:
                    break  # identifiers with rewrite: a rewrite of those records
        since = loaded.get("since")
        return cls(
            kind=kind,
            since=since,
            since_source=since_source,
            full=bool(loaded.get("full")),
            identifiers=tuple(loaded.get("identifiers") or ()),
            errors_only=bool(loaded.get("errors_only")),
            force=bool(loaded.get("force")),
            forget=bool(loaded.get("forget")),
            confirm=loaded.get("confirm"),
            undo=str(loaded["undo"]) if loaded.get("undo") else None,
        )


INCREMENTAL = RunRequest()
"""A plain run: what changed since the watermark."""
