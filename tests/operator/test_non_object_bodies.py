"""A request body that is not a JSON object is a 400 on every write endpoint (issue 39, 1).

`[1,2]` or `"hello"` sent to create a harvester was a 500 (KeyError in the service), `[]` sent
to change one a 200 that changed nothing, `0` to Run now started a run, and a list sent to
purge a 500. Each must be a 400 saying what to send, with nothing written or started; the
service itself refuses them, so that no surface can get past it.
"""

from __future__ import annotations

import json

import pytest
from factories import harvester_data
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import Run

from oarepo_oaipmh_harvester.models import OAIHarvester
from oarepo_oaipmh_harvester.proxies import (
    current_harvest_runs_service,
    current_harvested_records_service,
    current_harvester_service,
)
from oarepo_oaipmh_harvester.services.errors import HarvesterValidationError

API = "/api/oai-harvest"

NOT_OBJECTS = [[1, 2], [], "hello", "", 0, 3.5, True, False]
"""JSON values that are not objects, sent as the whole body."""


@pytest.fixture()
def as_admin(login, users):
    return login(users.admin)


def send(client, method: str, path: str, body: bytes):
    return getattr(client, method)(API + path, data=body, content_type="application/json")


def body_error(response) -> str:
    """The one message of a 400 refusing the body as a whole."""
    assert response.status_code == 400, (response.status_code, response.get_data(as_text=True))
    (error,) = response.json["errors"]
    return " ".join(error["messages"])


def runs() -> int:
    return db.session.query(Run).count()


ENDPOINTS = [
    ("post", "/harvesters", "harvester's fields"),
    ("put", "/harvesters/a", "fields to change"),
    ("post", "/harvesters/a/run", "run arguments"),
    ("post", "/harvesters/a/preview", "preview's arguments"),
    ("post", "/harvesters/a/purge", "confirm"),
    ("post", "/records/a/oai:a:1/reharvest", "re-harvest"),
]


@pytest.mark.parametrize("method, path, what", ENDPOINTS)
@pytest.mark.parametrize("value", NOT_OBJECTS, ids=repr)
def test_a_body_that_is_not_an_object_is_400_and_changes_nothing(
    as_admin, tracked, method, path, what, value
):
    before = runs()
    message = body_error(send(as_admin, method, path, json.dumps(value).encode()))
    assert "JSON object" in message and what in message, message
    assert runs() == before
    assert db.session.get(OAIHarvester, "a").name == "Harvester A"
    assert [h.id for h in db.session.scalars(db.select(OAIHarvester))] == ["a", "b"]


@pytest.mark.parametrize("method, path, what", ENDPOINTS)
def test_a_body_that_is_not_json_is_400(as_admin, tracked, method, path, what):
    before = runs()
    response = send(as_admin, method, path, b"{not json")
    assert response.status_code == 400, response.get_data(as_text=True)
    assert "JSON" in response.json["message"]
    assert runs() == before


@pytest.mark.parametrize("method, path", [("post", "/harvesters"), ("put", "/harvesters/a")])
def test_null_or_no_body_where_the_fields_are_required_is_400(as_admin, tracked, method, path):
    for body in (b"null", b""):
        message = body_error(send(as_admin, method, path, body))
        assert "JSON object" in message, message


def test_no_body_or_null_still_starts_a_plain_run_and_a_preview(as_admin, tracked):
    assert as_admin.post(f"{API}/harvesters/a/preview").status_code == 200
    assert send(as_admin, "post", "/harvesters/a/preview", b"null").status_code == 200
    assert send(as_admin, "post", "/records/a/oai:a:1/reharvest", b"null").status_code == 202


def test_an_object_body_is_still_taken(as_admin, tracked, provider):
    res = as_admin.post(f"{API}/harvesters", json=harvester_data("c", provider.base_url))
    assert res.status_code == 201, res.json
    assert as_admin.put(f"{API}/harvesters/c", json={}).status_code == 200
    res = as_admin.post(f"{API}/records/a/oai:a:1/reharvest", json={"since": "2024-01-01"})
    assert res.status_code == 400 and res.json["errors"][0]["field"] == "since"


@pytest.mark.parametrize("value", [[1, 2], "hello", 7], ids=repr)
def test_the_services_refuse_data_that_is_not_a_mapping(tracked, value):
    calls = [
        lambda: current_harvester_service.create(system_identity, value),
        lambda: current_harvester_service.update(system_identity, "a", value),
        lambda: current_harvest_runs_service.start_run(system_identity, "a", value),
        lambda: current_harvest_runs_service.preview(system_identity, "a", value),
        lambda: current_harvest_runs_service.purge(system_identity, "a", value),
        lambda: current_harvest_runs_service.harvest_in_process(system_identity, "a", value),
        lambda: current_harvested_records_service.reharvest(system_identity, "a", "oai:a:1", value),
    ]
    before = runs()
    for call in calls:
        with pytest.raises(HarvesterValidationError) as refused:
            call()
        assert "object" in str(refused.value), refused.value
    assert runs() == before


def test_the_harvester_service_refuses_none(tracked):
    for call in (
        lambda: current_harvester_service.create(system_identity, None),
        lambda: current_harvester_service.update(system_identity, "a", None),
    ):
        with pytest.raises(HarvesterValidationError, match="object"):
            call()
