"""Draft-enabled services (invenio-drafts-resources, InvenioRDM): every write goes via a draft.

Decision owned here: how a harvested record becomes a published record of such a service
(create a draft and publish it; edit, replace the draft and publish it), what a tombstone
leaves behind (an RDM tombstone where the service keeps them), when a local tombstone is
restored (only one that a source tombstone made: a curator's deletion is reported, not
undone), who wins when a local user has a draft of a harvested record open, what becomes
of a draft the target refuses, when a harvested DOI may go to a record (never one that
another local record holds, unless the harvester takes that record over), and which
community new records join. The policies are a harvester's
:class:`~.options.TargetOptions`. Nothing here is written in bulk: these services have no
bulk write for drafts, and ``create_or_update_many`` (which they inherit) neither creates a
parent record nor updates metadata.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from invenio_db import db

from ...provenance import Provenance, stamp_rdm
from ..counts import RecordValidationError
from ..unit_of_work import BulkIndexingUnitOfWork
from .base import KeptWithErrors, LocalRecordMissing, TargetAdapter
from .dois import (  # noqa: F401 (doi_holders: imported from here too)
    DoiConflict,
    _doi_of,
    _refuse_doi_held,
    doi_holder,
    doi_holders,
    versions_of_one_record,
    without_doi,
)
from .draft_files import DraftFiles
from .files_location import files_location_named
from .matching import LocalTwins, note_created, refuse_twin
from .options import DoiConflictPolicy, InvalidDraftPolicy, LocalDraftPolicy
from .rdm_state import is_deleted, is_rdm_service, why_deleted
from .rdm_versions import GONE, live_versions
from .records import index_records_of
from .shared import SharedRecords

try:  # InvenioRDM's soft deletion; a plain drafts service deletes for good
    from invenio_rdm_records.services.errors import DeletionStatusException, RecordDeletedException
except ImportError:  # pragma: no cover - exercised only without invenio-rdm-records

    class DeletionStatusException(Exception):  # type: ignore[no-redef]
        """Never raised: the service has no deletion status."""

    class RecordDeletedException(Exception):  # type: ignore[no-redef]
        """Never raised: the service has no deletion status."""


log = logging.getLogger(__name__)


class LocalDraftOpen(Exception):
    """A local user's draft keeps a harvested record from being updated (local wins)."""


class DeletedLocally(Exception):
    """A curator deleted the local record; a changed source record does not bring it back."""


class CommunityInclusionFailed(Exception):
    """A new record could not join the harvester's community (the record is not written)."""


class DraftsServiceTarget(TargetAdapter):
    """Writes into a drafts service record by record: draft, then publish, in the caller's
    unit of work (and savepoint), so that a failure leaves neither draft nor record."""

    def __init__(
        self,
        service: Any,
        identity: Any,
        *,
        custom_fields: frozenset[str] = frozenset(),
        files: DraftFiles | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(service, identity, **kwargs)
        self.files = files
        """A record's files (files link or copy); None: metadata only."""
        self.twins = LocalTwins(service.record_cls.model_cls, self.options.match_on)
        self.shared = SharedRecords(self.harvester_id, service.record_cls.model_cls, self.options)
        self._community_ids: dict[str, str] = {}
        """Slug or id -> id of the communities of sets, looked up once per run."""
        self.custom_fields = custom_fields
        """The custom fields the site defined (RDM_CUSTOM_FIELDS): provenance goes there."""
        self._is_rdm = is_rdm_service(service)
        self._pid_registration = None
        if self._is_rdm:
            from .rdm_pids import PidRegistrationInBatch  # needs invenio-rdm-records

            self._pid_registration = PidRegistrationInBatch(service)

    def with_provenance(self, data: dict[str, Any], provenance: Provenance) -> dict[str, Any]:
        if not self._is_rdm:
            return data
        return stamp_rdm(data, provenance, self.custom_fields)

    expands_references = True  # InvenioRDM's vocabulary relations

    @property
    def keeps_deleted_pids(self) -> bool:
        """RDM keeps a tombstone under the pid and can restore it: the pid stays tracked."""
        return callable(getattr(self.service, "restore_record", None))

    @property
    def writes_grow_with_transaction(self) -> bool:
        """About 100 flushes a record, each walking the versioned objects of the whole
        transaction (SQLAlchemy-Continuum)."""
        return True

    def scale_warnings(self) -> list[str]:
        return [*self._parent_index_warnings(), *self.twins.scale_warnings()]

    def _parent_index_warnings(self) -> list[str]:
        """Publishing looks the record's versions and drafts up by parent, and
        invenio-rdm-records does not index ``parent_id``: each publish then reads those
        tables whole (about 50 ms a read at 200,000 records; three reads a record)."""
        tables = (
            self.service.record_cls.model_cls.__table__,
            self.service.draft_cls.model_cls.__table__,
        )
        try:
            # The session's connection: an index made in this transaction counts.
            inspector = sa.inspect(db.session.connection())
            unindexed = [
                table.name
                for table in tables
                if "parent_id" in table.c
                and not any(
                    index["column_names"][:1] == ["parent_id"]
                    for index in inspector.get_indexes(table.name)
                )
            ]
        except Exception as error:  # noqa: BLE001 - a hint, never a reason not to harvest
            log.warning("Could not read the indices of %s: %r", [t.name for t in tables], error)
            return []
        if not unindexed:
            return []
        concurrently = " CONCURRENTLY" if db.engine.name == "postgresql" else ""
        statements = " ".join(
            f"CREATE INDEX{concurrently} ix_{name}_parent_id ON {name} (parent_id);"
            for name in unindexed
        )
        return [
            f"{', '.join(unindexed)} have no index on parent_id: each record published reads "
            f"them whole, so every write gets slower as the repository grows (a first harvest "
            f"of 200,000 records would take more than twice as long). Create the indices once: "
            f"{statements}"
        ]

    @property
    def keeps_files(self) -> bool:
        return self.files is not None and self.files.active

    def stage_files(
        self, references: Sequence[Any], previous: Sequence[dict] | None, *, dry_run: bool = False
    ) -> None:
        if self.files is not None:
            self.files.stage(references, previous, dry_run=dry_run)

    def take_files_report(self) -> tuple[list[dict] | None, list[str], dict[str, int]]:
        if self.files is None:
            return super().take_files_report()
        return self.files.take_report()

    def create_or_update(
        self, pid: str | None, data: dict[str, Any], uow: BulkIndexingUnitOfWork, *, restore: bool
    ) -> tuple[str, bool]:
        if self.files is not None:
            data = self.files.prepared(data)
        if pid and self.shared.links(pid):  # another harvester's record: joined, not written
            return self._join(pid, data, uow, None), False
        if pid and self._is_unpublished_draft(pid):
            # A draft kept for a curator (invalid_drafts = keep): this harvest continues it.
            return self._publish_draft(pid, data, uow, update=True), True
        if not pid:
            doi = _doi_of(data)
            holder = self._holder_of(doi) if doi else None
            taking_over = self.options.doi_conflicts is DoiConflictPolicy.TAKE_OVER
            if holder and taking_over:
                return self._take_over(holder, f"local record {holder}, which held DOI {doi}",
                                       data, uow)  # fmt: skip
            shared = self.shared.find(data, doi, holder)  # a work another harvester brought
            if shared is not None:
                return self._join(shared.pid, data, uow, shared.describe()), False
            _refuse_doi_held(doi, holder, pid=None)  # one look-up decides both
            twin = self.twins.find(data)  # by the identifiers besides the DOI (match_on)
            if twin is not None and not taking_over:
                refuse_twin(twin)
            if twin is not None:
                return self._take_over(twin.pid, twin.describe(), data, uow)
            return self._create(data, uow), True
        return super().create_or_update(pid, data, uow, restore=restore)

    def _join(self, pid: str, data: dict, uow: Any, what: str | None) -> str:
        current = self.read(pid)
        if current is None:
            raise LocalRecordMissing(pid)
        update = lambda joined: self.update(pid, joined, uow)  # noqa: E731
        return self.shared.join(pid, current, data, what, write=update, notices=self._notices)

    def took_joined(self) -> bool:
        return self.shared.take_joined()

    def _take_over(self, pid: str, what: str, data: dict, uow: Any) -> tuple[str, bool]:
        self._notices.append(f"Took over {what} (doi_conflicts take-over); it is updated "
                             f"from the source from now on.")  # fmt: skip
        return self.update(pid, data, uow), False

    def create(self, data: dict[str, Any], uow: BulkIndexingUnitOfWork) -> str:
        self._refuse_doi_of_another(data, pid=None)
        return self._create(data, uow)

    def _create(self, data: dict[str, Any], uow: BulkIndexingUnitOfWork) -> str:
        """Create and publish; the caller has made sure that no other record holds the DOI."""
        with files_location_named():
            draft = self.service.create(self.identity, data, uow=uow)
        if self.files is not None:
            self.files.attach(draft.id, uow, fresh=True)
        return note_created(self._publish_draft(draft.id, data, uow, draft=draft))

    def restore(self, pid: str, uow: BulkIndexingUnitOfWork) -> None:
        if self.keeps_deleted_pids and is_deleted(self._published(pid)):
            self.service.restore_record(self.identity, pid, uow=uow)

    def update(self, pid: str, data: dict[str, Any], uow: BulkIndexingUnitOfWork) -> str:
        record = self._published(pid)
        data = self._refuse_doi_of_another(data, pid=pid)
        local_draft = self._has_open_draft(pid)
        if local_draft and self.options.local_drafts is LocalDraftPolicy.LOCAL_WINS:
            raise LocalDraftOpen(
                f"A local draft is open for record {pid}; the harvested changes were not "
                f"applied (local wins). Publish or discard the draft, then harvest again."
            )
        if is_deleted(record):
            # A tombstone the harvest made was restored before this (see restore()).
            if not self.keeps_deleted_pids:
                raise LocalRecordMissing(pid)
            raise DeletedLocally(
                f"Record {pid} was deleted in this repository{why_deleted(record)}, and "
                f"its source record has changed since; the change was not applied and "
                f"the record stays deleted. Restore the record to let harvests update "
                f"it again."
            )
        if local_draft:
            log.warning(
                "Harvester %s: the local draft of %s is replaced by the harvested record "
                "(harvest wins).",
                self.harvester_id,
                pid,
            )
            self._notices.append(
                f"The local draft of record {pid} was replaced by the harvested data and "
                f"published (local_drafts harvest-wins)."
            )
        if self.files is not None and self.files.changed:
            return self._update_files(pid, data, uow, local_draft=local_draft)
        with files_location_named():
            self.service.edit(self.identity, pid, uow=uow)
        draft = self.service.update_draft(self.identity, pid, data, uow=uow)
        # A local draft is not ours to delete: the writer's savepoint brings it back. An
        # edit draft of ours with errors is never kept: the published record stays as it was.
        self._refuse_invalid(draft, uow, discard=not local_draft, keep=False)
        return self._publish(pid, uow)

    def delete(self, pid: str, uow: BulkIndexingUnitOfWork) -> None:
        try:
            if self._is_unpublished_draft(pid):  # kept for a curator, never published
                self.service.delete_draft(self.identity, pid, uow=uow)
            elif callable(getattr(self.service, "delete_record", None)):
                # A tombstone, so that links to the record say it was removed, and why.
                note = f"Deleted at its OAI-PMH source; removed by harvester {self.harvester_id}."
                self.service.delete_record(self.identity, pid, {"note": note}, uow=uow)
            else:
                self.service.delete(self.identity, pid, uow=uow)
        except (*GONE, DeletionStatusException):
            pass  # already deleted, or gone: the desired end state

    def delete_every_version(self, pid: str, uow: BulkIndexingUnitOfWork) -> None:
        for version in live_versions(self.service, pid):
            self.delete(version, uow)

    def reindex(self, pids: Sequence[str], uow: BulkIndexingUnitOfWork) -> set[str]:
        return index_records_of(self.service, pids, uow, gone=GONE)

    def read(self, pid: str) -> dict[str, Any] | None:
        """The published record's data; None when it is gone or a tombstone."""
        try:
            return self.service.read(self.identity, pid).data
        except (*GONE, RecordDeletedException):
            return None

    def _update_files(
        self, pid: str, data: dict[str, Any], uow: BulkIndexingUnitOfWork, *, local_draft: bool
    ) -> str:
        """Publish a record whose files changed: a new version (its pid is returned, and the
        tracking row follows it), or the record itself where files_changes says replace."""
        with files_location_named():
            draft_id, new_version = self.files.draft_for_changes(pid, uow)
        if new_version and _doi_of(data):
            # RDM gives a DOI to one record: the version it was harvested into keeps it.
            self._notices.append(
                f"Record {pid} keeps DOI {_doi_of(data)}; its new version {draft_id} (made for "
                f"changed files) has none of its own."
            )
            data = without_doi(data)
        # The data first: it enables files on a version of a record that had none (RDM then
        # reports the files missing, which the attach puts in; publishing checks again).
        draft = self.service.update_draft(self.identity, draft_id, data, uow=uow)
        self.files.forgive_missing_files(draft)
        self._refuse_invalid(draft, uow, discard=new_version or not local_draft, keep=False)
        self.files.attach(draft_id, uow)
        return self._publish(draft_id, uow)

    # -- helpers ------------------------------------------------------------------------
    def _publish_draft(
        self,
        pid: str,
        data: dict[str, Any],
        uow: BulkIndexingUnitOfWork,
        *,
        draft: Any = None,
        update: bool = False,
    ) -> str:
        """Publish a new record's draft (replacing its data first when `update`)."""
        if update:
            data = self._refuse_doi_of_another(data, pid=pid)
            draft = self.service.update_draft(self.identity, pid, data, uow=uow)
        # RDM saves a draft with schema errors and reports them; publishing it would drop
        # the invalid fields silently.
        keep = self.options.invalid_drafts is InvalidDraftPolicy.KEEP
        self._refuse_invalid(draft, uow, discard=not keep, keep=keep)
        published = self._publish(pid, uow)
        self._include_in_community(published, uow)
        return published

    def _publish(self, pid: str, uow: BulkIndexingUnitOfWork) -> str:
        since = uow.mark()
        published = self.service.publish(self.identity, pid, uow=uow)
        if self._pid_registration is not None:
            # The result item's record: resolving it again would cost two queries.
            self._pid_registration.take_over(uow, since, published._record)
        return published.id

    def _published(self, pid: str) -> Any:
        try:
            return self.service.record_cls.pid.resolve(pid)
        except GONE as error:
            raise LocalRecordMissing(pid) from error

    def _is_unpublished_draft(self, pid: str) -> bool:
        """A draft that was never published (one kept for a curator)."""
        try:
            self.service.record_cls.pid.resolve(pid)
            return False
        except GONE:
            return self._has_open_draft(pid)

    def _has_open_draft(self, pid: str) -> bool:
        """A draft of the record exists (publishing soft-deletes ours)."""
        try:
            self.service.draft_cls.pid.resolve(pid, registered_only=False)
        except GONE:
            return False
        return True

    def _refuse_invalid(
        self, draft: Any, uow: BulkIndexingUnitOfWork, *, discard: bool, keep: bool
    ) -> None:
        errors = getattr(draft, "errors", None)
        if not errors:
            return
        if keep:
            raise KeptWithErrors(draft.id, list(errors))
        if discard:
            self.service.delete_draft(self.identity, draft.id, uow=uow)
        raise RecordValidationError(list(errors))

    def _holder_of(self, doi: str) -> str | None:
        return doi_holder(self.service, doi, gone=GONE)

    def _refuse_doi_of_another(self, data: dict[str, Any], *, pid: str | None) -> dict[str, Any]:
        """`data`, unless another record holds its DOI; an earlier version of the record `pid`
        (made for changed files) keeps the DOI, and `data` comes back without it."""
        doi = _doi_of(data)
        holder = self._holder_of(doi) if doi else None
        if holder and pid and holder != pid and versions_of_one_record(self.service, holder, pid):
            return without_doi(data)
        _refuse_doi_held(doi, holder, pid=pid)
        return data

    def _include_in_community(self, pid: str, uow: BulkIndexingUnitOfWork) -> None:
        community = self.options.community
        if community:
            self._include(pid, [community], uow)

    def place_in_sets(self, pid: str, sets: Sequence[str], uow: BulkIndexingUnitOfWork) -> None:
        """A record in a set joins the set's community (set_communities), each once. Sets
        are hierarchical: a record in ``phys:astro`` is in ``phys`` too."""
        mapping = self.options.set_communities
        wanted = list(
            dict.fromkeys(
                community
                for mapped, community in mapping.items()
                for spec in sets
                if spec == mapped or spec.startswith(mapped + ":")
            )
        )
        if not wanted:
            return
        record = self.service.record_cls.pid.resolve(pid)
        member_of = set(map(str, getattr(record.parent.communities, "ids", None) or ()))
        missing = [c for c in wanted if self._community_id(c) not in member_of]
        if missing:
            self._include(pid, missing, uow)

    def _community_id(self, slug_or_id: str) -> str:
        if slug_or_id not in self._community_ids:
            from invenio_communities.proxies import current_communities

            community = current_communities.service.record_cls.pid.resolve(slug_or_id)
            self._community_ids[slug_or_id] = str(community.id)
        return self._community_ids[slug_or_id]

    def _include(self, pid: str, communities: list[str], uow: BulkIndexingUnitOfWork) -> None:
        from invenio_rdm_records.proxies import current_rdm_records

        _, errors = current_rdm_records.record_communities_service.add(
            self.identity,
            pid,
            {"communities": [{"id": c, "require_review": False} for c in communities]},
            uow=uow,
        )
        if errors:
            raise CommunityInclusionFailed(
                f"Record {pid} could not be included in community "
                f"{errors[0].get('community') or communities[0]!r}: {errors[0].get('message')}"
            )
