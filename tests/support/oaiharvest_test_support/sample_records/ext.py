"""The sample target as an Invenio extension, when ``OAI_HARVESTER_SAMPLE_TARGET`` is set.

Wired in by the entry points of the test-support package (``tests/support``), never by the
plugin's own extension: a production install has no sample target.
"""

from flask import Flask

from . import SAMPLE_SERVICE_ID


class SampleTarget:
    """Registers the sample records' model (before ``db.create_all()``)."""

    def __init__(self, app: Flask | None = None) -> None:
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        if app.config.get("OAI_HARVESTER_SAMPLE_TARGET"):
            from . import records  # noqa: F401 - the table must be known to SQLAlchemy


def finalize_app(app: Flask) -> None:
    """Register the sample records' index and service."""
    if not app.config.get("OAI_HARVESTER_SAMPLE_TARGET"):
        return
    from invenio_records_resources.proxies import current_service_registry
    from invenio_search.proxies import current_search

    from .service import SampleRecordService, SampleServiceConfig

    with app.app_context():
        if "oaisamplerecords" not in current_search.aliases:
            current_search.register_mappings(
                "oaisamplerecords", "oaiharvest_test_support.sample_records.mappings"
            )
        if SAMPLE_SERVICE_ID not in current_service_registry._services:
            service = SampleRecordService(SampleServiceConfig.build(app))
            current_service_registry.register(service, service_id=SAMPLE_SERVICE_ID)
