"""Live records are written with the target's bulk method, and fall back one by one safely."""

from __future__ import annotations

import contextlib
from collections import Counter

import pytest
import sqlalchemy as sa
from factories import make_harvester, run_harvest
from invenio_db import db
from invenio_records_permissions.generators import Disable
from invenio_records_resources.services.records.components import ServiceComponent
from oaiharvest_test_support.sample_records.records import SampleRecordMetadata
from oaiharvest_test_support.sample_records.service import SamplePermissionPolicy

from .helpers import (
    counted_search_requests,
    expected_titles,
    indexed_total,
    local_titles,
    tracking,
)


@contextlib.contextmanager
def counted_savepoints():
    """Counts the SAVEPOINT statements sent while the block runs."""
    counts: Counter[str] = Counter()

    def count(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("SAVEPOINT"):
            counts["savepoint"] += 1

    sa.event.listen(db.engine, "before_cursor_execute", count)
    try:
        yield counts
    finally:
        sa.event.remove(db.engine, "before_cursor_execute", count)


class NoBulk(SamplePermissionPolicy):
    can_create_or_update_many = [Disable()]


@contextlib.contextmanager
def service_config(service, **changes):
    old = {name: getattr(service.config, name) for name in changes}
    for name, value in changes.items():
        setattr(service.config, name, value)
    try:
        yield
    finally:
        for name, value in old.items():
            setattr(service.config, name, value)


class ExplodesOnTitle(ServiceComponent):
    """A target component that fails with a non-validation error, after touching the DB."""

    def create(self, identity, data=None, record=None, **kwargs):
        if data["metadata"]["title"] == ["Explode"]:
            raise RuntimeError("the component exploded")


def test_each_batch_is_one_bulk_write_in_one_savepoint(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url, "bulk")  # batch size 10: 5 batches
    make_harvester(provider.base_url, "single")
    with counted_savepoints() as bulk, counted_search_requests() as indexing:
        summary = run_harvest("bulk")
    assert summary.counts.created == 50 and summary.succeeded
    assert indexing == Counter({("POST", "_bulk"): 5})  # one bulk index request per batch
    with service_config(sample_service, permission_policy_cls=NoBulk):
        with counted_savepoints() as one_by_one:
            assert run_harvest("single").counts.created == 50

    # The service's own savepoints (pidstore) are about the same; ours are 5 instead of 50.
    assert one_by_one["savepoint"] - bulk["savepoint"] >= 50 - 5
    assert local_titles(sample_service, "bulk") == expected_titles(corpus)
    assert indexed_total(sample_service) == 100


def test_a_raising_component_fails_its_record_alone_and_leaves_nothing_behind(
    app, db, clean_index, provider, corpus, sample_service
):
    bad = sorted(corpus.live_identifiers())[12]
    corpus.update(bad, metadata={"title": ["Explode"]}, datestamp=corpus.get(bad).datestamp)
    make_harvester(provider.base_url)
    components = [*sample_service.config.components, ExplodesOnTitle]

    with service_config(sample_service, components=components):
        summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (49, 1)
    assert tracking()[bad].errors == ["RuntimeError: the component exploded"]
    assert tracking()[bad].local_pid is None
    # The bulk attempt of the failing batch was undone before it was redone one by one:
    # no half-created record from it survives, in the database or in the index.
    db.session.expire_all()
    assert db.session.scalar(sa.select(sa.func.count()).select_from(SampleRecordMetadata)) == 49
    assert indexed_total(sample_service) == 49
    expected = expected_titles(corpus)
    del expected[bad]
    assert local_titles(sample_service) == expected


def test_a_policy_without_the_bulk_permission_is_written_one_by_one(
    app, db, clean_index, provider, corpus, sample_service, caplog
):
    make_harvester(provider.base_url)
    with service_config(sample_service, permission_policy_cls=NoBulk):
        summary = run_harvest("test")

    assert summary.counts.created == 50 and summary.succeeded
    assert "no create_or_update_many" in caplog.text
    assert local_titles(sample_service) == expected_titles(corpus)


@pytest.mark.parametrize("bulk", [True, False])
def test_updates_and_validation_failures_are_the_same_either_way(
    app, db, clean_index, provider, corpus, sample_service, bulk
):
    make_harvester(provider.base_url)
    policy = SamplePermissionPolicy if bulk else NoBulk
    with service_config(sample_service, permission_policy_cls=policy):
        run_harvest("test")
        corpus.advance_clock(hours=1)
        edited, broken = sorted(corpus.live_identifiers())[:2]
        corpus.update(edited, metadata={"title": ["Edited"]})
        corpus.update(broken, metadata={"description": ["no title"]})
        summary = run_harvest("test")

    assert (summary.counts.updated, summary.counts.failed) == (1, 1)
    assert local_titles(sample_service)[edited] == ["Edited"]
    assert tracking()[broken].errors[0].startswith("Validation failed: ")
    assert "title" in tracking()[broken].errors[0]
