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
