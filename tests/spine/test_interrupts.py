"""Ctrl-C and SIGTERM to `invenio oai harvest`, and a run whose process was killed (issue 39).

Real processes and real signals, on PostgreSQL and on an SQLite database file: the command
runs a harvest of the bundled provider, slowed down so that the signal arrives mid-way. The
first SIGINT or SIGTERM ends the run CANCELLED after the batch in flight, its watermark kept,
as Stop in Administration → Jobs does; the command says so in one line and exits 128 + the
signal's number. A second one aborts at once: the batch in flight is rolled back. A run whose
process was killed (-9) is closed by the next run and no longer stands in Run now's way; a
live one is not closed.
"""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from factories import make_harvester, run_harvest, wait_until
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import Run, RunStatusEnum

from oarepo_oaipmh_harvester.cli import oai
from oarepo_oaipmh_harvester.models import OAIHarvestedRecord, OAIHarvester
from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service
from oarepo_oaipmh_harvester.services.errors import HarvestRunInProgress

from .helpers import live_local_count
from .processes import commands, committed, read_committed

BATCH = 5
EDITED = "2024-06-01T13:00:00Z"


@pytest.fixture()
def harvested(app, database, search, provider, corpus, db_uri):
    """Harvester "sig" (batches of 5) after a first harvest, its watermark stored; then the
    provider edits all 50 records and answers a page a second."""
    with committed(db_uri):
        make_harvester(provider.base_url, "sig", batch_size=BATCH)
        db.session.commit()
        assert run_harvest("sig").succeeded
        corpus.advance_clock(hours=1)
        for identifier in corpus.live_identifiers():
            corpus.update(identifier, metadata={"title": [f"Edited {identifier}"]})
        provider.quirks.delay_seconds = 1.0
        yield db.session.get(OAIHarvester, "sig").watermark


@pytest.fixture()
def start(app, tmp_path):
    with commands(app, tmp_path) as start:
        yield start


def edited() -> int:
    """Tracking rows that the run under way has written (the edited records)."""
    return read_committed(
        lambda: (
            db.session.query(OAIHarvestedRecord)
            .filter_by(harvester_id="sig", datestamp=EDITED)
            .count()
        )
    )


def runs_of_sig() -> list[Run]:
    def query() -> list[Run]:
        runs = db.session.scalars(sa.select(Run).order_by(Run.created)).all()
        return [run for run in runs if (run.args or {}).get("harvester_id") == "sig"]

    return read_committed(query)


def watermark() -> object:
    return read_committed(lambda: db.session.get(OAIHarvester, "sig").watermark)


@pytest.mark.parametrize(
    ("received", "code", "named"),
    [
        (signal.SIGINT, 130, "SIGINT, Ctrl-C on the command line"),
        (signal.SIGTERM, 143, "SIGTERM to the command-line process"),
    ],
    ids=["ctrl-c", "sigterm"],
)
def test_a_signal_ends_the_run_cancelled_after_its_batch_with_the_watermark_kept(
    app, harvested, start, provider, received, code, named
):
    command = start("harvest", "sig")
    wait_until(lambda: edited() >= 2 * BATCH, timeout=120, message="the run wrote nothing")
    command.process.send_signal(received)
    signalled = time.monotonic()

    assert command.wait() == code, command.shown()
    assert time.monotonic() - signalled < 15  # after its batch, not after the whole list
    [run] = [run for run in runs_of_sig() if run.title == "Command-line harvest"]
    assert run.status == RunStatusEnum.CANCELLED, run.message
    written = edited()
    assert run.message.startswith(f"Stopped ({named}) after {written} records.")
    assert written % BATCH == 0 and written < 50  # whole batches, and not the whole list
    assert run.total_entries == written
    assert watermark() == harvested  # kept: the next run harvests the window again
    assert "CANCELLED" in command.stdout
    assert run.message in command.stderr.splitlines(), command.shown()

    # Nothing stands in the way of Run now, and the next run completes the window.
    provider.quirks.delay_seconds = 0
    item = current_harvest_runs_service.start_run(system_identity, "sig")
    db.session.expire_all()
    assert db.session.get(Run, item.id).status == RunStatusEnum.SUCCESS
    assert edited() == 50 and live_local_count() == 50


def test_a_second_ctrl_c_aborts_at_once_rolling_the_batch_in_flight_back(app, harvested, start):
    command = start("harvest", "sig")
    wait_until(lambda: edited() >= BATCH, timeout=120, message="the run wrote nothing")
    command.process.send_signal(signal.SIGINT)
    time.sleep(0.2)
    command.process.send_signal(signal.SIGINT)
    signalled = time.monotonic()

    assert command.wait() == 130, command.shown()
    assert time.monotonic() - signalled < 5  # at once: the page it was reading not awaited
    assert "Aborted at once by a second signal" in command.stderr
    assert "rolled back" in command.stderr
    [run] = [run for run in runs_of_sig() if run.title == "Command-line harvest"]
    assert run.status == RunStatusEnum.CANCELLED and run.finished_at is not None
    assert run.message.startswith("Aborted at once by a second signal (SIGINT")
    assert edited() % BATCH == 0  # no part of a batch
    assert watermark() == harvested


def backdate(run_id: object) -> None:
    """The run started long ago: older than the grace a run just started has before it
    takes its lock (harvest/interrupted.py)."""
    db.session.rollback()
    long_ago = datetime(2020, 1, 1, tzinfo=UTC)
    db.session.execute(
        sa.update(Run).where(Run.id == run_id).values(started_at=long_ago, created=long_ago)
    )
    db.session.commit()


def test_a_killed_run_is_closed_by_the_next_and_a_live_one_is_not(app, harvested, start, provider):
    command = start("harvest", "sig")
    wait_until(lambda: edited() >= BATCH, timeout=120, message="the run wrote nothing")
    [run] = [run for run in runs_of_sig() if run.status == RunStatusEnum.RUNNING]
    backdate(run.id)

    # Alive, it holds its harvester's lock: Run now refuses, naming it, and leaves it be.
    with pytest.raises(HarvestRunInProgress, match=str(run.id)):
        current_harvest_runs_service.start_run(system_identity, "sig")
    db.session.rollback()
    assert [r.status for r in runs_of_sig() if r.id == run.id] == [RunStatusEnum.RUNNING]

    command.process.send_signal(signal.SIGKILL)  # no handler, no cleanup: as the OOM killer
    command.wait()
    assert [r.status for r in runs_of_sig() if r.id == run.id] == [RunStatusEnum.RUNNING]

    # The way out on the command line: harvest again; the dead run is closed.
    provider.quirks.delay_seconds = 0
    result = app.test_cli_runner().invoke(oai, ["harvest", "sig"])
    assert result.exit_code == 0, result.output
    [dead] = [r for r in runs_of_sig() if r.id == run.id]
    assert dead.status == RunStatusEnum.FAILED and "Interrupted" in dead.message
    assert edited() == 50 and live_local_count() == 50
    assert watermark() != harvested
