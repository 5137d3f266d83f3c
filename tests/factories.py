"""What many tests build: harvester payloads, harvesters, their jobs and runs; and waiting.

Importable as ``factories`` from every test package (``tests/`` is on ``sys.path`` through
its conftest, as for ``independent_servers``). The job type id is spelled out here rather
than taken from the package, so that the tests pin the name operators see.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from oarepo_oaipmh_harvester.testing.corpus import Corpus

SAMPLE_TARGET = "oai-sample-records"

OMIT: Any = object()
"""Pass as a field's value to leave the field out of the payload (to get its default)."""

T = TypeVar("T")


# -- harvesters --------------------------------------------------------------------------------
def harvester_data(harvester_id: str, base_url: str, **extra: Any) -> dict[str, Any]:
    """A valid harvester payload into the sample target; `extra` changes or adds fields."""
    data = {
        "id": harvester_id,
        "name": f"Harvester {harvester_id.upper()}",
        "base_url": base_url,
        "metadata_prefix": "oai_dc",
        "target": SAMPLE_TARGET,
        "batch_size": 10,
        **extra,
    }
    return {key: value for key, value in data.items() if value is not OMIT}


def make_harvester(base_url: str, harvester_id: str = "test", **extra: Any):
    """Create a harvester through the service (as the system), returning the service's item."""
    from invenio_access.permissions import system_identity

    from oarepo_oaipmh_harvester.proxies import current_harvester_service

    return current_harvester_service.create(
        system_identity, harvester_data(harvester_id, base_url, **extra)
    )


# -- runs in this process ----------------------------------------------------------------------
def run_harvest(
    harvester_id: str = "test",
    *,
    since_source: Any = None,
    progress: Callable[[Any], None] | None = None,
    **arguments: Any,
):
    """A run of the engine in this process (no invenio-jobs run), asked as every surface
    asks: run arguments by their one name, checked by ``RunArgumentsSchema``. Its `since`,
    like invenio-jobs' one, is automatic unless `since_source` says otherwise."""
    from oarepo_oaipmh_harvester.arguments import RunArgumentsSchema
    from oarepo_oaipmh_harvester.harvest import assembly
    from oarepo_oaipmh_harvester.harvest.request import RunRequest
    from oarepo_oaipmh_harvester.harvest.window import SinceSource

    if isinstance(arguments.get("since"), datetime):
        arguments["since"] = arguments["since"].isoformat()
    request = RunRequest.from_arguments(
        RunArgumentsSchema().load(arguments), since_source or SinceSource.LAST_SUCCESS
    )
    return assembly.run_harvest(harvester_id, request, progress=progress)


# -- jobs and runs -----------------------------------------------------------------------------
def job_type_id(harvester_id: str) -> str:
    """The invenio-jobs task (job type) of a harvester."""
    return f"harvest_oaipmh_records_{harvester_id}"


def jobs_of(harvester_id: str) -> list:
    """The invenio-jobs Job rows that run this harvester, as stored now."""
    from invenio_db import db
    from invenio_jobs.models import Job

    return list(db.session.scalars(db.select(Job).where(Job.task == job_type_id(harvester_id))))


def create_job(harvester_id: str = "test", **extra: Any) -> str:
    """A new active job of the harvester's job type (through invenio-jobs); returns its id."""
    from invenio_access.permissions import system_identity
    from invenio_jobs.proxies import current_jobs_service

    data = {"title": f"Harvest {harvester_id}", "task": job_type_id(harvester_id), "active": True}
    return current_jobs_service.create(system_identity, {**data, **extra}).id


def start_run(job_id: str, args: dict[str, Any] | None = None):
    """Start a run of the job through invenio-jobs; returns the Run row as stored afterwards.

    Celery is eager in most tests, so the run has already finished when this returns.
    """
    from invenio_access.permissions import system_identity
    from invenio_db import db
    from invenio_jobs.models import Run
    from invenio_jobs.proxies import current_runs_service

    data: dict[str, Any] = {"title": "run now"}
    if args is not None:
        data["args"] = {"job_arg_schema": "OAIHarvestArgsSchema", **args}
    item = current_runs_service.create(system_identity, job_id, data)
    db.session.expire_all()
    return db.session.get(Run, item.id)


# -- providers ---------------------------------------------------------------------------------
def record_request_times(provider) -> list[float]:
    """`time.monotonic()` at the arrival of each later request to an OAIPMHProvider.

    The provider's own request log has the arguments only; timing retries and pauses needs
    the moment each request arrived, taken before the provider answers it.
    """
    times: list[float] = []
    lock = threading.Lock()
    original = provider.handle

    def timed(*args: Any, **kwargs: Any):
        with lock:
            times.append(time.monotonic())
        return original(*args, **kwargs)

    provider.handle = timed
    return times


def gaps(times: list[float]) -> list[float]:
    """Seconds between each timestamp and the next."""
    return [later - earlier for earlier, later in zip(times, times[1:], strict=False)]


# -- waiting -----------------------------------------------------------------------------------
def wait_until(
    condition: Callable[[], T],
    *,
    timeout: float = 10.0,
    interval: float = 0.05,
    message: str | None = None,
) -> T:
    """Poll `condition` until it returns something truthy, and return that.

    Fails the test after `timeout` seconds, saying what was awaited: a fixed sleep is either
    too short on a busy machine or wastes time on an idle one.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            what = message or getattr(condition, "__name__", repr(condition))
            raise AssertionError(f"Timed out after {timeout:g} s waiting for: {what}")
        time.sleep(interval)


def holds_for(
    condition: Callable[[], object],
    seconds: float,
    *,
    interval: float = 0.05,
    message: str | None = None,
) -> None:
    """Check that `condition` stays truthy for `seconds`, failing as soon as it does not.

    For what must *not* happen (a producer running ahead, a statistic changing): absence can
    only be observed over a period, which is better watched throughout than slept through.
    """
    deadline = time.monotonic() + seconds
    while True:
        if not condition():
            what = message or getattr(condition, "__name__", repr(condition))
            raise AssertionError(f"No longer true (within {seconds:g} s): {what}")
        if time.monotonic() >= deadline:
            return
        time.sleep(interval)


def frozen_corpus(count: int) -> Corpus:
    """`count` records a minute apart from 2024-01-01, the provider's clock frozen at noon on
    2024-06-01 (so that windows and watermarks are exact)."""
    corpus = Corpus.generate(count, start=datetime(2024, 1, 1, tzinfo=UTC), step_seconds=60)
    corpus.set_clock(datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC))
    return corpus
