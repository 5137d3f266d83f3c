"""E-mail reports to harvest managers when a run ends: success, partial, failed."""

from __future__ import annotations

from pathlib import Path

import pytest
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import Run
from operator_helpers import mounted_api_app

from oarepo_oaipmh_harvester.models import OAIHarvester
from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service


def run_now(harvester_id: str = "a") -> Run:
    item = current_harvest_runs_service.start_run(system_identity, harvester_id)
    return db.session.get(Run, item.id)


def test_success_report(harvesters, mailbox):
    run = run_now()
    assert run.status.name == "SUCCESS"
    (message,) = mailbox
    assert message.recipients == ["manager@example.org"]
    assert message.sender == "repository@example.org"
    assert message.subject == '[Test repository] OAI-PMH harvest "Harvester A" succeeded'
    body = message.body
    assert "Records:   50 harvested" in body
    assert "created    50" in body and "failed     0" in body
    assert "https://repo.example.org/administration/oai-harvesters/a" in body
    assert f"https://repo.example.org/administration/runs/{run.id}" in body
    assert "Failed records by reason" not in body and "What went wrong" not in body
    assert '<a href="https://repo.example.org/administration/oai-harvesters/a">' in message.html


def test_partial_report_lists_the_failed_records_with_links(harvesters, corpus, mailbox):
    bad = sorted(corpus.live_identifiers())[:2]
    for identifier in bad:
        corpus.update(identifier, metadata={"subject": ["untitled"]})
    run = run_now()
    assert run.status.name == "PARTIAL_SUCCESS"
    (message,) = mailbox
    assert message.subject.endswith('"Harvester A" finished with failed records')
    body = message.body
    assert "created    48" in body and "failed     2" in body
    reason = "Validation failed: {'metadata': ['A record needs a non-empty title.']}"
    assert f"Failed records by reason:\n- 2 × {reason}\n" in body
    for identifier in bad:
        assert (
            f"  {identifier}  https://repo.example.org/administration/oai-harvested-records/a/"
            f"{identifier}\n" in body
        )
    assert (
        "  all of them: https://repo.example.org/administration/oai-harvested-records"
        "?f=harvester%3Aa&f=error%3AValidation+failed" in body
    )
    assert "2 of 50 records failed" in body  # the run's own message
    assert f"By reason: 2 × {reason} ({bad[0]}, {bad[1]})." in body
    assert (
        "https://repo.example.org/administration/oai-harvested-records"
        "?f=harvester%3Aa&f=has_errors%3Atrue"
    ) in body
    assert f">{bad[0]}</a>" in message.html


def test_failed_report_says_what_went_wrong(harvesters, provider, mailbox):
    provider.quirks.fail_requests = 1000
    provider.quirks.fail_status = 403
    run = run_now()
    assert run.status.name == "FAILED"
    (message,) = mailbox
    assert message.subject.endswith('"Harvester A" failed')
    assert "What went wrong:" in message.body and "403" in message.body


def test_only_managers_and_only_chosen_outcomes_are_mailed(harvesters, users, set_config, mailbox):
    run_now("b")  # nobody manages b
    assert len(mailbox) == 0

    set_config(OAI_HARVESTER_REPORT_STATUSES=["FAILED", "PARTIAL_SUCCESS"])
    run_now("a")
    assert len(mailbox) == 0

    set_config(OAI_HARVESTER_REPORT_STATUSES=["SUCCESS"], OAI_HARVESTER_REPORTS=False)
    run_now("a")
    assert len(mailbox) == 0

    # The chosen outcome is mailed, to the manager of a alone: the silence above was the
    # choice, not a report that could not be sent.
    set_config(OAI_HARVESTER_REPORTS=True)
    run_now("a")
    (message,) = mailbox
    assert message.recipients == ["manager@example.org"]


def test_inactive_managers_get_nothing_and_several_get_one_message(
    harvesters, users, app, db, UserFixture, mailbox
):
    other = UserFixture(email="second@example.org", password="password").create(app, db)
    inactive = UserFixture(email="gone@example.org", password="password", active=False)
    inactive.create(app, db)
    harvester = db.session.get(OAIHarvester, "a")
    harvester.harvest_managers = [users.manager.user.id, other.user.id, inactive.user.id]
    db.session.commit()
    run_now("a")
    (message,) = mailbox
    assert message.recipients == ["manager@example.org", "second@example.org"]


def test_a_failing_report_does_not_change_the_run(harvesters, app, mailbox, monkeypatch, caplog):
    def refuse(message):
        raise ConnectionRefusedError("SMTP server down")

    for mail in {app.extensions["mail"], _api_mail(app)}:
        monkeypatch.setattr(mail, "send", refuse)
    run = run_now()
    assert run.status.name == "SUCCESS"
    assert "The run report of harvester a was not sent" in caplog.text


def test_the_instance_overrides_the_templates(harvesters, app, mailbox):
    folder = Path(app.instance_path) / "templates" / "oarepo_oaipmh_harvester" / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    override = folder / "run-finished.txt"
    override.write_text("Our own words: {{ report.counts.created }} new records.\n")
    _clear_template_caches(app)
    try:
        run_now()
    finally:
        override.unlink()
        _clear_template_caches(app)
    (message,) = mailbox
    assert message.body.strip() == "Our own words: 50 new records."


def _api_mail(app):
    return mounted_api_app(app).extensions["mail"]


def _clear_template_caches(app) -> None:
    for flask_app in (app, mounted_api_app(app)):
        if flask_app.jinja_env.cache is not None:
            flask_app.jinja_env.cache.clear()


@pytest.fixture(autouse=True)
def _reports_on(set_config):
    set_config(OAI_HARVESTER_REPORTS=True)


def test_a_run_that_held_deletions_says_so(harvesters, corpus, mailbox):
    """The deletion guard (issue 37): the report names the held deletions and where to
    release them, and its subject does not call them failed records."""
    run_now()
    mailbox.clear()
    corpus.advance_clock(hours=1)
    for identifier in sorted(corpus.live_identifiers())[:25]:
        corpus.delete(identifier)
    run = run_now()
    assert run.status.name == "PARTIAL_SUCCESS"
    (message,) = mailbox
    assert message.subject.endswith('"Harvester A" held back deletions for you to confirm')
    assert "held back  25 deletions (the deletion guard)" in message.body
    assert "invenio oai deletions a" in message.body
    assert "25 deletions held (deleted at the source: 50% of the 50 live records" in message.body
    assert '<th align="left">Held back</th><td>25 deletions' in message.html
