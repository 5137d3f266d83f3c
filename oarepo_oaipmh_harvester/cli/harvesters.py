"""`invenio oai harvester create|update|delete|load|list`."""

from __future__ import annotations

import sys
from typing import Any

import click
from flask.cli import with_appcontext
from invenio_access.permissions import system_identity

from ..harvest.targets.options import POLICY_FIELDS
from ..proxies import current_harvester_service
from ..services.errors import HarvesterServiceError
from .groups import echo_json, fail, harvester, json_output, refusal, switch

HARVESTER_FIELDS = (
    "id", "name", "comment", "base_url", "metadata_prefix", "setspecs", "target", "transformer",
    "batch_size", "request_delay", "harvest_managers", "owner", "community", "target_adapter",
    "local_drafts", "invalid_drafts", "doi_conflicts", "set_communities", "missing_creator",
    "missing_creator_text", "metadata_prefix_choice", "files", "files_failure", "files_changes",
    "files_max_size", "files_hosts", "files_restricted", "files_text", "deletion_guard", "match_on", "field_policy", "dedupe", "active", "credentials", "watermark", "created", "updated",
)  # fmt: skip


def _harvester_dict(harvester: Any) -> dict[str, Any]:
    """What `harvester list` prints of a harvester item: its stored fields, as the API dumps them."""
    data = harvester.data
    return {name: data.get(name) for name in HARVESTER_FIELDS}


def _harvester_options(required: bool):
    def decorate(command):
        options = [
            click.option("--name", required=required, help="Human-readable name."),
            click.option("--base-url", required=required, help="OAI-PMH endpoint (http/https)."),
            click.option(
                "--metadata-prefix",
                help="e.g. oai_dc. Default: the richest format the provider offers that a "
                "transformer reads into the target (OAI_HARVESTER_PREFERRED_PREFIXES).",
            ),
            click.option(
                "--set", "setspecs", multiple=True, help="Set spec; repeat for several sets."
            ),
            click.option("--target", required=required, help="Service id of the target."),
            click.option(
                "--transformer",
                help="Transformer name. Default: into InvenioRDM's records, the one for the "
                "metadata prefix (OAI_HARVESTER_RDM_TRANSFORMERS: oai_dc -> oai_dc_rdm, ...); "
                "else OAI_HARVESTER_DEFAULT_TRANSFORMER.",
            ),
            click.option(
                "--batch-size",
                type=int,
                help="Records per database commit (default: OAI_HARVESTER_DEFAULT_BATCH_SIZE).",
            ),
            click.option(
                "--request-delay",
                type=float,
                help="Seconds between two requests (politeness; default: the site's "
                "OAI_HARVESTER_REQUEST_DELAY).",
            ),
            click.option("--comment", help="Free text for operators."),
            click.option(
                "--manager",
                "harvest_managers",
                multiple=True,
                metavar="USER",
                help="Harvest manager: a user id or e-mail address; repeat.",
            ),
            click.option(
                "--owner",
                help="User (id or e-mail) who owns the harvested records; default: the system.",
            ),
            click.option(
                "--community", help="Community (slug or id) that new records join (InvenioRDM)."
            ),
            click.option(
                "--set-community",
                "set_communities",
                multiple=True,
                metavar="SET=COMMUNITY",
                help="Records in SET join COMMUNITY too (InvenioRDM); repeat.",
            ),
            click.option(
                "--missing-creator",
                metavar="fail|contributors|holder|NAME",
                help="A record that names no creator (InvenioRDM transformers): fail, "
                "contributors, holder, or a fixed creator NAME such as Unknown; default: the "
                "transformer's (OAI_HARVESTER_RDM_MISSING_CREATOR).",
            ),
            click.option(
                "--files-max-size",
                type=int,
                metavar="BYTES",
                help="Largest file fetched (files copy); default: OAI_HARVESTER_FILES_MAX_SIZE.",
            ),
            click.option(
                "--files-host",
                "files_hosts",
                multiple=True,
                metavar="HOST",
                help="A host files may come from besides the provider's own (*.example.org: "
                "its subdomains); repeat. The provider's credentials go to its own host only.",
            ),
            click.option(
                "--match-on",
                "match_on",
                multiple=True,
                metavar="SCHEME",
                help="An identifier scheme (doi, handle, arxiv, pmid, isbn, urn) a new record is "
                "matched to a local record by; repeat, in order. Default: OAI_HARVESTER_MATCH_ON.",
            ),
            click.option(
                "--field-policy",
                "field_policy",
                multiple=True,
                metavar="PATH=POLICY",
                help="What a harvest does to a field a local user changed: source (overwrite, "
                "the default), local (keep the local value) or merge (lists united); PATH such "
                "as metadata.subjects or custom_fields.*; repeat.",
            ),
            click.option(
                "--files-restricted/--no-files-restricted",
                default=None,
                help="Fetch the files the source marks restricted too (stored restricted).",
            ),
            click.option(
                "--deletion-guard",
                type=float,
                metavar="PERCENT",
                help="Hold a run's deletions when they are more than PERCENT of the live "
                "records (and at least OAI_HARVESTER_DELETION_GUARD_MINIMUM); 0 turns the guard "
                "off; default: OAI_HARVESTER_DELETION_GUARD.",
            ),
            click.option(
                "--active/--paused",
                default=None,
                help="A paused harvester is left out of the run-all job (default: active).",
            ),
            click.option("--auth-user", help="User name for the provider (HTTP Basic)."),
            click.option(
                "--auth-password-file",
                type=click.File("r"),
                help="File whose first line is the provider's password ('-': standard input).",
            ),
            click.option(
                "--header",
                "headers",
                multiple=True,
                metavar='"NAME: VALUE"',
                help="Request header sent to the provider (e.g. an API token); repeat.",
            ),
            *(
                click.option(
                    f"--{name.replace('_', '-')}",
                    name,
                    type=click.Choice([member.value for member in choices]),
                    help=POLICY_HELP[name],
                )
                for name, choices in POLICY_FIELDS.items()
            ),
        ]
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


POLICY_HELP = {
    "target_adapter": "How records are written: auto (from the service; the default), records, "
    "drafts.",
    "local_drafts": "A local user's open draft of a harvested record: harvest-wins (the "
    "default) or local-wins.",
    "invalid_drafts": "The draft of a new record the target refuses: discard (the default) or "
    "keep (for a curator).",
    "doi_conflicts": "A harvested DOI held by another local record: fail (the default) or "
    "take-over.",
    "dedupe": "A new record that is a work another harvester brought (its DOI or a match_on "
    "identifier): off (two records; the default), link (one record, this source linked to it) "
    "or merge (also its merge-policy fields united).",
    "files": "A record's files (InvenioRDM): none (metadata only; the default), link (their "
    "URLs on the record) or copy (fetched into this site's storage).",
    "files_failure": "A file that cannot be fetched: metadata-only (published without it, with "
    "a warning; the default) or fail (the record fails and is retried).",
    "files_changes": "Files changed at the source: new-version (the default; unchanged files "
    "carried over) or replace (in place).",
}


def _collect(values: dict[str, Any]) -> dict[str, Any]:
    """The service's fields from the options given (a password is read from its file, never
    from the command line)."""
    user = values.pop("auth_user", None)
    password_file = values.pop("auth_password_file", None)
    data = {k: v for k, v in values.items() if v is not None and v != ()}
    for key in ("setspecs", "harvest_managers", "files_hosts", "match_on"):
        if key in data:
            data[key] = list(data[key])
    for key in ("set_communities", "field_policy"):
        if key in data:
            data[key] = "\n".join(data[key])
    if "headers" in data:
        data["headers"] = "\n".join(data["headers"])
    if password_file is not None and user is None:
        fail("--auth-password-file needs --auth-user (the provider's user name).")
    if user is not None and password_file is None:
        fail(
            "--auth-user needs --auth-password-file FILE, whose first line is the provider's "
            "password ('-' reads standard input); for a provider that wants no password, give "
            "an empty file (--auth-password-file /dev/null)."
        )
    if user is not None:
        data["auth"] = {"username": user, "password": password_file.readline().rstrip("\r\n")}
    return data


_no_check_option = switch(
    "--no-check",
    "no_check",
    help="Do not ask the provider first (Identify, metadata formats, sets; the check is on "
    "unless OAI_HARVESTER_PREFLIGHT_CHECK is False, and takes at most "
    "OAI_HARVESTER_PREFLIGHT_TIMEOUT seconds).",
)


@harvester.command("create")
@click.option("--id", "harvester_id", required=True, help="Short slug, e.g. 'zenodo'.")
@_harvester_options(required=True)
@switch(
    "--take-over-records",
    help="Take over the local records that a deleted harvester of the same provider, prefix "
    "and target left, though it harvested other sets (with the same sets that happens "
    "anyway).",
)
@_no_check_option
@with_appcontext
def create_harvester(
    harvester_id: str, take_over_records: bool, no_check: bool, **values: Any
) -> None:
    """Register a new harvester (the provider is asked first).

    \b
    Example:
      invenio oai harvester create --id zenodo --name Zenodo \\
          --base-url https://zenodo.org/oai2d --metadata-prefix oai_datacite \\
          --set user-cern --target records --manager librarian@example.org

    Without --metadata-prefix the check picks the richest format the provider offers (and
    its transformer) and says why.
    """
    data = {"id": harvester_id, **_collect(values)}
    if take_over_records:
        data["take_over_records"] = True
    try:
        created = current_harvester_service.create(
            system_identity, data, check=False if no_check else None
        )
    except HarvesterServiceError as error:
        fail(refusal(error, "Invalid harvester"))
    click.echo(f"Created harvester {created.id}.")
    if created.data.get("metadata_prefix_choice"):
        click.echo(created.data["metadata_prefix_choice"])
    taken_over = created.data.get("taken_over")
    if taken_over:
        click.echo(
            f"It took over {taken_over['records']} local records that deleted harvester "
            f"{', '.join(taken_over['from'])} left: a harvest updates them, it does not write "
            f"them again."
        )


@harvester.command("update")
@click.argument("harvester_id")
@_harvester_options(required=False)
@switch("--clear-sets", help="Harvest the whole repository (no set).")
@switch("--clear-credentials", help="Forget the provider's user, password and headers.")
@_no_check_option
@with_appcontext
def update_harvester(
    harvester_id: str, clear_sets: bool, clear_credentials: bool, no_check: bool, **values: Any
) -> None:
    """Change a harvester; options left out keep their value.

    \b
    Example:
      invenio oai harvester update zenodo --batch-size 50 --paused
    """
    data = _collect(values)
    if clear_sets:
        data["setspecs"] = []
    if clear_credentials:
        data["clear_credentials"] = True
    try:
        current_harvester_service.update(
            system_identity, harvester_id, data, check=False if no_check else None
        )
    except HarvesterServiceError as error:
        fail(refusal(error, "Invalid harvester"))
    click.echo(f"Updated harvester {harvester_id}.")


@harvester.command("delete")
@click.argument("harvester_id")
@switch("--yes", help="Do not ask for confirmation (scripts).")
@with_appcontext
def delete_harvester(harvester_id: str, yes: bool) -> None:
    """Remove a harvester, its tracking rows and its jobs.

    Its local records stay in the target; a new harvester of the same provider, metadata
    prefix and target takes them over. To remove them too, run `invenio oai harvester purge
    ID` first.

    \b
    Example:
      invenio oai harvester delete zenodo --yes
    """
    try:
        held = current_harvester_service.records_held(system_identity, harvester_id)
    except HarvesterServiceError as error:
        fail(str(error))
    if held and not yes:
        question = (
            f"Harvester {harvester_id} holds {held} local records. They stay in its target "
            f"(`invenio oai harvester purge {harvester_id}` first removes them), and a new "
            f"harvester of the same provider, prefix and target takes them over. Delete it?"
        )
        if not sys.stdin.isatty():
            fail(f"{question} Not deleted: give --yes to delete without this question.")
        click.confirm(question, abort=True)
    try:
        current_harvester_service.delete(system_identity, harvester_id)
    except HarvesterServiceError as error:
        fail(str(error))
    kept = f"; its {held} local records stay" if held else ""
    click.echo(f"Deleted harvester {harvester_id}{kept}.")


@harvester.command("load")
@click.argument("path", required=False, type=click.Path(dir_okay=False))
@_no_check_option
@json_output
@with_appcontext
def load_harvesters(path: str | None, no_check: bool, as_json: bool) -> None:
    """Create and update harvesters from a YAML file.

    PATH defaults to OAI_HARVESTER_FIXTURES_FILE, else <instance>/app_data/oai_harvesters.yaml.
    Missing harvesters are created, existing ones updated; an entry that fails is reported and
    the others are still loaded.

    \b
    Example:
      invenio oai harvester load app_data/oai_harvesters.yaml --json
    """
    from ..fixtures import FixtureFileError, default_fixtures_path
    from ..fixtures import load_harvesters as load

    source = path or str(default_fixtures_path())
    try:
        result = load(source, check=False if no_check else None)
    except FixtureFileError as error:
        fail(str(error))
    if as_json:
        echo_json(
            {
                "created": result.created,
                "updated": result.updated,
                "unchanged": result.unchanged,
                "errors": result.errors,
            }
        )
    else:
        click.echo(
            f"{source}: created {len(result.created)}, updated {len(result.updated)}, "
            f"unchanged {len(result.unchanged)}, failed {len(result.errors)}"
        )
        for harvester_id in result.created:
            click.echo(f"  created {harvester_id}")
        for harvester_id in result.updated:
            click.echo(f"  updated {harvester_id}")
    for error in result.errors:
        click.echo(f"Error: {error}", err=True)
    if not result.ok:
        sys.exit(1)


@harvester.command("list")
@json_output
@with_appcontext
def list_harvesters(as_json: bool) -> None:
    """List the registered harvesters: id, endpoint, prefix, sets, target, which credentials
    are set, paused ones marked (--json: every field).

    \b
    Example:
      invenio oai harvester list --json
    """
    harvesters = current_harvester_service.list(system_identity)
    if as_json:
        echo_json([_harvester_dict(h) for h in harvesters])
        return
    for item in harvesters:
        h = item.data
        sets = ",".join(h.get("setspecs") or []) or "-"
        state = "" if h.get("active", True) else "\tpaused"
        click.echo(
            f"{h['id']}\t{h['base_url']}\t{h['metadata_prefix']}\tsets={sets}\t-> {h['target']}"
            f"\tcredentials={_credentials_in_brief(h['credentials'])}{state}"
        )


def _credentials_in_brief(summary: dict[str, Any]) -> str:
    """Which credentials a harvester sends, never their values: ``login,header:X-Api-Key``."""
    auth = summary.get("auth")
    parts = {"set": ["login"], "unreadable": ["unreadable"]}.get(auth, [])
    parts += [f"header:{name}" for name in summary.get("headers") or {}]
    return ",".join(parts) or "none"
