"""One run per harvester: a second process's run fails at once (or waits), never writes alongside."""

import subprocess
import sys
import threading
import time

import pytest
from invenio_access.permissions import system_identity
from invenio_db import db as db_
from invenio_jobs.models import Run, RunStatusEnum
from invenio_jobs.proxies import current_runs_service

from oarepo_oaipmh_harvester.harvest.assembly import run_harvest
from oarepo_oaipmh_harvester.harvest.lock import HarvesterBusy

from .helpers import make_harvester
from .test_jobs import create_job

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
    job_id = create_job()
    item = current_runs_service.create(system_identity, job_id, {"title": "overlapping"})
    db_.session.expire_all()
    run = db_.session.get(Run, item.id)
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
