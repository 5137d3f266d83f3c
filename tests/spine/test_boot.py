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
