"""Fixtures: a real Invenio API app on PostgreSQL (or SQLite), a real OpenSearch node, a local
provider."""

from __future__ import annotations

import logging
import warnings

import pytest
from _pytest.config import apply_warning_filters, parse_warning_filter
from factories import frozen_corpus
from invenio_app.factory import create_api
from oaiharvest_test_support.sample_records import SAMPLE_SERVICE_ID
from search_node import SearchServer, empty_search_indices, ensure_search_indices
from search_proxy import SearchProxy

from oarepo_oaipmh_harvester.testing.corpus import Corpus

TEST_CONFIG = {
    "OAI_HARVESTER_SAMPLE_TARGET": True,
    # Every test provider runs on 127.0.0.1; sites must opt in to local and private networks.
    "OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS": True,
    "OAI_HARVESTER_MAX_RETRY_WAIT": 5.0,
    "OAI_HARVESTER_REQUEST_TIMEOUT": (5.0, 10.0),
    "CELERY_TASK_EAGER_PROPAGATES": True,
    "CELERY_BROKER_URL": "memory://",
    "BROKER_URL": "memory://",
    "CACHE_TYPE": "SimpleCache",
    # invenio-app-rdm's config (loaded wherever it is installed) caches who holds an action.
    # The UI and API apps of a test each get their own SimpleCache, and the invalidation on
    # a change of ActionUsers/ActionRoles reaches only the app in context; a rolled-back
    # test also leaves its grants cached. Read them from the database, as without it.
    "ACCESS_CACHE": None,
    "RECORDS_REFRESOLVER_CLS": "invenio_records.resolver.InvenioRefResolver",
    "RECORDS_REFRESOLVER_STORE": "invenio_jsonschemas.proxies.current_refresolver_store",
    "SEARCH_INDEX_PREFIX": "oaiharvest-test-",
    "MAIL_SUPPRESS_SEND": True,
    # Harvesters in tests point at made-up or local endpoints; tests of the preflight check
    # through the service turn it on themselves.
    "OAI_HARVESTER_PREFLIGHT_CHECK": False,
    # invenio-oaiserver (installed with the rdm extra) warns at boot without it.
    "OAISERVER_ID_PREFIX": "oaiharvest-test",
}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    """Warnings stay under the suite's filters after a fixture has created an app.

    Run without -W, invenio_base's app factory routes warnings into logging (away from the
    warnings summary) and puts "default" for DeprecationWarning in front of every filter,
    which would undo pyproject's filters for the rest of the test.
    """
    try:
        return (yield)
    finally:
        logging.captureWarnings(False)
        config = item.config
        apply_warning_filters(
            config.getini("filterwarnings"), config.known_args_namespace.pythonwarnings or []
        )
        for mark in item.iter_markers(name="filterwarnings"):
            for arg in mark.args:
                warnings.filterwarnings(*parse_warning_filter(arg, escape=False))


def pytest_sessionstart(session):
    """The search server is up before the header is written, so that the header names it."""
    session.config.stash[SEARCH_SERVER] = SearchServer.from_environment()


def pytest_report_header(config):
    return config.stash[SEARCH_SERVER].describe()


def pytest_sessionfinish(session):
    server = session.config.stash.get(SEARCH_SERVER, None)
    if server is not None:
        server.remove_indices(TEST_CONFIG["SEARCH_INDEX_PREFIX"])
        server.stop()


SEARCH_SERVER = pytest.StashKey[SearchServer]()


@pytest.fixture(scope="session")
def search_server(pytestconfig):
    """A real OpenSearch node for the session (oaiharvest_test_support.search_node), or
    SEARCH_HOSTS."""
    return pytestconfig.stash[SEARCH_SERVER].hosts


@pytest.fixture(scope="module")
def search_hosts(search_server):
    return search_server


@pytest.fixture(scope="module")
def search_proxy(search_server):
    """A TCP proxy in front of the session's node that a test can take down or have hold
    bulk requests (search_proxy.SearchProxy); a module routes through it what it chooses."""
    [host] = search_server
    proxy = SearchProxy(host["host"], host["port"])
    yield proxy
    proxy.close()


@pytest.fixture(scope="module")
def search(appctx):
    """Empty indices for the module, as pytest-invenio's fixture gives, and the index
    templates `invenio index init` puts as well (invenio-jobs' job logs are a data stream
    made from one). The indices stay for the session (search_node.ensure_search_indices)."""
    from invenio_search import current_search_client

    ensure_search_indices()
    empty_search_indices()
    return current_search_client


@pytest.fixture(scope="module")
def app_config(app_config):
    app_config.update(TEST_CONFIG)
    return app_config


@pytest.fixture(scope="module")
def create_app():
    return create_api


@pytest.fixture()
def corpus() -> Corpus:
    """A small corpus with a frozen clock, 50 records over three sets."""
    return frozen_corpus(50)


@pytest.fixture()
def provider(corpus):
    from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

    with OAIPMHProvider(corpus, page_size=7) as running:
        yield running


@pytest.fixture()
def sample_service(app):
    from invenio_records_resources.proxies import current_service_registry

    return current_service_registry.get(SAMPLE_SERVICE_ID)


@pytest.fixture()
def search_clear(search):
    """pytest-invenio's, emptying the indices after the test instead of making them again
    (an index the test removed is made again)."""
    yield search
    ensure_search_indices()
    empty_search_indices()


@pytest.fixture()
def clean_index(app, search_clear):
    """Sample records index emptied for this test."""
    return search_clear


def _let_sqlalchemy_control_sqlite_transactions(engine) -> None:
    """pysqlite's own transaction handling defeats savepoint rollback between tests."""
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection, connection_record):
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin(connection):
        connection.exec_driver_sql("BEGIN")


@pytest.fixture(scope="module")
def database(appctx):
    """pytest-invenio's `database`, with SQLite made to roll back like PostgreSQL."""
    from invenio_db import db as db_
    from sqlalchemy_utils.functions import create_database, database_exists

    url = db_.engine.url.render_as_string(hide_password=False)
    if db_.engine.name == "sqlite":
        _let_sqlalchemy_control_sqlite_transactions(db_.engine)
    if not database_exists(url):
        create_database(url)
    # Tables an interrupted earlier run left (of older models, say) would stay as they are.
    db_.drop_all()
    db_.create_all()
    yield db_
    db_.session.remove()
    db_.drop_all()


LOCK_HOLDER = """
import sys
from sqlalchemy import create_engine
from oarepo_oaipmh_harvester.harvest.lock import exclusive_run
with exclusive_run(sys.argv[2], create_engine(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.read()  # hold the lock until the test closes our stdin (or kills us)
"""


@pytest.fixture()
def lock_holder(db_uri):
    """Start processes that hold a harvester's run lock, as another worker's run does."""
    import subprocess
    import sys

    if not db_uri.startswith(("postgresql", "sqlite:///")) or ":memory:" in db_uri:
        pytest.skip("The run lock of another process: PostgreSQL, or an SQLite database file.")
    started: list[subprocess.Popen] = []

    def hold(harvester_id: str = "test") -> subprocess.Popen:
        process = subprocess.Popen(
            [sys.executable, "-c", LOCK_HOLDER, db_uri, harvester_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        assert process.stdout.readline().strip() == "locked"
        return process

    yield hold
    for process in started:
        process.kill()
        process.wait()
        process.stdout.close()
        if not process.stdin.closed:
            process.stdin.close()
