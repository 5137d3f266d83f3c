"""An administrator's journey through the panel, in headless Chromium.

Log in; a create form that refuses bad input on the right fields; create a harvester with sets
and a harvest manager; edit it; run it now (full, since, identifiers, reconcile only) and see
each result on its page; the chart of its runs; records list with facets and a record's detail; re-harvest a record;
schedule the harvester's job in Administration -> Jobs and see the scheduler start it; the
Job edit page; the repairs: a preview of a changed record (its field changes, provider text
shown as text), a preview stopped at its limit, a Run now with rewrite, a purge refused for a
wrong id and done for the right one; delete a harvester.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
from pathlib import Path

import pytest
import sqlalchemy as sa
from oaiharvest_test_support.panel import ADMIN_EMAIL, ADMIN_PASSWORD

from .journey import Browser, wait_until

pytestmark = pytest.mark.browser

LIST_PAGE = re.compile(r"/administration/oai-harvesters(\?.*)?$")
"""Where create, edit and delete go when they succeed."""

README_SCREENSHOTS = Path(__file__).parent / "screenshots"
"""Screenshots the README shows, refreshed by each run of this test."""


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again when the probe goes


def runs_of(browser: Browser, harvester_id: str) -> list[dict]:
    """Every run of the harvester, the newest first (the journey makes more than a page)."""
    path = f"/api/oai-harvest/harvesters/{harvester_id}/runs?size=100"
    return browser.api("GET", path).json()["hits"]["hits"]


def finished_runs(browser: Browser, harvester_id: str, count: int) -> list[dict]:
    """Wait until the harvester has `count` runs and none is queued or running."""

    def done():
        runs = runs_of(browser, harvester_id)
        if len(runs) >= count and all(run["status"] not in ("QUEUED", "RUNNING") for run in runs):
            return runs
        return None

    return wait_until(done, timeout=120)


def open_action(browser: Browser, text: str) -> None:
    """Choose an action of a harvester's page: they are in its menu (the gear)."""
    browser.page.get_by_role("button", name="Open list of actions").first.click()
    browser.page.locator(".menu .item", has_text=text).first.click()


def open_run_form(browser: Browser) -> None:
    open_action(browser, "Run now")
    browser.page.locator(".ui.modal form#action-form").wait_for()


def tick(browser: Browser, name: str) -> None:
    """Tick the checkbox of a run argument in the open form."""
    browser.page.locator(f"form .field:has([name='{name}']) .checkbox").click()


def accept_the_next_dialog(page) -> list[str]:
    """Say OK to the page's next window.confirm (Playwright dismisses it otherwise); the list
    gets its question."""
    questions: list[str] = []

    def accept(dialog) -> None:
        questions.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    return questions


def local_records(browser: Browser, harvester_id: str) -> dict[str, str]:
    """OAI identifier -> local pid of the harvester's records that have one."""
    hits = browser.api(
        "GET", f"/api/oai-harvest/records?harvester={harvester_id}&size=1000"
    ).json()["hits"]["hits"]
    return {hit["oai_identifier"]: hit["local_pid"] for hit in hits if hit["local_pid"]}


def submit_run_form(browser: Browser) -> dict:
    """Submit the Run now (or Re-harvest) form; the panel says the run is queued and links it."""
    modal = browser.page.locator(".ui.modal")
    modal.locator("button[type=submit]").click()
    queued = modal.locator("#oai-harvester-run-queued")
    queued.wait_for()
    text = queued.inner_text()
    assert "queued" in text or "is " in text, text
    link = queued.get_by_role("link", name="Open the run").get_attribute("href")
    assert re.search(r"/administration/runs/[0-9a-f-]{36}$", link), link
    modal.get_by_role("button", name="Close").click()
    modal.wait_for(state="detached")
    return {"link": link, "text": text}


def pid_statuses(database_uri: str, pids: list[str]) -> set[str]:
    """The statuses of the sample target's persistent identifiers ("D": deleted)."""
    engine = sa.create_engine(database_uri)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sa.text(
                    "SELECT pid_value, status FROM pidstore_pid "
                    "WHERE pid_type = 'oaismp' AND pid_value = ANY(:pids)"
                ),
                {"pids": pids},
            ).all()
    finally:
        engine.dispose()
    assert len(rows) == len(pids)
    return {status for _, status in rows}


def test_admin_journey(
    chromium: Browser, panel, browser_provider, browser_corpus, run_scheduler_once
):
    browser = chromium
    page = browser.page
    provider = browser_provider.base_url

    with browser.step("login"):
        browser.log_in(ADMIN_EMAIL, ADMIN_PASSWORD)
        browser.goto("/administration/oai-harvesters")
        page.get_by_text("OAI-PMH harvesters").first.wait_for()

    # -- bad input shows on the right field --------------------------------------------------
    with browser.step("create-dead-endpoint", expect=[(400, r"/api/oai-harvest/harvesters")]):
        browser.goto("/administration/oai-harvesters/create")
        browser.fill("id", "journey")
        browser.fill("name", "Journey")
        browser.fill("base_url", f"http://127.0.0.1:{closed_port()}/oai")
        browser.fill("metadata_prefix", "oai_dc")
        browser.choose("target", "oai-sample-records")
        page.get_by_role("button", name="Save").click()
        wait_until(lambda: browser.error_of("base_url"), timeout=15)
        assert "did not answer" in browser.error_of("base_url")
        assert "connection refused" in browser.error_of("base_url").lower()
        assert "urllib3" not in browser.error_of("base_url")

    with browser.step(
        "create-unknown-prefix-and-set", expect=[(400, r"/api/oai-harvest/harvesters")]
    ):
        browser.fill("base_url", provider)
        browser.fill("metadata_prefix", "marc21")
        browser.add_choices("setspecs", ["nosuchset"])
        page.get_by_role("button", name="Save").click()
        wait_until(lambda: browser.error_of("metadata_prefix"), timeout=15)
        assert "marc21" in browser.error_of("metadata_prefix")
        # Several problems at once: each on its field.
        assert "nosuchset" in browser.error_of("setspecs")

    # -- create with sets and a harvest manager ----------------------------------------------
    with browser.step("create"):
        browser.goto("/administration/oai-harvesters/create")
        browser.fill("id", "journey")
        browser.fill("name", "Journey")
        browser.fill("base_url", provider)
        browser.fill("metadata_prefix", "oai_dc")
        browser.add_choices("setspecs", ["phys", "math"])
        browser.choose("target", "oai-sample-records")
        browser.choose("harvest_managers", ADMIN_EMAIL)
        browser.fill("request_delay", "0")
        page.get_by_role("button", name="Save").click()
        page.wait_for_url(LIST_PAGE)
        created = browser.api("GET", "/api/oai-harvest/harvesters/journey").json()
        assert created["setspecs"] == ["phys", "math"]
        assert len(created["harvest_managers"]) == 1 and created["request_delay"] == 0
        # The form's Active checkbox starts ticked: a new harvester is not paused unasked.
        assert created["active"] is True

    with browser.step("edit"):
        browser.goto("/administration/oai-harvesters/journey/edit")
        page.locator("[name='name']").first.wait_for()
        browser.fill("name", "Journey, renamed")
        browser.add_choices("setspecs", ["phys:astro"])
        # How records are written: an owner and two policies, each a dropdown.
        browser.choose("owner", ADMIN_EMAIL)
        browser.choose("local_drafts", "local-wins")
        browser.choose("invalid_drafts", "keep")
        page.get_by_role("button", name="Save").click()
        page.wait_for_url(LIST_PAGE)
        edited = browser.api("GET", "/api/oai-harvest/harvesters/journey").json()
        assert edited["name"] == "Journey, renamed"
        assert edited["setspecs"] == ["phys", "math", "phys:astro"]
        assert edited["owner"] == edited["harvest_managers"][0]
        assert (edited["local_drafts"], edited["invalid_drafts"]) == ("local-wins", "keep")
        assert (edited["doi_conflicts"], edited["target_adapter"]) == ("fail", "auto")
        assert edited["active"] is True

    # -- the provider's credentials: written in the form, never shown again -----------------
    with browser.step("edit-credentials"):
        browser.goto("/administration/oai-harvesters/journey/edit")
        page.locator("[name='auth_username']").first.wait_for()
        browser.fill("auth_username", "journey-user")
        browser.fill("auth_password", "journey-password-x1")
        browser.fill("headers", "X-Api-Key: journey-token-x2")
        page.get_by_role("button", name="Save").click()
        page.wait_for_url(LIST_PAGE)
        credentials = browser.api("GET", "/api/oai-harvest/harvesters/journey").json()
        assert credentials["credentials"] == {"auth": "set", "headers": {"X-Api-Key": "set"}}
        for path in (
            "/administration/oai-harvesters/journey",
            "/administration/oai-harvesters/journey/edit",
        ):
            browser.goto(path)
            page.locator("form, #oai-harvester-operations").first.wait_for()
            content = page.content()
            assert "journey-password-x1" not in content and "journey-token-x2" not in content
        # An edit that leaves them empty keeps them.
        browser.goto("/administration/oai-harvesters/journey/edit")
        page.locator("[name='name']").first.wait_for()
        page.get_by_role("button", name="Save").click()
        page.wait_for_url(LIST_PAGE)
        kept = browser.api("GET", "/api/oai-harvest/harvesters/journey").json()["credentials"]
        assert kept["auth"] == "set"

    with browser.step(
        "edit-set-communities-refused", expect=[(400, r"/api/oai-harvest/harvesters/journey")]
    ):
        browser.goto("/administration/oai-harvesters/journey/edit")
        page.locator("[name='set_communities']").first.wait_for()
        browser.fill("set_communities", "phys = physics")
        page.get_by_role("button", name="Save").click()
        wait_until(lambda: browser.error_of("set_communities"), timeout=15)
        # The sample target is no InvenioRDM: no communities there.
        assert "draft-enabled target" in browser.error_of("set_communities")

    # -- what a harvest does to local edits, and to a work another harvester brought ----------
    with browser.step(
        "edit-field-policy-and-dedupe", expect=[(400, r"/api/oai-harvest/harvesters/journey")]
    ):
        browser.goto("/administration/oai-harvesters/journey/edit")
        page.locator("[name='field_policy']").first.wait_for()
        body = page.inner_text("body")
        assert "Field policies for local edits" in body and "A work another harvester" in body
        browser.fill("field_policy", "metadata.subject = newest")
        page.get_by_role("button", name="Save").click()
        wait_until(lambda: browser.error_of("field_policy"), timeout=15)
        assert "'newest' is no field policy" in browser.error_of("field_policy")
        browser.fill("field_policy", "metadata.subject = merge\nmetadata.title = local")
        browser.choose("dedupe", "link")
        page.get_by_role("button", name="Save").click()
        page.wait_for_url(LIST_PAGE)
        saved = browser.api("GET", "/api/oai-harvest/harvesters/journey").json()
        assert saved["field_policy"] == {"metadata.subject": "merge", "metadata.title": "local"}
        assert saved["dedupe"] == "link"
        # The form shows them again as it took them; emptied, the source overwrites again.
        browser.goto("/administration/oai-harvesters/journey/edit")
        textarea = page.locator("[name='field_policy']").first
        textarea.wait_for()
        shown = set(textarea.input_value().splitlines())  # in the order the database keeps
        assert shown == {"metadata.subject = merge", "metadata.title = local"}
        browser.fill("field_policy", "")
        browser.choose("dedupe", "off")
        page.get_by_role("button", name="Save").click()
        page.wait_for_url(LIST_PAGE)
        cleared = browser.api("GET", "/api/oai-harvest/harvesters/journey").json()
        assert (cleared["field_policy"], cleared["dedupe"]) == (None, "off")

    # -- run now: full, since, identifiers, reconcile only ----------------------------------
    with browser.step("run-now-full"):
        browser.goto("/administration/oai-harvesters/journey")
        open_run_form(browser)
        page.locator(".ui.modal .field:has([name='full']) .checkbox").click()
        submit_run_form(browser)
        (run,) = finished_runs(browser, "journey", 1)
        assert run["status"] == "SUCCESS", run["message"]
        assert run["args"]["full"] is True
        # Sets one after another: a record of phys:astro is listed twice (phys includes it).
        listed = [browser_corpus.select(set_spec=spec) for spec in ("phys", "math", "phys:astro")]
        assert run["total_entries"] == sum(map(len, listed))
        live = {record.identifier for records in listed for record in records if not record.deleted}
        assert run["inserted_entries"] == len(live) and run["errored_entries"] == 0

    with browser.step("detail-with-runs"):
        browser.goto("/administration/oai-harvesters/journey")
        table = page.locator("#oai-harvester-runs")
        table.wait_for()
        first_row = table.locator("tbody tr").first
        assert "SUCCESS" in first_row.inner_text()
        assert "Run now" in first_row.inner_text()
        shutil.copy(
            browser.screenshot("detail-with-runs"), README_SCREENSHOTS / "harvester-detail.png"
        )

    with browser.step("run-now-since-identifiers"):
        # One of the harvester's sets: the reconciliation below keeps to them.
        identifier = min(
            r.identifier for r in browser_corpus.select(set_spec="math") if not r.deleted
        )
        browser.goto("/administration/oai-harvesters/journey")
        open_run_form(browser)
        browser.fill("since", "2024-03-01T00:00:00+00:00")
        browser.fill("identifiers", f"{identifier}\noai:nowhere:1")
        submit_run_form(browser)
        runs = finished_runs(browser, "journey", 2)
        assert runs[0]["args"]["identifiers"] == [identifier, "oai:nowhere:1"]
        assert runs[0]["total_entries"] == 2 and runs[0]["errored_entries"] == 1

    with browser.step("run-now-reconcile-only"):
        browser.goto("/administration/oai-harvesters")
        page.locator("tr", has_text="journey").get_by_role("button", name="Run now").click()
        page.locator(".ui.modal form#action-form").wait_for()
        page.locator(".ui.modal .field:has([name='reconcile_only']) .checkbox").click()
        queued = submit_run_form(browser)
        runs = finished_runs(browser, "journey", 3)
        assert queued["link"].endswith(runs[0]["id"])  # the confirmation links this run
        assert runs[0]["args"]["reconcile_only"] is True
        assert runs[0]["status"] == "SUCCESS", runs[0]["message"]

    # -- records list with facets, record detail, re-harvest ---------------------------------
    with browser.step("records-list"):
        browser.goto("/administration/oai-harvested-records?f=harvester%3Ajourney")
        results = page.locator("table tbody tr")
        results.first.wait_for()
        body = page.inner_text("body")
        for facet in (
            "Harvester", "Deleted at the source", "With errors", "With warnings", "With conflicts",
        ):  # fmt: skip
            assert facet in body
        assert "live" in body and "none" in body  # state and errors in words
        shutil.copy(browser.screenshot("records-list"), README_SCREENSHOTS / "records-list.png")

    with browser.step("record-detail-and-reharvest"):
        record_id = f"journey/{identifier}"
        browser.goto(f"/administration/oai-harvested-records/{record_id}")
        page.get_by_text(identifier).first.wait_for()
        assert "<dc:title>" in page.locator("pre").first.inner_text() or "title" in page.content()
        page.get_by_role("button", name="Re-harvest").first.click()
        submit_run_form(browser)
        runs = finished_runs(browser, "journey", 4)
        assert runs[0]["title"] == f"Re-harvest {identifier}"
        assert runs[0]["status"] == "SUCCESS" and runs[0]["args"]["identifiers"] == [identifier]

    # -- the chart of the last runs on the harvester's page -----------------------------------
    with browser.step("detail-run-chart"):
        browser.goto("/administration/oai-harvesters/journey")
        chart = page.locator("#oai-harvester-run-chart svg")
        chart.wait_for()
        assert chart.is_visible() and chart.bounding_box()["height"] > 150
        history = browser.api("GET", "/api/oai-harvest/harvesters/journey/runs/history").json()
        bars = chart.locator("g.oai-run-chart-run")
        assert bars.count() == len(history["runs"]) == 4
        assert [bars.nth(i).get_attribute("data-run") for i in range(4)] == [
            run["id"] for run in history["runs"]
        ]
        full = history["runs"][0]  # the oldest: the full harvest
        assert full["created"] == runs[-1]["inserted_entries"] and full["duration"] >= 0
        created = bars.first.locator("rect.oai-run-chart-created title").text_content()
        assert created.startswith(f"created {full['created']} · ")
        assert "created" in chart.locator("g.oai-run-chart-legend").text_content()
        chart.screenshot(path=str(browser.screenshots / "run-chart.png"))

    harvester = browser.api("GET", "/api/oai-harvest/harvesters/journey").json()
    job_id = harvester["job"]["id"]
    with browser.step("job-edit-page"):
        browser.goto(f"/administration/jobs/{job_id}/edit")
        page.locator("form").first.wait_for()
        assert page.locator("[name='title']").first.is_visible()

    # invenio-jobs 11.1 (not this plugin): 1.5 s after scheduling from the Jobs list it
    # navigates to the job's `links.self_admin_html`, its runs page (sorted by `created`), or
    # to /administration/undefined where its API app cannot build that link (no
    # administration blueprint there). The step waits for that navigation, so that the next
    # one starts on a settled page. Once in CI (2026-12-05) the runs page's sort dropdown
    # threw there ("reading 'text'": react-searchkit found no selected sort option), in the
    # next step: that error of invenio-jobs' page is tolerated on its pages only.
    with browser.step(
        "schedule-job",
        expect=[(404, r"/administration/undefined$")],
        expect_console=[(r"/administration/(jobs|undefined)", r"reading 'text'")],
    ):
        browser.goto("/administration/jobs")
        row = page.locator("tr", has_text="OAI-PMH harvest: Journey")
        row.locator("td").last.locator(".dropdown, button").first.click()  # the gear menu
        page.locator(".menu .item, .ui.button", has_text="Schedule").first.click()
        modal = page.locator(".ui.modal")
        modal.locator(".dropdown", has_text="Select a schedule type").click()
        modal.locator(".dropdown .item", has_text="Interval").click()
        modal.locator("[name='hours']").fill("6")
        modal.get_by_role("button", name="Save").click()
        modal.wait_for(state="detached")
        page.wait_for_url(re.compile(r"/administration/(undefined$|jobs/[0-9a-f-]{36})"))
        job = browser.api("GET", f"/api/jobs/{job_id}").json()
        assert job["schedule"]["type"] == "interval" and job["schedule"]["hours"] == 6
        assert job["active"] is True

    with browser.step("scheduler-starts-the-run"):
        assert "started harvest_oaipmh_records_journey" in run_scheduler_once(
            "harvest_oaipmh_records_journey"
        )
        runs = finished_runs(browser, "journey", 5)
        assert runs[0]["status"] == "SUCCESS", runs[0]["message"]
        browser.goto("/administration/oai-harvesters/journey")
        assert "every 6 hours" in page.locator("#oai-harvester-jobs").inner_text()
        assert "Scheduled run" in page.locator("#oai-harvester-runs tbody tr").first.inner_text()
        shutil.copy(
            browser.screenshot("detail-scheduled"), README_SCREENSHOTS / "harvester-detail.png"
        )

    # -- repairs: preview, Run now with rewrite, purge ----------------------------------------
    # The provider changes a record; its new title is markup, to be shown as text.
    # One set only: a record of phys:astro is listed twice (under phys too).
    changed = min(r.identifier for r in browser_corpus.select(set_spec="math") if not r.deleted)
    markup_title = '<img src=x onerror="window.oaiInjected=1"> Changed & <b>bold</b>'
    browser_corpus.advance_clock(minutes=10)
    browser_corpus.update(
        changed, metadata={**browser_corpus.get(changed).metadata, "title": [markup_title]}
    )
    # And a new record that the target refuses (no title): the preview shows its error.
    refused = "oai:example.org:refused-in-preview"
    browser_corpus.add(
        refused, {"creator": ["Nobody"]}, sets=("math",), datestamp=browser_corpus.now()
    )
    runs_before = len(runs_of(browser, "journey"))
    stored = browser.api("GET", f"/api/oai-harvest/records/journey/{changed}").json()

    with browser.step("preview"):
        browser.goto("/administration/oai-harvesters/journey")
        open_action(browser, "Preview")
        page.wait_for_url(re.compile(r"/administration/oai-harvesters/journey/preview$"))
        form = page.locator("#oai-preview-form form")
        form.wait_for()
        for name in ("since", "full", "identifiers", "rewrite", "errors_only", "force", "limit"):
            assert form.locator(f"[name='{name}']").count() == 1, name
        assert form.locator("[name='purge'], [name='confirm']").count() == 0
        page.locator("#oai-preview-form").get_by_role("button", name="Preview").click()
        report = page.locator("#oai-preview-report")
        report.wait_for(timeout=60_000)
        counts = {
            name: int(report.locator(f"[data-count='{name}']").inner_text())
            for name in ("examined", "created", "updated", "deleted", "unchanged", "failed")
        }
        assert counts == {
            "examined": 2, "created": 0, "updated": 1, "deleted": 0, "unchanged": 0, "failed": 1
        }, counts  # fmt: skip
        failure = report.locator(f"tr.oai-preview-entry[data-identifier='{refused}']")
        assert "fail" in failure.inner_text()
        assert "title" in report.inner_text().split(refused, 1)[1]  # the target's own error
        entry = report.locator(f"tr.oai-preview-entry[data-identifier='{changed}']")
        assert "update" in entry.inner_text()
        change = entry.locator("tr.oai-preview-change", has_text="/metadata/title/0")
        assert change.locator("code").first.inner_text() == "replace"
        # The provider's markup is text on the page (the value as JSON), not elements.
        assert json.dumps(markup_title, ensure_ascii=False) in change.inner_text()
        assert report.locator("img").count() == 0 and report.locator("b").count() == 0
        assert page.evaluate("window.oaiInjected") is None
        assert not report.locator("#oai-preview-stopped").count()
        # A preview writes nothing: no run, the tracked record as it was.
        assert len(runs_of(browser, "journey")) == runs_before
        after = browser.api("GET", f"/api/oai-harvest/records/journey/{changed}").json()
        assert after["datestamp"] == stored["datestamp"]
        assert after["transformed"] == stored["transformed"]
        shutil.copy(
            browser.screenshot("preview-report"), README_SCREENSHOTS / "harvester-preview.png"
        )

    with browser.step(
        "preview-bad-argument", expect=[(400, r"/api/oai-harvest/harvesters/journey/preview$")]
    ):
        # Errors only is only for a rewrite: the API's message on the field, no report.
        tick(browser, "errors_only")
        page.locator("#oai-preview-form").get_by_role("button", name="Preview").click()
        wait_until(lambda: browser.error_of("errors_only"), timeout=30)
        assert "Only with rewrite" in browser.error_of("errors_only")
        assert "validation error" in page.locator("#oai-preview-error").inner_text()
        assert not page.locator("#oai-preview-report").count()
        tick(browser, "errors_only")

    with browser.step("preview-stopped-at-the-limit"):
        tick(browser, "full")
        tick(browser, "force")
        browser.fill("limit", "5")
        page.locator("#oai-preview-form").get_by_role("button", name="Preview").click()
        stopped = page.locator("#oai-preview-stopped")
        stopped.wait_for(timeout=60_000)
        assert "Stopped at the limit" in stopped.inner_text()
        assert page.locator("[data-count='examined']").inner_text() == "5"
        assert not page.locator("#oai-preview-error").count()  # the last error is gone
        assert "No field differs." in page.locator("#oai-preview-entries").inner_text()
        assert len(runs_of(browser, "journey")) == runs_before

    with browser.step("run-now-rewrite"):
        listed_before = len(browser_provider.requests)
        browser.goto("/administration/oai-harvesters/journey")
        open_run_form(browser)
        form = page.locator(".ui.modal form#action-form")
        for name in ("rewrite", "errors_only", "force", "retry_errors"):
            assert form.locator(f"[name='{name}']").count() == 1, name
        assert form.locator("[name='purge'], [name='confirm'], [name='forget']").count() == 0
        tick(browser, "rewrite")
        submit_run_form(browser)
        runs = finished_runs(browser, "journey", runs_before + 1)
        assert runs[0]["args"]["rewrite"] is True and runs[0]["title"] == "Rewrite from stored XML"
        assert runs[0]["status"] == "SUCCESS", runs[0]["message"]
        # From the stored XML: the provider was not asked, its change is not harvested.
        assert len(browser_provider.requests) == listed_before
        assert (
            browser.api("GET", f"/api/oai-harvest/records/journey/{changed}").json()["datestamp"]
            == stored["datestamp"]
        )
        # Closing the confirmation shows the harvester's page again, with the new run.
        page.wait_for_url(re.compile(r"/administration/oai-harvesters/journey$"))
        assert "Rewrite from stored XML" in page.locator("#oai-harvester-runs").inner_text()

    # -- undo a run: the harvest of the changed record taken back -----------------------------
    with browser.step("undo-a-run"):
        harvested = browser.api("POST", "/api/oai-harvest/harvesters/journey/run").json()
        runs = finished_runs(browser, "journey", runs_before + 2)
        assert runs[0]["id"] == harvested["id"] and runs[0]["updated_entries"] == 1
        assert (
            browser.api("GET", f"/api/oai-harvest/records/journey/{changed}").json()["datestamp"]
            != stored["datestamp"]
        )
        browser.goto("/administration/oai-harvesters/journey")
        row = page.locator("#oai-harvester-runs tbody tr").first
        questions = accept_the_next_dialog(page)
        row.get_by_role("button", name="Undo").click()
        page.locator(".oai-run-undo-answer").wait_for()
        assert questions and "write back 1 it updated" in questions[0], questions
        runs = finished_runs(browser, "journey", runs_before + 3)
        assert runs[0]["title"] == f"Undo of run {harvested['id']}"
        assert runs[0]["status"] == "SUCCESS", runs[0]["message"]
        assert (
            browser.api("GET", f"/api/oai-harvest/records/journey/{changed}").json()["datestamp"]
            == stored["datestamp"]
        )
        page.wait_for_url(re.compile(r"/administration/oai-harvesters/journey$"))
        browser.goto("/administration/oai-harvesters/journey")
        undone = page.locator(
            "#oai-harvester-runs tbody tr td.oai-harvester-run-undo", has_text="undone"
        )
        assert undone.count() == 1
        browser.screenshot("detail-after-undo")
    runs_before += 2  # the harvest and its undo

    # -- the deletion guard: a run that would delete a fifth of the records holds them ---------
    gone = sorted(
        r.identifier
        for r in browser_corpus.select(set_spec="phys")
        if not r.deleted and r.identifier != changed
    )[:25]
    browser_corpus.advance_clock(minutes=10)
    for identifier in gone:
        browser_corpus.delete(identifier)
    with browser.step("held-deletions-confirmed"):
        browser.api("POST", "/api/oai-harvest/harvesters/journey/run")
        runs = finished_runs(browser, "journey", runs_before + 1)
        assert runs[0]["status"] == "PARTIAL_SUCCESS", runs[0]
        assert "25 deletions held" in runs[0]["message"]
        browser.goto("/administration/oai-harvesters/journey")
        banner = page.locator("#oai-harvester-held-deletions")
        banner.wait_for()
        assert "25 deletions are held" in banner.inner_text()
        assert all(local_records(browser, "journey").get(i) for i in gone)  # still published
        browser.screenshot("held-deletions-banner")
        questions = accept_the_next_dialog(page)
        banner.get_by_role("button", name="Delete them").click()
        answer = page.locator("#oai-held-deletions-answer")
        answer.wait_for()
        assert questions == ["Delete the 25 local records whose deletion is held?"]
        assert "Deleted 25 records; 0 failed." in answer.inner_text()
        held = browser.api("GET", "/api/oai-harvest/harvesters/journey/deletions").json()
        assert held["held"] == 0
        assert not any(local_records(browser, "journey").get(i) for i in gone)
    runs_before += 1  # the run that held them

    local = local_records(browser, "journey")
    assert local, "the journey harvester has local records to purge"
    with browser.step(
        "purge-wrong-id", expect=[(400, r"/api/oai-harvest/harvesters/journey/purge$")]
    ):
        browser.goto("/administration/oai-harvesters/journey")
        open_action(browser, "Purge")
        modal = page.locator(".ui.modal")
        modal.locator("form#action-form").wait_for()
        assert "Type journey to confirm." in modal.inner_text()
        browser.fill("confirm", "journey-typo")
        modal.locator("button[type=submit]").click()
        wait_until(lambda: browser.error_of("confirm"), timeout=30)
        assert "(journey)" in browser.error_of("confirm")
        assert len(runs_of(browser, "journey")) == runs_before + 1  # nothing started
        assert local_records(browser, "journey") == local

    with browser.step("purge"):
        browser.fill("confirm", "journey")
        queued = submit_run_form(browser)
        runs = finished_runs(browser, "journey", runs_before + 2)
        assert queued["link"].endswith(runs[0]["id"])
        assert runs[0]["args"]["purge"] is True and runs[0]["args"]["forget"] is False
        assert runs[0]["status"] == "SUCCESS", runs[0]["message"]
        assert runs[0]["updated_entries"] == len(local)  # "updated or deleted"
        # The harvester's records are gone: no tracked record has a local one any more (the
        # rows stay, marked purged) ...
        assert local_records(browser, "journey") == {}
        tracked = browser.api("GET", "/api/oai-harvest/records?harvester=journey&size=1").json()
        assert tracked["hits"]["total"] >= len(local)
        # ... and the target deleted each of them (the sample target has no REST API of its
        # own: its persistent identifiers say so).
        assert pid_statuses(panel.database_uri, list(local.values())) == {"D"}
        # The next run starts from nothing and harvests them again.
        assert browser.api("GET", "/api/oai-harvest/harvesters/journey").json()["watermark"] is None
        # Closing the confirmation showed the harvester's page; now with the purge done.
        page.wait_for_url(re.compile(r"/administration/oai-harvesters/journey$"))
        browser.goto("/administration/oai-harvesters/journey")
        first_run = page.locator("#oai-harvester-runs tbody tr").first.inner_text()
        assert "Purge" in first_run and "SUCCESS" in first_run, first_run

    # -- pause a harvester; the run-all job runs the active ones -------------------------------
    # The Jobs list asks for /administration/undefined once, as in "schedule-job" above
    # (invenio-jobs' links.self_admin_html, which its API app cannot build).
    with browser.step("pause-and-run-all", expect=[(404, r"/administration/undefined$")]):
        browser.api(
            "POST",
            "/api/oai-harvest/harvesters?check=false",
            data={
                "id": "paused",
                "name": "Paused one",
                "base_url": provider,
                "metadata_prefix": "oai_dc",
                "target": "oai-sample-records",
            },
            headers={"Content-Type": "application/json"},
        )
        browser.goto("/administration/oai-harvesters/paused/edit")
        page.locator("form .field:has([name='active']) .checkbox").first.click()  # untick
        page.get_by_role("button", name="Save").click()
        page.wait_for_url(LIST_PAGE)
        assert browser.api("GET", "/api/oai-harvest/harvesters/paused").json()["active"] is False
        created = browser.api(
            "POST",
            "/api/jobs",
            data={"title": "Every harvester", "task": "harvest_oaipmh_all", "active": True},
            headers={"Content-Type": "application/json"},
        ).json()
        browser.goto("/administration/jobs")
        page.locator("tr", has_text="Every harvester").first.wait_for()
        all_runs_before = len(runs_of(browser, "journey"))
        journey = browser.api("GET", "/api/oai-harvest/harvesters/journey").json()
        assert journey["active"] is True, "the edits above paused the journey harvester"
        run = browser.api(
            "POST",
            f"/api/jobs/{created['id']}/runs",
            data={"title": "Run all now"},
            headers={"Content-Type": "application/json"},
        ).json()

        def run_all_finished():
            found = browser.api("GET", f"/api/jobs/{created['id']}/runs/{run['id']}").json()
            return found if found["status"] not in ("QUEUED", "RUNNING") else None

        ended = wait_until(run_all_finished, timeout=120)
        # The preview step left a record the target refuses: the journey harvester's run is
        # partial, and so is the run of all (one harvester did not fully succeed).
        assert ended["status"] == "PARTIAL_SUCCESS", ended["message"]
        assert ended["message"].startswith("Ran 1 harvester: journey: PARTIAL_SUCCESS")
        assert "refused-in-preview" in ended["message"]
        assert len(runs_of(browser, "journey")) == all_runs_before + 1
        assert runs_of(browser, "paused") == []
        browser.goto(f"/administration/runs/{run['id']}")
        page.get_by_text("journey: PARTIAL_SUCCESS").first.wait_for()

    # -- delete -------------------------------------------------------------------------------
    with browser.step("delete"):
        browser.api(
            "POST",
            "/api/oai-harvest/harvesters?check=false",
            data={
                "id": "to-delete",
                "name": "To delete",
                "base_url": provider,
                "metadata_prefix": "oai_dc",
                "target": "oai-sample-records",
            },
            headers={"Content-Type": "application/json"},
        )
        browser.goto("/administration/oai-harvesters/to-delete")
        page.get_by_role("button", name="Open list of actions").first.click()
        page.locator(".menu [aria-label='Delete']").click()  # an icon in the menu, no text
        page.locator(".ui.modal").get_by_role("button", name="Delete").click()
        page.wait_for_url(LIST_PAGE)
        assert browser.api("GET", "/api/oai-harvest/harvesters/to-delete").status == 404
