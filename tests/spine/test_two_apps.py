"""A harvester created in one running process is runnable in another without a restart.

Two application instances share one database (committed for real, not in a test
transaction), as two web workers or a web worker and a Celery worker would.
"""

import pytest
from factories import OMIT, create_job, job_type_id, make_harvester, start_run
from invenio_access.permissions import system_identity
from invenio_app.factory import create_api
from invenio_db import db
from invenio_jobs.models import RunStatusEnum
from invenio_jobs.proxies import current_jobs

from oarepo_oaipmh_harvester.models import OAIHarvestedRecord
from oarepo_oaipmh_harvester.proxies import current_harvester_service

JOB_TYPE = job_type_id("shared")


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

    make_harvester(provider.base_url, "shared", name="Shared", batch_size=OMIT)
    try:
        with other_app.app_context():
            assert current_jobs.registry.get(JOB_TYPE).harvester_id == "shared"
            assert JOB_TYPE in current_jobs.registry.get_all()
            status = start_run(create_job("shared", title="shared")).status
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
    make_harvester(provider.base_url, "booted", name="Booted", batch_size=OMIT)
    try:
        fresh = create_api(**app_config)
        registered = fresh.extensions["invenio-jobs"].registry._jobs
        assert job_type_id("booted") in registered
    finally:
        current_harvester_service.delete(system_identity, "booted")
