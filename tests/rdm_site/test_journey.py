"""An administrator's journey through a real InvenioRDM site with the plugin, in Chromium.

RDM's own front page and search; the administration menu; a harvester created in the plugin's
form (sets, a harvest manager) and its job scheduled in Administration -> Jobs; Run now, the
harvester's page, the harvested records list and a record's detail; the harvested records on
RDM's search page and landing page; the run's log on its page; a failed run on the harvester's
page; a harvest with files copy (the files read back over RDM's API and listed on its landing
page); the run the scheduler (celery beat) started; Stop in Administration -> Jobs.

The steps are tests of their own, in order, sharing one browser per release: a step that fails
(a known bug, say) is reported as such and the journey goes on. Every JavaScript console error
and every 4xx/5xx response that a step does not expect fails it; each step leaves a screenshot
in test-reports/site/<release>/.
"""

from __future__ import annotations

import hashlib
import re
import socket
import time
from typing import Any
from urllib.parse import quote

import pytest
from browser.journey import Browser, wait_until

from oarepo_oaipmh_harvester.testing.corpus import Corpus

from .conftest import SITE_FILES, RunningSite
from .instance import ADMIN_EMAIL, MANAGER_EMAIL

pytestmark = pytest.mark.site

HARVESTER = "journey"
SETS = ["phys", "math"]
BATCH_SIZE = 20
STOP_HARVESTER = "slow"
STOP_BATCH_SIZE = 10
JOBS_UNDEFINED_LINK = (404, r"/administration/undefined$")
"""invenio-jobs' own: its job list asks for `/administration/undefined` (a link its API app
cannot build), on every load of Administration -> Jobs."""


class Journey(dict):
    """What one step leaves for the next (run ids, records), per release."""

    def needs(self, key: str) -> Any:
        """What an earlier step left; fails the step, naming it, when that step failed."""
        if key not in self:
            pytest.fail(f"needs {key!r} from an earlier step of the journey, which failed")
        return self[key]


@pytest.fixture(scope="session")
def journey(rdm_site: RunningSite) -> Journey:
    return Journey()


def runs_of(rdm_site: RunningSite, harvester_id: str) -> list[dict[str, Any]]:
    reply = rdm_site.api("GET", f"/api/oai-harvest/harvesters/{harvester_id}/runs")
    assert reply.status_code == 200, reply.text
    return reply.json()["hits"]["hits"]


def finished_run(
    rdm_site: RunningSite, harvester_id: str, run_id: str, timeout: float = 180
) -> dict[str, Any]:
    """The run, once it has ended (not queued, running or being cancelled)."""
    deadline = time.monotonic() + timeout
    while True:
        run = next(r for r in runs_of(rdm_site, harvester_id) if r["id"] == run_id)
        if run["status"] not in ("QUEUED", "RUNNING", "CANCELLING"):
            return run
        if time.monotonic() > deadline:
            raise AssertionError(
                f"run {run_id} still {run['status']} after {timeout:.0f} s "
                f"({run['inserted_entries']} inserted): {run['message']}"
            )
        time.sleep(1)


def run_now(browser: Browser, harvester_id: str, *, full: bool = False) -> str:
    """Run now from the harvester's page; the id of the run the confirmation links."""
    page = browser.page
    browser.goto(f"/administration/oai-harvesters/{harvester_id}")
    page.get_by_role("button", name="Open list of actions").first.click()
    page.locator(".menu .item", has_text="Run now").first.click()
    modal = page.locator(".ui.modal")
    modal.locator("form#action-form").wait_for()
    if full:
        modal.locator(".field:has([name='full']) .checkbox").click()
    modal.locator("button[type=submit]").click()
    queued = modal.locator("#oai-harvester-run-queued")
    queued.wait_for()
    link = queued.get_by_role("link", name="Open the run").get_attribute("href")
    match = re.search(r"/administration/runs/([0-9a-f-]{36})$", link or "")
    assert match, link
    modal.get_by_role("button", name="Close").click()
    modal.wait_for(state="detached")
    return match.group(1)


def harvested(corpus: Corpus, sets: list[str]) -> set[str]:
    """Live identifiers in `sets` (a set includes its subsets, phys:astro in phys)."""
    return {
        record.identifier
        for spec in sets
        for record in corpus.select(set_spec=spec)
        if not record.deleted
    }


def rdm_total(rdm_site: RunningSite, query: str = "") -> int:
    reply = rdm_site.api("GET", "/api/records", params={"q": query, "size": 1})
    assert reply.status_code == 200, reply.text
    return reply.json()["hits"]["total"]


# -- InvenioRDM's own pages ------------------------------------------------------------------------
def test_01_front_page(admin: Browser, rdm_site: RunningSite) -> None:
    with admin.step("front-page") as page:
        admin.goto("/")
        assert rdm_site.release.title in page.title()
        assert ADMIN_EMAIL in page.inner_text("header")


def test_02_search_page(admin: Browser, rdm_site: RunningSite) -> None:
    total = rdm_total(rdm_site)
    with admin.step("search-page") as page:
        admin.goto("/search")
        if total:
            page.get_by_text(f"{total} result(s) found").first.wait_for()
            # The result list: a link to each record's landing page (ten a page).
            assert page.locator("a[href*='/records/']").count() >= min(total, 10)
        else:
            page.get_by_text("We couldn't find any matches").first.wait_for()


def test_03_admin_menu(admin: Browser) -> None:
    with admin.step("admin-menu") as page:
        admin.goto("/administration")
        for entry in ("OAI-PMH harvesters", "OAI-PMH harvested records", "Jobs"):
            assert page.get_by_role("link", name=entry, exact=True).count() == 1, entry
        page.get_by_role("link", name="OAI-PMH harvesters").first.click()
        page.wait_for_url(re.compile(r"/administration/oai-harvesters$"))
        page.get_by_text("OAI-PMH harvesters").first.wait_for()


# -- a harvester from the plugin's form, scheduled in Administration -> Jobs -----------------------
# Scheduled first: celery beat reads the schedules every 3 minutes, the next steps fill the
# wait for the scheduler's run (checked near the end).
def test_04_create_harvester(admin: Browser, rdm_site: RunningSite, journey: Journey) -> None:
    with admin.step("create-harvester") as page:
        admin.goto("/administration/oai-harvesters/create")
        admin.fill("id", HARVESTER)
        admin.fill("name", "Journey")
        admin.fill("base_url", rdm_site.journey_provider.base_url)
        admin.fill("metadata_prefix", "oai_dc")
        admin.add_choices("setspecs", SETS)
        admin.choose("target", "records")
        admin.choose("transformer", "oai_dc_rdm")
        admin.fill("batch_size", str(BATCH_SIZE))
        admin.choose("harvest_managers", MANAGER_EMAIL)
        page.get_by_role("button", name="Save").click()
        page.wait_for_url(re.compile(r"/administration/oai-harvesters(\?.*)?$"))
        page.get_by_text("Journey").first.wait_for()
    created = rdm_site.api("GET", f"/api/oai-harvest/harvesters/{HARVESTER}").json()
    assert created["setspecs"] == SETS
    assert (created["target"], created["transformer"]) == ("records", "oai_dc_rdm")
    assert created["batch_size"] == BATCH_SIZE
    assert created["harvest_managers_text"].startswith(MANAGER_EMAIL)
    journey["harvester"] = created


def test_05_schedule_in_jobs(admin: Browser, rdm_site: RunningSite, journey: Journey) -> None:
    job_id = journey.needs("harvester")["job"]["id"]
    with admin.step("schedule-job", expect=[JOBS_UNDEFINED_LINK]) as page:
        admin.goto("/administration/jobs")
        row = page.locator("tr", has_text="OAI-PMH harvest: Journey")
        row.locator("td").last.locator(".dropdown, button").first.click()  # the gear menu
        row.locator(".menu .item", has_text="Schedule").first.click()
        modal = page.locator(".ui.modal")
        modal.locator(".dropdown", has_text="Select a schedule type").click()
        modal.locator(".dropdown .item", has_text="Interval").click()
        modal.locator("[name='minutes']").fill("1")
        modal.get_by_role("button", name="Save").click()
        modal.wait_for(state="detached")
    job = rdm_site.api("GET", f"/api/jobs/{job_id}").json()
    assert job["schedule"]["type"] == "interval" and job["schedule"]["minutes"] == 1, job
    assert job["active"] is True
    journey["job_id"] = job_id


def test_06_jobs_list_shows_the_next_run(admin: Browser) -> None:
    with admin.step("jobs-next-run", expect=[JOBS_UNDEFINED_LINK]) as page:
        admin.goto("/administration/jobs")
        header = [cell.strip() for cell in page.locator("thead th").all_inner_texts()]
        row = page.locator("tr", has_text="OAI-PMH harvest: Journey")
        cells = [cell.strip() for cell in row.locator("td").all_inner_texts()]
        next_run = cells[header.index("Next run")]
        assert next_run not in ("", "-"), f"Next run: {next_run!r}"


# -- Run now, the plugin's pages -------------------------------------------------------------------
def test_07_run_now(
    admin: Browser, rdm_site: RunningSite, journey_corpus: Corpus, journey: Journey
) -> None:
    journey.needs("harvester")
    expected = harvested(journey_corpus, SETS)
    before = rdm_total(rdm_site)
    with admin.step("run-now"):
        run_id = run_now(admin, HARVESTER, full=True)
        journey["run_id"] = run_id
        run = finished_run(rdm_site, HARVESTER, run_id)
        assert run["status"] == "SUCCESS", run["message"]
        assert run["inserted_entries"] == len(expected) and run["errored_entries"] == 0, run
    # Published in InvenioRDM: its search finds every one of them.
    wait_until(lambda: rdm_total(rdm_site) == before + len(expected), timeout=30)


def test_08_harvester_page_lists_the_run(admin: Browser, journey: Journey) -> None:
    journey.needs("run_id")
    with admin.step("harvester-page") as page:
        admin.goto(f"/administration/oai-harvesters/{HARVESTER}")
        row = page.locator("#oai-harvester-runs tbody tr").first
        row.wait_for()
        assert "SUCCESS" in row.inner_text() and "Run now" in row.inner_text()
        assert "phys, math" in page.inner_text("#admin-main-content")
        assert MANAGER_EMAIL in page.inner_text("#admin-main-content")
        # The chart of the last runs (issue 37): the run's bar, its numbers on hovering.
        chart = page.locator("#oai-harvester-run-chart svg")
        assert chart.is_visible()
        bar = chart.locator(f'g.oai-run-chart-run[data-run="{journey["run_id"]}"]')
        assert bar.count() == 1
        assert bar.locator("rect.oai-run-chart-created title").text_content().startswith("created ")


def test_09_records_list_and_detail(
    admin: Browser, rdm_site: RunningSite, journey_corpus: Corpus, journey: Journey
) -> None:
    journey.needs("run_id")
    identifier = min(harvested(journey_corpus, ["math"]))
    with admin.step("records-list") as page:
        admin.goto(f"/administration/oai-harvested-records?f=harvester%3A{HARVESTER}")
        page.locator("table tbody tr").first.wait_for()
        total = len(harvested(journey_corpus, SETS))
        page.get_by_text(f"{total} results found").first.wait_for()
        for facet in ("Harvester", "Deleted at the source", "With errors"):
            assert facet in page.inner_text("body")
    with admin.step("record-detail") as page:
        admin.goto(f"/administration/oai-harvested-records/{HARVESTER}/{identifier}")
        page.get_by_text(identifier).first.wait_for()
        tracked = rdm_site.api("GET", f"/api/oai-harvest/records/{HARVESTER}/{identifier}").json()
        local = page.get_by_role("link", name=tracked["local_pid"])
        assert local.get_attribute("href").endswith(f"/records/{tracked['local_pid']}")
        assert "<dc:title>" in page.inner_text("#admin-main-content")
    journey["record"] = (identifier, tracked["local_pid"])


# -- the harvested records in InvenioRDM -----------------------------------------------------------
def test_10_rdm_search_finds_a_harvested_record(
    admin: Browser, rdm_site: RunningSite, journey_corpus: Corpus, journey: Journey
) -> None:
    identifier, pid = journey.needs("record")
    title = journey_corpus.get(identifier).metadata["title"][0]
    with admin.step("rdm-search") as page:
        phrase = quote('"' + title + '"')
        admin.goto(f"/search?q={phrase}")
        page.get_by_text("1 result(s) found").first.wait_for()
        result = page.get_by_role("link", name=title).first
        assert result.get_attribute("href").endswith(f"/records/{pid}")


def test_11_rdm_landing_page(
    admin: Browser, rdm_site: RunningSite, journey_corpus: Corpus, journey: Journey
) -> None:
    identifier, pid = journey.needs("record")
    source = journey_corpus.get(identifier).metadata
    with admin.step("rdm-landing-page") as page:
        admin.goto(f"/administration/oai-harvested-records/{HARVESTER}/{identifier}")
        page.get_by_role("link", name=pid).click()
        page.wait_for_url(re.compile(rf"/records/{pid}$"))
        body = page.inner_text("body")
        assert source["title"][0] in body
        assert source["creator"][0] in body  # "Family, Given" as RDM lists a person
        assert "Publication" in body  # dc:type Text
        assert source["identifier"][1].removeprefix("doi:") in body


# -- the run's log, a failed run, the scheduler's run ----------------------------------------------
STATS_NOT_AGGREGATED_YET = re.compile(
    r"WARNING .*no such index \[[\w-]*stats-(record-view|file-download)"
)


INVENIO_JOBS_OWN = re.compile(r"(INFO Updating run|DEBUG Executing run) [0-9a-f-]{36} ")


def test_12_run_log_on_its_page(admin: Browser, journey: Journey) -> None:
    with admin.step("run-log") as page:
        admin.goto(f"/administration/runs/{journey.needs('run_id')}")
        log = page.locator("#admin-main-content")
        wait_until(
            lambda: re.search(r"\[\d{4}-\d\d-\d\d \d\d:\d\d\]", log.inner_text()), timeout=30
        )
        lines = [line for line in log.inner_text().splitlines() if re.match(r"\s*\[\d{4}-", line)]
        harvest_lines = [line for line in lines if HARVESTER in line or "Journey" in line]
        assert harvest_lines, "no line of the harvest in the run's log:\n" + "\n".join(lines[:10])
        # Ours: batches, failures and the summary, never a line per record (60 records here).
        assert len(harvest_lines) < 20, "\n".join(harvest_lines)
        # invenio-rdm-records warns for each record it indexes while invenio-stats has no
        # indices yet (a fresh site, before its first aggregation), and invenio-jobs files
        # these in the run's log too (documented); and invenio-jobs logs the run's start.
        others = [
            line
            for line in lines
            if line not in harvest_lines
            and not STATS_NOT_AGGREGATED_YET.search(line)
            and not INVENIO_JOBS_OWN.search(line)
        ]
        assert not others, f"{len(others)} of {len(lines)} lines are not the harvest's: {others}"
        assert "Traceback" not in log.inner_text()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again when the probe goes


def test_13_failed_run_on_the_harvester_page(admin: Browser, rdm_site: RunningSite) -> None:
    created = rdm_site.api(
        "POST",
        "/api/oai-harvest/harvesters",
        params={"check": "false"},  # the provider is down: the preflight would refuse
        json={
            "id": "down",
            "name": "Provider down",
            "base_url": f"http://127.0.0.1:{closed_port()}/oai",
            "metadata_prefix": "oai_dc",
            "target": "records",
            "transformer": "oai_dc_rdm",
        },
    )
    assert created.status_code == 201, created.text
    with admin.step("failed-run") as page:
        run = finished_run(rdm_site, "down", run_now(admin, "down"), timeout=120)
        assert run["status"] == "FAILED"
        admin.goto("/administration/oai-harvesters/down")
        row = page.locator("#oai-harvester-runs tbody").first
        row.wait_for()
        shown = row.inner_text()
        assert "FAILED" in shown and "Connection refused" in shown, shown
        assert "Traceback" not in shown and 'File "' not in shown, shown[:1500]


# -- files copy (issue 36), while the scheduler's next reading is awaited -------------------------
FILES_HARVESTER = "files"


def _files_run(rdm_site: RunningSite) -> dict:
    started = rdm_site.api("POST", f"/api/oai-harvest/harvesters/{FILES_HARVESTER}/run", json={})
    assert started.status_code == 202, started.text
    return finished_run(rdm_site, FILES_HARVESTER, started.json()["id"])


def _files_downloaded(rdm_site: RunningSite) -> int:
    return sum(status == 200 for _, _, status in rdm_site.files_provider.file_requests)


def test_13b_files_copy_in_the_released_site(admin: Browser, rdm_site: RunningSite) -> None:
    created = rdm_site.api(
        "POST",
        "/api/oai-harvest/harvesters",
        json={
            "id": FILES_HARVESTER,
            "name": "Files",
            "base_url": rdm_site.files_provider.base_url,
            "metadata_prefix": "oai_openaire",
            "target": "records",
            "transformer": "oai_openaire_rdm",
            "files": "copy",
        },
    )
    assert created.status_code == 201, created.text
    downloaded_before = _files_downloaded(rdm_site)  # the provider serves every release

    run = _files_run(rdm_site)

    assert run["status"] == "SUCCESS", run["message"]
    assert (run["inserted_entries"], run["errored_entries"]) == (2, 0), run
    rows = rdm_site.api(
        "GET", "/api/oai-harvest/records", params={"harvester": FILES_HARVESTER}
    ).json()["hits"]["hits"]
    assert len(rows) == 2
    expected = {
        name: "md5:" + hashlib.md5(content).hexdigest()  # noqa: S324 - what RDM stores
        for name, content in SITE_FILES.items()
    }
    for row in rows:
        pid = row["local_pid"]
        listing = rdm_site.api("GET", f"/api/records/{pid}/files").json()
        assert {entry["key"]: entry["checksum"] for entry in listing["entries"]} == expected
        for name, content in SITE_FILES.items():
            body = rdm_site.api("GET", f"/api/records/{pid}/files/{name}/content")
            assert body.status_code == 200 and body.content == content, name
    assert _files_downloaded(rdm_site) == downloaded_before + 4

    pid = rows[0]["local_pid"]
    with admin.step("files-landing-page") as page:
        admin.goto(f"/records/{pid}")
        wait_until(lambda: "notes.txt" in page.inner_text("body"), timeout=30)
        assert "table.csv" in page.inner_text("body")

    again = _files_run(rdm_site)
    assert again["status"] == "SUCCESS", again["message"]
    assert _files_downloaded(rdm_site) == downloaded_before + 4, "a rerun downloads nothing"


def test_14_the_scheduler_starts_a_run(
    admin: Browser, rdm_site: RunningSite, journey: Journey
) -> None:
    """celery beat (invenio-jobs' RunScheduler) reads the schedules every 3 minutes; at the
    first reading after step 5 the job's interval (1 minute since Run now) is over."""
    job_id = journey.needs("job_id")  # scheduled in Administration -> Jobs

    def scheduled_run():
        for run in runs_of(rdm_site, HARVESTER):
            if run["started_by_id"] is None and run["status"] not in ("QUEUED", "RUNNING"):
                return run
        return None

    try:
        with admin.step("scheduler-run") as page:
            run = wait_until(scheduled_run, timeout=300, every=2)
            assert run["status"] == "SUCCESS", run["message"]
            assert run["errored_entries"] == 0
            admin.goto(f"/administration/oai-harvesters/{HARVESTER}")
            page.locator("#oai-harvester-jobs").wait_for()
            assert "every 1 minute" in page.inner_text("#oai-harvester-jobs")
            latest = page.locator("#oai-harvester-runs tbody tr").first.inner_text()
            assert "Scheduled run" in latest and "SUCCESS" in latest, latest
    finally:
        # No more runs every minute while the journey goes on.
        rdm_site.api(
            "PUT",
            f"/api/jobs/{job_id}",
            json={"title": "OAI-PMH harvest: Journey", "active": True, "schedule": None,
                  "task": f"harvest_oaipmh_records_{HARVESTER}"},
        )  # fmt: skip


# -- Stop in Administration -> Jobs ----------------------------------------------------------------
def test_15_stop_in_jobs(admin: Browser, rdm_site: RunningSite, stop_corpus: Corpus) -> None:
    created = rdm_site.api(
        "POST",
        "/api/oai-harvest/harvesters",
        json={
            "id": STOP_HARVESTER,
            "name": "Slow",
            "base_url": rdm_site.stop_provider.base_url,
            "metadata_prefix": "oai_dc",
            "target": "records",
            "transformer": "oai_dc_rdm",
            "batch_size": STOP_BATCH_SIZE,
        },
    )
    assert created.status_code == 201, created.text
    job_id = created.json()["job"]["id"]
    # invenio-jobs' runs page: its sort dropdown may throw "reading 'text'" while the list
    # re-renders (react-searchkit found no selected sort option; seen in the plugin's journey,
    # 2026-12-05, and here once on InvenioRDM 15, 2026-12-07): tolerated on its pages only.
    with admin.step("stop", expect_console=[(r"/administration/jobs", r"reading 'text'")]) as page:
        run_id = run_now(admin, STOP_HARVESTER)

        def written() -> int:
            run = next(r for r in runs_of(rdm_site, STOP_HARVESTER) if r["id"] == run_id)
            return run["inserted_entries"] or 0

        wait_until(lambda: written() >= STOP_BATCH_SIZE, timeout=120)
        admin.goto(f"/administration/jobs/{job_id}")
        page.get_by_role("button", name="Stop").click()
        stopped_at, written_at_stop = time.monotonic(), written()
        # Within a batch: each of the worker's two children may finish the batch it holds.
        run = finished_run(rdm_site, STOP_HARVESTER, run_id, timeout=60)
        assert run["status"] == "CANCELLED", (run["status"], run["message"])
        assert run["inserted_entries"] <= written_at_stop + 2 * STOP_BATCH_SIZE, run
        assert run["inserted_entries"] < len(stop_corpus)
        assert time.monotonic() - stopped_at < 60
