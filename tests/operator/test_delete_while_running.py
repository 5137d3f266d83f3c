"""A harvester is not deleted while a run holds its lock (issue 11, item 11).

The delete used to be accepted: the run crashed, its Run row disappeared and the local records
it had written stayed without tracking rows. The run's lock (`harvest/lock.py`: PostgreSQL's
advisory lock, or the lock file of an SQLite database) is held by the run's process; here
another process holds it, as a worker's run would. A Run row left RUNNING by a killed worker holds no lock and does not block the delete.
"""

from __future__ import annotations

import subprocess

import pytest
from invenio_db import db
from invenio_jobs.models import Job, Run, RunStatusEnum

from oarepo_oaipmh_harvester.cli import oai
from oarepo_oaipmh_harvester.harvest.lock import holder_of
from oarepo_oaipmh_harvester.models import OAIHarvestedRecord, OAIHarvester

API = "/api/oai-harvest/harvesters"


@pytest.fixture()
def as_admin(login, users):
    return login(users.admin)


def release(process: subprocess.Popen) -> None:
    """The run ends: its process lets the lock go and exits."""
    process.stdin.close()
    assert process.wait(timeout=10) == 0


def run_of_a(client, status: RunStatusEnum) -> str:
    """The id of a run of harvester "a" started through the API and put in `status` (eager
    Celery has already finished it)."""
    run_id = client.post(f"{API}/a/run").json["id"]
    set_status(run_id, status)
    return run_id


def set_status(run_id: str, status: RunStatusEnum) -> None:
    db.session.get(Run, run_id).status = status
    db.session.commit()


def what_a_has() -> tuple[bool, int, int, int]:
    """Whether harvester "a" exists, and its tracking rows, jobs and runs."""
    jobs = db.session.query(Job).filter_by(task="harvest_oaipmh_records_a")
    job_ids = [job.id for job in jobs]
    return (
        db.session.get(OAIHarvester, "a") is not None,
        db.session.query(OAIHarvestedRecord).filter_by(harvester_id="a").count(),
        len(job_ids),
        db.session.query(Run).filter(Run.job_id.in_(job_ids)).count(),
    )


@pytest.mark.parametrize("status", [RunStatusEnum.RUNNING, RunStatusEnum.QUEUED])
def test_delete_is_409_naming_the_run_while_it_holds_the_lock_and_works_once_it_ended(
    app, as_admin, tracked, lock_holder, status
):
    run_id = run_of_a(as_admin, status)
    before = what_a_has()
    assert before == (True, 3 + 50, 1, 1)  # the tracked rows and the run's 50 records
    holder = lock_holder("a")
    assert holder_of("a", db.engine) is not None and holder_of("b", db.engine) is None

    res = as_admin.delete(f"{API}/a")
    assert res.status_code == 409, res.json
    assert res.json["message"].startswith(
        f"Harvester 'a' cannot be deleted while run {run_id} ({status.name}) is harvesting it; "
        "nothing was deleted."
    )
    assert what_a_has() == before
    assert as_admin.get(f"{API}/a").status_code == 200

    # The command line goes through the same service.
    result = app.test_cli_runner().invoke(oai, ["harvester", "delete", "a", "--yes"])
    assert result.exit_code != 0 and isinstance(result.exception, SystemExit)
    assert f"cannot be deleted while run {run_id}" in result.output
    assert what_a_has() == before

    # Another harvester is not held up.
    assert as_admin.delete(f"{API}/b").status_code == 204

    release(holder)
    set_status(run_id, RunStatusEnum.SUCCESS)
    assert holder_of("a", db.engine) is None
    assert as_admin.delete(f"{API}/a").status_code == 204
    assert what_a_has() == (False, 0, 0, 0)


def test_a_lock_held_outside_invenio_jobs_is_named_by_its_database_session(
    as_admin, tracked, lock_holder
):
    lock_holder("a")
    holder = holder_of("a", db.engine)
    assert holder.startswith(("database session ", "process "))
    res = as_admin.delete(f"{API}/a")
    assert res.status_code == 409
    assert (
        f"cannot be deleted while a run outside invenio-jobs ({holder}) is harvesting it"
        in res.json["message"]
    )
    assert what_a_has()[:2] == (True, 3)


def test_a_run_left_running_by_a_killed_worker_does_not_block_the_delete(
    as_admin, tracked, lock_holder
):
    run_of_a(as_admin, RunStatusEnum.RUNNING)
    worker = lock_holder("a")
    worker.kill()  # SIGKILL: the server closes its connection, which frees the lock
    worker.wait()
    assert holder_of("a", db.engine) is None

    assert as_admin.delete(f"{API}/a").status_code == 204
    assert what_a_has() == (False, 0, 0, 0)
