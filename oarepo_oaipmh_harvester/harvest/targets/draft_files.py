"""The files side of writing a harvested record into a drafts service (files link or copy).

Decision owned here: what a record's data says of its files (links among its related
identifiers, or files enabled when the record holds any; stored restricted when a restricted
file was fetched), and how changed files reach a published record: a new version that carries
the unchanged files over (import), or the record's own edit draft where the harvester says
replace and the site does not lock published files (RDM_LOCK_EDIT_PUBLISHED_FILES; where it
does, a new version is made and the operator told).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...transformers.files import FileReference
from .options import FilesChangePolicy, FilesMode, FilesOptions
from .record_files import FilesPlan, RecordFiles, attach_files, with_file_links


class DraftFiles:
    """Stages one record's files at a time and puts them into its drafts."""

    def __init__(
        self,
        service: Any,
        identity: Any,
        options: FilesOptions,
        record_files: RecordFiles | None = None,
    ) -> None:
        self.service = service
        self.identity = identity
        self.options = options
        self.record_files = record_files
        self.references: list[FileReference] = []
        self.plan: FilesPlan | None = None
        self.notices: list[str] = []
        self.dry_run = False
        """A preview: files are named, not fetched, and the record keeps the files it has."""

    @property
    def active(self) -> bool:
        return self.options.mode is not FilesMode.NONE

    def stage(
        self,
        references: Sequence[FileReference],
        previous: Sequence[dict[str, Any]] | None,
        *,
        dry_run: bool = False,
    ) -> None:
        """Take the next record's files (fetched now, before any draft is touched)."""
        self.close()
        self.dry_run = dry_run
        self.references = list(references)
        if self.options.mode is FilesMode.COPY and self.record_files is not None:
            self.plan = self.record_files.stage(self.references, previous, fetch=not dry_run)

    @property
    def changed(self) -> bool:
        return self.plan is not None and self.plan.changed and not self.dry_run

    def prepared(self, data: dict[str, Any]) -> dict[str, Any]:
        """The record's data as it holds its files."""
        if self.options.mode is FilesMode.LINK:
            return with_file_links(data, self.references)
        if self.plan is None:
            return data
        if self.dry_run:  # nothing is attached: the record keeps what it holds
            holds = bool(self.plan.kept or self.plan.held_before)
        else:
            holds = bool(self.plan.kept or self.plan.to_attach)
        data = {**data, "files": {**(data.get("files") or {}), "enabled": holds}}
        if holds and self.plan.restricted:
            data["access"] = {**(data.get("access") or {}), "files": "restricted"}
        return data

    def attach(self, draft_id: str, uow: Any, *, fresh: bool = False) -> None:
        """The staged files into the draft (`fresh`: a new record's, which holds none)."""
        if self.plan is not None:
            attach_files(
                self.service.draft_files, self.identity, draft_id, self.plan, uow, fresh=fresh
            )

    def forgive_missing_files(self, draft: Any) -> None:
        """Drop a draft's "files enabled but none uploaded" error when this write is about to
        attach files (the error is RDM's, reported before the files are in)."""
        if self.plan is None or not self.plan.to_attach or not getattr(draft, "errors", None):
            return
        draft.errors[:] = [e for e in draft.errors if e.get("field") != "files.enabled"]

    def draft_for_changes(self, pid: str, uow: Any) -> tuple[str, bool]:
        """(draft id, new version?): where a record's changed files go."""
        if self.options.changes is FilesChangePolicy.REPLACE:
            if not self._site_locks_published_files(pid):
                self.service.edit(self.identity, pid, uow=uow)
                return pid, False
            self.notices.append(
                f"Record {pid}: this site locks the files of published records "
                f"(RDM_LOCK_EDIT_PUBLISHED_FILES), so its changed files went into a new version "
                f"(files_changes replace)."
            )
        draft = self.service.new_version(self.identity, pid, uow=uow)
        if self.service.record_cls.pid.resolve(pid).files.enabled:
            self.service.import_files(self.identity, draft.id, uow=uow)
        return draft.id, True

    def _site_locks_published_files(self, pid: str) -> bool:
        record = self.service.record_cls.pid.resolve(pid)
        return bool(
            self.service.config.lock_edit_published_files(
                self.service, self.identity, record=record
            )
        )

    def take_report(self) -> tuple[list[dict[str, Any]] | None, list[str], dict[str, int]]:
        """(the tracking row's files, warnings, counts) of the record written last."""
        notices, self.notices = self.notices, []
        references, self.references = self.references, []
        if self.plan is None:
            links = [{"key": r.name, "url": r.url, "status": "linked"} for r in references]
            return (links or None) if self.active else None, notices, {}
        plan = self.plan
        self.close()
        return plan.states() or None, [*plan.warnings, *notices], plan.counts()

    def close(self) -> None:
        if self.plan is not None:
            self.plan.close()
        self.plan = None
