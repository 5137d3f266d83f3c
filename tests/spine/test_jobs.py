"""Runs started by invenio-jobs: run now, the scheduler, since and the window, run counters."""

from datetime import UTC, datetime

from factories import create_job, make_harvester, start_run
from invenio_access.permissions import system_identity
from invenio_jobs.models import Job, Run, RunStatusEnum
from invenio_jobs.services.scheduler import RunScheduler

from oarepo_oaipmh_harvester.models import OAIHarvester

from .helpers import expected_titles, live_local_count, local_titles, record_versions


def test_run_now_twice_incremental_since_and_window(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url)
    job_id = create_job()

    first = start_run(job_id)
    assert first.status == RunStatusEnum.SUCCESS, first.message
    assert first.args["since"] is None and first.args["harvester_id"] == "test"
    assert (first.total_entries, first.inserted_entries, first.errored_entries) == (50, 50, 0)
    assert "from" not in provider.requests_for("ListRecords")[0]

    corpus.advance_clock(hours=2)
    edited = sorted(corpus.live_identifiers())[0]
    corpus.update(edited, metadata={"title": ["Edited"]})
    second = start_run(job_id)

    assert second.status == RunStatusEnum.SUCCESS, second.message
    # invenio-jobs passes the start of the last successful run (our clock, 2026) ...
    assert datetime.fromisoformat(second.args["since"]) == first.started_at.replace(tzinfo=UTC)
    assert second.args["since_source"] == "last_success"
    # ... and the earlier server-clock watermark wins: no gap even though clocks differ.
    first_page = [r for r in provider.requests_for("ListRecords") if "metadataPrefix" in r][-1]
    assert first_page["from"] == "2024-06-01T12:00:00Z"
    assert first_page["until"] == "2024-06-01T14:00:00Z"
    assert (second.total_entries, second.updated_entries, second.inserted_entries) == (1, 1, 0)
    assert local_titles(sample_service)[edited] == ["Edited"]
    assert db.session.get(OAIHarvester, "test").watermark == datetime(2024, 6, 1, 14, tzinfo=UTC)


def test_manual_since_from_the_run_form_is_taken_as_given(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url)
    job_id = create_job()
    run = start_run(job_id, {"since": "2024-01-01T00:30:00+00:00"})
    assert run.status == RunStatusEnum.SUCCESS, run.message
    assert run.args["since_source"] == "manual"
    assert provider.requests_for("ListRecords")[0]["from"] == "2024-01-01T00:30:00Z"
    assert run.total_entries == 20  # records at minute 30..49


def test_identifiers_and_full_from_the_run_form(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url)
    job_id = create_job()
    wanted = sorted(corpus.live_identifiers())[:2]
    run = start_run(job_id, {"identifiers": wanted})
    assert run.status == RunStatusEnum.SUCCESS and run.inserted_entries == 2
    run = start_run(job_id, {"full": True})
    assert run.status == RunStatusEnum.SUCCESS
    assert (run.inserted_entries, run.total_entries) == (48, 50)


def test_partial_success_counts_errors_and_keeps_since(
    app, db, clean_index, provider, corpus, sample_service
):
    bad = sorted(corpus.live_identifiers())[3]
    corpus.update(bad, metadata={"creator": ["No title"]}, datestamp=corpus.get(bad).datestamp)
    make_harvester(provider.base_url)
    job_id = create_job()

    run = start_run(job_id)

    assert run.status == RunStatusEnum.PARTIAL_SUCCESS
    assert (run.total_entries, run.inserted_entries, run.errored_entries) == (50, 49, 1)
    assert bad in run.message and "1 of 50 records failed" in run.message
    assert db.session.get(OAIHarvester, "test").watermark is None
    # The next run still replays from the start: a partial run is not a successful one.
    corpus.update(bad, metadata={"title": ["Now valid"]})
    again = start_run(job_id)
    assert again.args["since"] is None
    assert again.status == RunStatusEnum.SUCCESS and again.inserted_entries == 1


def test_failed_run_is_failed_and_moves_nothing(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url)
    job_id = create_job()
    provider.quirks.fail_requests = 1000
    provider.quirks.fail_status = 403
    run = start_run(job_id)
    assert run.status == RunStatusEnum.FAILED
    assert "403" in run.message
    assert db.session.get(OAIHarvester, "test").watermark is None
    assert live_local_count() == 0


def test_scheduler_runs_the_harvest(app, db, clean_index, provider, corpus, sample_service):
    from celery import current_app as celery_app

    make_harvester(provider.base_url)
    job_id = create_job(schedule={"type": "interval", "hours": 6})
    scheduler = RunScheduler(app=celery_app, lazy=True)
    scheduler.sync()
    entry = next(e for e in scheduler.schedule.values() if str(e.job.id) == job_id)
    scheduler.apply_entry(entry)

    db.session.expire_all()
    run = db.session.scalars(db.select(Run).where(Run.job_id == job_id)).one()
    assert run.status == RunStatusEnum.SUCCESS, run.message
    assert run.inserted_entries == 50
    assert local_titles(sample_service) == expected_titles(corpus)
    assert live_local_count() == 50


def test_deleting_a_harvester_removes_its_jobs(app, db, provider):
    make_harvester(provider.base_url)
    job_id = create_job()
    start_run(job_id)
    from oarepo_oaipmh_harvester.proxies import current_harvester_service

    current_harvester_service.delete(system_identity, "test")
    assert db.session.get(Job, job_id) is None


def test_full_reharvest_with_nothing_changed_counts_every_record_and_writes_none(
    app, db, clean_index, provider, corpus, sample_service
):
    make_harvester(provider.base_url)
    job_id = create_job()
    assert start_run(job_id).status == RunStatusEnum.SUCCESS
    versions = record_versions()

    run = start_run(job_id, {"full": True})

    assert run.status == RunStatusEnum.SUCCESS, run.message
    # Counters are saved although no batch had a transaction of its own to carry them.
    assert (run.total_entries, run.inserted_entries, run.updated_entries) == (50, 0, 0)
    assert record_versions() == versions


def test_counters_of_a_run_include_a_reconciliation_of_several_batches(
    app, db, clean_index, corpus, sample_service
):
    from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

    with OAIPMHProvider(corpus, page_size=7, deleted_record="no") as forgetful:
        make_harvester(forgetful.base_url, batch_size=2)
        job_id = create_job()
        assert start_run(job_id).status == RunStatusEnum.SUCCESS
        for identifier in sorted(corpus.live_identifiers())[:3]:
            corpus.purge(identifier)  # gone without a tombstone
        corpus.advance_clock(hours=1)

        run = start_run(job_id, {"full": True})

    assert run.status == RunStatusEnum.SUCCESS, run.message
    # 47 unchanged, then 3 removals in two reconciliation batches (2 + 1)
    assert (run.total_entries, run.updated_entries, run.errored_entries) == (50, 3, 0)
    assert live_local_count() == 47


def test_a_scheduled_job_says_when_it_runs_next(app, db, provider):
    """Administration → Jobs shows `next_run` of invenio-jobs' job API ("Next run: -" else)."""
    from datetime import timedelta

    from invenio_jobs.proxies import current_jobs_service

    make_harvester(provider.base_url)
    job_id = create_job(schedule={"type": "interval", "hours": 6})
    job = current_jobs_service.read(system_identity, job_id).to_dict()
    scheduled_at = datetime.fromisoformat(job["updated"])
    assert datetime.fromisoformat(job["next_run"]) == scheduled_at + timedelta(hours=6)

    run = start_run(job_id)  # the next run counts from the last one
    job = current_jobs_service.read(system_identity, job_id).to_dict()
    next_run = datetime.fromisoformat(job["next_run"])
    assert next_run == run.created.replace(tzinfo=UTC) + timedelta(hours=6)
    listed = current_jobs_service.search(system_identity, {"q": ""}).to_dict()
    assert [hit["next_run"] for hit in listed["hits"]["hits"] if hit["id"] == job_id] == [
        job["next_run"]
    ]

    crontab = {"type": "crontab", "minute": "0", "hour": "3"}
    current_jobs_service.update(system_identity, job_id, {**_editable(job), "schedule": crontab})
    next_run = datetime.fromisoformat(
        current_jobs_service.read(system_identity, job_id).to_dict()["next_run"]
    )
    assert (next_run.hour, next_run.minute) == (3, 0)

    current_jobs_service.update(system_identity, job_id, {**_editable(job), "active": False})
    assert current_jobs_service.read(system_identity, job_id).to_dict()["next_run"] is None


def _editable(job: dict) -> dict:
    return {key: job[key] for key in ("title", "task", "active", "schedule") if key in job}


def test_the_run_all_job_runs_every_active_harvester_each_in_its_own_run(
    app, db, clean_index, provider, corpus, sample_service
):
    """harvest_oaipmh_all: 'a' succeeds, 'b' is paused, 'c' fails; 'c' does not stop the
    others, and the run says which ran and how each ended."""
    from invenio_jobs.proxies import current_jobs

    from oarepo_oaipmh_harvester.proxies import current_harvester_service

    assert "harvest_oaipmh_all" in current_jobs.registry.get_all()
    make_harvester(provider.base_url, "a")
    make_harvester(provider.base_url, "b", active=False)
    make_harvester("http://127.0.0.1:9/oai", "c")  # nothing listens there
    make_harvester(provider.base_url, "d")
    job_id = create_job("all", task="harvest_oaipmh_all")

    run = start_run(job_id)

    assert run.status == RunStatusEnum.PARTIAL_SUCCESS, run.message
    assert run.message.startswith("Ran 3 harvesters: a: SUCCESS (50 records); c: FAILED (")
    assert "; d: SUCCESS (50 records)" in run.message and "b:" not in run.message
    for harvester_id, status in (("a", "SUCCESS"), ("c", "FAILED"), ("d", "SUCCESS")):
        (own,) = runs_of(harvester_id)
        assert (
            own.status.name == status and own.job.task == f"harvest_oaipmh_records_{harvester_id}"
        )
    assert runs_of("b") == []
    assert db.session.get(OAIHarvester, "a").watermark is not None
    assert db.session.get(OAIHarvester, "c").watermark is None

    # Paused and resumed as any other field; a run with nothing failing is a success.
    current_harvester_service.update(system_identity, "c", {"active": False}, check=False)
    current_harvester_service.update(system_identity, "b", {"active": True}, check=False)
    again = start_run(job_id)
    assert again.status == RunStatusEnum.SUCCESS, again.message
    assert again.message == (
        "Ran 3 harvesters: a: SUCCESS (0 records); b: SUCCESS (50 records); d: SUCCESS (0 records)"
    )


def test_a_dead_endpoint_leaves_a_run_message_without_a_traceback(
    app, db, clean_index, provider, corpus, sample_service
):
    """Issue 37's defect: a harvester whose endpoint is dead, under the run-all job and on its
    own, leaves a run whose message names the failure in a sentence or two (invenio-jobs
    appended the Python traceback to it)."""
    make_harvester(provider.base_url, "a")
    make_harvester("http://127.0.0.1:9/oai", "dead")  # nothing listens there
    all_job = create_job("all", task="harvest_oaipmh_all")

    run_all = start_run(all_job)

    (own,) = runs_of("dead")
    for run in (own, run_all):
        assert "Traceback" not in run.message and 'File "' not in run.message, run.message
    assert own.status == RunStatusEnum.FAILED
    assert "127.0.0.1:9" in own.message and len(own.message) < 600, own.message
    assert not own.message.startswith("HarvestFailed"), own.message
    assert own.message.count(". ") <= 2, own.message

    direct = start_run(create_job("dead"))
    assert direct.status == RunStatusEnum.FAILED
    assert direct.message == own.message


def runs_of(harvester_id: str) -> list[Run]:
    from invenio_db import db

    return db.session.scalars(
        db.select(Run)
        .join(Job, Run.job_id == Job.id)
        .where(Job.task == f"harvest_oaipmh_records_{harvester_id}")
        .order_by(Run.created)
    ).all()
