"""Registers the sample target when ``OAI_HARVESTER_SAMPLE_TARGET`` is set."""

from flask import Flask

from . import SAMPLE_SERVICE_ID


def init_app(app: Flask) -> None:
    from . import records  # noqa: F401 - the table must be known before `db.create_all()`


def finalize_app(app: Flask) -> None:
    from invenio_records_resources.proxies import current_service_registry
    from invenio_search.proxies import current_search

    from .service import SampleRecordService, SampleServiceConfig

    with app.app_context():
        if "oaisamplerecords" not in current_search.aliases:
            current_search.register_mappings(
                "oaisamplerecords", "oarepo_oaipmh_harvester.testing.sample_records.mappings"
            )
        if SAMPLE_SERVICE_ID not in current_service_registry._services:
            service = SampleRecordService(SampleServiceConfig.build(app))
            current_service_registry.register(service, service_id=SAMPLE_SERVICE_ID)
