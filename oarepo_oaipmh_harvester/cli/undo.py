"""`invenio oai undo RUN_ID`: take back what one run wrote (or, with --dry-run, say what)."""

from __future__ import annotations

import uuid

import click
from flask.cli import with_appcontext
from invenio_access.permissions import system_identity

from ..harvest.journal import journal_of
from ..proxies import current_harvester_service
from ..services.errors import HarvesterServiceError
from ..services.undo import undo_plan
from .groups import echo_json, fail, json_output, oai, refusal, switch
from .runs import _harvest_here


@oai.command("undo")
@click.argument("run_id")
@switch("--dry-run", help="Print what the undo would do to each record; change nothing.")
@json_output
@with_appcontext
def undo(run_id: str, dry_run: bool, as_json: bool) -> None:
    """Undo one run of a harvester: records it created are deleted, records it updated or
    deleted return to before it, and so do its tracking rows and the harvester's watermark.
    Records changed again after the run (by a later run or locally) are left alone, and
    listed. The undo is a run of the harvester's job itself, and can be undone.

    \b
    Examples:
      invenio oai undo 5f0c...e1 --dry-run
      invenio oai undo 5f0c...e1
    """
    try:
        journal = journal_of(uuid.UUID(run_id))
    except ValueError:
        fail(f"{run_id!r} is not a run id (a UUID, as `invenio oai runs HARVESTER` lists).")
    if journal is None:
        fail(
            f"Run {run_id} has no journal to undo it from: only the newest runs that wrote "
            f"something can be undone (OAI_HARVESTER_UNDO_RUNS)."
        )
    harvester_id = journal["harvester_id"]
    if not dry_run:
        if as_json:
            fail("--json works only with --dry-run.")
        _harvest_here(harvester_id, {"undo": run_id}, title=f"Undo of run {run_id}")
        return
    try:
        plan = undo_plan(current_harvester_service, system_identity, harvester_id, run_id)
    except HarvesterServiceError as error:
        fail(refusal(error, "Refused"))
    if as_json:
        echo_json(plan)
        return
    counts = plan["counts"]
    click.echo(
        f"Undo of run {run_id} of {harvester_id} (dry run, nothing was changed): would delete "
        f"{counts['delete']} records the run created, write back {counts['revert']} it "
        f"updated, restore {counts['restore']} it deleted, put back {counts['tracking']} "
        f"tracking rows only; {counts['left']} left alone."
    )
    for step in plan["steps"]:
        pid = f" ({step['pid']})" if step.get("pid") else ""
        reason = f": {step['reason']}" if step.get("reason") else ""
        click.echo(f"  {step['action']} {step['identifier']}{pid}{reason}")
