"""`invenio oai deletions HARVESTER`: the deletions the mass-deletion guard held, released."""

from __future__ import annotations

import click
from flask.cli import with_appcontext
from invenio_access.permissions import system_identity

from ..proxies import current_harvester_service
from ..services.deletions import confirm_deletions, held_deletions, reject_deletions
from ..services.errors import HarvesterServiceError
from .groups import echo_json, fail, json_output, oai, refusal, switch


@oai.command("deletions")
@click.argument("harvester_id")
@switch("--confirm", help="Apply every held deletion (the local records are deleted).")
@switch("--reject", help="Drop every held deletion (the records stay published).")
@json_output
@with_appcontext
def deletions(harvester_id: str, confirm: bool, reject: bool, as_json: bool) -> None:
    """List the deletions a run held back (more than the harvester's deletion guard allows),
    or release them.

    \b
    Examples:
      invenio oai deletions zenodo            # what is held
      invenio oai deletions zenodo --confirm  # apply them
      invenio oai deletions zenodo --reject   # drop them
    """
    if confirm and reject:
        fail("Give --confirm or --reject, not both.")
    service = current_harvester_service
    try:
        if confirm:
            result = confirm_deletions(service, system_identity, harvester_id)
            text = f"Deleted {result['deleted']} records; {result['failed']} failed."
        elif reject:
            result = reject_deletions(service, system_identity, harvester_id)
            text = f"Dropped {result['rejected']} held deletions; the records stay published."
        else:
            result = held_deletions(service, system_identity, harvester_id).as_dict()
            text = "\n".join(
                [
                    f"{result['held']} deletions held, {result['rejected']} dropped earlier.",
                    *(
                        f"{r['oai_identifier']}\t{r['local_pid'] or '-'}\t{r['datestamp'] or '-'}"
                        for r in result["records"]
                    ),
                ]
            )
    except HarvesterServiceError as error:
        fail(refusal(error, "Refused"))
    if as_json:
        echo_json(result)
    else:
        click.echo(text)
