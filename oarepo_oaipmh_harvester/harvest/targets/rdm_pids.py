"""InvenioRDM's registration of a published record's PIDs, in the batch where it can be.

Decision owned here: which of the ``register_or_update_pid`` tasks that RDM's publish queues
(one per PID of the record, run by a Celery worker after the commit) the harvest does in the
record's own transaction instead. A provider that keeps its PIDs in the local PID store only
(PIDProvider's own ``register``, which marks the PID registered, and ``update``, which does
nothing), as for a harvested DOI (provider ``external``) and the OAI identifier: each of
those tasks loads the record again, expands its links and dereferences its vocabularies for
one status change or for nothing, about 20 ms of a worker's CPU, twice a record. A provider
that talks to a remote service (DataCite, Crossref) overrides them: its task stays queued,
as do the parent's (concept DOI) tasks.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from invenio_db import db
from invenio_db.uow import Operation
from invenio_pidstore.models import PersistentIdentifier
from invenio_rdm_records.services.pids.providers import PIDProvider
from invenio_rdm_records.services.pids.tasks import register_or_update_pid
from invenio_records_resources.services.uow import TaskOp

from ..unit_of_work import BulkIndexingUnitOfWork, OperationsMark


class PidRegistrationInBatch:
    """Registers a published record's local-only PIDs in the batch (see the module)."""

    def __init__(self, service: Any) -> None:
        self._providers = service.config.pids_providers
        """{scheme: {provider name: provider}}, built from the site's config once a run."""

    def take_over(self, uow: BulkIndexingUnitOfWork, since: OperationsMark, record: Any) -> None:
        """Do what the PID tasks that publishing `record` queued (since `since`) would do,
        where no remote service is involved; queue the others again. The tasks act as the
        system, which may always register, so no permission is checked."""
        local: list[tuple[Any, str]] = []
        for op in uow.withdraw_operations(since, _registers_record_pid):
            recid, scheme = op._args[:2]
            provider_and_value = self._local_pid(record, scheme)
            if recid != record.pid.pid_value or provider_and_value is None:
                uow.register(op)
            else:
                local.append(provider_and_value)
        if not local:
            return
        # One read for all of them: the provider reads each PID on its own.
        stored = _stored_pids([(provider.pid_type, value) for provider, value in local])
        for provider, value in local:
            pid = stored.get((provider.pid_type, value)) or provider.get(value)
            if not pid.is_registered():  # a registered one: PIDProvider.update does nothing
                provider.register(pid, record=record)

    def _local_pid(self, record: Any, scheme: str) -> tuple[Any, str] | None:
        """(provider, value) of the record's PID of `scheme`; None when its provider is
        remote (or unknown)."""
        attributes = (record.pids or {}).get(scheme)
        provider = self._providers.get(scheme, {}).get((attributes or {}).get("provider"))
        if provider is None or not _local_only(provider):
            return None
        return provider, attributes["identifier"]


def _stored_pids(
    keys: list[tuple[str, str]],
) -> dict[tuple[str, str], PersistentIdentifier]:
    """The PID store's PIDs of these (type, value) keys, by key."""
    pid = PersistentIdentifier
    found = db.session.scalars(
        sa.select(pid).where(
            sa.or_(*(sa.and_(pid.pid_type == t, pid.pid_value == v) for t, v in keys))
        )
    )
    return {(p.pid_type, p.pid_value): p for p in found}


def _registers_record_pid(op: Operation) -> bool:
    """RDM's task for one of a record's own PIDs (not its parent's)."""
    if not isinstance(op, TaskOp) or op._celery_task is not register_or_update_pid:
        return False
    args = op._args  # (recid, scheme[, parent])
    parent = op._kwargs.get("parent", args[2] if len(args) > 2 else False)
    return len(args) >= 2 and not parent


def _local_only(provider: Any) -> bool:
    provider_cls = type(provider)
    return (
        provider_cls.register is PIDProvider.register and provider_cls.update is PIDProvider.update
    )
