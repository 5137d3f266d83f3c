"""What `invenio oai ...` prints when something fails (issue 39, point 4).

Real command processes, on PostgreSQL and on an SQLite database file. An operator reads one
sentence per failure; the trace goes to the application's log (`invenio oai -v` prints it
too), never an SQL statement with its parameters. A second run of a harvester is refused
with the same sentence on both databases while the first goes on.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from factories import make_harvester
from invenio_db import db

from oarepo_oaipmh_harvester.models import OAIHarvestedRecord, OAIHarvester

from .helpers import live_local_count
from .processes import commands, committed, read_committed

BUSY = (
    "Another run of harvester 'one' is in progress; this run did nothing. "
    "(OAI_HARVESTER_CONCURRENT_RUNS decides whether runs wait or fail.)"
)


@pytest.fixture()
def harvesters(app, database, search, provider, db_uri):
    """Harvester "one" (batches of 5) and harvester "idle", which has harvested nothing;
    committed for other processes."""
    with committed(db_uri):
        make_harvester(provider.base_url, "one", batch_size=5)
        make_harvester(provider.base_url, "idle")
        db.session.commit()
        yield


@pytest.fixture()
def start(app, tmp_path):
    with commands(app, tmp_path) as start:
        yield start


def tracked(harvester_id: str) -> int:
    return read_committed(
        lambda: db.session.query(OAIHarvestedRecord).filter_by(harvester_id=harvester_id).count()
    )


def no_dump(text: str) -> None:
    """Neither a traceback nor an SQL statement with its parameters."""
    for shown in ("Traceback", "INSERT", "DELETE FROM", "[SQL", "[parameters"):
        assert shown not in text, text


def test_two_runs_of_a_harvester_started_together_one_is_refused_in_one_sentence(
    harvesters, provider, start
):
    provider.quirks.delay_seconds = 2.0  # a run of 20 s: longer than a command takes to start
    both = [start("harvest", "one"), start("harvest", "one")]

    codes = sorted(command.wait() for command in both)

    assert codes == [0, 1], [command.shown() for command in both]
    [ran] = [command for command in both if command.process.returncode == 0]
    [refused] = [command for command in both if command.process.returncode == 1]
    assert refused.stderr.splitlines() == [f"HarvesterBusy: {BUSY}"], refused.shown()
    assert "FAILED" in refused.stdout
    no_dump(refused.stdout + refused.stderr)
    assert "SUCCESS" in ran.stdout
    assert tracked("one") == 50 and live_local_count() == 50  # nothing written twice


@pytest.fixture()
def database_held(app, db_uri):
    """Another process keeps the database busy, as a run writing a batch does: on SQLite it
    holds the write lock; on PostgreSQL a row lock on harvester "idle" (a command's process
    waits a second for a lock, `lock_timeout`). Yields the settings the command gets."""
    if db_uri.startswith("sqlite"):
        held = sqlite3.connect(Path(db.engine.url.database), isolation_level=None)
        held.execute("BEGIN IMMEDIATE")
        held.execute("UPDATE oai_harvester SET comment = 'busy' WHERE id = 'one'")
        yield {}, "Error: The database is locked: another process is writing to it"
        held.rollback()
        held.close()
        return
    with db.engine.connect() as held:
        held.execute(sa.text("SELECT id FROM oai_harvester WHERE id = 'idle' FOR UPDATE"))
        options = {"connect_args": {"options": "-c timezone=UTC -c lock_timeout=1000"}}
        yield (
            {"SQLALCHEMY_ENGINE_OPTIONS": options},
            "Error: The database refused the command: canceling statement due to lock timeout.",
        )
        held.rollback()


def test_a_database_error_is_one_sentence_and_its_trace_goes_to_the_log(
    harvesters, database_held, start
):
    config, sentence = database_held

    command = start("harvester", "delete", "idle", **config)

    assert command.wait() == 1, command.shown()
    [line] = command.stderr.splitlines()
    assert line.startswith(sentence), command.shown()
    assert line.endswith(
        "The trace is in the application's log; 'invenio oai -v ...' prints it here."
    )
    no_dump(command.stdout + command.stderr)

    verbose = start("-v", "harvester", "delete", "idle", **config)

    assert verbose.wait() == 1, verbose.shown()
    log = verbose.stderr
    assert "invenio oai -v harvester delete idle failed\nTraceback" in log
    assert read_committed(lambda: db.session.get(OAIHarvester, "idle")) is not None


def test_a_run_with_the_search_server_down_names_each_failure_once_with_the_hint_first(
    harvesters, start
):
    """Point 5: the search server is down for the whole run. The records are written (the
    next run sends them to the index); the output is the counts, what to do, and the reason
    once with its count: not a line per record, not the same failure three times."""
    from search_node import free_port

    dead = [{"host": "127.0.0.1", "port": free_port()}]

    # invenio-jobs' run log lives in the search server too: a site without it (JOBS_LOGGING
    # off) still harvests; the next test has it on.
    command = start("harvest", "one", SEARCH_HOSTS=dead, JOBS_LOGGING=False)

    assert command.wait() == 1, command.shown()
    output = command.stdout + command.stderr
    no_dump(output)
    assert "Traceback" not in output and "unexpected" not in output.lower()
    lines = [line for line in output.splitlines() if not line.startswith("harvested ")]
    assert len(lines) <= 6, command.shown()  # 50 records, not 50 lines
    assert "PARTIAL_SUCCESS" in command.stdout, command.shown()
    assert "created 50, updated 0, deleted 0, unchanged 0, failed 0, not indexed 50" in (
        command.stdout
    )
    hint = (
        "50 written records could not be indexed: the next run sends them first, or "
        "'invenio oai harvest one --reindex' sends them now."
    )
    stderr = command.stderr.splitlines()
    assert hint in stderr, command.shown()
    [reason] = [line for line in stderr if "×" in line]
    assert reason.startswith("  50 × Not indexed: ") and "(ConnectionError)" in reason
    assert stderr.index(hint) < stderr.index("By reason:") < stderr.index(reason)
    assert output.count("Not indexed:") == 1  # each kind of failure named once
    assert tracked("one") == 50  # written, and tracked for the next run to index


def test_a_run_whose_job_log_cannot_reach_the_search_server_fails_in_one_sentence(
    harvesters, start
):
    """invenio-jobs writes a run's log lines to the search server (JOBS_LOGGING) and lets the
    error out of its logging: the run was left QUEUED for ever and the command printed only
    "Run ...: QUEUED". It is FAILED now, with the reason in one sentence."""
    from invenio_jobs.models import Run, RunStatusEnum
    from search_node import free_port

    dead = [{"host": "127.0.0.1", "port": free_port()}]

    command = start("harvest", "one", SEARCH_HOSTS=dead, JOBS_LOGGING=True)

    assert command.wait() == 1, command.shown()
    no_dump(command.stdout + command.stderr)
    assert "FAILED" in command.stdout, command.shown()
    sentence = (
        "The run could not start or end: the search server did not answer (ConnectionError); "
        "invenio-jobs writes a run's log there (JOBS_LOGGING). Nothing was lost: start it again."
    )
    assert sentence in command.stderr.splitlines(), command.shown()
    runs = read_committed(lambda: [(run.status, run.message) for run in Run.query.all()])
    assert runs == [(RunStatusEnum.FAILED, sentence)]
    assert tracked("one") == 0
