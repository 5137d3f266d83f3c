"""One real InvenioRDM site per supported release, built and served for the session.

The site is built the way an operator builds one (instance.py), its processes are those of a
production site (served.py), and the bundled OAI-PMH provider, run by this process on
127.0.0.1, is what it harvests. Setting the site up is also where fork safety is measured: the
first requests each forked gunicorn worker answers, and the first tasks each forked Celery child
runs (tasks queued before the worker started), are counted here and judged by
test_fork_safety.py.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
import requests
from browser.journey import Browser
from oaiharvest_test_support.search_node import free_port

from oarepo_oaipmh_harvester.testing.corpus import Corpus
from oarepo_oaipmh_harvester.testing.corpus_openaire import OPENAIRE_PREFIX, openaire_document
from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider, served_document_key

from .instance import ADMIN_EMAIL, ADMIN_PASSWORD, Site, SiteBuilds, SiteSettings, SiteSetup
from .releases import RELEASES, Release, selected_releases
from .served import (
    RequestCounts,
    ServedSite,
    TaskCounts,
    read_request_counts,
    stop_leftover_processes,
)

FORK_CHECK_HARVESTER = "fork-check"
FORK_CHECK_RECORDS = 40
FORK_CHECK_BATCH_SIZE = 5
"""The harvest queued before a fresh worker starts writes 40 records in 8 batch tasks."""


@dataclass
class ForkSafety:
    """What setting the site up measured (judged by test_fork_safety.py)."""

    first_requests: RequestCounts | None = None
    first_request_errors: list[str] = field(default_factory=list)
    fixtures_round: TaskCounts | None = None
    harvest_round: TaskCounts | None = None
    harvest_run: dict[str, Any] | None = None
    published: int | None = None
    """Records InvenioRDM's search finds after that harvest."""
    problems: list[str] = field(default_factory=list)
    """Setup failures that the fork tests report (the journey may still run)."""


@dataclass
class RunningSite:
    """A built, set-up and served site of one release, and the providers it harvests."""

    release: Release
    site: Site
    served: ServedSite
    token: str
    session_cookie: str
    """``name=value`` of a session of the administrator, logged in through the login form."""
    journey_provider: OAIPMHProvider
    stop_provider: OAIPMHProvider
    files_provider: OAIPMHProvider
    fork: ForkSafety

    @property
    def url(self) -> str:
        return self.served.url

    def api(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """A REST request as the administrator (personal access token)."""
        headers = {"Authorization": f"Bearer {self.token}", **kwargs.pop("headers", {})}
        return requests.request(method, self.url + path, headers=headers, timeout=60, **kwargs)


@pytest.fixture(scope="session")
def journey_corpus() -> Corpus:
    """What the journey's harvester (sets phys and math) takes from: 60 records in 3 sets."""
    corpus = Corpus.generate(
        60, seed=14, start=datetime(2024, 1, 1, tzinfo=UTC), identifier_prefix="oai:journey.org:"
    )
    corpus.set_clock(datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC))
    return corpus


@pytest.fixture(scope="session")
def stop_corpus() -> Corpus:
    """A harvest long enough to be stopped while it runs (300 records)."""
    corpus = Corpus.generate(
        300, seed=15, start=datetime(2024, 1, 1, tzinfo=UTC), identifier_prefix="oai:slow.org:"
    )
    corpus.set_clock(datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC))
    return corpus


@pytest.fixture(scope="session")
def fork_corpus() -> Corpus:
    corpus = Corpus.generate(
        FORK_CHECK_RECORDS, seed=16, start=datetime(2024, 1, 1, tzinfo=UTC),
        identifier_prefix="oai:fork.org:",
    )  # fmt: skip
    corpus.set_clock(datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC))
    return corpus


SITE_FILES = {
    "notes.txt": b"Lattice notes, line by line.\n" * 400,
    "table.csv": b"x,y\n1,2\n" * 300,
}
"""The files of each record the files provider serves (issue 36: files copy in the site)."""


@pytest.fixture(scope="session")
def site_providers(journey_corpus, stop_corpus, fork_corpus):
    files_corpus = Corpus()
    files_corpus.set_clock(datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC))
    with (
        OAIPMHProvider(journey_corpus, page_size=20) as journey,
        OAIPMHProvider(stop_corpus, page_size=10) as slow,
        OAIPMHProvider(fork_corpus, page_size=10) as fork,
        OAIPMHProvider(files_corpus, metadata_prefixes=(OPENAIRE_PREFIX,)) as files,
    ):
        for number in ("1", "2"):
            _publish_with_files(files, files_corpus, number)
        yield {"journey": journey, "stop": slow, "fork": fork, "files": files}


def _publish_with_files(provider: OAIPMHProvider, corpus: Corpus, number: str) -> None:
    """An OpenAIRE record naming the files of SITE_FILES, which `provider` serves."""
    mime_types = {"notes.txt": "text/plain", "table.csv": "text/csv"}
    files = tuple(
        (provider.serve_file(f"{number}/{name}", content), mime_types[name], "fulltext", "c_abf2")
        for name, content in SITE_FILES.items()
    )
    document = openaire_document(
        number, title=f"Site files record {number}", funding="", citation_fields="", files=files
    )
    corpus.add(
        f"oai:files.example.org:{number}",
        {
            "title": [f"Site files record {number}"],
            served_document_key(OPENAIRE_PREFIX): [document],
        },
    )


RELEASES_USED = pytest.StashKey[list[str]]()


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected
def pytest_collection_modifyitems(config, items) -> None:
    """The releases whose sites the selected tests use (only those are built)."""
    used: list[str] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "release" in callspec.params:
            key = callspec.params["release"].key
            if key not in used:
                used.append(key)
    config.stash[RELEASES_USED] = used


@pytest.fixture(scope="session", params=selected_releases(), ids=lambda release: release.key)
def release(request) -> Release:
    uri = os.environ.get("SQLALCHEMY_DATABASE_URI", "postgresql")
    if not uri.startswith("postgresql"):
        pytest.skip("An InvenioRDM site runs on PostgreSQL (its own database on 127.0.0.1).")
    if shutil.which("chromium") is None:
        pytest.skip("Debian's chromium is not installed (./run.sh test installs it).")
    return request.param


@pytest.fixture(scope="session")
def site_builds(pytestconfig, search_server) -> Iterator[SiteBuilds]:
    """The virtualenvs and assets of every release the session tests, built in the background
    from the first site's setup on."""
    sites: dict[str, tuple[Site, SiteSettings]] = {}
    for key in pytestconfig.stash.get(RELEASES_USED, []):
        site = Site(RELEASES[key])
        shutil.rmtree(site.reports, ignore_errors=True)
        stop_leftover_processes(site)
        sites[key] = (site, SiteSettings(search_hosts=search_server, port=free_port()))
    builds = SiteBuilds(sites)
    yield builds
    builds.close()


@pytest.fixture(scope="session")
def rdm_site(release, site_builds, search_server, site_providers) -> Iterator[RunningSite]:
    """The release's site: virtualenv and assets from the background build, set up, served;
    fork safety measured on the way."""
    site, settings = site_builds.ready(release.key)
    search_url = f"http://{search_server[0]['host']}:{search_server[0]['port']}"
    setup = SiteSetup(site)
    served = ServedSite(site, settings)
    setup.reset(search_url)
    fork = ForkSafety()
    with setup, served, ThreadPoolExecutor(max_workers=1) as background:
        # InvenioRDM's fixtures are queued with no worker running, as a site's setup does; the
        # prefork worker then starts with a backlog (round 1 of the fork check).
        token = setup.run()
        login = background.submit(setup.session_cookie)  # while gunicorn starts
        with site.timings.phase("web: gunicorn --preload, 2 workers"):
            served.start_web()
        with site.timings.phase("web: login (session_login.py)"):
            session_cookie = login.result()
        running = RunningSite(
            release=release,
            site=site,
            served=served,
            token=token,
            session_cookie=session_cookie,
            journey_provider=site_providers["journey"],
            stop_provider=site_providers["stop"],
            files_provider=site_providers["files"],
            fork=fork,
        )
        with site.timings.phase("web: first requests"):
            _first_requests(running)
        with site.timings.phase("worker: vocabulary fixtures"):
            log = served.start_worker()
            fork.fixtures_round = served.wait_for_tasks(log)
        # Round 2: a harvest and other modules' tasks queued while no worker runs; a new
        # worker (new forked children) starts on them.
        with site.timings.phase("worker: harvest with other tasks"):
            _harvest_round(running, setup, site_providers["fork"].base_url)
        setup.close()
        served.start_beat()
        yield running


FIRST_API_REQUESTS = [
    "/api/oai-harvest/harvesters",
    "/api/jobs",
    "/api/oai-harvest/records",
    "/api/records",
    "/api/users",
    "/api/user/records",
    "/api/communities",
    "/api/requests",
]
"""Administrators' REST requests (with the personal access token)."""
FIRST_PAGE_REQUESTS = [
    "/administration/oai-harvesters",
    "/administration/oai-harvested-records",
    "/administration/jobs",
    "/",
]
"""Administrators' pages (with the session): the UI is an application of its own in the same
process, with its own database pool."""
FIRST_REQUEST_ROUNDS = 4


def _first_requests(running: RunningSite) -> None:
    """The first requests the two forked gunicorn workers answer: administrators' REST requests
    and pages, eight at a time; every one must succeed."""
    name, value = running.session_cookie.split("=", 1)
    errors: list[str] = []

    def fetch(path: str) -> None:
        try:
            if path.startswith("/api/"):
                reply = running.api("GET", path)
            else:
                reply = requests.get(running.url + path, cookies={name: value}, timeout=60)
            if reply.status_code != 200:
                errors.append(f"{path}: {reply.status_code} {reply.text[:200]}")
        except requests.RequestException as error:
            errors.append(f"{path}: {error}")

    paths = (FIRST_API_REQUESTS + FIRST_PAGE_REQUESTS) * FIRST_REQUEST_ROUNDS
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(fetch, paths))
    running.fork.first_requests = read_request_counts(running.served.access_log)
    running.fork.first_request_errors = errors


def _harvest_round(running: RunningSite, setup: SiteSetup, provider_url: str) -> None:
    served, fork = running.served, running.fork
    served.stop("worker")
    created = running.api(
        "POST",
        "/api/oai-harvest/harvesters",
        json={
            "id": FORK_CHECK_HARVESTER,
            "name": "Fork check",
            "base_url": provider_url,
            "metadata_prefix": "oai_dc",
            "target": "records",
            "transformer": "oai_dc_rdm",
            "batch_size": FORK_CHECK_BATCH_SIZE,
        },
    )
    if created.status_code != 201:
        fork.problems.append(f"creating the harvester: {created.status_code} {created.text}")
        return
    started = running.api(
        "POST", f"/api/oai-harvest/harvesters/{FORK_CHECK_HARVESTER}/run", json={}
    )
    if started.status_code not in (200, 201, 202):
        fork.problems.append(f"starting the run: {started.status_code} {started.text}")
        return
    # Other modules' tasks: a vocabulary of InvenioRDM loaded again (one task per entry); the
    # records the harvest publishes add RDM's own (a PID task per record).
    setup.invenio("rdm-records", "add-to-fixture", "relationtypes")
    log = served.start_worker()
    fork.harvest_round = served.wait_for_tasks(log)
    runs = running.api("GET", f"/api/oai-harvest/harvesters/{FORK_CHECK_HARVESTER}/runs").json()
    fork.harvest_run = runs["hits"]["hits"][0] if runs["hits"]["hits"] else None
    fork.published = running.api("GET", "/api/records", params={"size": 1}).json()["hits"]["total"]


@pytest.fixture(scope="session")
def admin(rdm_site: RunningSite) -> Iterator[Browser]:
    """Chromium, logged in as the administrator through RDM's login form (the journey's
    browser, shared by every site test of a release)."""
    with Browser(rdm_site.url, rdm_site.site.reports) as browser:
        with browser.step("login"):
            browser.log_in(ADMIN_EMAIL, ADMIN_PASSWORD)
            assert ADMIN_EMAIL in browser.page.inner_text("header")
        yield browser
