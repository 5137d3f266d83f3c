"""The plugin is wired in through entry points only."""

from invenio_jobs.proxies import current_jobs
from invenio_records_resources.proxies import current_service_registry

from oarepo_oaipmh_harvester.jobs import HarvesterJobsRegistry
from oarepo_oaipmh_harvester.proxies import current_oai_harvester


def test_extension_and_registry_installed(app):
    assert "oarepo-oaipmh-harvester" in app.extensions
    assert isinstance(current_jobs.registry, HarvesterJobsRegistry)
    assert "oai_dc" in current_oai_harvester.transformers.names()
    assert current_service_registry.get("oai-sample-records")


def test_celery_worker_tasks_run_in_an_app_context():
    """Booting the worker app must not finalize Celery before flask-celeryext is set up.

    (A task proxy evaluated at import once made every task of the instance, invenio-jobs'
    included, run without a Flask app context in workers.)
    """
    import os
    import subprocess
    import sys

    script = (
        "from invenio_app.celery import celery\n"
        "from flask_celeryext.app import AppContextTask\n"
        "tasks = [celery.tasks[name] for name in ("
        "'invenio_jobs.tasks.execute_run', "
        "'oarepo_oaipmh_harvester.tasks.harvest_oaipmh_records', "
        "'oarepo_oaipmh_harvester.tasks.write_harvest_batch')]\n"
        "print(all(isinstance(task, AppContextTask) for task in tasks))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={**os.environ, "INVENIO_SECRET_KEY": "test"},
        timeout=120,
    )
    assert result.stdout.strip().splitlines()[-1] == "True", result.stderr[-2000:]
