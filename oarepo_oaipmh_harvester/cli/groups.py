"""The command groups and what every command shares: errors and JSON output."""

from __future__ import annotations

import json
from typing import NoReturn

import click


def fail(message: str) -> NoReturn:
    raise click.ClickException(message)


def refusal(error: Exception, what: str) -> str:
    """A service's error as an operator reads it here: the refused fields named as the
    command's options (``errors_only`` is ``--errors-only`` on the command line)."""
    errors = getattr(error, "errors", None)
    if not isinstance(errors, dict):
        return str(error)
    details = "; ".join(
        f"--{str(field).replace('_', '-')}: {' '.join(map(str, messages))}"
        for field, messages in errors.items()
    )
    return f"{what}: {details}"


def echo_json(data: object) -> None:
    """One JSON document on stdout (``--json``); progress goes to stderr."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


@click.group()
def oai() -> None:
    """OAI-PMH harvesting."""


@oai.group()
def harvester() -> None:
    """Register, change and remove harvesters."""
