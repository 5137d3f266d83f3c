"""One run per harvester: a second process's run fails at once (or waits), never writes alongside."""

import subprocess
import sys
import threading
import time

import pytest
from factories import create_job, make_harvester, start_run
from invenio_jobs.models import RunStatusEnum

from oarepo_oaipmh_harvester.harvest.lock import HarvesterBusy
from oarepo_oaipmh_harvester.harvest.run import run_harvest

HOLDER = """
import sys
from sqlalchemy import create_engine
from oarepo_oaipmh_harvester.harvest.lock import exclusive_run
with exclusive_run(sys.argv[2], create_engine(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.read()  # hold the lock until the test closes our stdin (or kills us)
"""


@pytest.fixture()
def other_process(app, db_uri):
    """Another process holding the harvester's lock, as a second worker's run would."""
    if not db_uri.startswith("postgresql"):
        pytest.skip("The run lock is a PostgreSQL advisory lock; SQLite has one writer anyway.")
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, db_uri, "test"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline().strip() == "locked"
    yield process
    process.kill()
    process.wait()


def test_second_run_fails_at_once_and_touches_nothing(app, db, provider, other_process):
    make_harvester(provider.base_url)
    started = time.monotonic()
    with pytest.raises(HarvesterBusy, match="Another run of harvester 'test' is in progress"):
        run_harvest("test")
    assert time.monotonic() - started < 2
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
    app.config["OAI_HARVESTER_CONCURRENT_RUNS"] = "wait"
    try:
        threading.Timer(1.5, other_process.stdin.close).start()
        started = time.monotonic()
        summary = run_harvest("test")
        assert time.monotonic() - started >= 1.0
        assert summary.succeeded and summary.counts.created == 50
    finally:
        app.config["OAI_HARVESTER_CONCURRENT_RUNS"] = "fail"


def test_a_crashed_holder_does_not_lock_for_ever(app, db, clean_index, provider, other_process):
    make_harvester(provider.base_url)
    other_process.kill()  # SIGKILL: no cleanup; the server drops its connection and the lock
    other_process.wait()
    time.sleep(0.2)
    assert run_harvest("test").succeeded
