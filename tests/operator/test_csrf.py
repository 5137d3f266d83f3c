"""A browser session cannot be made to change harvesters from another site (CSRF)."""

import pytest
from factories import harvester_data

from oarepo_oaipmh_harvester.models import OAIHarvester

API = "/api/oai-harvest/harvesters"


@pytest.fixture(scope="module")
def app_config(app_config):
    app_config["REST_CSRF_ENABLED"] = True  # as in every Invenio instance
    return app_config


def _csrf_cookie(client) -> str | None:
    cookie = client.get_cookie("csrftoken")
    return cookie.value if cookie else None


def test_a_session_request_without_the_csrf_token_is_refused_and_changes_nothing(
    app, db, login, users, provider
):
    client = login(users.admin)
    data = harvester_data("x", provider.base_url)

    no_cookie = client.post(API, json=data)
    assert no_cookie.status_code == 400 and "CSRF" in no_cookie.get_data(as_text=True)
    token = _csrf_cookie(client)  # the refusal hands out the cookie, as to a browser
    assert token

    forged = client.post(API, json=data)  # the cookie alone: what a forged form sends
    assert forged.status_code == 400
    wrong = client.post(API, json=data, headers={"X-CSRFToken": "not-the-token"})
    assert wrong.status_code == 400
    assert db.session.get(OAIHarvester, "x") is None

    ours = client.post(API, json=data, headers={"X-CSRFToken": token})
    assert ours.status_code == 201, ours.get_json()
    for method, path in (("put", f"{API}/x"), ("delete", f"{API}/x"), ("post", f"{API}/x/run")):
        refused = getattr(client, method)(path, json={"name": "Changed"})
        assert refused.status_code == 400, (method, path)
    assert db.session.get(OAIHarvester, "x").name == data["name"]
