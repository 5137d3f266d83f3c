"""The Flask extension and the finalize hook that wires harvesters into invenio-jobs."""

from __future__ import annotations

import logging

from flask import Flask
from invenio_db import db
from sqlalchemy.exc import SQLAlchemyError

from . import config
from .transformers import TransformerRegistry

log = logging.getLogger(__name__)


class OARepoOAIHarvester:
    """OAI-PMH harvester extension."""

    def __init__(self, app: Flask | None = None) -> None:
        if app:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        for key in dir(config):
            if key.startswith("OAI_HARVESTER_"):
                app.config.setdefault(key, getattr(config, key))
        self.transformers = TransformerRegistry(app.config["OAI_HARVESTER_TRANSFORMERS"])
        self.init_services(app)
        self.init_resources(app)
        from .reports import connect_reports
        from .run_messages import keep_run_messages_short
        from .services.jobs import show_next_runs_on_the_jobs_page

        connect_reports()
        show_next_runs_on_the_jobs_page()
        keep_run_messages_short()
        app.extensions["oarepo-oaipmh-harvester"] = self

    def init_services(self, app: Flask) -> None:
        from .services import (
            HarvestedRecordService,
            HarvestedRecordServiceConfig,
            HarvesterService,
            HarvesterServiceConfig,
            HarvestRunService,
            HarvestRunServiceConfig,
        )

        harvesters_config = HarvesterServiceConfig.build(app)
        self.harvester_service = HarvesterService(
            harvesters_config, jobs_registry_getter=self._jobs_registry
        )
        self.runs_service = HarvestRunService(
            HarvestRunServiceConfig.build(app), jobs_registry_getter=self._jobs_registry
        )
        self.records_service = HarvestedRecordService(
            HarvestedRecordServiceConfig.build(app),
            harvester_service=self.harvester_service,
            runs_service=self.runs_service,
        )

    def init_resources(self, app: Flask) -> None:
        from .resources import (
            HarvestedRecordResource,
            HarvestedRecordResourceConfig,
            HarvesterResource,
            HarvesterResourceConfig,
        )

        self.harvesters_resource = HarvesterResource(
            HarvesterResourceConfig.build(app), self.harvester_service, self.runs_service
        )
        self.records_resource = HarvestedRecordResource(
            HarvestedRecordResourceConfig.build(app), self.records_service
        )

    @staticmethod
    def _jobs_registry():
        from invenio_jobs.proxies import current_jobs

        return current_jobs.registry


def finalize_app(app: Flask) -> None:
    """Install the database-aware job registry and register every stored harvester."""
    from .jobs import HarvesterJobsRegistry

    jobs_ext = app.extensions["invenio-jobs"]
    if not isinstance(jobs_ext.registry, HarvesterJobsRegistry):
        jobs_ext.registry = HarvesterJobsRegistry(jobs_ext.registry.get_all())
    with app.app_context():
        for harvester in _stored_harvesters():
            jobs_ext.registry.register_harvester(harvester)


def _stored_harvesters() -> list:
    """Every stored harvester, read over a database connection that is closed afterwards.

    Boot happens in the parent of forked processes (Celery's prefork pool, gunicorn
    --preload, uwsgi without lazy-apps): a connection left in the pool would be inherited by
    every child, which then share one socket and break each other's transactions (other
    modules' tasks included). So the connection is invalidated, not returned to the pool.
    """
    from sqlalchemy.orm import Session

    from .models import OAIHarvester

    try:
        with db.engine.connect() as connection:
            try:
                with Session(bind=connection, expire_on_commit=False) as session:
                    harvesters = list(session.scalars(db.select(OAIHarvester)))
                    session.expunge_all()
                    return harvesters
            finally:
                connection.invalidate()
    except SQLAlchemyError as error:
        # Tables not created yet (e.g. during `invenio db create`); lookups retry later.
        log.debug("No harvesters registered at boot: %s", error)
        return []
