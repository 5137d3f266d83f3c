"""The interface between the batch writer and a target service.

Decision owned here: what the writer may ask of any target (create, update, delete, bulk
write, reindex, read by pid), and what "create it again" means when a local record is gone.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from invenio_db import db

from ...provenance import Provenance
from ..unit_of_work import BulkIndexingUnitOfWork
from .options import TargetOptions
from .shared import hand_over


class LocalRecordMissing(Exception):
    """The local record of a pid is gone (deleted locally or by an earlier tombstone)."""


class BulkWriteRefused(Exception):
    """A bulk write must be undone and the batch written one record at a time."""


class KeptWithErrors(Exception):
    """The target kept what was written (a draft for a curator to fix) but refused to make
    it a record: the record failed, yet its savepoint must not be rolled back."""

    def __init__(self, pid: str, errors: list[dict[str, Any]]) -> None:
        super().__init__(pid, errors)
        self.pid = pid
        self.errors = errors


@dataclass(frozen=True)
class WrittenItem:
    """The outcome of one record of a bulk write: its pid, or its validation errors."""

    pid: str | None
    created: bool
    errors: list[dict[str, Any]] | None = None


class TargetAdapter(abc.ABC):
    """Writes transformed records into one service as one identity.

    Every method runs inside the writer's unit of work (and savepoint); none commits.
    """

    def __init__(
        self,
        service: Any,
        identity: Any,
        *,
        harvester_id: str = "",
        options: TargetOptions | None = None,
    ) -> None:
        self.service = service
        self.identity = identity
        self.harvester_id = harvester_id
        self.options = options or TargetOptions()
        self._notices: list[str] = []

    def with_provenance(self, data: dict[str, Any], provenance: Provenance) -> dict[str, Any]:
        """`data` saying where the record came from, as this target can hold it (a plain
        service's schema is the site's own: nothing is added)."""
        return data

    # Hooks, deliberately not abstract: only a target that keeps files stages them.
    def stage_files(  # noqa: B027
        self, references: Sequence[Any], previous: Sequence[dict] | None, *, dry_run: bool = False
    ) -> None:
        """Take the files of the record written next (`previous`: what its tracking row
        kept of them), fetched where the harvester copies files, before anything is written
        (`dry_run`: named, not fetched)."""

    def take_files_report(self) -> tuple[list[dict] | None, list[str], dict[str, int]]:
        """(the tracking row's files, warnings, counts of fetched/bytes/unchanged/failed) of the
        record written last."""
        return None, [], {}

    def take_notices(self) -> list[str]:
        """What the last write did that an operator should know of (then forgotten)."""
        notices, self._notices = self._notices, []
        return notices

    @abc.abstractmethod
    def create(self, data: dict[str, Any], uow: BulkIndexingUnitOfWork) -> str:
        """Create a local record; its pid."""

    @abc.abstractmethod
    def update(self, pid: str, data: dict[str, Any], uow: BulkIndexingUnitOfWork) -> str:
        """Replace the data of the local record `pid`; LocalRecordMissing when it is gone."""

    # A hook, deliberately not abstract: a target that deletes for good leaves no tombstone.
    def restore(self, pid: str, uow: BulkIndexingUnitOfWork) -> None:  # noqa: B027
        """Bring back the local tombstone of `pid`. Asked only where the source had deleted
        the record and has it again, so the tombstone is the harvest's own (one a curator
        made is not restored: :meth:`update` refuses it)."""

    @abc.abstractmethod
    def delete(self, pid: str, uow: BulkIndexingUnitOfWork) -> None:
        """Remove the local record `pid`; a record that is already gone is not an error."""

    def delete_alone(self, pid: str, uow: BulkIndexingUnitOfWork) -> bool:
        """:meth:`delete` in a savepoint of its own (a failure undoes only this record); False,
        nothing deleted, where another harvester's source still holds the record (dedupe:
        that harvester keeps it, :func:`.shared.hand_over`)."""
        holders = hand_over(self.harvester_id, pid)
        if holders:
            self._notices.append(
                f"Local record {pid} was not deleted: harvester {', '.join(holders)} still "
                f"brings the same work (dedupe)."
            )
            return False
        with db.session.begin_nested():
            self.delete_every_version(pid, uow)
        return True

    def delete_every_version(self, pid: str, uow: BulkIndexingUnitOfWork) -> None:
        """:meth:`delete` of `pid` and of the other versions of its record, where the target
        keeps versions (a new version for changed files): the source deleted the work."""
        self.delete(pid, uow)

    def took_joined(self) -> bool:
        """Whether the last write joined a record another harvester holds (dedupe: the
        tracking row is then linked to it); then forgotten."""
        return False

    @property
    def keeps_files(self) -> bool:
        """Whether records are written with their files (then one at a time: a bulk write
        has no files)."""
        return False

    expands_references = False
    """Whether an object with an ``id`` (a vocabulary entry) comes back from :meth:`read`
    expanded (titles and the like): a local edit is then written back by the id alone."""

    @property
    def keeps_deleted_pids(self) -> bool:
        """Whether a deleted record stays under its pid (a tombstone that can be restored):
        then the tracking row keeps the pid, and a record that comes back updates it."""
        return False

    @property
    def writes_grow_with_transaction(self) -> bool:
        """Whether a record's write costs more the more its transaction holds (a versioned
        draft-enabled service): the run then caps its batches
        (``OAI_HARVESTER_DRAFTS_LARGEST_BATCH``)."""
        return False

    def scale_warnings(self) -> list[str]:
        """What makes each write into this target slower the more records it holds (said in
        the run log at the start of each run)."""
        return []

    @property
    def supports_bulk(self) -> bool:
        """Whether :meth:`write_many` may be used (asked once per adapter)."""
        return False

    def write_many(
        self,
        items: Sequence[tuple[str | None, dict[str, Any]]],
        uow: BulkIndexingUnitOfWork,
    ) -> list[WrittenItem]:
        """Create or update (pid, data) pairs at once; BulkWriteRefused undoes the attempt."""
        raise BulkWriteRefused

    @abc.abstractmethod
    def reindex(self, pids: Sequence[str], uow: BulkIndexingUnitOfWork) -> set[str]:
        """Queue the search documents of these records in `uow`; the pids that were found."""

    @abc.abstractmethod
    def read(self, pid: str) -> dict[str, Any] | None:
        """The data the target holds for `pid`, None when there is no such record."""

    def upsert(
        self,
        pid: str | None,
        data: dict[str, Any],
        uow: BulkIndexingUnitOfWork,
        *,
        restore: bool = False,
        sets: Sequence[str] = (),
    ) -> tuple[str, bool]:
        """(pid, created): the record written (:meth:`create_or_update`), then placed by the
        OAI sets the source record is in (:meth:`place_in_sets`)."""
        written, created = self.create_or_update(pid, data, uow, restore=restore)
        self.place_in_sets(written, sets, uow)
        return written, created

    def create_or_update(
        self, pid: str | None, data: dict[str, Any], uow: BulkIndexingUnitOfWork, *, restore: bool
    ) -> tuple[str, bool]:
        """(pid, created): update the record of `pid`, or create it when it has none or is gone."""
        if pid:
            try:
                if restore:
                    self.restore(pid, uow)
                return self.update(pid, data, uow), False
            except LocalRecordMissing:
                pass  # removed locally (or by an earlier tombstone): create it again
        return self.create(data, uow), True

    # A hook, deliberately not abstract: most targets have no place for a set.
    def place_in_sets(self, pid: str, sets: Sequence[str], uow: BulkIndexingUnitOfWork) -> None:  # noqa: B027
        """Put the record `pid` where the source's sets say it belongs (a plain service has
        no such place)."""
