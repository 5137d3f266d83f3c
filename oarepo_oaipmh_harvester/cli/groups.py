"""The command groups and what every command shares: errors and JSON output."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any, NoReturn

import click

from ..services.errors import HarvesterValidationError
from .terminal import log_off_the_terminal, report_failure


def fail(message: str) -> NoReturn:
    raise click.ClickException(message)


OPTION_OF_FIELD = {
    "setspecs": "--set",
    "identifiers": "--identifier",
    "harvest_managers": "--manager",
    "set_communities": "--set-community",
    "active": "--active/--paused",
    "auth": "--auth-user/--auth-password-file",
    "headers": "--header",
    "files_hosts": "--files-host",
    "match_on": "--match-on",
    "field_policy": "--field-policy",
    "files_restricted": "--files-restricted/--no-files-restricted",
}
"""Fields whose option is not simply ``--<field-name>``."""


def option_of(field: str) -> str:
    """The command-line option of a service field (``set_communities.phys``: its option)."""
    name, _, rest = field.partition(".")
    option = OPTION_OF_FIELD.get(name, f"--{name.replace('_', '-')}")
    return f"{option} ({rest})" if rest else option


def refusal(error: Exception, what: str) -> str:
    """A service's error as an operator reads it here: refused fields named as the command's
    options (``errors_only`` is ``--errors-only`` on the command line)."""
    if isinstance(error, HarvesterValidationError):
        return error.describe(what, option_of)
    return str(error)


def echo_json(data: object) -> None:
    """One JSON document on stdout (``--json``); progress goes to stderr."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


def switch(*names: str, help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """An option that is off unless given (``--full``)."""
    return click.option(*names, is_flag=True, help=help)


json_output = switch("--json", "as_json", help="One JSON document on stdout.")
"""``--json``: the command's result as one document (:func:`echo_json`), nothing else."""


class OAICommands(click.Group):
    """`invenio oai`: the one place where every command's failures meet the terminal.

    A failure that no command turned into a message of its own is logged with its trace and
    shown as one sentence (exit code 1); while a command runs, the log stays off the terminal
    (``-v``: on it too).
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["oai_command"] = " ".join(args)  # what the operator typed, for the log
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        command = ctx.meta.get("oai_command", "")
        quiet = contextlib.nullcontext() if ctx.params.get("verbose") else log_off_the_terminal()
        with quiet:
            try:
                return super().invoke(ctx)
            except (click.ClickException, click.exceptions.Exit, click.Abort):
                raise
            except Exception as error:  # noqa: BLE001 - every command's, once, here
                raise click.ClickException(report_failure(error, command)) from None


@click.group(cls=OAICommands)
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="Print the application's log here too (a run's log lines, the trace of a failure).",
)
def oai(verbose: bool) -> None:
    """OAI-PMH harvesting: harvesters, harvests, repairs and what they tracked.

    \b
    Example:
      invenio oai harvest zenodo
    """


@oai.group()
def harvester() -> None:
    """Register, change and remove harvesters.

    \b
    Example:
      invenio oai harvester list
    """
