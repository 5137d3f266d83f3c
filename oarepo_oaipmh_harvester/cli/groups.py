"""The command groups and what every command shares: errors and JSON output."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NoReturn

import click

from ..services.errors import HarvesterValidationError


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


@click.group()
def oai() -> None:
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
