"""Engine decisions that need no provider: settings from config, the change decision, counts."""

import uuid

import pytest
from factories import make_harvester

from oarepo_oaipmh_harvester import config as defaults
from oarepo_oaipmh_harvester.harvest.changes import is_unchanged, latest_of_each, needing_write
from oarepo_oaipmh_harvester.harvest.counts import MAX_KEPT_FAILURES, WriteCounts
from oarepo_oaipmh_harvester.harvest.settings import (
    HarvestSettings,
    ReconcileMode,
    protocol_config_key,
)
from oarepo_oaipmh_harvester.protocol import ProtocolOptions
from oarepo_oaipmh_harvester.protocol.networks import LOOPBACK_AND_PRIVATE_NETWORKS
from oarepo_oaipmh_harvester.protocol.options import OPTION_NAMES
from oarepo_oaipmh_harvester.protocol.records import OAIRecord


def _config(**overrides):
    values = {key: getattr(defaults, key) for key in dir(defaults) if key.startswith("OAI_")}
    values.update(overrides)
    return values


def _record(identifier, datestamp, deleted=False):
    return OAIRecord(identifier, datestamp, deleted, (), metadata=None, xml="")


# -- settings ------------------------------------------------------------------------------
def test_every_protocol_option_has_a_config_key_with_the_same_default():
    for option in OPTION_NAMES:
        key = protocol_config_key(option)
        assert hasattr(defaults, key), key
        value = getattr(defaults, key)
        value = tuple(value) if isinstance(value, list) else value
        assert value == getattr(ProtocolOptions(), option), key


def test_settings_from_the_default_config():
    settings = HarvestSettings.from_config(_config())
    assert settings.protocol.timeout == (10.0, 120.0)
    assert settings.protocol.max_retry_wait == 600.0
    assert settings.reconcile is ReconcileMode.AUTO
    assert settings.prefetch_batches == 2 and settings.default_batch_size == 100
    assert settings.batch_size_of(None) == 100 and settings.batch_size_of(7) == 7
    # Local and private networks are forbidden until the site allows them.
    for network in LOOPBACK_AND_PRIVATE_NETWORKS:
        assert network in settings.protocol.forbidden_networks
    for network in defaults.OAI_HARVESTER_FORBIDDEN_NETWORKS:
        assert network in settings.protocol.forbidden_networks


def test_settings_follow_the_config():
    settings = HarvestSettings.from_config(
        _config(
            OAI_HARVESTER_REQUEST_TIMEOUT=[2, 3],
            OAI_HARVESTER_MAX_PAGES=50,
            OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS=True,
            OAI_HARVESTER_CONCURRENT_RUNS="wait",
            OAI_HARVESTER_CONTACT_EMAIL="ops@example.org",
        )
    )
    assert settings.protocol.timeout == (2.0, 3.0)
    assert settings.protocol.max_pages == 50
    assert settings.protocol.forbidden_networks == tuple(defaults.OAI_HARVESTER_FORBIDDEN_NETWORKS)
    assert settings.wait_for_running
    agent = settings.user_agent_for("arxiv")
    assert agent.startswith("oarepo-oaipmh-harvester/")
    assert "harvester arxiv" in agent and "mailto:ops@example.org" in agent


def test_bad_settings_are_refused_with_the_key():
    with pytest.raises(ValueError, match="OAI_HARVESTER_WRITE_MODE"):
        HarvestSettings.from_config(_config(OAI_HARVESTER_WRITE_MODE="threads"))
    with pytest.raises(ValueError, match="max_pages"):
        HarvestSettings.from_config(_config(OAI_HARVESTER_MAX_PAGES=0))


# -- the change decision -------------------------------------------------------------------
def test_the_newest_version_of_an_identifier_wins_in_a_batch():
    older = _record("a", "2024-01-02T00:00:00Z")
    newer = _record("a", "2024-01-03T00:00:00Z")
    other = _record("b", "2024-01-01T00:00:00Z")
    assert latest_of_each([newer, other, older])["a"] is newer
    assert latest_of_each([older, other, newer])["a"] is newer
    assert list(latest_of_each([newer, other, older])) == ["a", "b"]
    same_again = _record("a", "2024-01-03T00:00:00Z", deleted=True)
    assert latest_of_each([newer, same_again])["a"] is same_again  # a tie: the later one


def test_unchanged_means_same_datestamp_same_status_and_no_error():
    record = _record("a", "2024-01-02T00:00:00Z")
    row = {"datestamp": "2024-01-02T00:00:00Z", "deleted": False, "errors": None, "run_id": None}
    assert is_unchanged(record, row, None)
    assert not is_unchanged(record, None, None)
    assert not is_unchanged(record, {**row, "errors": ["boom"]}, None)
    assert not is_unchanged(record, {**row, "deleted": True}, None)
    assert not is_unchanged(record, {**row, "datestamp": "2024-01-01T00:00:00Z"}, None)


def test_an_older_version_is_stale_only_within_the_run_that_wrote_the_newer():
    run = uuid.uuid4()
    record = _record("a", "2024-01-01T00:00:00Z")
    row = {"datestamp": "2024-01-05T00:00:00Z", "deleted": False, "errors": None, "run_id": run}
    assert is_unchanged(record, row, run)
    assert not is_unchanged(record, row, uuid.uuid4())  # across runs any change wins
    assert needing_write({"a": record}, {"a": row}, run) == []


# -- counts --------------------------------------------------------------------------------
def test_counts_map_onto_run_columns_and_back():
    counts = WriteCounts(created=3, updated=2, deleted=1, unchanged=4, failed=1)
    columns = counts.run_columns()
    assert columns == {
        "total_entries": 11,
        "inserted_entries": 3,
        "updated_entries": 3,
        "errored_entries": 1,
    }

    class Row:
        total_entries, inserted_entries, updated_entries, errored_entries = (11, 3, 3, 1)

    back = WriteCounts.from_run_columns(Row())
    assert (back.total, back.created, back.updated, back.failed, back.unchanged) == (11, 3, 3, 1, 4)


def test_kept_failures_are_bounded_and_travel_between_processes():
    counts = WriteCounts()
    for index in range(MAX_KEPT_FAILURES + 5):
        counts.fail(f"oai:{index}", "boom")
    counts.fail("(batch)", "down", records=10)
    assert counts.failed == MAX_KEPT_FAILURES + 15
    assert len(counts.failures) == MAX_KEPT_FAILURES
    again = WriteCounts.from_dict(counts.as_dict())
    assert again == counts


def test_notices_are_bounded_travel_between_processes_and_reach_the_message():
    from oarepo_oaipmh_harvester.harvest.results import HarvestSummary

    counts = WriteCounts(updated=MAX_KEPT_FAILURES + 3)
    for index in range(MAX_KEPT_FAILURES + 3):
        counts.notice(f"oai:{index}", "draft replaced")
    assert len(counts.notices) == MAX_KEPT_FAILURES
    assert WriteCounts.from_dict(counts.as_dict()) == counts
    summary = HarvestSummary(harvester_id="x", window=None, counts=counts)
    assert summary.succeeded
    assert "Note: oai:0: draft replaced" in summary.message() and "more)" in summary.message()


def test_a_side_effect_failing_after_the_commit_does_not_fail_the_batch(app, db):
    """Data committed is committed: a notification that cannot be sent is logged."""
    from invenio_db.uow import Operation

    from oarepo_oaipmh_harvester.harvest.unit_of_work import BulkIndexingUnitOfWork

    ran = []

    class FailingNotification(Operation):
        def on_post_commit(self, uow):
            raise KeyError("request.created_by")

    class LaterOperation(Operation):
        def on_post_commit(self, uow):
            ran.append("later")

    with BulkIndexingUnitOfWork(db.session) as uow:
        uow.register(FailingNotification())
        uow.register(LaterOperation())
        uow.commit()

    assert ran == ["later"]
    assert "FailingNotification.on_post_commit failed" in uow.side_effect_errors[0]


def test_settings_are_read_per_run(app):
    from oarepo_oaipmh_harvester.harvest.assembly import current_settings

    app.config["OAI_HARVESTER_MAX_PAGES"] = 77
    try:
        assert current_settings().protocol.max_pages == 77
    finally:
        app.config["OAI_HARVESTER_MAX_PAGES"] = defaults.OAI_HARVESTER_MAX_PAGES


def test_a_local_provider_is_refused_unless_the_site_allows_private_networks(app, db, provider):
    from factories import run_harvest

    from oarepo_oaipmh_harvester.protocol.errors import ForbiddenAddress

    make_harvester(provider.base_url)
    app.config["OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS"] = False
    try:
        with pytest.raises(ForbiddenAddress):
            run_harvest("test")
    finally:
        app.config["OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS"] = True
    assert provider.requests == []  # refused before anything was sent
    assert run_harvest("test").succeeded


def test_a_run_past_its_time_limit_fails_naming_it_and_keeps_the_watermark(
    app, db, clean_index, provider
):
    from factories import run_harvest

    from oarepo_oaipmh_harvester.harvest.stopping import RunTooLong
    from oarepo_oaipmh_harvester.models import OAIHarvester

    make_harvester(provider.base_url)
    provider.quirks.delay_seconds = 0.3  # a slow provider: each page takes 0.3 s
    app.config["OAI_HARVESTER_MAX_RUN_SECONDS"] = 1.0
    try:
        with pytest.raises(RunTooLong, match="OAI_HARVESTER_MAX_RUN_SECONDS"):
            run_harvest("test")
    finally:
        app.config["OAI_HARVESTER_MAX_RUN_SECONDS"] = defaults.OAI_HARVESTER_MAX_RUN_SECONDS
        provider.quirks.delay_seconds = 0.0
    assert db.session.get(OAIHarvester, "test").watermark is None


# -- garbage of a run ----------------------------------------------------------------------
class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_a_run_scope_freezes_the_application_and_collects_the_batch_cycles():
    import gc
    import weakref

    from oarepo_oaipmh_harvester.harvest.memory import collect_written_batch, run_scope

    assert gc.get_freeze_count() == 0
    outside = _Cycle()
    outside_ref = weakref.ref(outside)
    del outside
    gc.disable()  # no automatic collection may free the cycles instead of the scope
    try:
        collect_written_batch()  # outside a run: a full collection would cost too much
        assert outside_ref() is not None
        with run_scope():
            assert gc.get_freeze_count() > 0  # what existed before the run
            with run_scope():  # a batch inside a run: still one freeze
                pass
            assert gc.get_freeze_count() > 0
            written = _Cycle()
            written_ref = weakref.ref(written)
            del written
            collect_written_batch()
            assert written_ref() is None
            assert outside_ref() is not None  # frozen with the application
        assert gc.get_freeze_count() == 0
    finally:
        gc.enable()
    gc.collect()
    assert outside_ref() is None


# Run in a fresh interpreter: a worker's scope freezes its process for good.
_A_WORKER_WRITES_TWO_BATCHES = """
import gc, weakref
from oarepo_oaipmh_harvester.harvest.memory import (
    collect_written_batch, run_scope, worker_process_scope,
)

class Cycle:
    def __init__(self):
        self.me = self

def another_task():  # InvenioRDM's PID registration, run by the worker between two batches
    cycle = Cycle()
    return weakref.ref(cycle)

gc.disable()  # no automatic collection may free the cycles instead of the batches
left_before = another_task()  # a task the worker ran before its first batch
with worker_process_scope():
    assert left_before() is None, "freed before the freeze, not frozen for good"
    assert gc.get_freeze_count() > 0
    collect_written_batch()
assert gc.get_freeze_count() > 0, "still frozen between batches"
left_between = another_task()
kept_alive = [[] for _ in range(100)]  # frozen again, these would be counted with the rest
frozen_before = gc.get_freeze_count()
with worker_process_scope():
    assert gc.get_freeze_count() <= frozen_before, "frozen once, not again at every batch"
    collect_written_batch()
    assert left_between() is None, "the batch collected what the other task left"
with run_scope():  # a run of this process's own: the worker's freeze stays
    pass
assert gc.get_freeze_count() > 0
print("worker ok")
"""


def test_a_worker_process_freezes_once_and_each_batch_collects_what_other_tasks_left():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _A_WORKER_WRITES_TWO_BATCHES],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "worker ok"
