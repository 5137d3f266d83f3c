"""A harvested record's files in an InvenioRDM draft: what changed, fetched, attached.

Decision owned here: which of a source record's files are fetched (not those the source marks
restricted unless the harvester says so, at most a record's limit), when a file counts as
unchanged (the source's checksum, else its size, else a conditional request answered 304, else
the same bytes), that everything is fetched and verified before a draft is touched (so that a
failure leaves nothing partial), what a file that cannot be fetched does to its record (the
harvester's failure policy), and what the tracking row keeps of each file.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from ...protocol.downloads import (
    FetchedFile,
    FileFetcher,
    FileFetchError,
    FileNotModified,
    FileSource,
)
from ...transformers.files import FileAccess, FileReference
from .options import FilesFailurePolicy, FilesOptions

log = logging.getLogger(__name__)

KEPT = ("fetched", "unchanged")
"""The statuses of a file the local record holds."""


class FilesNotFetched(Exception):
    """A record's file could not be fetched and the harvester's policy fails the record."""


@dataclass
class StagedFile:
    """One file of a record as this write will leave it."""

    reference: FileReference
    state: dict[str, Any]
    """What the tracking row keeps (key, url, size, checksum, etag, last_modified, status,
    error, and the source's own size and checksum)."""
    content: BinaryIO | None = None
    """The verified bytes to attach (None: nothing to attach)."""

    @property
    def key(self) -> str:
        return self.reference.name


@dataclass
class FilesPlan:
    """What one write does to a record's files."""

    files: list[StagedFile] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    """Keys the local record holds that the source no longer names."""
    warnings: list[str] = field(default_factory=list)
    held_before: bool = False
    """The local record held files before this write."""
    restricted: bool = False
    """A file fetched is restricted at the source: the record's files are stored restricted."""
    _closing: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    @property
    def kept(self) -> list[StagedFile]:
        return [f for f in self.files if f.state["status"] in KEPT]

    @property
    def to_attach(self) -> list[StagedFile]:
        return [f for f in self.files if f.content is not None]

    @property
    def changed(self) -> bool:
        """Whether the local record's files must change (added, replaced or removed)."""
        return bool(self.to_attach or self.removed)

    def states(self) -> list[dict[str, Any]]:
        return [f.state for f in self.files]

    def counts(self) -> dict[str, int]:
        """Files fetched, bytes fetched, unchanged and failed, for the run's counters."""
        fetched = [f for f in self.files if f.state["status"] == "fetched" and f.content]
        return {
            "fetched": len(fetched),
            "bytes": sum(f.state["size"] or 0 for f in fetched),
            "unchanged": sum(1 for f in self.files if f.state["status"] == "unchanged"),
            "failed": sum(1 for f in self.files if f.state["status"] == "failed"),
        }

    def close(self) -> None:
        self._closing.close()


class RunBytes:
    """The bytes a run may still fetch (OAI_HARVESTER_FILES_MAX_RUN_BYTES), shared by the
    run's writers in one process."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.spent = 0
        self._lock = threading.Lock()

    def take(self, size: int | None) -> bool:
        """Count `size` bytes (unknown: 0) against the limit; False when they do not fit."""
        with self._lock:
            if self.limit is not None and self.spent + (size or 0) > self.limit:
                return False
            self.spent += size or 0
            return True


class RecordFiles:
    """Stages the files of one record at a time for a drafts target (files copy)."""

    def __init__(
        self, options: FilesOptions, fetcher: FileFetcher, run_bytes: RunBytes | None = None
    ) -> None:
        self.options = options
        self.fetcher = fetcher
        self.run_bytes = run_bytes or RunBytes(None)

    def stage(
        self,
        references: Sequence[FileReference],
        previous: Sequence[dict[str, Any]] | None,
        *,
        fetch: bool = True,
    ) -> FilesPlan:
        """Decide and fetch (into temporary files) what a write needs; raises
        FilesNotFetched when the failure policy fails the record. Without `fetch` (a dry
        run) the files that would be fetched are only named ("to fetch")."""
        plan = FilesPlan()
        held = {state["key"]: state for state in previous or () if state.get("status") in KEPT}
        plan.held_before = bool(held)
        wanted = list(references)[: self.options.max_files]
        for left_out in list(references)[self.options.max_files :]:
            plan.warnings.append(
                f"File {left_out.name} ({left_out.url}) was left out: a record may bring at "
                f"most {self.options.max_files} files (OAI_HARVESTER_FILES_MAX_PER_RECORD)."
            )
        try:
            for reference in wanted:
                plan.files.append(
                    self._stage_one(reference, held.get(reference.name), plan, fetch=fetch)
                )
        except BaseException:
            plan.close()
            raise
        names = {reference.name for reference in wanted}
        plan.removed = [key for key in held if key not in names]
        failed = [f for f in plan.files if f.state["status"] == "failed"]
        if failed and self.options.failure is FilesFailurePolicy.FAIL:
            plan.close()
            raise FilesNotFetched(
                " ".join(f.state["error"] for f in failed)
                + " (files_failure fail: the record is retried by a later run)"
            )
        for staged in failed:
            plan.warnings.append(
                f"{staged.state['error']} The record was published without it (files_failure "
                f"metadata-only)."
            )
        return plan

    def _stage_one(
        self, reference: FileReference, held: dict[str, Any] | None, plan: FilesPlan, *, fetch: bool
    ) -> StagedFile:
        state = _state_of(reference)
        if reference.access is FileAccess.METADATA_ONLY or (
            reference.access in (FileAccess.RESTRICTED, FileAccess.EMBARGOED)
            and not self.options.restricted
        ):
            state["status"] = "skipped"
            state["error"] = (
                f"File {reference.name} is {reference.access} at the source: not fetched"
                + (" (files_restricted is off)." if reference.access != "metadata-only" else ".")
            )
            plan.warnings.append(state["error"])
            return StagedFile(reference, state)
        if held is not None and _unchanged_by_source(reference, held):
            return StagedFile(reference, {**held, "status": "unchanged", "error": None})
        if not fetch:
            state["status"] = "to fetch"
            return StagedFile(reference, state)
        if not self.run_bytes.take(reference.size):
            state["status"] = "failed"
            state["error"] = (
                f"File {reference.name} ({reference.url}) was not fetched: this run reached its "
                f"limit of {self.run_bytes.limit:,} bytes (OAI_HARVESTER_FILES_MAX_RUN_BYTES)."
            )
            return StagedFile(reference, state)
        source = FileSource(
            url=reference.url,
            expected_size=reference.size,
            checksum=reference.checksum,
            etag=(held or {}).get("etag") if _needs_condition(reference) else None,
            last_modified=(held or {}).get("last_modified")
            if _needs_condition(reference)
            else None,
        )
        try:
            fetched, content = plan._closing.enter_context(self.fetcher.download(source))
        except FileNotModified:
            return StagedFile(reference, {**held, "status": "unchanged", "error": None})
        except FileFetchError as error:
            state["status"] = "failed"
            state["error"] = f"File {reference.name} could not be fetched: {error.reason}"
            return StagedFile(reference, state)
        state.update(_fetched_state(fetched))
        if held is not None and held.get("checksum") == fetched.checksum:
            # The same bytes again (a source that gives neither checksum nor size nor ETag).
            return StagedFile(reference, {**held, **state, "status": "unchanged"})
        if reference.access in (FileAccess.RESTRICTED, FileAccess.EMBARGOED):
            plan.restricted = True
        return StagedFile(reference, state, content)


def _state_of(reference: FileReference) -> dict[str, Any]:
    return {
        "key": reference.name,
        "url": reference.url,
        "size": None,
        "checksum": None,
        "source_size": reference.size,
        "source_checksum": reference.checksum,
        "mimetype": reference.mimetype,
        "access": str(reference.access),
        "etag": None,
        "last_modified": None,
        "status": "pending",
        "error": None,
    }


def _fetched_state(fetched: FetchedFile) -> dict[str, Any]:
    return {
        "size": fetched.size,
        "checksum": fetched.checksum,
        "mimetype": fetched.mimetype,
        "etag": fetched.etag,
        "last_modified": fetched.last_modified,
        "status": "fetched",
        "error": None,
    }


def _needs_condition(reference: FileReference) -> bool:
    """The source gives neither checksum nor size: only the server can say it is unchanged."""
    return not reference.checksum and reference.size is None


def _unchanged_by_source(reference: FileReference, held: dict[str, Any]) -> bool:
    """Whether the source's own description says the file is the one the record holds."""
    if held.get("url") != reference.url:
        return False
    if reference.checksum:
        # The source's own checksum, or (an md5) the one computed when it was fetched.
        return reference.checksum in (held.get("source_checksum"), held.get("checksum"))
    if reference.size is not None:
        return held.get("source_size") == reference.size
    return False


def attach_files(
    files_service: Any,
    identity: Any,
    draft_id: str,
    plan: FilesPlan,
    uow: Any,
    *,
    fresh: bool = False,
) -> None:
    """Put the plan's files into the draft: removed and replaced ones out, fetched ones in,
    each checked once more against the checksum of the bytes that were verified (`fresh`: a
    new record's draft, which holds no file to take out)."""
    if not fresh:
        listing = files_service.list_files(identity, draft_id).to_dict()
        present = {entry["key"] for entry in listing.get("entries") or ()}
        for key in [*plan.removed, *(f.key for f in plan.to_attach)]:
            if key in present:
                files_service.delete_file(identity, draft_id, key, uow=uow)
    if not plan.to_attach:
        return
    files_service.init_files(identity, draft_id, [{"key": f.key} for f in plan.to_attach], uow=uow)
    for staged in plan.to_attach:
        files_service.set_file_content(
            identity, draft_id, staged.key, staged.content, staged.state["size"], uow=uow
        )
        committed = files_service.commit_file(identity, draft_id, staged.key, uow=uow).to_dict()
        if committed.get("checksum") != staged.state["checksum"]:
            raise FilesNotFetched(
                f"File {staged.key} was stored with checksum {committed.get('checksum')}, not "
                f"the {staged.state['checksum']} it was fetched with; the record was not written."
            )


def with_file_links(data: dict[str, Any], references: Sequence[FileReference]) -> dict[str, Any]:
    """`data` with each file's URL among its related identifiers (files link): the URLs stay
    on the record, nothing is downloaded."""
    metadata = data.setdefault("metadata", {})
    related = metadata.setdefault("related_identifiers", [])
    present = {item.get("identifier") for item in related}
    for reference in references:
        if reference.url in present:
            continue
        present.add(reference.url)
        related.append(
            {"identifier": reference.url, "scheme": "url", "relation_type": {"id": "haspart"}}
        )
    return data
