"""One harvest run: Identify, plan the window, stream records, write them in batches."""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import sqlalchemy as sa
from flask import current_app
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import Run
from invenio_records_resources.proxies import current_service_registry

from .. import __version__
from ..models import OAIHarvester
from ..protocol.errors import IdDoesNotExist
from ..protocol.records import OAIRecord
from .window import HarvestWindow, SinceSource, plan_window
from .writer import RecordWriter, WriteCounts

if TYPE_CHECKING:
    from ..protocol.client import OAIClient

log = logging.getLogger(__name__)

ProgressCallback = Callable[["HarvestProgress"], None]


@dataclass
class HarvestProgress:
    """Reported after every batch."""

    counts: WriteCounts
    complete_list_size: int | None = None


@dataclass
class HarvestSummary:
    """The outcome of a run, for the job status, the command line and reports."""

    harvester_id: str
    window: HarvestWindow | None
    counts: WriteCounts = field(default_factory=WriteCounts)
    watermark_advanced: bool = False
    requests: int = 0

    @property
    def succeeded(self) -> bool:
        return self.counts.failed == 0

    def describe(self) -> str:
        c = self.counts
        return (
            f"created {c.created}, updated {c.updated}, deleted {c.deleted}, "
            f"unchanged {c.unchanged}, failed {c.failed}"
        )


def _batched(records: Iterable[OAIRecord], size: int) -> Iterator[list[OAIRecord]]:
    iterator = iter(records)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


class HarvestRun:
    """Brings the target service in step with one harvester's provider, once."""

    def __init__(
        self,
        harvester: OAIHarvester,
        *,
        client: OAIClient,
        writer: RecordWriter,
        run_id: uuid.UUID | None = None,
        progress: ProgressCallback | None = None,
    ) -> None:
        self.harvester = harvester
        self.client = client
        self.writer = writer
        self.run_id = run_id
        self.progress = progress

    def execute(
        self,
        *,
        since: datetime | None = None,
        since_source: SinceSource = SinceSource.LAST_SUCCESS,
        full: bool = False,
        identifiers: list[str] | None = None,
    ) -> HarvestSummary:
        """Harvest; protocol failures propagate (nothing of the window is trusted then)."""
        harvester_id = self.harvester.id
        profile = self.client.identify()  # per run: the provider may have changed
        if identifiers:
            summary = HarvestSummary(harvester_id=harvester_id, window=None)
            self._write(summary, self._get_records(identifiers, summary))
        else:
            window = plan_window(
                response_date=profile.response_date,
                granularity=profile.granularity,
                since=since,
                since_source=since_source,
                watermark=self.harvester.watermark,
                full=full,
            )
            log.info("Harvester %s: window %s", harvester_id, window.describe())
            summary = HarvestSummary(harvester_id=harvester_id, window=window)
            self._write(summary, self._list_records(window, summary))
            if summary.succeeded:
                self._advance_watermark(profile.response_date)
                summary.watermark_advanced = True
        summary.requests = self.client.request_count
        return summary

    # -- reading ---------------------------------------------------------------------------
    def _list_records(self, window: HarvestWindow, summary: HarvestSummary) -> Iterator[OAIRecord]:
        setspecs = list(self.harvester.setspecs or []) or [None]
        for set_spec in setspecs:
            stream = self.client.list_records(
                self.harvester.metadata_prefix, set_spec=set_spec, **window.arguments()
            )
            self._stream = stream
            yield from stream

    def _get_records(self, identifiers: list[str], summary: HarvestSummary) -> Iterator[OAIRecord]:
        for identifier in identifiers:
            try:
                yield self.client.get_record(identifier, self.harvester.metadata_prefix)
            except IdDoesNotExist as error:
                summary.counts.fail(identifier, str(error))

    # -- writing ---------------------------------------------------------------------------
    def _write(self, summary: HarvestSummary, records: Iterable[OAIRecord]) -> None:
        batch_size = max(1, int(self.harvester.batch_size or 1))
        for batch in _batched(records, batch_size):
            batch_counts = self.writer.write_batch(
                batch, on_commit=lambda counts: self._update_run_counters(summary, counts)
            )
            summary.counts.add(batch_counts)
            if self.progress is not None:
                stream = getattr(self, "_stream", None)
                self.progress(
                    HarvestProgress(
                        counts=summary.counts,
                        complete_list_size=getattr(stream, "complete_list_size", None),
                    )
                )

    def _update_run_counters(self, summary: HarvestSummary, batch: WriteCounts) -> None:
        if self.run_id is None:
            return
        totals = WriteCounts()
        totals.add(summary.counts)
        totals.add(batch)
        db.session.execute(
            sa.update(Run)
            .where(Run.id == self.run_id)
            .values(
                total_entries=totals.total,
                inserted_entries=totals.created,
                updated_entries=totals.updated + totals.deleted,
                errored_entries=totals.failed,
            )
        )

    def _advance_watermark(self, response_date: datetime) -> None:
        db.session.execute(
            sa.update(OAIHarvester)
            .where(OAIHarvester.id == self.harvester.id)
            .values(watermark=response_date)
        )
        db.session.commit()


# -- assembly from the application's configuration ---------------------------------------
progress_listener: ContextVar[ProgressCallback | None] = ContextVar(
    "oai_harvest_progress_listener", default=None
)
"""Set by an interactive caller (the CLI) to watch a run that invenio-jobs executes."""


def build_client(harvester: OAIHarvester) -> OAIClient:
    """An OAI-PMH client configured from the application (timeouts, retries, politeness)."""
    from ..protocol.client import OAIClient

    config = current_app.config
    user_agent = config["OAI_HARVESTER_USER_AGENT"]
    contact = config["OAI_HARVESTER_CONTACT_EMAIL"]
    if user_agent is None:
        user_agent = f"oarepo-oaipmh-harvester/{__version__} (harvester {harvester.id}"
        user_agent += f"; mailto:{contact})" if contact else ")"
    return OAIClient(
        harvester.base_url,
        timeout=tuple(config["OAI_HARVESTER_REQUEST_TIMEOUT"]),
        max_retries=config["OAI_HARVESTER_MAX_RETRIES"],
        max_retry_wait=config["OAI_HARVESTER_MAX_RETRY_WAIT"],
        max_restarts=config["OAI_HARVESTER_MAX_RESTARTS"],
        user_agent=user_agent,
        request_delay=config["OAI_HARVESTER_REQUEST_DELAY"],
    )


def run_harvest(
    harvester_id: str,
    *,
    since: datetime | None = None,
    since_source: SinceSource = SinceSource.LAST_SUCCESS,
    full: bool = False,
    identifiers: list[str] | None = None,
    run_id: uuid.UUID | None = None,
    progress: ProgressCallback | None = None,
) -> HarvestSummary:
    """Run one harvest of a stored harvester in this process."""
    from ..proxies import current_oai_harvester

    harvester = db.session.get(OAIHarvester, harvester_id)
    if harvester is None:
        raise LookupError(f"No harvester with id {harvester_id!r}.")
    writer = RecordWriter(
        harvester_id=harvester.id,
        service=current_service_registry.get(harvester.target),
        transformer=current_oai_harvester.transformers.get(harvester.transformer),
        identity=system_identity,
        run_id=run_id,
    )
    with build_client(harvester) as client:
        return HarvestRun(
            harvester,
            client=client,
            writer=writer,
            run_id=run_id,
            progress=progress or progress_listener.get(),
        ).execute(since=since, since_source=since_source, full=full, identifiers=identifiers)
