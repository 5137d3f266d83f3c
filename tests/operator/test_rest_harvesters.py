"""REST API of harvesters: search, read, create, update, delete, run now and runs."""

from __future__ import annotations

import pytest
from factories import OMIT, create_job, harvester_data, job_type_id, jobs_of
from invenio_db import db
from invenio_jobs.models import Job, Run, RunStatusEnum
from invenio_jobs.proxies import current_jobs
from operator_helpers import path_of

from oarepo_oaipmh_harvester.models import OAIHarvester

API = "/api/oai-harvest/harvesters"


def field_errors(response) -> dict[str, str]:
    """`{field: "message message"}` from an Invenio 400 body."""
    assert response.status_code == 400, response.json
    return {error["field"]: " ".join(error["messages"]) for error in response.json["errors"]}


@pytest.fixture()
def as_admin(login, users):
    return login(users.admin)


@pytest.fixture()
def preflight_on(set_config):
    set_config(OAI_HARVESTER_PREFLIGHT_CHECK=True)


# -- search and read -------------------------------------------------------------------------
def test_search_sorts_pages_and_queries(as_admin, harvesters, provider):
    res = as_admin.post(
        API, json=harvester_data("zenodo", provider.base_url, name="Zenodo community")
    )
    assert res.status_code == 201, res.json

    res = as_admin.get(API)
    assert res.status_code == 200
    assert [hit["id"] for hit in res.json["hits"]["hits"]] == ["a", "b", "zenodo"]
    assert res.json["hits"]["total"] == 3 and res.json["sortBy"] == "name"

    res = as_admin.get(API, query_string={"q": "zenodo COMMUNITY"})
    assert [hit["id"] for hit in res.json["hits"]["hits"]] == ["zenodo"]
    res = as_admin.get(API, query_string={"q": "*"})
    assert res.json["hits"]["total"] == 3

    res = as_admin.get(API, query_string={"sort": "newest", "size": 1, "page": 2})
    assert [hit["id"] for hit in res.json["hits"]["hits"]] == ["b"]
    links = res.json["links"]
    assert (
        "page=1" in links["prev"] and "page=3" in links["next"] and "sort=newest" in links["self"]
    )


@pytest.mark.parametrize(
    "args, field",
    [({"sort": "nope"}, "sort"), ({"size": 100000}, "size"), ({"page": 0}, "page")],
)
def test_search_refuses_bad_arguments_with_field_errors(as_admin, harvesters, args, field):
    assert field in field_errors(as_admin.get(API, query_string=args))


def test_read_shows_configuration_job_last_run_and_links(as_admin, harvesters, provider):
    res = as_admin.get(f"{API}/a")
    assert res.status_code == 200
    data = res.json
    assert (data["id"], data["name"], data["base_url"]) == ("a", "Harvester A", provider.base_url)
    assert (data["transformer"], data["batch_size"], data["setspecs"]) == ("oai_dc", 10, [])
    # Its job exists from the start (so admins schedule that one), waiting for a schedule.
    assert data["job"]["task"] == job_type_id("a") and data["job"]["active"]
    assert data["job"]["scheduled"] is False and data["jobs"] == [data["job"]]
    assert data["last_run"] is None
    assert data["links"] == {
        "self": "https://repo.example.org/api/oai-harvest/harvesters/a",
        "run": "https://repo.example.org/api/oai-harvest/harvesters/a/run",
        "preview": "https://repo.example.org/api/oai-harvest/harvesters/a/preview",
        "purge": "https://repo.example.org/api/oai-harvest/harvesters/a/purge",
        "runs": "https://repo.example.org/api/oai-harvest/harvesters/a/runs",
        "runs_history": "https://repo.example.org/api/oai-harvest/harvesters/a/runs/history",
        "records": "https://repo.example.org/api/oai-harvest/records?harvester=a",
        "self_html": "https://repo.example.org/administration/oai-harvesters/a",
        "records_html": "https://repo.example.org/administration/oai-harvested-records?f=harvester%3Aa",
        "job_html": f"https://repo.example.org/administration/jobs/{data['job']['id']}",
    }


def test_read_unknown_is_404_with_message(as_admin, harvesters):
    res = as_admin.get(f"{API}/nope")
    assert res.status_code == 404
    assert res.json["message"] == "No harvester with id 'nope'."


# -- create ----------------------------------------------------------------------------------
def test_create_registers_the_job_type(as_admin, users, provider):
    res = as_admin.post(API, json=harvester_data("new", provider.base_url, setspecs=["phys"]))
    assert res.status_code == 201, res.json
    assert res.json["id"] == "new" and res.json["setspecs"] == ["phys"]
    assert current_jobs.registry.get(job_type_id("new")).harvester_id == "new"
    assert as_admin.get(f"{API}/new").status_code == 200


def test_create_duplicate_is_409(as_admin, harvesters, provider):
    res = as_admin.post(API, json=harvester_data("a", provider.base_url, name="Again"))
    assert res.status_code == 409
    assert res.json["message"] == "A harvester with id 'a' already exists."
    assert db.session.get(OAIHarvester, "a").name == "Harvester A"


def test_create_invalid_is_400_naming_each_field(as_admin, users):
    res = as_admin.post(
        API,
        json={
            "id": "Bad Id",
            "base_url": "ftp://example.org",
            "target": "nothing",
            "batch_size": 0,
            "harvest_managers": [users.plain.user.id, 98765],
            "unexpected": 1,
        },
    )
    errors = field_errors(res)
    assert "slug" in errors["id"]
    assert "http:// or https://" in errors["base_url"]
    assert "No record service with id 'nothing'" in errors["target"]
    assert "greater than or equal to 1" in errors["batch_size"]
    assert errors["harvest_managers"] == "No user with id 98765."
    assert "Unknown field" in errors["unexpected"]
    assert "name" in errors and "metadata_prefix" not in errors  # the check picks one
    assert db.session.query(OAIHarvester).count() == 0


def test_missing_creator_over_rest(as_admin, users, provider):
    """Left empty: the transformer's configured default, in words; a choice or a name; a
    transformer that does not take it refuses it on the field."""
    data = harvester_data("rdm", provider.base_url, target="records", transformer="oai_dc_rdm")
    res = as_admin.post(API, json={**data, "missing_creator": ""})
    assert res.status_code == 201, res.json
    assert res.json["missing_creator"] is None
    assert res.json["missing_creator_text"] == "contributors (the default of oai_dc_rdm)"

    res = as_admin.put(f"{API}/rdm", json={"missing_creator": "Anonymous"})
    assert res.status_code == 200, res.json
    assert res.json["missing_creator_text"] == "Anonymous"

    res = as_admin.post(
        API, json={**harvester_data("dc", provider.base_url), "missing_creator": "holder"}
    )
    assert "has no use for it" in field_errors(res)["missing_creator"]
    assert "leave missing_creator empty" in field_errors(res)["missing_creator"]
    res = as_admin.put(f"{API}/rdm", json={"missing_creator": "   "})
    assert "missing_creator is empty" in field_errors(res)["missing_creator"]


def test_create_runs_the_preflight_check_and_reports_it_on_the_field(
    as_admin, users, provider, preflight_on
):
    errors = field_errors(
        as_admin.post(API, json=harvester_data("x", provider.base_url, metadata_prefix="marc21"))
    )
    assert "does not offer metadata prefix 'marc21'" in errors["metadata_prefix"]

    errors = field_errors(
        as_admin.post(API, json=harvester_data("x", provider.base_url, setspecs=["chem"]))
    )
    assert "no set 'chem'" in errors["setspecs"]

    dead = provider.base_url.replace("/oai", "/nothing-here")
    errors = field_errors(as_admin.post(API, json=harvester_data("x", dead)))
    assert "did not answer Identify" in errors["base_url"]
    assert db.session.query(OAIHarvester).count() == 0

    res = as_admin.post(API, json=harvester_data("x", dead), query_string={"check": "false"})
    assert res.status_code == 201

    res = as_admin.post(API, json=harvester_data("y", provider.base_url, setspecs=["phys"]))
    assert res.status_code == 201


def test_a_wrong_target_is_reported_with_the_providers_answer(
    as_admin, users, provider, preflight_on
):
    """Every problem at once: an operator who got the target wrong also hears that the
    provider has no such prefix and no such set."""
    body = harvester_data(
        "x", provider.base_url, target="no-such-service", metadata_prefix="marc21",
        setspecs=["chem"],
    )  # fmt: skip
    errors = field_errors(as_admin.post(API, json=body))
    assert set(errors) == {"target", "metadata_prefix", "setspecs"}, errors
    assert "does not offer metadata prefix 'marc21'" in errors["metadata_prefix"]
    assert db.session.query(OAIHarvester).count() == 0

    # An invalid endpoint is not asked anything; the other problems are still all named.
    errors = field_errors(
        as_admin.post(API, json={**body, "base_url": "ftp://nope", "batch_size": 0})
    )
    assert set(errors) == {"target", "base_url", "batch_size"}, errors


# -- update ----------------------------------------------------------------------------------
def test_update_changes_given_fields_and_accepts_what_read_returned(as_admin, harvesters):
    res = as_admin.put(f"{API}/a", json={"name": "Renamed", "batch_size": 5})
    assert res.status_code == 200, res.json
    assert (res.json["name"], res.json["batch_size"], res.json["target"]) == (
        "Renamed",
        5,
        "oai-sample-records",
    )
    assert "Renamed" in current_jobs.registry.get(job_type_id("a")).title

    # What an edit form does: GET, change one field, PUT everything back.
    body = as_admin.get(f"{API}/a").json
    body["comment"] = "Edited in the panel"
    res = as_admin.put(f"{API}/a", json=body)
    assert res.status_code == 200, res.json
    assert res.json["comment"] == "Edited in the panel" and res.json["name"] == "Renamed"


def test_empty_optional_form_fields_take_the_defaults(as_admin, users, provider):
    body = harvester_data("f", provider.base_url, transformer="", batch_size="", comment="")
    res = as_admin.post(API, json=body)
    assert res.status_code == 201, res.json
    assert (res.json["transformer"], res.json["batch_size"], res.json["comment"]) == (
        "oai_dc",
        100,
        None,
    )


def test_update_refuses_bad_input_and_id_change(as_admin, harvesters):
    assert "cannot change" in field_errors(as_admin.put(f"{API}/a", json={"id": "z"}))["id"]
    assert "base_url" in field_errors(as_admin.put(f"{API}/a", json={"base_url": "nope"}))
    db.session.expire_all()
    assert db.session.get(OAIHarvester, "a").base_url.startswith("http://127.0.0.1")
    assert as_admin.put(f"{API}/nope", json={"name": "x"}).status_code == 404
    assert "_schema" in field_errors(as_admin.put(f"{API}/a", json=["name"]))
    assert "_schema" in field_errors(as_admin.post(API, json=["name"]))
    res = as_admin.put(f"{API}/a", data="{not json", content_type="application/json")
    assert res.status_code == 400 and "Unable to decode JSON" in res.json["message"]


def test_update_asks_the_provider_only_when_endpoint_prefix_or_sets_change(
    as_admin, harvesters, provider, preflight_on
):
    before = len(provider.requests_for("Identify"))
    assert as_admin.put(f"{API}/a", json={"name": "No check needed"}).status_code == 200
    assert len(provider.requests_for("Identify")) == before

    errors = field_errors(as_admin.put(f"{API}/a", json={"setspecs": ["chem"]}))
    assert "no set 'chem'" in errors["setspecs"]
    assert len(provider.requests_for("Identify")) == before + 1

    errors = field_errors(as_admin.put(f"{API}/a", json={"metadata_prefix": "marc21"}))
    assert "does not offer metadata prefix 'marc21'" in errors["metadata_prefix"]
    assert len(provider.requests_for("Identify")) == before + 2

    dead = provider.base_url.replace("/oai", "/nothing-here")
    errors = field_errors(as_admin.put(f"{API}/a", json={"base_url": dead}))
    assert "did not answer Identify" in errors["base_url"]

    res = as_admin.put(f"{API}/a", json={"setspecs": ["chem"]}, query_string={"check": "false"})
    assert res.status_code == 200 and res.json["setspecs"] == ["chem"]


# -- delete ----------------------------------------------------------------------------------
def test_delete_removes_harvester_job_type_and_jobs(as_admin, harvesters):
    assert as_admin.post(f"{API}/a/run").status_code == 202
    assert len(jobs_of("a")) == 1

    res = as_admin.delete(f"{API}/a")
    assert res.status_code == 204
    assert as_admin.get(f"{API}/a").status_code == 404
    assert jobs_of("a") == []
    assert job_type_id("a") not in current_jobs.registry.get_all()
    assert as_admin.delete(f"{API}/a").status_code == 404


# -- runs ------------------------------------------------------------------------------------
def test_run_now_runs_the_harvesters_job_and_returns_the_run(
    as_admin, users, harvesters, corpus, provider
):
    res = as_admin.post(f"{API}/a/run")
    assert res.status_code == 202, res.json
    run = res.json
    # Eager Celery in tests: the run has already happened.
    assert run["status"] == "SUCCESS", run["message"]
    assert (run["total_entries"], run["inserted_entries"], run["errored_entries"]) == (50, 50, 0)
    assert run["harvester_id"] == "a" and run["started_by_id"] == users.admin.user.id
    assert run["args"]["harvester_id"] == "a" and run["args"]["full"] is False
    assert run["links"]["self"].endswith(f"/api/oai-harvest/harvesters/a/runs/{run['id']}")
    assert run["links"]["self_html"] == f"https://repo.example.org/administration/runs/{run['id']}"

    (job,) = jobs_of("a")
    # Schedulable as it is in Administration -> Jobs: active, described, no schedule yet.
    assert job.active is True and job.schedule is None
    assert job.description == f"Harvest {provider.base_url} into oai-sample-records"

    harvester = as_admin.get(f"{API}/a").json
    assert harvester["job"]["id"] == str(job.id)
    assert (
        harvester["links"]["job_html"] == f"https://repo.example.org/administration/jobs/{job.id}"
    )
    assert harvester["last_run"]["id"] == run["id"]

    assert as_admin.get(path_of(run["links"]["self"])).json["status"] == "SUCCESS"
    runs = as_admin.get(f"{API}/a/runs").json
    assert [hit["id"] for hit in runs["hits"]["hits"]] == [run["id"]]


def test_a_failed_run_shows_its_error_without_the_python_traceback(as_admin, harvesters, provider):
    provider.quirks.fail_requests = 100  # every answer 503, past every retry
    provider.quirks.fail_status = 500
    run = as_admin.post(f"{API}/a/run").json
    assert run["status"] == "FAILED"
    assert run["message"].startswith("OAITransportError: HTTP 500")
    assert "Traceback" not in run["message"] and "File " not in run["message"]
    assert as_admin.get(f"{API}/a").json["last_run"]["message"] == run["message"]
    # Administration -> Jobs shows the same (the traceback is in the application's log).
    assert db.session.get(Run, run["id"]).message == run["message"]


def test_run_body_since_full_and_identifiers(as_admin, harvesters, corpus, provider):
    wanted = sorted(corpus.live_identifiers())[:2]
    res = as_admin.post(f"{API}/a/run", json={"identifiers": wanted, "title": "Two records"})
    assert res.status_code == 202
    assert (res.json["title"], res.json["total_entries"]) == ("Two records", 2)
    assert res.json["args"]["identifiers"] == wanted
    assert [r["identifier"] for r in provider.requests_for("GetRecord")] == wanted

    res = as_admin.post(f"{API}/a/run", json={"since": "2024-01-01T00:30:00Z"})
    assert res.json["status"] == "SUCCESS" and res.json["args"]["since_source"] == "manual"
    assert provider.requests_for("ListRecords")[0]["from"] == "2024-01-01T00:30:00Z"

    res = as_admin.post(f"{API}/a/run", json={"full": True})
    assert res.json["args"]["full"] is True and res.json["total_entries"] == 50
    assert "from" not in provider.requests_for("ListRecords")[-1]


def test_run_body_is_validated(as_admin, harvesters):
    errors = field_errors(as_admin.post(f"{API}/a/run", json={"since": "yesterday", "x": 1}))
    assert "since" in errors and "Unknown field" in errors["x"]
    assert "identifiers.0" in field_errors(
        as_admin.post(f"{API}/a/run", json={"identifiers": [""]})
    )
    assert as_admin.post(f"{API}/nope/run").status_code == 404


def test_run_form_sends_empty_fields_which_mean_not_given(as_admin, harvesters):
    res = as_admin.post(f"{API}/a/run", json={"since": "", "identifiers": [], "full": False})
    assert res.status_code == 202 and res.json["total_entries"] == 50


def test_second_run_while_one_is_going_on_is_409(as_admin, harvesters):
    first = as_admin.post(f"{API}/a/run").json
    running = db.session.get(Run, first["id"])
    running.status = RunStatusEnum.RUNNING
    db.session.commit()

    res = as_admin.post(f"{API}/a/run")
    assert res.status_code == 409
    assert (
        "already has a run in progress" in res.json["message"]
        and first["id"] in res.json["message"]
    )
    # Another harvester is not held up.
    assert as_admin.post(f"{API}/b/run").status_code == 202


def test_unknown_run_is_404(as_admin, harvesters):
    run_id = as_admin.post(f"{API}/a/run").json["id"]
    assert as_admin.get(f"{API}/a/runs/{run_id}").status_code == 200
    assert as_admin.get(f"{API}/b/runs/{run_id}").status_code == 404  # not b's run
    assert as_admin.get(f"{API}/a/runs/not-a-uuid").status_code == 404


def test_run_now_creates_a_job_for_a_harvester_stored_without_one(as_admin, harvesters):
    # Harvesters stored by earlier versions had no job until their first run.
    db.session.query(Job).filter_by(task=job_type_id("a")).delete()
    db.session.commit()
    res = as_admin.post(f"{API}/a/run", json={"identifiers": ["oai:unknown:1"]})
    assert res.status_code == 202, res.json
    (job,) = jobs_of("a")
    assert job.active and job.description and job.schedule is None


def test_a_second_job_of_the_same_task_is_shown_and_a_scheduled_one_comes_first(
    as_admin, harvesters
):
    create_job("a", title="Nightly", schedule={"type": "interval", "hours": 6})
    harvester = as_admin.get(f"{API}/a").json
    assert [job["title"] for job in harvester["jobs"]] == [
        "Nightly",
        "OAI-PMH harvest: Harvester A",
    ]
    assert harvester["job"]["scheduled"] and harvester["job"]["schedule"]["hours"] == 6


def test_create_without_a_prefix_gets_the_richest_offered_and_says_why(
    as_admin, provider, preflight_on
):
    data = harvester_data("auto", provider.base_url, metadata_prefix=OMIT)

    res = as_admin.post(API, json=data)

    assert res.status_code == 201, res.json
    assert res.json["metadata_prefix"] == "oai_dc"  # the sample target's own default
    assert res.json["metadata_prefix_choice"].startswith(
        "oai_dc was picked: of the formats the provider offers (oai_dc)"
    )
    assert (
        as_admin.get(f"{API}/auto").json["metadata_prefix_choice"]
        == (res.json["metadata_prefix_choice"])
    )
    # The panel's edit form sends the stored prefix back: the reason stays.
    res = as_admin.put(f"{API}/auto", json={"metadata_prefix": "oai_dc", "name": "Auto"})
    assert res.status_code == 200, res.json
    assert res.json["metadata_prefix_choice"].startswith("oai_dc was picked")


def test_files_options_over_rest(as_admin, users, provider):
    """The files options (issue 36) as JSON, with their defaults and in words; a host that is
    none and a plain target refused on their fields."""
    data = harvester_data("rdm", provider.base_url, target="records", transformer="oai_dc_rdm")
    res = as_admin.post(API, json=data)
    assert res.status_code == 201, res.json
    assert (res.json["files"], res.json["files_failure"], res.json["files_changes"]) == (
        "none",
        "metadata-only",
        "new-version",
    )
    assert res.json["files_max_size"] is None and res.json["files_hosts"] is None
    assert res.json["files_text"] == "none: metadata only"

    res = as_admin.put(
        f"{API}/rdm",
        json={"files": "copy", "files_hosts": ["cdn.example.org"], "files_changes": "replace"},
    )
    assert res.status_code == 200, res.json
    assert res.json["files_hosts"] == ["cdn.example.org"]
    assert res.json["files_text"].startswith(
        "copy: files up to 10,737,418,240 bytes from the provider's host, cdn.example.org"
    )
    assert res.json["files_text"].endswith("files changed at the source: replace")

    res = as_admin.put(f"{API}/rdm", json={"files_hosts": ["http://cdn.example.org/x"]})
    assert "*.example.org" in field_errors(res)["files_hosts.0"]
    res = as_admin.put(f"{API}/rdm", json={"files": "everything"})
    assert "Choose one of: none, link, copy." in field_errors(res)["files"]
    res = as_admin.post(API, json={**harvester_data("dc", provider.base_url), "files": "copy"})
    assert "needs an InvenioRDM records target" in field_errors(res)["files"]


def test_held_deletions_over_rest(as_admin, users, provider, corpus):
    """The deletion guard's held deletions: listed, then confirmed (issue 37); a harvest
    manager may read them, not release them."""
    from factories import run_harvest

    from oarepo_oaipmh_harvester.harvest.window import SinceSource

    as_admin.post(API, json={**harvester_data("guarded", provider.base_url), "deletion_guard": 5})
    run_harvest("guarded")
    res = as_admin.get(f"{API}/guarded")
    assert res.json["deletion_guard"] == 5
    corpus.advance_clock(hours=1)
    gone = sorted(corpus.live_identifiers())[:25]
    for identifier in gone:
        corpus.delete(identifier)
    summary = run_harvest("guarded", since_source=SinceSource.WATERMARK)
    assert summary.counts.held == 25

    listed = as_admin.get(f"{API}/guarded/deletions").json
    assert (listed["held"], listed["rejected"]) == (25, 0)
    assert sorted(r["oai_identifier"] for r in listed["records"]) == gone

    res = as_admin.post(f"{API}/guarded/deletions/reject")
    assert res.status_code == 200 and res.json["rejected"] == 25
    assert as_admin.get(f"{API}/guarded/deletions").json["held"] == 0
    res = as_admin.put(f"{API}/guarded", json={"deletion_guard": 101})
    assert "less than or equal to 100" in field_errors(res)["deletion_guard"]


def test_undo_a_run_over_rest(as_admin, login, users, harvesters, corpus):
    """A run undone (issue 37): its plan with ?dry_run=true, then the undo run itself (a run of
    the harvester's job); a second undo is refused with the reason; a harvest manager may not
    undo (it is a repair)."""
    first = as_admin.post(f"{API}/a/run").json
    assert first["status"] == "SUCCESS" and first["inserted_entries"] == 50

    res = as_admin.post(f"{API}/a/runs/{first['id']}/undo", query_string={"dry_run": "true"})
    assert res.status_code == 200, res.json
    assert res.json["dry_run"] and res.json["counts"]["delete"] == 50
    assert len(res.json["steps"]) == 50
    assert as_admin.get(f"{API}/a").json["watermark"] is not None  # the plan changed nothing

    res = as_admin.post(f"{API}/a/runs/{first['id']}/undo")
    assert res.status_code == 202, res.json
    undo = res.json
    assert undo["status"] == "SUCCESS" and undo["title"] == f"Undo of run {first['id']}"
    assert undo["args"]["undo"] == first["id"]
    assert as_admin.get(f"{API}/a").json["watermark"] is None
    runs = as_admin.get(f"{API}/a/runs").json["hits"]["hits"]
    assert {run["id"] for run in runs} == {first["id"], undo["id"]}

    again = as_admin.post(f"{API}/a/runs/{first['id']}/undo")
    assert f"undone already, by run {undo['id']}" in field_errors(again)["undo"]
    as_manager = login(users.manager)
    assert as_manager.post(f"{API}/a/runs/{undo['id']}/undo").status_code == 403
