"""Fork safety on a real site: nothing of the database or of the search client that the
application opens while it boots may be shared by the processes forked from it.

gunicorn ``--preload`` makes the application once and forks two workers; the Celery prefork
worker does the same for its two children. A connection left in a pool at boot is inherited
by every child, which then talk over one socket: the first requests and the first tasks of
each child fail (or corrupt each other's results). The site's setup (conftest.py) made those
first requests and queued those first tasks before the worker started; here they are judged.
"""

from __future__ import annotations

import pytest

from .conftest import (
    FIRST_API_REQUESTS,
    FIRST_PAGE_REQUESTS,
    FIRST_REQUEST_ROUNDS,
    FORK_CHECK_BATCH_SIZE,
    FORK_CHECK_HARVESTER,
    FORK_CHECK_RECORDS,
    RunningSite,
)

pytestmark = pytest.mark.site


def test_first_requests_of_forked_web_workers(rdm_site: RunningSite) -> None:
    fork = rdm_site.fork
    requests = fork.first_requests
    made = (len(FIRST_API_REQUESTS) + len(FIRST_PAGE_REQUESTS)) * FIRST_REQUEST_ROUNDS
    # A page may load more (nothing here does); every request answered is counted.
    assert requests is not None and len(requests.statuses) >= made, requests
    # Both forked workers answered some of them: each one's first request is in the count.
    assert len(requests.workers) == 2, requests.workers
    assert fork.first_request_errors == [], fork.first_request_errors
    assert requests.failed == []


def test_fixture_tasks_queued_before_the_worker_started(rdm_site: RunningSite) -> None:
    counts = rdm_site.fork.fixtures_round
    assert counts is not None
    vocabulary = counts.by_name("invenio_rdm_records.fixtures.tasks.create_vocabulary_record")
    # InvenioRDM's vocabularies with the large ones cut (instance.py): about 240 tasks.
    assert vocabulary["received"] > 200, counts.describe()
    # Both forked children ran tasks: the first task of each is among these.
    assert len(counts.by_child) == 2, counts.by_child
    assert counts.failed == {}, counts.describe()
    assert counts.unfinished == set()


def test_harvest_batches_with_other_tasks_on_a_fresh_worker(rdm_site: RunningSite) -> None:
    fork = rdm_site.fork
    assert fork.problems == []
    counts = fork.harvest_round
    assert counts is not None
    assert len(counts.by_child) == 2, counts.by_child
    # The run itself, its batches (written by the worker's children) and the relation types
    # again; the published records' PIDs were registered in their batches, not by tasks.
    assert counts.by_name("invenio_jobs.tasks.execute_run")["received"] == 1, counts.describe()
    batches = counts.by_name("oarepo_oaipmh_harvester.tasks.write_harvest_batch")
    assert batches["received"] == FORK_CHECK_RECORDS // FORK_CHECK_BATCH_SIZE, counts.describe()
    assert counts.by_name("invenio_rdm_records.fixtures")["received"] >= 30, counts.describe()
    pid_tasks = counts.by_name("invenio_rdm_records.services.pids.tasks")
    assert pid_tasks["received"] == 0, counts.describe()
    assert counts.failed == {}, counts.describe()
    run = fork.harvest_run
    assert run is not None
    assert (run["status"], run["message"]) == ("SUCCESS", run["message"])
    assert run["inserted_entries"] == FORK_CHECK_RECORDS and run["errored_entries"] == 0, run
    # Published: InvenioRDM's own search finds them (no other record exists yet).
    assert fork.published == FORK_CHECK_RECORDS, FORK_CHECK_HARVESTER
