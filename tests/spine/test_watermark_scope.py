"""A watermark belongs to what was harvested: endpoint, metadata prefix and set."""

from datetime import UTC, datetime

import pytest
from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity
from invenio_db import db as db_
from invenio_jobs.models import Run, RunStatusEnum

from oarepo_oaipmh_harvester.models import OAIHarvester
from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service, current_harvester_service
from oarepo_oaipmh_harvester.testing.corpus import Corpus
from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

from .helpers import live_local_count, tracking


def run_now():
    """A run as the panel's "Run now" starts it: through invenio-jobs, which passes `since`."""
    item = current_harvest_runs_service.start_run(system_identity, "test")
    db_.session.expire_all()
    return db_.session.get(Run, item.id)


def in_set(corpus, spec):
    return {
        i for i in corpus.live_identifiers() if any(s.startswith(spec) for s in corpus.get(i).sets)
    }


@pytest.fixture()
def other_provider():
    corpus = Corpus.generate(
        20, start=datetime(2023, 1, 1, tzinfo=UTC), identifier_prefix="oai:other.org:"
    )
    corpus.set_clock(datetime(2024, 6, 1, 12, tzinfo=UTC))
    with OAIPMHProvider(corpus, page_size=7) as running:
        yield running, corpus


def test_an_added_set_is_harvested_in_full(app, db, clean_index, provider, corpus):
    make_harvester(provider.base_url, setspecs=["math"])
    first = run_now()
    assert first.status == RunStatusEnum.SUCCESS, first.message
    assert set(tracking()) == in_set(corpus, "math")

    current_harvester_service.update(system_identity, "test", {"setspecs": ["math", "phys"]})
    corpus.advance_clock(hours=1)
    second = run_now()

    assert second.status == RunStatusEnum.SUCCESS, second.message
    assert second.args["since"]  # invenio-jobs passed its last success ...
    assert set(tracking()) == in_set(corpus, "math") | in_set(corpus, "phys")  # ... yet all came
    requests = [r for r in provider.requests_for("ListRecords") if "metadataPrefix" in r]
    assert {r["set"]: "from" in r for r in requests[-2:]} == {"math": True, "phys": False}
    assert "Set 'phys'" in second.message and "harvested in full" in second.message


def test_a_new_endpoint_is_harvested_in_full_and_the_old_one_reported(
    app, db, clean_index, provider, corpus, other_provider
):
    new_provider, new_corpus = other_provider
    make_harvester(provider.base_url)
    assert run_now().status == RunStatusEnum.SUCCESS

    current_harvester_service.update(system_identity, "test", {"base_url": new_provider.base_url})
    second = run_now()

    assert second.status == RunStatusEnum.SUCCESS, second.message
    assert second.inserted_entries == 20
    assert new_corpus.live_identifiers() <= set(tracking())
    assert live_local_count() == 50 + 20  # the old endpoint's records stay ...
    assert f"{provider.base_url} (oai_dc) is no longer harvested" in second.message  # ... reported


def test_a_run_stores_its_watermark_against_the_configuration_it_started_with(
    app, db, clean_index, provider, corpus
):
    make_harvester(provider.base_url, setspecs=["math"])

    def add_a_set_meanwhile(progress):
        if progress.counts.total and not getattr(add_a_set_meanwhile, "done", False):
            add_a_set_meanwhile.done = True
            db_.session.execute(
                db_.update(OAIHarvester)
                .where(OAIHarvester.id == "test")
                .values(setspecs=["math", "phys"])
            )
            db_.session.commit()

    run_harvest("test", progress=add_a_set_meanwhile)
    harvester = db_.session.get(OAIHarvester, "test")
    assert harvester.setspecs == ["math", "phys"] and harvester.watermark is not None
    assert all("phys" not in key for key in harvester.watermarks)

    corpus.advance_clock(hours=1)
    summary = run_harvest("test")
    assert set(tracking()) == in_set(corpus, "math") | in_set(corpus, "phys")
    assert summary.counts.created == len(in_set(corpus, "phys") - in_set(corpus, "math"))


def test_a_harvester_stored_with_one_watermark_keeps_it_for_its_current_scope(
    app, db, clean_index, provider, corpus
):
    make_harvester(provider.base_url)
    run_harvest("test")
    # As a harvester migrated from the single-watermark schema looks.
    db_.session.execute(
        db_.update(OAIHarvester).where(OAIHarvester.id == "test").values(watermarks=None)
    )
    db_.session.commit()
    corpus.advance_clock(hours=1)
    corpus.update(sorted(corpus.live_identifiers())[0], metadata={"title": ["Edited"]})

    summary = run_harvest("test")

    assert summary.succeeded and summary.counts.total == 1  # incremental, not a full re-harvest
    assert db_.session.get(OAIHarvester, "test").watermarks
