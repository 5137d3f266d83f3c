"""E-mail reports to a harvester's managers when one of its runs ends.

Subscribed to `signals.harvest_finished`. The messages are rendered from Jinja templates an
instance may override (same names under its own ``templates`` folder):

- ``oarepo_oaipmh_harvester/reports/run-finished-subject.txt``
- ``oarepo_oaipmh_harvester/reports/run-finished.txt``
- ``oarepo_oaipmh_harvester/reports/run-finished.html``

A report that cannot be sent is logged and dropped: it never changes the run's outcome.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from flask import current_app, render_template
from invenio_accounts.models import User
from invenio_db import db
from invenio_jobs.models import Run
from invenio_mail.api import TemplatedMessage

from .harvest.counts import WriteCounts
from .models import OAIHarvester
from .signals import harvest_finished

log = logging.getLogger(__name__)

TEMPLATE_DIR = "oarepo_oaipmh_harvester/reports"


@dataclass
class FailedRecord:
    """One failed identifier in a report, with where to look at it."""

    identifier: str
    error: str
    panel_url: str
    api_url: str


@dataclass
class FailureReason:
    """Records that failed for one reason: how many, a few of them, and the list of all."""

    reason: str
    count: int
    examples: list[FailedRecord]
    records_url: str
    """The panel's records list, filtered to this harvester's records with this error."""


@dataclass
class RunReport:
    """Everything the report templates get (as ``report``)."""

    harvester: OAIHarvester
    status: str
    run_id: str | None
    error: str | None
    counts: dict[str, int]
    problems: list[str] = field(default_factory=list)
    reasons: list[FailureReason] = field(default_factory=list)
    more_reasons: int = 0
    run: Run | None = None
    links: dict[str, str] = field(default_factory=dict)

    @property
    def succeeded(self) -> bool:
        return self.status == "SUCCESS"


def connect_reports() -> None:
    """Subscribe the report sender (once per process; blinker ignores a second connect)."""
    harvest_finished.connect(send_run_report, weak=False)


def send_run_report(sender: Any, **kwargs: Any) -> None:
    """`harvest_finished` receiver: e-mail the managers; never raises."""
    try:
        _send_run_report(**kwargs)
    except Exception:
        log.exception("The run report of harvester %s was not sent", kwargs.get("harvester_id"))


def _send_run_report(
    *,
    harvester_id: str,
    run_id: uuid.UUID | None,
    status: str,
    summary: Any,
    error: str | None,
    **kwargs: Any,
) -> None:
    config = current_app.config
    if not config["OAI_HARVESTER_REPORTS"] or status not in config["OAI_HARVESTER_REPORT_STATUSES"]:
        return
    harvester = db.session.get(OAIHarvester, harvester_id)
    if harvester is None:
        return
    recipients = manager_emails(harvester)
    if not recipients:
        return
    report = build_report(harvester, run_id=run_id, status=status, summary=summary, error=error)
    context = {"report": report, "harvester": harvester}
    subject = render_template(f"{TEMPLATE_DIR}/run-finished-subject.txt", **context)
    message = TemplatedMessage(
        template_body=f"{TEMPLATE_DIR}/run-finished.txt",
        template_html=f"{TEMPLATE_DIR}/run-finished.html",
        ctx=context,
        subject=" ".join(subject.split()),  # one line, whatever the template's layout
        sender=config["OAI_HARVESTER_REPORT_SENDER"] or config.get("MAIL_DEFAULT_SENDER"),
        recipients=recipients,
    )
    current_app.extensions["mail"].send(message)


def manager_emails(harvester: OAIHarvester) -> list[str]:
    """E-mail addresses of the harvester's managers who are active users."""
    user_ids = [int(user_id) for user_id in harvester.harvest_managers or []]
    if not user_ids:
        return []
    users = db.session.scalars(db.select(User).where(User.id.in_(user_ids)))
    return sorted(user.email for user in users if user.email and user.active)


def build_report(
    harvester: OAIHarvester,
    *,
    run_id: uuid.UUID | None,
    status: str,
    summary: Any,
    error: str | None,
) -> RunReport:
    """The facts of one finished run, with links into the administration panel and the API."""
    config = current_app.config
    ui = config.get("SITE_UI_URL", "").rstrip("/")
    api = config.get("SITE_API_URL", "/api").rstrip("/")
    admin = f"{ui}/administration"
    run = db.session.get(Run, run_id) if run_id else None

    if summary is not None:
        counted = summary.counts
        problems = [
            *summary.problems,
            *summary.warnings,
            *(f"{identifier}: {text}" for identifier, text in counted.notices),
        ]
    else:  # failed before writing anything of this batch: what the run counted so far
        counted = WriteCounts.from_run_columns(run)
        problems = []
    counts = {
        "total": counted.total,
        "created": counted.created,
        "updated": counted.updated,
        "deleted": counted.deleted,
        "unchanged": counted.unchanged,
        "failed": counted.failed,
        "held": counted.held,
    }

    def failed_record(identifier: str, reason: str) -> FailedRecord:
        quoted = quote(identifier, safe=":/")
        return FailedRecord(
            identifier=identifier,
            error=reason,
            panel_url=f"{admin}/oai-harvested-records/{harvester.id}/{quoted}",
            api_url=f"{api}/oai-harvest/records/{harvester.id}/{quoted}",
        )

    def records_with(reason: str) -> str:
        filters = [("f", f"harvester:{harvester.id}"), ("f", f"error:{reason}")]
        return f"{admin}/oai-harvested-records?{urlencode(filters)}"

    limit = config["OAI_HARVESTER_REPORT_MAX_FAILURES"]
    groups = counted.failure_groups()
    reasons = [
        FailureReason(
            reason=group.reason,
            count=group.count,
            examples=[failed_record(identifier, group.reason) for identifier in group.examples],
            records_url=records_with(group.reason),
        )
        for group in groups[:limit]
    ]
    filters = urlencode([("f", f"harvester:{harvester.id}"), ("f", "has_errors:true")])
    links = {
        "harvester": f"{admin}/oai-harvesters/{harvester.id}",
        "records_with_errors": f"{admin}/oai-harvested-records?{filters}",
        "api_harvester": f"{api}/oai-harvest/harvesters/{harvester.id}",
    }
    if run_id:
        links["run"] = f"{admin}/runs/{run_id}"
        links["api_run"] = f"{api}/oai-harvest/harvesters/{harvester.id}/runs/{run_id}"
    return RunReport(
        harvester=harvester,
        status=status,
        run_id=str(run_id) if run_id else None,
        error=error,
        counts=counts,
        problems=problems,
        reasons=reasons,
        more_reasons=max(len(groups) - len(reasons), 0),
        run=run,
        links=links,
    )
