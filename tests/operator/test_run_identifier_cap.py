"""A run asks for at most OAI_HARVESTER_MAX_RUN_IDENTIFIERS identifiers (issue 11, item 13).

A harvest manager could start a run of 10,000 identifiers: 10,000 GetRecord requests to the
provider. Every way to start a run (REST run body, the panel's Run now form, invenio-jobs' run
arguments, the command line) loads its arguments with `RunArgumentsSchema`, where the cap is.
"""

from __future__ import annotations

import pytest
from invenio_db import db
from invenio_jobs.models import Job, Run
from operator_helpers import mounted_api_app

from oarepo_oaipmh_harvester.cli import oai
from oarepo_oaipmh_harvester.resources.config import INVENIO_JSON

API = "/api/oai-harvest"
TOO_MANY = "identifiers per run (OAI_HARVESTER_MAX_RUN_IDENTIFIERS)"


def identifiers(count: int) -> list[str]:
    return [f"oai:example.org:{number}" for number in range(count)]


def identifier_errors(response) -> str:
    assert response.status_code == 400, response.get_data(as_text=True)[:500]
    errors = {error["field"]: " ".join(error["messages"]) for error in response.json["errors"]}
    return errors["identifiers"]


def run_count() -> int:
    return db.session.query(Run).count()


@pytest.fixture()
def as_manager(login, users):
    """The manager of harvester "a": allowed to start its runs, the person the cap is for."""
    return login(users.manager)


@pytest.fixture()
def as_admin(login, users):
    return login(users.admin)


def test_the_default_cap_is_1000_and_the_400_says_so(app, as_manager, harvesters, provider):
    assert mounted_api_app(app).config["OAI_HARVESTER_MAX_RUN_IDENTIFIERS"] == 1000
    before = run_count()
    message = identifier_errors(
        as_manager.post(f"{API}/harvesters/a/run", json={"identifiers": identifiers(10_000)})
    )
    assert message == (
        "At most 1000 identifiers per run (OAI_HARVESTER_MAX_RUN_IDENTIFIERS); 10000 were "
        "given. Split them over several runs, or harvest everything with a full run."
    )
    assert run_count() == before and provider.requests_for("GetRecord") == []


def test_the_cap_follows_the_configuration_on_the_rest_api_and_the_run_now_form(
    as_manager, harvesters, corpus, provider, set_config
):
    set_config(OAI_HARVESTER_MAX_RUN_IDENTIFIERS=3)
    wanted = sorted(corpus.live_identifiers())[:4]

    assert "At most 3 " + TOO_MANY in identifier_errors(
        as_manager.post(f"{API}/harvesters/a/run", json={"identifiers": wanted})
    )
    # The panel's form sends the text area, one identifier per line, as its own media type.
    form = as_manager.post(
        f"{API}/harvesters/a/run",
        json={"identifiers": "\n".join(wanted), "since": "", "full": False},
        headers={"Content-Type": INVENIO_JSON, "Accept": INVENIO_JSON},
    )
    assert "At most 3 " + TOO_MANY + "; 4 were given" in identifier_errors(form)
    assert provider.requests_for("GetRecord") == []

    res = as_manager.post(f"{API}/harvesters/a/run", json={"identifiers": wanted[:3]})
    assert res.status_code == 202 and res.json["total_entries"] == 3
    assert [r["identifier"] for r in provider.requests_for("GetRecord")] == wanted[:3]


def test_the_cap_holds_for_invenio_jobs_run_arguments(as_admin, harvesters, provider, set_config):
    set_config(OAI_HARVESTER_MAX_RUN_IDENTIFIERS=3)
    job = db.session.query(Job).filter_by(task="harvest_oaipmh_records_a").one()
    before = run_count()
    res = as_admin.post(
        f"/api/jobs/{job.id}/runs",
        json={
            "title": "Four records",
            "args": {"job_arg_schema": "OAIHarvestArgsSchema", "identifiers": identifiers(4)},
        },
    )
    assert res.status_code == 400, res.json
    assert TOO_MANY in str(res.json["errors"])
    assert run_count() == before and provider.requests_for("GetRecord") == []


def test_the_cap_holds_for_the_command_line(app, harvesters, provider, set_config):
    set_config(OAI_HARVESTER_MAX_RUN_IDENTIFIERS=3)
    before = run_count()
    arguments = [part for identifier in identifiers(4) for part in ("--identifier", identifier)]
    result = app.test_cli_runner().invoke(oai, ["harvest", "a", *arguments])
    assert result.exit_code != 0 and isinstance(result.exception, SystemExit)
    assert "--identifier: At most 3 " + TOO_MANY + "; 4 were given" in result.output
    assert run_count() == before and provider.requests_for("GetRecord") == []


def test_the_cap_holds_for_custom_arguments_typed_past_the_form(
    as_admin, harvesters, provider, set_config
):
    """invenio-jobs hands a run's "custom args" (JSON) to the task without its schema."""
    import json

    set_config(OAI_HARVESTER_MAX_RUN_IDENTIFIERS=3)
    job = db.session.query(Job).filter_by(task="harvest_oaipmh_records_a").one()
    res = as_admin.post(
        f"/api/jobs/{job.id}/runs",
        json={
            "title": "Four records, typed as custom args",
            "args": {"job_arg_schema": "OAIHarvestArgsSchema"},
            "custom_args": json.dumps({"identifiers": identifiers(4)}),
        },
    )
    assert res.status_code == 400 and TOO_MANY in str(res.json["errors"])
    assert provider.requests_for("GetRecord") == []
