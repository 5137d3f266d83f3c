"""Harvesters in the database: validation, defaults, job type registration."""

import pytest
from factories import OMIT, harvester_data, job_type_id
from invenio_access.permissions import system_identity
from invenio_jobs.proxies import current_jobs

from oarepo_oaipmh_harvester.models import OAIHarvester
from oarepo_oaipmh_harvester.proxies import current_harvester_service
from oarepo_oaipmh_harvester.services import (
    HarvesterAlreadyExists,
    HarvesterNotFound,
    HarvesterValidationError,
)

# No batch size: the default is part of what is tested.
VALID = harvester_data(
    "zenodo",
    "https://zenodo.org/oai2d",
    name="Zenodo",
    setspecs=["user-cern", "user-cern"],
    batch_size=OMIT,
)


def test_create_applies_defaults_and_registers_job_type(app, db):
    harvester = current_harvester_service.create(system_identity, VALID)
    assert harvester.data["transformer"] == "oai_dc"
    assert harvester.data["batch_size"] == app.config["OAI_HARVESTER_DEFAULT_BATCH_SIZE"]
    assert harvester.data["setspecs"] == ["user-cern"]  # duplicates dropped
    job_type = current_jobs.registry.get(job_type_id("zenodo"))
    assert job_type.harvester_id == "zenodo"
    assert job_type_id("zenodo") in current_jobs.registry.get_all()


@pytest.mark.parametrize(
    "change, field, message",
    [
        ({"target": "no-such-service"}, "target", "No record service with id 'no-such-service'"),
        ({"transformer": "marc"}, "transformer", "Unknown transformer 'marc'"),
        ({"base_url": "ftp://example.org/oai"}, "base_url", "http:// or https://"),
        ({"base_url": "not a url"}, "base_url", "http:// or https://"),
        ({"id": "Bad Id!"}, "id", "slug"),
        ({"id": ""}, "id", "slug"),
        ({"batch_size": 0}, "batch_size", "greater than or equal to 1"),
        ({"name": None}, "name", "null"),
    ],
)
def test_invalid_input_is_refused_and_nothing_written(app, db, change, field, message):
    with pytest.raises(HarvesterValidationError) as raised:
        current_harvester_service.create(system_identity, {**VALID, **change})
    assert field in raised.value.errors
    assert message in " ".join(raised.value.errors[field])
    assert db.session.query(OAIHarvester).count() == 0


def test_missing_fields_are_named(app, db):
    with pytest.raises(HarvesterValidationError) as raised:
        current_harvester_service.create(system_identity, {"id": "x"})
    assert {"name", "base_url", "target"} <= set(raised.value.errors)
    # A missing prefix is not an error: the check picks the richest one the provider offers.
    assert "metadata_prefix" not in raised.value.errors


def test_duplicate_id_refused(app, db):
    current_harvester_service.create(system_identity, VALID)
    with pytest.raises(HarvesterAlreadyExists, match="'zenodo' already exists"):
        current_harvester_service.create(system_identity, {**VALID, "name": "Other"})
    assert current_harvester_service.read(system_identity, "zenodo").data["name"] == "Zenodo"


def test_update_validates_and_keeps_unspecified_fields(app, db):
    current_harvester_service.create(system_identity, VALID)
    updated = current_harvester_service.update(
        system_identity, "zenodo", {"name": "Zenodo (CERN)", "batch_size": 50}
    )
    assert (updated.data["name"], updated.data["batch_size"], updated.data["base_url"]) == (
        "Zenodo (CERN)",
        50,
        VALID["base_url"],
    )
    assert "Zenodo (CERN)" in current_jobs.registry.get(job_type_id("zenodo")).title
    with pytest.raises(HarvesterValidationError):
        current_harvester_service.update(system_identity, "zenodo", {"target": "nope"})
    db.session.rollback()
    assert (
        current_harvester_service.read(system_identity, "zenodo").data["target"] == VALID["target"]
    )
    with pytest.raises(HarvesterValidationError, match="cannot change"):
        current_harvester_service.update(system_identity, "zenodo", {"id": "other"})


def test_delete_unregisters_job_type(app, db):
    current_harvester_service.create(system_identity, VALID)
    current_harvester_service.delete(system_identity, "zenodo")
    assert job_type_id("zenodo") not in current_jobs.registry.get_all()
    with pytest.raises(KeyError):
        current_jobs.registry.get(job_type_id("zenodo"))
    with pytest.raises(HarvesterNotFound):
        current_harvester_service.delete(system_identity, "zenodo")
