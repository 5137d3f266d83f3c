"""Deleting a harvester and creating it again never writes its records twice.

Found as a new user: `invenio oai harvester delete H` (no question asked) dropped the tracking
rows and kept the local records; a harvester created again with the same id and settings
wrote every record a second time (2,600 -> 2,700 local records for a 100-record provider).
On PostgreSQL and on SQLite (the demo's database): the whole module runs on both.
"""

from __future__ import annotations

import os

import pytest
from factories import harvester_data, run_harvest
from invenio_access.permissions import system_identity
from invenio_db import db

from oarepo_oaipmh_harvester.cli import oai
from oarepo_oaipmh_harvester.models import OAIHarvestedRecord, OAIHarvester, OAIReleasedRecord
from oarepo_oaipmh_harvester.proxies import current_harvester_service
from oarepo_oaipmh_harvester.services.errors import HarvesterValidationError

API = "/api/oai-harvest/harvesters"


pytestmark = pytest.mark.parametrize("db_uri", ["server", "sqlite"], indirect=True, scope="module")


@pytest.fixture(scope="module")
def db_uri(request, tmp_path_factory):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('sqlite') / 'harvester.db'}"
    return os.environ.get("SQLALCHEMY_DATABASE_URI", "sqlite://")


@pytest.fixture()
def run_cli(app):
    runner = app.test_cli_runner()

    def invoke(*args: str, typed: str | None = None):
        result = runner.invoke(oai, list(args), input=typed, catch_exceptions=False)
        db.session.expire_all()
        return result

    return invoke


def local_records(sample_service) -> int:
    """The target's records, in its table and in its index."""
    from invenio_search.proxies import current_search

    current_search.flush_and_refresh("oaisamplerecords")
    model = sample_service.record_cls.model_cls
    in_table = db.session.query(model).filter(model.is_deleted.is_(False)).count()
    assert sample_service.search(system_identity, size=1).total == in_table
    return in_table


def create(run_cli, provider, *extra: str):
    return run_cli(
        "harvester", "create", "--id", "h", "--name", "H", "--base-url", provider.base_url,
        "--metadata-prefix", "oai_dc", "--target", "oai-sample-records", "--no-check", *extra,
    )  # fmt: skip


def test_a_harvester_created_again_takes_its_records_over(
    db_uri, users, provider, corpus, run_cli, sample_service, clean_index
):
    assert create(run_cli, provider).exit_code == 0
    assert run_harvest("h").counts.created == len(corpus)

    # A script's delete (no terminal) is refused without --yes, naming what stays.
    refused = run_cli("harvester", "delete", "h")
    assert refused.exit_code == 1
    assert f"Harvester h holds {len(corpus)} local records. They stay" in refused.output
    assert "give --yes" in refused.output
    assert db.session.get(OAIHarvester, "h") is not None

    deleted = run_cli("harvester", "delete", "h", "--yes")
    assert deleted.exit_code == 0, deleted.output
    assert f"Deleted harvester h; its {len(corpus)} local records stay." in deleted.output
    assert db.session.query(OAIReleasedRecord).count() == len(corpus)

    created = create(run_cli, provider)
    assert created.exit_code == 0, created.output
    assert f"It took over {len(corpus)} local records that deleted harvester h left" in (
        created.output
    )
    summary = run_harvest("h")

    assert (summary.counts.created, summary.counts.unchanged) == (0, len(corpus))
    assert local_records(sample_service) == len(corpus)
    assert db.session.query(OAIReleasedRecord).count() == 0
    rows = db.session.query(OAIHarvestedRecord).filter_by(harvester_id="h").all()
    assert len(rows) == len(corpus) and all(row.local_pid for row in rows)


def test_other_sets_take_over_only_when_told_and_a_purge_then_removes_them(
    db_uri, users, provider, corpus, run_cli, sample_service, clean_index
):
    assert create(run_cli, provider, "--set", "phys").exit_code == 0
    created = run_harvest("h").counts.created
    assert run_cli("harvester", "delete", "h", "--yes").exit_code == 0

    refused = create(run_cli, provider)
    assert refused.exit_code != 0
    assert f"{created} of harvester 'h' (sets: phys)" in refused.output
    assert "--take-over-records" in refused.output
    assert db.session.get(OAIHarvester, "h") is None

    taken = create(run_cli, provider, "--take-over-records")
    assert taken.exit_code == 0, taken.output
    assert f"It took over {created} local records" in taken.output
    purged = run_cli("harvester", "purge", "h", "--confirm", "h")
    assert purged.exit_code == 0, purged.output
    assert local_records(sample_service) == 0


@pytest.fixture()
def as_admin(login, users):
    return login(users.admin)


def test_over_rest_and_through_the_service(db_uri, as_admin, users, provider, corpus, clean_index):
    data = harvester_data("h", provider.base_url, setspecs=["phys"])
    assert as_admin.post(API, json=data).status_code == 201
    created = run_harvest("h").counts.created
    assert as_admin.delete(f"{API}/h").status_code == 204

    res = as_admin.post(API, json={**data, "setspecs": []})
    assert res.status_code == 400
    assert any(e["field"] == "take_over_records" for e in res.json["errors"])

    res = as_admin.post(API, json=data)
    assert res.status_code == 201, res.json
    assert res.json["taken_over"] == {"records": created, "from": ["h"]}
    assert as_admin.get(f"{API}/h").json["taken_over"] is None

    # A harvester of another provider, prefix or target takes nothing over.
    current_harvester_service.delete(system_identity, "h")
    with pytest.raises(HarvesterValidationError):
        current_harvester_service.create(system_identity, {**data, "id": "x", "setspecs": []})
    other = current_harvester_service.create(
        system_identity, {**data, "id": "y", "metadata_prefix": "marc21"}, check=False
    )
    assert other.data["taken_over"] is None
