"""Who may do what, on every endpoint: anonymous, a plain user, the manager of harvester "a"
(on "a" and on "b") and an administrator.

Policy: callers who may not use the API at all (anonymous, users who manage nothing) get 403
everywhere, before anything is looked up. A manager gets 404 for a harvester (and its records
and runs) they do not manage, exactly as for one that does not exist, and 403 for what they
may see but not do (change, delete, create). Administrators may do everything.
"""

from __future__ import annotations

import uuid

import pytest
from factories import harvester_data
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import Run, RunStatusEnum

from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service

H = "/api/oai-harvest/harvesters"
R = "/api/oai-harvest/records"
ADMIN = "/administration"
ONE = {"identifiers": ["oai:unknown:1"]}  # a quick run: one GetRecord

ROLES = ("anonymous", "plain", "manager", "admin")

# (method, url, body, expected status for anonymous, plain user, manager of a, admin).
# Reads first, then changes, deletions last: one role's calls run in this order.
MATRIX = [
    ("GET", H, None, (403, 403, 200, 200)),
    ("GET", f"{H}/a", None, (403, 403, 200, 200)),
    ("GET", f"{H}/b", None, (403, 403, 404, 200)),
    ("GET", f"{H}/missing", None, (403, 403, 404, 404)),
    ("GET", f"{H}/a/runs", None, (403, 403, 200, 200)),
    ("GET", f"{H}/b/runs", None, (403, 403, 404, 200)),
    ("GET", f"{H}/a/runs/{{run_a}}", None, (403, 403, 200, 200)),
    ("GET", f"{H}/b/runs/{{run_b}}", None, (403, 403, 404, 200)),
    ("GET", R, None, (403, 403, 200, 200)),
    ("GET", f"{R}/a/oai:a:1", None, (403, 403, 200, 200)),
    ("GET", f"{R}/b/oai:b:1", None, (403, 403, 404, 200)),
    ("GET", f"{R}/missing/oai:a:1", None, (403, 403, 404, 404)),
    ("GET", f"{ADMIN}/oai-harvesters", None, (403, 403, 403, 200)),
    ("GET", f"{ADMIN}/oai-harvesters/a", None, (403, 403, 403, 200)),
    ("GET", f"{ADMIN}/oai-harvesters/create", None, (403, 403, 403, 200)),
    ("GET", f"{ADMIN}/oai-harvesters/a/edit", None, (403, 403, 403, 200)),
    ("GET", f"{ADMIN}/oai-harvested-records", None, (403, 403, 403, 200)),
    ("GET", f"{ADMIN}/oai-harvested-records/a/oai:a:1", None, (403, 403, 403, 200)),
    ("POST", H, "new", (403, 403, 403, 201)),
    ("PUT", f"{H}/a", {"name": "Changed"}, (403, 403, 403, 200)),
    ("PUT", f"{H}/b", {"name": "Changed"}, (403, 403, 404, 200)),
    ("POST", f"{H}/a/run", ONE, (403, 403, 202, 202)),
    ("POST", f"{H}/b/run", ONE, (403, 403, 404, 202)),
    ("POST", f"{R}/a/oai:a:1/reharvest", None, (403, 403, 202, 202)),
    ("POST", f"{R}/b/oai:b:1/reharvest", None, (403, 403, 404, 202)),
    # Previews change nothing: managers may preview their harvesters. Repairs are for
    # administrators; a purge needs the harvester's id typed in confirm.
    ("POST", f"{H}/a/preview", ONE, (403, 403, 200, 200)),
    ("POST", f"{H}/b/preview", ONE, (403, 403, 404, 200)),
    ("POST", f"{H}/a/run", {"rewrite": True}, (403, 403, 403, 202)),
    ("POST", f"{H}/a/run", {"retry_errors": True}, (403, 403, 403, 202)),
    ("POST", f"{H}/a/purge", {"confirm": "b"}, (403, 403, 403, 400)),
    ("POST", f"{H}/b/purge", {"confirm": "b"}, (403, 403, 404, 202)),
    ("DELETE", f"{H}/a", None, (403, 403, 403, 204)),
    ("DELETE", f"{H}/b", None, (403, 403, 404, 204)),
    ("DELETE", f"{H}/missing", None, (403, 403, 404, 404)),
]


def finished_run(harvester_id: str) -> str:
    """A finished run of the harvester's job, without harvesting."""
    job = current_harvest_runs_service.ensure_job(system_identity, harvester_id)
    run = Run(
        id=uuid.uuid4(),
        job=job,
        title="earlier",
        status=RunStatusEnum.SUCCESS,
        queue=job.default_queue or "celery",
        args={},
    )
    db.session.add(run)
    db.session.commit()
    return str(run.id)


@pytest.mark.parametrize("role", ROLES)
def test_every_endpoint(role, users, login, tracked, provider):
    runs = {"run_a": finished_run("a"), "run_b": finished_run("b")}
    client = login({"anonymous": None}.get(role, getattr(users, role, None)))
    new = harvester_data("c", provider.base_url)
    column = ROLES.index(role)
    wrong = []
    for method, url, body, expected in MATRIX:
        url = url.format(**runs)
        json = new if body == "new" else body
        res = client.open(url, method=method, json=json)
        if res.status_code != expected[column]:
            wrong.append(f"{method} {url}: {res.status_code}, expected {expected[column]}")
        elif res.status_code in (403, 404, 409) and url.startswith("/api/"):
            assert res.json["message"], f"{method} {url}: no message"
    assert wrong == []


def test_managers_see_only_their_harvesters_records_and_runs(users, login, tracked):
    client = login(users.manager)
    assert [h["id"] for h in client.get(H).json["hits"]["hits"]] == ["a"]
    records = client.get(R).json
    assert {hit["harvester"] for hit in records["hits"]["hits"]} == {"a"}
    assert {b["key"] for b in records["aggregations"]["harvester"]["buckets"]} == {"a"}
    # Asking for b's records by filter reveals nothing either.
    assert client.get(R, query_string={"harvester": "b"}).json["hits"]["total"] == 0

    run = client.post(f"{H}/a/run", json=ONE).json
    assert run["started_by_id"] == users.manager.user.id


def test_superusers_are_administrators(app, db, UserFixture, login, tracked):
    from invenio_access.models import ActionUsers

    root = UserFixture(email="root@example.org", password="password").create(app, db)
    db.session.add(ActionUsers(action="superuser-access", user=root.user))
    db.session.commit()
    client = login(root)
    assert client.get(f"{H}/b").status_code == 200
    assert client.put(f"{H}/b", json={"name": "By root"}).status_code == 200
    assert client.get(f"{ADMIN}/oai-harvesters").status_code == 200
