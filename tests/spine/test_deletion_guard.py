"""The mass-deletion guard (issue 37, point 1): a run that would delete too much of a collection
holds its deletions; an operator confirms or rejects them."""

from __future__ import annotations

import pytest
from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity

from oarepo_oaipmh_harvester.harvest.window import SinceSource
from oarepo_oaipmh_harvester.models import OAIHarvester
from oarepo_oaipmh_harvester.proxies import current_harvester_service
from oarepo_oaipmh_harvester.services.deletions import (
    confirm_deletions,
    held_deletions,
    reject_deletions,
)
from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

from .helpers import expected_titles, live_local_count, local_titles, tracking


def watermark():
    from invenio_db import db

    db.session.expire_all()
    return db.session.get(OAIHarvester, "test").watermark


def delete_at_source(corpus, identifiers):
    corpus.advance_clock(hours=1)
    for identifier in identifiers:
        corpus.delete(identifier)


def test_sixty_percent_deleted_at_the_source_is_held_then_confirmed(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url)
    run_harvest("test")
    before = watermark()
    gone = sorted(corpus.live_identifiers())[:30]  # 60 % of 50
    delete_at_source(corpus, gone)

    summary = run_harvest("test", since_source=SinceSource.WATERMARK)

    assert not summary.succeeded and summary.counts.deleted == 0 and summary.counts.held == 30
    assert summary.problems[0].startswith(
        "30 deletions held (deleted at the source: 60% of the 50 live records, more than the "
        "deletion guard's 10%): the records stay published and the watermark did not move."
    )
    assert "invenio oai deletions test" in summary.message()
    assert live_local_count() == 50 and watermark() == before
    assert {tracking()[i].held_deletion for i in gone} == {"held"}
    listed = held_deletions(current_harvester_service, system_identity, "test")
    assert (listed.held, len(listed.records)) == (30, 30)

    # Nothing lost while the operator thinks: the next run holds them again, applies nothing.
    again = run_harvest("test", since_source=SinceSource.WATERMARK)
    assert again.counts.held == 30 and again.counts.deleted == 0 and live_local_count() == 50

    result = confirm_deletions(current_harvester_service, system_identity, "test")

    assert (result["deleted"], result["failed"]) == (30, 0)
    assert live_local_count() == 20
    assert local_titles(sample_service) == expected_titles(corpus)
    assert all(tracking()[i].deleted and tracking()[i].held_deletion is None for i in gone)
    assert held_deletions(current_harvester_service, system_identity, "test").held == 0


def test_rejected_deletions_are_never_applied_unless_the_source_deletes_again(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url)
    run_harvest("test")
    gone = sorted(corpus.live_identifiers())[:25]
    delete_at_source(corpus, gone)
    run_harvest("test", since_source=SinceSource.WATERMARK)

    assert reject_deletions(current_harvester_service, system_identity, "test") == {
        "harvester": "test",
        "rejected": 25,
    }
    later = run_harvest("test", since_source=SinceSource.WATERMARK)
    assert later.succeeded and later.counts.deleted == 0 and later.counts.held == 0
    assert later.watermark_advanced and live_local_count() == 50

    # The source brings one back and deletes it again: a new deletion, below the guard.
    corpus.advance_clock(hours=1)
    corpus.update(gone[0], metadata={"title": ["Back"]})
    run_harvest("test", since_source=SinceSource.WATERMARK)
    delete_at_source(corpus, [gone[0]])
    again = run_harvest("test", since_source=SinceSource.WATERMARK)
    assert again.succeeded and again.counts.deleted == 1
    assert live_local_count() == 49 and tracking()[gone[0]].deleted


def test_below_the_guard_or_with_the_guard_off_deletions_apply_as_they_come(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url, deletion_guard=0)
    run_harvest("test")
    gone = sorted(corpus.live_identifiers())[:30]
    delete_at_source(corpus, gone)
    summary = run_harvest("test", since_source=SinceSource.WATERMARK)
    assert summary.succeeded and summary.counts.deleted == 30 and live_local_count() == 20

    current_harvester_service.update(system_identity, "test", {"deletion_guard": 50}, check=False)
    delete_at_source(corpus, sorted(corpus.live_identifiers())[:5])
    below = run_harvest("test", since_source=SinceSource.WATERMARK)
    assert below.succeeded and below.counts.deleted == 5 and live_local_count() == 15


@pytest.fixture()
def run_cli(app):
    from oarepo_oaipmh_harvester.cli import oai

    runner = app.test_cli_runner()
    return lambda *args: runner.invoke(oai, list(args))


@pytest.fixture()
def forgetful_provider(corpus):
    with OAIPMHProvider(corpus, page_size=7, deleted_record="no") as running:
        yield running


def test_a_provider_whose_list_comes_back_empty_holds_the_reconciliation(
    app, db, clean_index, forgetful_provider, corpus, sample_service, run_cli
):
    import json

    make_harvester(forgetful_provider.base_url)
    run_harvest("test")
    for identifier in sorted(corpus.live_identifiers()):
        corpus.purge(identifier)

    summary = run_harvest("test", full=True)

    assert not summary.succeeded and not summary.reconciled and summary.counts.held == 50
    assert "50 deletions held (no longer listed: 100% of the 50 live records" in summary.message()
    assert live_local_count() == 50 and not summary.watermark_advanced
    listed = json.loads(run_cli("deletions", "test", "--json").output)
    assert listed["held"] == 50 and len(listed["records"]) == 50
    assert run_cli("deletions", "test").output.startswith("50 deletions held, 0 dropped earlier.")

    result = run_cli("deletions", "test", "--confirm")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "Deleted 50 records; 0 failed."
    assert live_local_count() == 0
    refused = run_cli("deletions", "test", "--confirm", "--reject")
    assert refused.exit_code != 0 and "not both" in refused.output
