"""What a harvester says about writing into its target, as the engine reads it.

Decision owned here: the choices an operator has (which adapter, who owns the records, which
community they join, the policies for local drafts, invalid drafts and DOI conflicts, and
what becomes of a record's files),
their names as stored and typed, and their defaults. Plain values: no Flask, no database,
no invenio-rdm-records, so that services, the CLI and the admin panel can offer them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

MATCH_SCHEMES = ("doi", "handle", "arxiv", "pmid", "isbn", "urn")
"""The identifier schemes a new record can be matched to a local record by (RDM's names),
in the default order (OAI_HARVESTER_MATCH_ON)."""


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


class DedupePolicy(StrEnum):
    """What happens when a new source record is a work another harvester brought already (a
    match by DOI or by the identifiers of ``match_on``)."""

    OFF = "off"
    """Two local records, one for each harvester."""
    LINK = "link"
    """One record, the other harvester's: this source is added to it as an alternate
    identifier and a provenance link; its metadata is not written."""
    MERGE = "merge"
    """One record, the other harvester's: as with link, and this source's values of the
    fields whose field policy is merge are united with the record's."""


class FilesMode(StrEnum):
    """What becomes of the files a source record names (its file references)."""

    NONE = "none"
    """Metadata only: the files are not looked at."""
    LINK = "link"
    """The file URLs are kept on the record as links; nothing is downloaded."""
    COPY = "copy"
    """The bytes are fetched into the site's files storage; the record is published with them."""


class FilesFailurePolicy(StrEnum):
    """What happens to a record one of whose files could not be fetched."""

    METADATA_ONLY = "metadata-only"
    """Published without the files it could not get, with a warning naming each and why."""
    FAIL = "fail"
    """The record fails (and is retried like any failed record); nothing is written."""


class FilesChangePolicy(StrEnum):
    """How a record whose files changed at the source is written again."""

    NEW_VERSION = "new-version"
    """A new version of the record, with unchanged files carried over (not downloaded again);
    the tracking row follows the newest version."""
    REPLACE = "replace"
    """The files of the published record are replaced in place, where the site allows it."""


@dataclass(frozen=True)
class FilesOptions:
    """How one harvester treats the files of its records."""

    mode: FilesMode = FilesMode.NONE
    failure: FilesFailurePolicy = FilesFailurePolicy.METADATA_ONLY
    changes: FilesChangePolicy = FilesChangePolicy.NEW_VERSION
    max_size: int = 10 * 1024**3
    """Bytes a file may have."""
    max_files: int = 100
    """Files a record may have; the rest are left with a warning."""
    max_run_bytes: int | None = None
    """Bytes one run may fetch (None: no limit); later files wait for the next run."""
    hosts: tuple[str, ...] = ()
    """Hosts files may come from besides the provider's own (``*.example.org``: its subdomains)."""
    restricted: bool = False
    """Fetch the files the source marks restricted too (they are stored restricted)."""

    @property
    def fetches(self) -> bool:
        return self.mode is FilesMode.COPY


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
    files: FilesOptions = field(default_factory=FilesOptions)
    match_on: tuple[str, ...] = MATCH_SCHEMES
    """Identifier schemes a new record is matched to a local one by, in this order."""
    dedupe: DedupePolicy = DedupePolicy.OFF
    merged_fields: tuple[str, ...] = ()
    """Paths whose field policy is merge (what ``dedupe`` merge unites)."""

    @classmethod
    def of(
        cls,
        harvester: Any,
        files_defaults: Mapping[str, Any] | None = None,
        match_on: Sequence[str] = MATCH_SCHEMES,
    ) -> TargetOptions:
        """The options stored on a harvester (any object with the model's attributes);
        `files_defaults`: the site's limits for files (see :func:`files_options_of`);
        `match_on`: the site's schemes, for a harvester that names none."""
        stored = getattr(harvester, "match_on", None)
        return cls(
            match_on=tuple(stored if stored is not None else match_on),
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
            files=files_options_of(harvester, files_defaults),
            dedupe=DedupePolicy(getattr(harvester, "dedupe", None) or DedupePolicy.OFF),
            merged_fields=tuple(
                path
                for path, policy in (getattr(harvester, "field_policy", None) or {}).items()
                if policy == "merge"
            ),
        )


def files_defaults(config: Mapping[str, Any]) -> dict[str, Any]:
    """The site's limits for files (OAI_HARVESTER_FILES_MAX_SIZE and the like)."""
    return {
        "max_size": config.get("OAI_HARVESTER_FILES_MAX_SIZE", FilesOptions.max_size),
        "max_files": config.get("OAI_HARVESTER_FILES_MAX_PER_RECORD", FilesOptions.max_files),
        "max_run_bytes": config.get("OAI_HARVESTER_FILES_MAX_RUN_BYTES"),
    }


def files_options_of(harvester: Any, defaults: Mapping[str, Any] | None = None) -> FilesOptions:
    """The files options stored on a harvester; what it leaves empty comes from `defaults`
    (``max_size``, ``max_files``, ``max_run_bytes``: the site's configuration)."""
    defaults = defaults or {}
    base = FilesOptions()

    def stored_or_default(name: str) -> Any:
        value = getattr(harvester, f"files_{name}", None)
        return value if value is not None else defaults.get(name, getattr(base, name))

    return FilesOptions(
        mode=FilesMode(getattr(harvester, "files", None) or FilesMode.NONE),
        failure=FilesFailurePolicy(
            getattr(harvester, "files_failure", None) or FilesFailurePolicy.METADATA_ONLY
        ),
        changes=FilesChangePolicy(
            getattr(harvester, "files_changes", None) or FilesChangePolicy.NEW_VERSION
        ),
        max_size=int(stored_or_default("max_size")),
        max_files=int(defaults.get("max_files", base.max_files)),
        max_run_bytes=defaults.get("max_run_bytes", base.max_run_bytes),
        hosts=tuple(getattr(harvester, "files_hosts", None) or ()),
        restricted=bool(getattr(harvester, "files_restricted", None) or False),
    )


POLICY_FIELDS: dict[str, type[StrEnum]] = {
    "target_adapter": AdapterKind,
    "local_drafts": LocalDraftPolicy,
    "invalid_drafts": InvalidDraftPolicy,
    "doi_conflicts": DoiConflictPolicy,
    "dedupe": DedupePolicy,
    "files": FilesMode,
    "files_failure": FilesFailurePolicy,
    "files_changes": FilesChangePolicy,
}
"""The harvester fields that hold a policy, and their choices."""
