"""What a harvester says about writing into its target, as the engine reads it.

Decision owned here: the choices an operator has (which adapter, who owns the records, which
community they join, and the policies for local drafts, invalid drafts and DOI conflicts),
their names as stored and typed, and their defaults. Plain values: no Flask, no database,
no invenio-rdm-records, so that services, the CLI and the admin panel can offer them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class AdapterKind(StrEnum):
    """Which target adapter writes a harvester's records."""

    AUTO = "auto"
    """Chosen from the service: draft-enabled services (edit, update_draft, publish) get
    the drafts adapter, every other records service the plain one."""
    RECORDS = "records"
    """create/update/delete of invenio-records-resources, even on a drafts service."""
    DRAFTS = "drafts"
    """draft, then publish (invenio-drafts-resources, InvenioRDM)."""


class LocalDraftPolicy(StrEnum):
    """What happens to a harvested record whose local draft a user has open."""

    HARVEST_WINS = "harvest-wins"
    """The draft is replaced by the harvested data and published (the source is the truth);
    the run's report names the record."""
    LOCAL_WINS = "local-wins"
    """The record is not updated; the open draft is reported as the record's error."""


class InvalidDraftPolicy(StrEnum):
    """What happens to the draft of a new record that the target's schema refuses."""

    DISCARD = "discard"
    """The draft is deleted; the errors are on the record's tracking row."""
    KEEP = "keep"
    """The draft stays for a curator to fix and publish; the errors are on the tracking row,
    which keeps the draft's pid so that the next harvest updates that same draft."""


class DoiConflictPolicy(StrEnum):
    """What happens when a harvested DOI is already held by another local record."""

    FAIL = "fail"
    """The harvested record fails with an error naming the holder; the holder is untouched."""
    TAKE_OVER = "take-over"
    """The holder becomes this harvester's record and is updated from the source."""


@dataclass(frozen=True)
class TargetOptions:
    """How one harvester writes into its target."""

    adapter: AdapterKind = AdapterKind.AUTO
    owner: int | None = None
    """User id that owns the records (None: the system)."""
    community: str | None = None
    """Community (slug or id) that new records are included in (drafts targets)."""
    set_communities: Mapping[str, str] = field(default_factory=dict)
    """Set spec -> community (slug or id) a record in that set joins (drafts targets)."""
    local_drafts: LocalDraftPolicy = LocalDraftPolicy.HARVEST_WINS
    invalid_drafts: InvalidDraftPolicy = InvalidDraftPolicy.DISCARD
    doi_conflicts: DoiConflictPolicy = DoiConflictPolicy.FAIL

    @classmethod
    def of(cls, harvester: Any) -> TargetOptions:
        """The options stored on a harvester (any object with the model's attributes)."""
        return cls(
            adapter=AdapterKind(getattr(harvester, "target_adapter", None) or AdapterKind.AUTO),
            owner=getattr(harvester, "owner", None),
            community=getattr(harvester, "community", None) or None,
            set_communities=dict(getattr(harvester, "set_communities", None) or {}),
            local_drafts=LocalDraftPolicy(
                getattr(harvester, "local_drafts", None) or LocalDraftPolicy.HARVEST_WINS
            ),
            invalid_drafts=InvalidDraftPolicy(
                getattr(harvester, "invalid_drafts", None) or InvalidDraftPolicy.DISCARD
            ),
            doi_conflicts=DoiConflictPolicy(
                getattr(harvester, "doi_conflicts", None) or DoiConflictPolicy.FAIL
            ),
        )


POLICY_FIELDS: dict[str, type[StrEnum]] = {
    "target_adapter": AdapterKind,
    "local_drafts": LocalDraftPolicy,
    "invalid_drafts": InvalidDraftPolicy,
    "doi_conflicts": DoiConflictPolicy,
}
"""The harvester fields that hold a policy, and their choices."""
