"""The administration panel served as in production: built assets, an app process, a Celery
worker on Redis, PostgreSQL, and Debian's Chromium driven by Playwright.

Assets are built once into ``.panel-instance`` (``invenio collect``, ``invenio webpack
buildall``) and reused while the installed bundles stay the same.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from invenio_app.config import APP_DEFAULT_SECURE_HEADERS as DEFAULT_SECURE_HEADERS
from oaiharvest_test_support.panel import (
    DEFAULT_INSTANCE,
    PanelSettings,
    ServedPanel,
    build_assets,
    prepare_instance,
)
from oaiharvest_test_support.search_node import free_port

from oarepo_oaipmh_harvester.testing.corpus import Corpus
from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

from .journey import Browser

REPORTS = Path(
    os.environ.get("OAI_HARVESTER_TEST_REPORTS", DEFAULT_INSTANCE.parent / "test-reports")
)
BROKER = os.environ.get("OAI_HARVESTER_BROWSER_BROKER", "redis://127.0.0.1:6379/6")

pytestmark = pytest.mark.browser


def _database_uri() -> str:
    base = os.environ.get(
        "SQLALCHEMY_DATABASE_URI", "postgresql+psycopg2://postgres@127.0.0.1:5432/oaiharvest_test"
    )
    if not base.startswith("postgresql"):
        pytest.skip("The served panel runs an app and a worker process: PostgreSQL only.")
    return base.rsplit("/", 1)[0] + f"/{base.rsplit('/', 1)[1]}_browser"


@pytest.fixture(scope="session")
def browser_corpus() -> Corpus:
    corpus = Corpus.generate(120, start=datetime(2024, 1, 1, tzinfo=UTC), step_seconds=60)
    corpus.set_clock(datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC))
    return corpus


@pytest.fixture(scope="session")
def browser_provider(browser_corpus) -> Iterator[OAIPMHProvider]:
    with OAIPMHProvider(browser_corpus, page_size=25) as running:
        yield running


@pytest.fixture(scope="session")
def panel(search_server, browser_provider) -> Iterator[PanelSettings]:
    from sqlalchemy_utils.functions import database_exists, drop_database

    database = _database_uri()
    if database_exists(database):
        drop_database(database)
    settings = PanelSettings(
        instance_path=DEFAULT_INSTANCE,
        database_uri=database,
        search_hosts=search_server,
        broker_url=BROKER,
        port=free_port(),
        index_prefix=f"oaiharvest-browser-{os.getpid()}-",
        queue=f"oai-harvest-browser-{os.getpid()}",
        extra_config={
            "OAI_HARVESTER_REQUEST_TIMEOUT": (3.0, 10.0),
            "OAI_HARVESTER_MAX_RETRY_WAIT": 5.0,
            # Scripts only from the site ('self': no inline script, no eval), so that a page
            # needing more fails here with the browser's console error. invenio-app's default
            # ({"default-src": ["'self'"], ...}) is loosened for what invenio's own pages need
            # from the login page on: Semantic UI's checkbox font as a data: URI, and inline
            # styles.
            "APP_DEFAULT_SECURE_HEADERS": {
                "force_https": False,
                "content_security_policy": {
                    **DEFAULT_SECURE_HEADERS["content_security_policy"],
                    "script-src": ["'self'"],
                    "font-src": ["'self'", "data:"],
                    "style-src": ["'self'", "'unsafe-inline'"],
                },
            },
        },
    )
    build_assets(settings)
    prepare_instance(settings)
    logs = REPORTS / "browser" / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    with ServedPanel(settings, beat=False, logs=logs):
        yield settings


@pytest.fixture(scope="session")
def run_scheduler_once(panel):
    """The invenio-jobs scheduler (celery beat's RunScheduler), one tick: due jobs start."""

    def tick(task: str) -> str:
        # A tick of the beat process at the moment the job's interval is up: rather than
        # waiting hours, apply the entry the scheduler built for the job of `task`.
        script = (
            "from invenio_app.celery import celery\n"
            "from invenio_jobs.services.scheduler import RunScheduler\n"
            "scheduler = RunScheduler(app=celery, lazy=True)\n"
            "scheduler.sync()\n"
            "for entry in list(scheduler.entries.values()):\n"
            f"    if entry.job.task == {task!r}:\n"
            "        scheduler.apply_entry(entry)\n"
            "        print('started', entry.job.task)\n"
        )
        completed = subprocess.run(
            [sys.executable, "-c", script],
            env=panel.environment(),
            capture_output=True,
            text=True,
            check=True,
        )
        return completed.stdout

    return tick


@pytest.fixture()
def chromium(panel, request) -> Iterator[Browser]:
    shots = REPORTS / "browser" / request.node.name
    shutil.rmtree(shots, ignore_errors=True)
    with Browser(panel.url, shots) as running:
        yield running
