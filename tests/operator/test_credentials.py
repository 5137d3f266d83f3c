"""A provider that wants credentials (HTTP Basic, an API token header), on every surface.

The secrets go to the provider's own origin with every request, are stored encrypted, and
never come back: not by REST, the panel, the command line, run messages, reports or logs
(each is searched for them below). The provider is the bundled one on 127.0.0.1, made to
answer 401 without them.
"""

from __future__ import annotations

import logging

import pytest
from factories import harvester_data
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import Run

from oarepo_oaipmh_harvester.cli import oai
from oarepo_oaipmh_harvester.fixtures import load_harvesters
from oarepo_oaipmh_harvester.models import OAIHarvester
from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service
from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

API = "/api/oai-harvest/harvesters"
PASSWORD = "pw-Zq8-never-shown"
TOKEN = "tok-Hx3-never-shown"
SECRETS = (PASSWORD, TOKEN)


@pytest.fixture()
def as_admin(login, users):
    return login(users.admin)


@pytest.fixture()
def guarded(provider):
    provider.quirks.require_basic_auth = ("harvester", PASSWORD)
    provider.quirks.require_header = ("X-Api-Key", TOKEN)
    return provider


def no_secret_in(text: str) -> bool:
    return not any(secret in text for secret in SECRETS)


def create_body(base_url: str, **extra) -> dict:
    return harvester_data(
        "guarded",
        base_url,
        auth={"username": "harvester", "password": PASSWORD},
        headers={"X-Api-Key": TOKEN},
        **extra,
    )


def test_credentials_are_sent_kept_encrypted_and_never_shown(
    app, as_admin, users, guarded, corpus, set_config, mailbox, caplog
):
    caplog.set_level(logging.DEBUG)
    set_config(OAI_HARVESTER_PREFLIGHT_CHECK=True)

    # Without them the provider refuses, and the preflight check says why.
    res = as_admin.post(API, json=harvester_data("bare", guarded.base_url))
    assert res.status_code == 400 and "authentication" in res.get_data(as_text=True)

    res = as_admin.post(
        API, json=create_body(guarded.base_url, harvest_managers=[users.manager.user.id])
    )
    assert res.status_code == 201, res.json
    assert res.json["credentials"] == {"auth": "set", "headers": {"X-Api-Key": "set"}}
    assert no_secret_in(res.get_data(as_text=True))

    run = as_admin.post(f"{API}/guarded/run").json
    assert run["status"] == "SUCCESS", run["message"]
    assert run["inserted_entries"] == 50
    sent = guarded.request_headers[-1]
    assert sent["X-Api-Key"] == TOKEN and sent["Authorization"].startswith("Basic ")

    # Stored encrypted: the row does not hold them in clear.
    stored = db.session.execute(
        db.text("SELECT credentials FROM oai_harvester WHERE id = 'guarded'")
    ).scalar()
    assert stored and no_secret_in(stored) and "harvester" not in stored

    # Every surface that shows a harvester or its runs.
    shown = [
        as_admin.get(f"{API}/guarded"),
        as_admin.get(API),
        as_admin.get(f"{API}/guarded", headers={"Accept": "application/vnd.inveniordm.v1+json"}),
        as_admin.get(f"{API}/guarded/runs"),
        as_admin.get("/administration/oai-harvesters/guarded"),
        as_admin.get("/administration/oai-harvesters/guarded/edit"),
    ]
    for response in shown:
        assert response.status_code == 200
        assert no_secret_in(response.get_data(as_text=True)), response.request.path
    cli = app.test_cli_runner().invoke(oai, ["harvester", "list", "--json"])
    assert '"auth": "set"' in cli.output and no_secret_in(cli.output)
    assert all(no_secret_in(message.body + (message.html or "")) for message in mailbox)
    assert mailbox  # the report went out, without them
    assert no_secret_in(caplog.text)


def test_changes_keep_replace_or_clear_the_credentials(as_admin, users, guarded, corpus):
    assert as_admin.post(API, json=create_body(guarded.base_url)).status_code == 201

    # An edit without them (what the panel's form sends) keeps them.
    body = as_admin.get(f"{API}/guarded").json
    body.update(name="Renamed", auth_username="", auth_password="", headers="")
    res = as_admin.put(f"{API}/guarded", json=body)
    assert res.status_code == 200, res.json
    assert res.json["credentials"]["auth"] == "set"
    assert (
        current_harvest_runs_service.start_run(system_identity, "guarded").data["status"]
        == "SUCCESS"
    )

    # The form's user name and password replace the login; a wrong one is a 401 again.
    res = as_admin.put(
        f"{API}/guarded", json={"auth_username": "harvester", "auth_password": "wrong"}
    )
    assert res.status_code == 200
    run = current_harvest_runs_service.start_run(system_identity, "guarded")
    failed = db.session.get(Run, run.id)
    assert failed.status.name == "FAILED" and "authentication" in failed.message
    assert no_secret_in(failed.message) and "wrong" not in failed.message

    res = as_admin.put(f"{API}/guarded", json={"clear_credentials": True})
    assert res.json["credentials"] == {"auth": "not set", "headers": {}}
    res = as_admin.put(f"{API}/guarded", json={"headers": "X-Api-Key: other"})
    assert res.json["credentials"] == {"auth": "not set", "headers": {"X-Api-Key": "set"}}
    res = as_admin.put(f"{API}/guarded", json={"headers": None})
    assert res.json["credentials"]["headers"] == {}


def test_refused_credentials_name_their_field(as_admin, users, provider):
    body = harvester_data("x", provider.base_url, auth={"password": "p"})
    assert "auth" in {
        e["field"].split(".")[0] for e in as_admin.post(API, json=body).json["errors"]
    }
    body = harvester_data("x", provider.base_url, headers={"Authorization": "Bearer t"})
    errors = as_admin.post(API, json=body).json["errors"]
    assert any("user name and password as auth)" in " ".join(e["messages"]) for e in errors)
    body = harvester_data("x", provider.base_url.replace("://", "://user:pw@"))
    errors = as_admin.post(API, json=body).json["errors"]
    assert errors[0]["field"] == "base_url" and "without a user name" in errors[0]["messages"][0]


def test_credentials_go_to_the_providers_own_origin_only(
    as_admin, users, provider, corpus, set_config
):
    """A provider that moved redirects elsewhere (an origin the site allows): the request
    follows, without the login and the token."""
    with OAIPMHProvider(corpus) as elsewhere:
        set_config(OAI_HARVESTER_ALLOWED_REDIRECT_ORIGINS=[elsewhere.base_url])
        provider.quirks.redirect_to = elsewhere.base_url
        assert as_admin.post(API, json=create_body(provider.base_url)).status_code == 201
        run = as_admin.post(f"{API}/guarded/run").json
        assert run["status"] == "SUCCESS", run["message"]
        assert provider.request_headers[-1]["X-Api-Key"] == TOKEN
        assert elsewhere.request_headers
        for headers in elsewhere.request_headers:
            assert "X-Api-Key" not in headers and "Authorization" not in headers


def test_fixtures_name_environment_variables_instead_of_secrets(
    app, users, guarded, corpus, tmp_path, monkeypatch
):
    monkeypatch.setenv("GUARDED_PASSWORD", PASSWORD)
    monkeypatch.setenv("GUARDED_TOKEN", TOKEN)
    path = tmp_path / "harvesters.yaml"
    path.write_text(
        f"""
- id: guarded
  name: Guarded provider
  base_url: {guarded.base_url}
  metadata_prefix: oai_dc
  target: oai-sample-records
  auth:
    username: harvester
    password: {{env: GUARDED_PASSWORD}}
  headers:
    X-Api-Key: {{env: GUARDED_TOKEN}}
""",
        encoding="utf-8",
    )
    result = load_harvesters(path, check=True)
    assert result.created == ["guarded"] and result.ok, result.errors
    assert load_harvesters(path, check=True).unchanged == ["guarded"]
    # Only the names are stored: the values are read at each run.
    stored = db.session.get(OAIHarvester, "guarded").credentials
    from oarepo_oaipmh_harvester.credentials import unseal

    assert unseal(stored)["auth"]["password"] == {"env": "GUARDED_PASSWORD"}
    run = current_harvest_runs_service.start_run(system_identity, "guarded")
    assert db.session.get(Run, run.id).status.name == "SUCCESS"

    monkeypatch.delenv("GUARDED_TOKEN")
    run = current_harvest_runs_service.start_run(system_identity, "guarded")
    failed = db.session.get(Run, run.id)
    assert failed.status.name == "FAILED"
    assert "environment variable GUARDED_TOKEN, which is not set" in failed.message


def test_the_command_line_reads_the_password_from_a_file(app, users, guarded, corpus, tmp_path):
    secret_file = tmp_path / "password"
    secret_file.write_text(PASSWORD + "\n", encoding="utf-8")
    runner = app.test_cli_runner()
    result = runner.invoke(
        oai,
        [
            "harvester", "create", "--id", "guarded", "--name", "Guarded",
            "--base-url", guarded.base_url, "--metadata-prefix", "oai_dc",
            "--target", "oai-sample-records", "--auth-user", "harvester",
            "--auth-password-file", str(secret_file), "--header", f"X-Api-Key: {TOKEN}",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert no_secret_in(result.output)
    listed = runner.invoke(oai, ["harvester", "list", "--json"]).output
    assert '"X-Api-Key": "set"' in listed and no_secret_in(listed)
    result = runner.invoke(oai, ["harvester", "update", "guarded", "--clear-credentials"])
    assert result.exit_code == 0
    assert db.session.get(OAIHarvester, "guarded").credentials is None
