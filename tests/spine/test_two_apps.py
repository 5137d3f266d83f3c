"""A harvester created in one running process is runnable in another without a restart.

Two application instances share one database (committed for real, not in a test
transaction), as two web workers or a web worker and a Celery worker would.
"""

import pytest
from invenio_access.permissions import system_identity
from invenio_app.factory import create_api
from invenio_db import db
from invenio_jobs.models import Run, RunStatusEnum
from invenio_jobs.proxies import current_jobs, current_jobs_service, current_runs_service

from oarepo_oaipmh_harvester.models import OAIHarvestedRecord
from oarepo_oaipmh_harvester.proxies import current_harvester_service

JOB_TYPE = "harvest_oaipmh_records_shared"


@pytest.fixture(scope="module", autouse=True)
def _server_database(db_uri):
    if db_uri.startswith("sqlite"):
        pytest.skip(
            "Two application instances need a server database (PostgreSQL), as in production."
        )


@pytest.fixture(scope="module")
def other_app(app, app_config):
    """A second, independently booted application (booted before the harvester exists)."""
    return create_api(**app_config)


def test_harvester_created_in_one_app_runs_in_the_other(app, other_app, search, provider, corpus):
    with other_app.app_context():
        assert JOB_TYPE not in current_jobs.registry.get_all()

    current_harvester_service.create(
        system_identity,
        {
            "id": "shared",
            "name": "Shared",
            "base_url": provider.base_url,
            "metadata_prefix": "oai_dc",
            "target": "oai-sample-records",
        },
    )
    try:
        with other_app.app_context():
            assert current_jobs.registry.get(JOB_TYPE).harvester_id == "shared"
            assert JOB_TYPE in current_jobs.registry.get_all()
            job = current_jobs_service.create(
                system_identity, {"title": "shared", "task": JOB_TYPE, "active": True}
            )
            run = current_runs_service.create(system_identity, job.id, {"title": "now"})
            status = db.session.get(Run, run.id).status
            db.session.remove()
        assert status == RunStatusEnum.SUCCESS
        db.session.expire_all()
        tracked = db.session.query(OAIHarvestedRecord).filter_by(harvester_id="shared").count()
        assert tracked == len(corpus)
    finally:
        current_harvester_service.delete(system_identity, "shared")

    with other_app.app_context():
        with pytest.raises(KeyError):
            current_jobs.registry.get(JOB_TYPE)
        assert JOB_TYPE not in current_jobs.registry.get_all()
        db.session.remove()


def test_stored_harvesters_are_registered_at_boot(app, app_config, search, provider):
    current_harvester_service.create(
        system_identity,
        {
            "id": "booted",
            "name": "Booted",
            "base_url": provider.base_url,
            "metadata_prefix": "oai_dc",
            "target": "oai-sample-records",
        },
    )
    try:
        fresh = create_api(**app_config)
        registered = fresh.extensions["invenio-jobs"].registry._jobs
        assert "harvest_oaipmh_records_booted" in registered
    finally:
        current_harvester_service.delete(system_identity, "booted")
