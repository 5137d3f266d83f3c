"""The harvester service: create, read, update, delete and list harvesters."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from invenio_db import db
from invenio_jobs.models import Job, Run, RunStatusEnum
from invenio_jobs.proxies import current_jobs
from invenio_jobs.tasks import execute_run
from marshmallow import ValidationError

from ..harvest.run import ProgressCallback, progress_listener
from ..harvest.window import SinceSource
from ..jobs import job_type_id
from ..models import OAIHarvestedRecord, OAIHarvester
from .errors import HarvesterAlreadyExists, HarvesterNotFound, HarvesterValidationError
from .schemas import HarvesterSchema, apply_defaults

EDITABLE_FIELDS = (
    "name",
    "comment",
    "base_url",
    "metadata_prefix",
    "setspecs",
    "target",
    "transformer",
    "batch_size",
    "harvest_managers",
)


class HarvesterService:
    """Every surface (CLI, REST, administration) goes through these methods."""

    def __init__(self, jobs_registry_getter: Any) -> None:
        # The registry is invenio-jobs' (replaced at finalize): look it up on use.
        self._jobs_registry = jobs_registry_getter

    def _load(self, data: dict, *, partial: bool = False) -> dict:
        try:
            loaded = HarvesterSchema().load(data, partial=partial)
        except ValidationError as error:
            raise HarvesterValidationError(_flatten(error.messages)) from None
        return loaded

    def read(self, identity: Any, harvester_id: str) -> OAIHarvester:
        harvester = db.session.get(OAIHarvester, harvester_id)
        if harvester is None:
            raise HarvesterNotFound(harvester_id)
        return harvester

    def list(self, identity: Any) -> list[OAIHarvester]:
        return list(db.session.scalars(db.select(OAIHarvester).order_by(OAIHarvester.id)))

    def create(self, identity: Any, data: dict) -> OAIHarvester:
        loaded = apply_defaults(self._load(data))
        if db.session.get(OAIHarvester, loaded["id"]) is not None:
            raise HarvesterAlreadyExists(loaded["id"])
        harvester = OAIHarvester(**loaded)
        db.session.add(harvester)
        db.session.commit()
        self._jobs_registry().register_harvester(harvester)
        return harvester

    def update(self, identity: Any, harvester_id: str, data: dict) -> OAIHarvester:
        harvester = self.read(identity, harvester_id)
        if "id" in data and data["id"] != harvester_id:
            raise HarvesterValidationError({"id": ["The id of a harvester cannot change."]})
        current = {name: getattr(harvester, name) for name in EDITABLE_FIELDS}
        merged = {**current, **{k: v for k, v in data.items() if k != "id"}}
        loaded = apply_defaults(self._load({**merged, "id": harvester_id}))
        for name in EDITABLE_FIELDS:
            setattr(harvester, name, loaded[name])
        db.session.commit()
        self._jobs_registry().register_harvester(harvester)
        return harvester

    def delete(self, identity: Any, harvester_id: str) -> None:
        """Delete the harvester, its tracking rows and its invenio-jobs jobs and runs.

        Local records it created stay: removing a source is not a reason to lose data.
        """
        harvester = self.read(identity, harvester_id)
        job_ids = [
            job.id
            for job in db.session.scalars(
                db.select(Job).where(Job.task == job_type_id(harvester_id))
            )
        ]
        if job_ids:
            db.session.execute(db.delete(Run).where(Run.job_id.in_(job_ids)))
            db.session.execute(db.delete(Job).where(Job.id.in_(job_ids)))
        # Explicit, not only ON DELETE CASCADE: SQLite does not enforce foreign keys by default.
        db.session.execute(
            db.delete(OAIHarvestedRecord).where(OAIHarvestedRecord.harvester_id == harvester_id)
        )
        db.session.delete(harvester)
        db.session.commit()
        self._jobs_registry().unregister_harvester(harvester_id)

    # -- runs ------------------------------------------------------------------------------
    def ensure_job(self, identity: Any, harvester_id: str) -> Job:
        """The harvester's invenio-jobs Job, created (inactive, unscheduled) on first use."""
        harvester = self.read(identity, harvester_id)
        task = job_type_id(harvester_id)
        job = db.session.scalars(
            db.select(Job).where(Job.task == task).order_by(Job.created)
        ).first()
        if job is None:
            job = Job(
                title=f"OAI-PMH harvest: {harvester.name}",
                task=task,
                active=False,  # an admin decides on a schedule in the Jobs panel
                default_queue=current_jobs.default_queue,
            )
            db.session.add(job)
            db.session.commit()
        return job

    def harvest_in_process(
        self,
        identity: Any,
        harvester_id: str,
        *,
        since: datetime | None = None,
        full: bool = False,
        identifiers: list[str] | None = None,
        progress: ProgressCallback | None = None,
    ) -> Run:
        """Run a harvest now, in this process, recorded as a run of the harvester's job.

        Without `since` or `full` it continues from the stored watermark.
        """
        job = self.ensure_job(identity, harvester_id)
        source = SinceSource.MANUAL if since else SinceSource.WATERMARK
        run = Run(
            id=uuid.uuid4(),
            task_id=uuid.uuid4(),
            job=job,
            title="Command-line harvest",
            status=RunStatusEnum.QUEUED,
            queue=job.default_queue or current_jobs.default_queue,
            args={
                "harvester_id": harvester_id,
                "since": since.isoformat() if since else None,
                "since_source": source.value,
                "full": full,
                "oai_ids": identifiers or None,
            },
        )
        db.session.add(run)
        db.session.commit()
        token = progress_listener.set(progress)
        try:
            execute_run.apply(kwargs={"run_id": run.id, "identity_id": str(identity.id)})
        finally:
            progress_listener.reset(token)
        db.session.expire_all()
        return db.session.get(Run, run.id)

    def tracked_records(
        self, identity: Any, harvester_id: str, *, errors_only: bool = False
    ) -> Iterator[OAIHarvestedRecord]:
        """The tracking rows of a harvester, by identifier."""
        self.read(identity, harvester_id)
        query = (
            db.select(OAIHarvestedRecord)
            .where(OAIHarvestedRecord.harvester_id == harvester_id)
            .order_by(OAIHarvestedRecord.oai_identifier)
        )
        if errors_only:
            query = query.where(OAIHarvestedRecord.errors.is_not(None))
        yield from db.session.scalars(query.execution_options(yield_per=1000))


def _flatten(messages: Any, prefix: str = "") -> dict[str, list[str]]:
    flat: dict[str, list[str]] = {}
    if isinstance(messages, dict):
        for key, value in messages.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, dict):
                flat.update(_flatten(value, name))
            else:
                flat[name] = [str(v) for v in (value if isinstance(value, list) else [value])]
    else:
        flat[prefix or "_schema"] = [str(messages)]
    return flat
