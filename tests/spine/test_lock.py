"""One run per harvester: a second process's run fails at once (or waits), never writes alongside
(PostgreSQL's advisory lock, or the lock file of an SQLite database)."""

import threading
import time

import pytest
from factories import (
    create_job,
    make_harvester,
    record_request_times,
    run_harvest,
    start_run,
    wait_until,
)
from invenio_jobs.models import RunStatusEnum

from oarepo_oaipmh_harvester.harvest.lock import HarvesterBusy, holder_of


@pytest.fixture()
def other_process(app, lock_holder):
    """Another process holding the harvester's lock, as a second worker's run would."""
    return lock_holder("test")


def test_second_run_fails_at_once_and_touches_nothing(app, db, provider, other_process):
    make_harvester(provider.base_url)
    started = time.monotonic()
    with pytest.raises(HarvesterBusy, match="Another run of harvester 'test' is in progress"):
        run_harvest("test")
    # Waiting would last until the holder lets go, which it never does here.
    assert time.monotonic() - started < 5
    assert provider.requests == []


def test_second_run_through_invenio_jobs_is_failed_with_the_reason(
    app, db, provider, other_process
):
    make_harvester(provider.base_url)
    run = start_run(create_job())
    assert run.status == RunStatusEnum.FAILED
    assert "in progress" in run.message


def test_waiting_mode_runs_after_the_first_finishes(app, db, clean_index, provider, other_process):
    make_harvester(provider.base_url)
    arrivals = record_request_times(provider)
    released: list[float] = []

    def release() -> None:
        released.append(time.monotonic())
        other_process.stdin.close()  # the holder ends its run

    app.config["OAI_HARVESTER_CONCURRENT_RUNS"] = "wait"
    try:
        threading.Timer(1.5, release).start()
        started = time.monotonic()
        summary = run_harvest("test")
        assert time.monotonic() - started >= 1.0
        assert summary.succeeded and summary.counts.created == 50
        assert arrivals[0] > released[0]  # not one request before the other run ended
    finally:
        app.config["OAI_HARVESTER_CONCURRENT_RUNS"] = "fail"


def test_a_crashed_holder_does_not_lock_for_ever(app, db, clean_index, provider, other_process):
    make_harvester(provider.base_url)
    assert holder_of("test", db.engine) is not None  # the probe below sees the holder's lock
    other_process.kill()  # SIGKILL: no cleanup; PostgreSQL drops its connection and the
    other_process.wait()  # lock, the kernel its lock file's flock (SQLite)
    wait_until(
        lambda: holder_of("test", db.engine) is None,
        message="the killed holder's lock to be dropped",
    )
    assert run_harvest("test").succeeded
