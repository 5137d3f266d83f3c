"""`invenio oai runs`: the last runs of a harvester in numbers, as its page's chart shows them."""

from __future__ import annotations

from typing import Any

import click
from flask.cli import with_appcontext
from invenio_access.permissions import system_identity

from ..proxies import current_harvest_runs_service
from ..services.errors import HarvesterServiceError
from ..services.run_history import HISTORY_SIZE, MAX_HISTORY_SIZE
from .groups import echo_json, fail, json_output, oai, refusal

COLUMNS = ("created", "updated", "deleted", "failed", "held")


@oai.command("runs")
@click.argument("harvester_id")
@click.option(
    "--size",
    type=click.IntRange(1, MAX_HISTORY_SIZE),
    default=HISTORY_SIZE,
    show_default=True,
    help="How many of the last runs.",
)
@json_output
@with_appcontext
def runs(harvester_id: str, size: int, as_json: bool) -> None:
    """The harvester's last runs, the oldest first: when each started, its status, how long
    it took and what it created, updated, deleted, failed and held back (deletions a guard
    kept from happening); the same numbers as its page's chart and the REST API's
    ``.../runs/history``.

    \b
    Example:
      invenio oai runs zenodo --size 5
    """
    try:
        history = current_harvest_runs_service.run_history(system_identity, harvester_id, size)
    except HarvesterServiceError as error:
        fail(refusal(error, "Refused"))
    if as_json:
        echo_json(history)
        return
    if not history["runs"]:
        click.echo(f"No runs yet of {harvester_id}.")
        return
    click.echo(
        f"{'Started (UTC)':<19}  {'Status':<15}  {'Duration':>9}  "
        + "  ".join(f"{name.capitalize():>7}" for name in COLUMNS)
        + "  Run"
    )
    for run in history["runs"]:
        click.echo(
            f"{_started(run):<19}  {run['status'] or '-':<15}  {_duration(run):>9}  "
            + "  ".join(f"{run[name]:>7}" for name in COLUMNS)
            + f"  {run['id']}"
            + ("" if run["counts_known"] else "  (deletions among updates)")
        )


def _started(run: dict[str, Any]) -> str:
    started = run.get("started")
    return started[:19].replace("T", " ") if started else "not started"


def _duration(run: dict[str, Any]) -> str:
    return "-" if run.get("duration") is None else f"{run['duration']:.1f} s"
