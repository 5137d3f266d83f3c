"""`invenio oai harvest` (harvests, repairs, previews), `invenio oai harvester purge` and
`invenio oai records`: runs in this process, recorded as runs of the harvester's job."""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime
from typing import Any

import click
from flask.cli import with_appcontext
from invenio_access.permissions import system_identity

from ..arguments import SINCE_FORMS
from ..harvest.results import HarvestProgress, HarvestSummary, RunOutcome
from ..harvest.stopping import AbortedAtOnce, interruptible
from ..proxies import (
    current_harvest_runs_service,
    current_harvested_records_service,
)
from ..services.errors import HarvesterServiceError
from .groups import echo_json, fail, harvester, json_output, oai, refusal, switch

REASONS_PRINTED = 10
"""Reasons records failed for that a command-line harvest prints, each once with its count and
a few identifiers (``invenio oai records --errors-only`` lists every record)."""


class _ProgressPrinter:
    """Progress on stderr (stdout stays clean for scripts): in place on a terminal,
    otherwise one line every few seconds so that logs do not fill up."""

    def __init__(self, interval: float = 5.0) -> None:
        self.last: HarvestProgress | None = None
        self.summary: HarvestSummary | None = None
        self.interactive = sys.stderr.isatty()
        self.interval = interval
        self._printed_at = 0.0

    def __call__(self, progress: HarvestProgress) -> None:
        self.last = progress
        if progress.summary is not None:
            self.summary = progress.summary
            return  # the summary is printed after the run
        now = time.monotonic()
        if not self.interactive and now - self._printed_at < self.interval:
            return
        self._printed_at = now
        c = progress.counts
        of = f" of ~{progress.complete_list_size}" if progress.complete_list_size else ""
        line = (
            f"harvested {c.total}{of}: created {c.created}, updated {c.updated}, "
            f"deleted {c.deleted}, unchanged {c.unchanged}, failed {c.failed}"
        )
        if self.interactive:
            click.echo(f"\r{line}", err=True, nl=False)
        else:
            click.echo(line, err=True)

    def finish(self) -> None:
        if self.interactive and self.last is not None:
            click.echo("", err=True)


@oai.command("harvest")
@click.argument("harvester_id")
@click.option(
    "--since",
    metavar="ISO8601",
    help=f"Harvest changes from this time on: a date, or a date and time with Z or an offset "
    f"(e.g. {SINCE_FORMS}; without a zone, UTC). Default: the harvester's watermark.",
)
@switch("--full", help="Harvest everything.")
@click.option(
    "--identifier",
    "identifiers",
    multiple=True,
    help="Only this OAI identifier (GetRecord); repeat, at most OAI_HARVESTER_MAX_RUN_IDENTIFIERS.",
)
@switch(
    "--reconcile-only",
    help="List identifiers only and delete local records the provider no longer has.",
)
@switch(
    "--reindex",
    help="Send every local record of the harvester to the search index again (no provider "
    "request).",
)
@switch(
    "--rewrite",
    help="Transform the tracked records again from their stored XML and write those whose "
    "result differs (no provider request); with --identifier only those.",
)
@switch("--errors-only", help="With --rewrite: only records with errors.")
@switch("--force", help="Write the listed records even where the provider did not change them.")
@switch("--retry-errors", help="Ask the provider again for every record whose last attempt failed.")
@switch(
    "--dry-run",
    help="Preview: report what the run would create, update (with field changes), delete and "
    "fail, and commit nothing.",
)
@click.option(
    "--limit",
    type=int,
    help="With --dry-run: records to examine at most (default: OAI_HARVESTER_PREVIEW_LIMIT; "
    "at most OAI_HARVESTER_PREVIEW_MAX_LIMIT).",
)
@switch("--json", "as_json", help="With --dry-run: the whole report as JSON.")
@with_appcontext
def harvest(
    harvester_id: str,
    since: str | None,
    identifiers: tuple[str, ...],
    dry_run: bool,
    limit: int | None,
    as_json: bool,
    **flags: bool,
) -> None:
    """Run a harvest (or a repair, or a preview) in this process and print a summary.

    Incremental from the harvester's watermark unless --since or --full; exits non-zero
    when the run did not fully succeed.

    \b
    Examples:
      invenio oai harvest zenodo --since 2024-05-01T00:00:00+02:00
      invenio oai harvest zenodo --dry-run --limit 20
    """
    arguments: dict[str, Any] = {
        "since": since,
        "identifiers": list(identifiers) or None,
        **flags,
    }
    if dry_run:
        _preview(harvester_id, {**arguments, "limit": limit}, as_json)
        return
    if limit is not None or as_json:
        fail("--limit and --json work only with --dry-run (a preview).")
    _harvest_here(harvester_id, arguments)


def _preview(harvester_id: str, arguments: dict[str, Any], as_json: bool) -> None:
    try:
        report = current_harvest_runs_service.preview(system_identity, harvester_id, arguments)
    except HarvesterServiceError as error:
        fail(refusal(error, "Refused"))
    if as_json:
        echo_json(report)
        return
    counts = report["counts"]
    click.echo(
        f"Dry run of {harvester_id} (nothing was written): examined {counts['examined']}; "
        f"would create {counts['created']}, update {counts['updated']}, delete "
        f"{counts['deleted']}, leave {counts['unchanged']} unchanged; {counts['failed']} would fail."
    )
    if report["stopped_early"]:
        click.echo(f"Stopped at the limit of {report['limit']} records (--limit).")
    if report["predicted_reconciliation"]:
        click.echo(
            f"A reconciliation would delete {report['predicted_reconciliation']} local records."
        )
    for entry in report["entries"]:
        pid = f" ({entry['pid']})" if entry.get("pid") else ""
        click.echo(f"  {entry['action']} {entry['identifier']}{pid}")
        for change in entry.get("changes") or []:
            value = json.dumps(change.get("value"), ensure_ascii=False)
            click.echo(
                f"      {change['op']} {change['path']}"
                + ("" if change["op"] == "remove" else f": {value[:120]}")
            )
        for error in entry.get("errors") or []:
            click.echo(f"      error: {error}")
        for conflict in entry.get("conflicts") or []:
            click.echo(
                f"      conflict {conflict['field']}: changed locally and at the source; "
                f"{conflict['policy']} keeps the {conflict['kept']} value"
            )
        for notice in entry.get("notices") or []:
            click.echo(f"      note: {notice}")
    listed = counts["created"] + counts["updated"] + counts["deleted"] + counts["failed"]
    if len(report["entries"]) < listed:
        click.echo(
            f"  (the first {len(report['entries'])} of {listed} records listed; --json has the "
            f"same, OAI_HARVESTER_PREVIEW_DIFFS sets how many)"
        )
    for note in report["notes"]:
        click.echo(note)


def _harvest_here(harvester_id: str, arguments: dict[str, Any], title: str | None = None) -> None:
    """Run it here; Ctrl-C (or SIGTERM) stops it after the batch in flight, a second one at
    once. The exit code is 128 + the signal's number then (130 for Ctrl-C)."""
    printer = _ProgressPrinter()
    started = datetime.now(UTC)
    try:
        with interruptible() as interruptions:
            run = current_harvest_runs_service.harvest_in_process(
                system_identity,
                harvester_id,
                arguments,
                progress=printer,
                stop=interruptions.reason,
                **({"title": title} if title else {}),
            )
    except HarvesterServiceError as error:
        fail(refusal(error, "Refused"))
    except AbortedAtOnce as aborted:
        printer.finish()
        click.echo(str(aborted), err=True)
        sys.exit(aborted.exit_code)
    elapsed = (datetime.now(UTC) - started).total_seconds()
    printer.finish()
    click.echo(f"Run {run.id}: {run.status.name} in {elapsed:.1f} s")
    succeeded = run.status.name == RunOutcome.SUCCESS.value
    if printer.summary is not None:
        _print_summary(printer.summary, harvester_id)
    elif printer.last is not None:
        click.echo(printer.last.counts.describe())
    if printer.summary is None and run.message:
        # A run that ended before its summary (it failed or was stopped): its one message.
        click.echo(run.message.strip().splitlines()[0], err=not succeeded)
    if not succeeded:
        stopped_here = run.status.name == RunOutcome.CANCELLED.value and interruptions.exit_code
        sys.exit(interruptions.exit_code if stopped_here else 1)


def _print_summary(summary: HarvestSummary, harvester_id: str) -> None:
    """The counts, then what to do (on stderr when the run did not succeed), then each
    reason records failed for once, with its count: never a line per record."""
    click.echo(summary.describe())
    to_stderr = not summary.succeeded
    for problem in summary.problems:
        click.echo(problem, err=to_stderr)
    hints = summary.hints(
        reindex=f"'invenio oai harvest {harvester_id} --reindex'",
        errors=f"'invenio oai records {harvester_id} --errors-only' lists them.",
    )
    for hint in hints:
        click.echo(hint, err=to_stderr)
    groups = summary.counts.failure_groups() if not summary.succeeded else []
    if groups:
        click.echo("By reason:", err=to_stderr)
    for group in groups[:REASONS_PRINTED]:
        click.echo(f"  {group.describe()}", err=to_stderr)
    if len(groups) > REASONS_PRINTED:
        click.echo(f"  and {len(groups) - REASONS_PRINTED} more reasons", err=to_stderr)
    for line in [*summary.notes(), *summary.warnings]:
        click.echo(line, err=to_stderr)


@harvester.command("purge")
@click.argument("harvester_id")
@switch("--forget", help="Forget the tracked records too (else they are marked purged).")
@click.option(
    "--confirm",
    help="The harvester's id, to confirm without a prompt (scripts).",
)
@with_appcontext
def purge_harvester(harvester_id: str, forget: bool, confirm: str | None) -> None:
    """Delete every local record that the harvester created (through its target service).

    Records it did not create (taken over) are left alone. The next harvest of the harvester
    is a full one and creates the records again.

    \b
    Example:
      invenio oai harvester purge zenodo --confirm zenodo --forget
    """
    if confirm is None:
        confirm = click.prompt(
            f"This deletes every local record that harvester {harvester_id} created. "
            f"Type its id to confirm"
        )
    _harvest_here(
        harvester_id,
        {"purge": True, "forget": forget, "confirm": confirm},
        title="Command-line purge",
    )


@oai.command("records")
@click.argument("harvester_id")
@json_output
@switch("--errors-only", help="Only records whose last attempt failed.")
@switch(
    "--warnings",
    "with_warnings",
    help="Only records with warnings (a character XML forbids, a bad datestamp, a "
    "transformer's note); with --errors-only, those with both.",
)
@switch(
    "--conflicts",
    "with_conflicts",
    help="Only records whose last write met a local edit of a field the source changed too "
    "(the harvester's field policies said which value stays).",
)
@with_appcontext
def records(
    harvester_id: str, as_json: bool, errors_only: bool, with_warnings: bool, with_conflicts: bool
) -> None:
    """List the records a harvester tracks: identifier, datestamp, local record or state,
    errors, its files with their status, the fields in conflict with a local edit, and the
    number of warnings with the first (--json: all of them, each file's size, checksum and
    error, and each conflict's local and source values).

    \b
    Example:
      invenio oai records zenodo --errors-only
      invenio oai records zenodo --conflicts
    """
    try:
        rows = current_harvested_records_service.tracked_records(
            system_identity,
            harvester_id,
            errors_only=errors_only,
            with_warnings=with_warnings,
            with_conflicts=with_conflicts,
        )
    except HarvesterServiceError as error:
        fail(refusal(error, "Refused"))
    data = [
        {
            "oai_identifier": row.oai_identifier,
            "datestamp": row.datestamp,
            "deleted": row.deleted,
            "local_pid": row.local_pid,
            "errors": row.errors or [],
            "warnings": row.warnings or [],
            "files": row.files or [],
            "conflicts": row.conflicts or [],
            "harvested_at": row.harvested_at.isoformat() if row.harvested_at else None,
        }
        for row in rows
    ]
    if as_json:
        echo_json(data)
        return
    for item in data:
        state = "deleted" if item["deleted"] else (item["local_pid"] or "-")
        errors = f"\terrors: {'; '.join(item['errors'])}" if item["errors"] else ""
        # A row of a record never fetched has no datestamp.
        click.echo(
            f"{item['oai_identifier']}\t{item['datestamp'] or '-'}\t{state}{errors}"
            f"{_files_in_brief(item['files'])}{_conflicts_in_brief(item['conflicts'])}"
            f"{_warnings_in_brief(item['warnings'])}"
        )


def _conflicts_in_brief(conflicts: list[dict]) -> str:
    """A row's conflicts in a listing: each field with the value its policy kept."""
    if not conflicts:
        return ""
    return "\tconflicts: " + ", ".join(
        f"{c.get('field')} ({c.get('kept')} kept)" for c in conflicts
    )


def _files_in_brief(files: list[dict]) -> str:
    """A row's files in a listing: each name with its status (``--json``: sizes, checksums,
    errors)."""
    if not files:
        return ""
    return "\tfiles: " + ", ".join(f"{f.get('key')} {f.get('status')}" for f in files)


def _warnings_in_brief(warnings: list[str]) -> str:
    """A row's warnings in a listing: how many, and the first (``--json`` has them all)."""
    if not warnings:
        return ""
    more = f" (+{len(warnings) - 1} more)" if len(warnings) > 1 else ""
    return f"\twarnings: {len(warnings)}: {warnings[0]}{more}"
