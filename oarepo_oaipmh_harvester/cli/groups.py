"""The command groups and what every command shares: errors and JSON output."""

from __future__ import annotations

import json
from typing import NoReturn

import click

from ..services.errors import HarvesterValidationError


def fail(message: str) -> NoReturn:
    raise click.ClickException(message)


def refusal(error: Exception, what: str) -> str:
    """A service's error as an operator reads it here: refused fields named as the command's
    options (``errors_only`` is ``--errors-only`` on the command line)."""
    if isinstance(error, HarvesterValidationError):
        return error.describe(what, lambda field: f"--{field.replace('_', '-')}")
    return str(error)


def echo_json(data: object) -> None:
    """One JSON document on stdout (``--json``); progress goes to stderr."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


@click.group()
def oai() -> None:
    """OAI-PMH harvesting."""


@oai.group()
def harvester() -> None:
    """Register, change and remove harvesters."""
