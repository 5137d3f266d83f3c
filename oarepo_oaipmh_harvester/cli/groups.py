"""The command groups and what every command shares: errors and JSON output."""

from __future__ import annotations

import json
from typing import NoReturn

import click


def fail(message: str) -> NoReturn:
    raise click.ClickException(message)


def echo_json(data: object) -> None:
    """One JSON document on stdout (``--json``); progress goes to stderr."""
    click.echo(json.dumps(data, ensure_ascii=False, indent=2, default=str))


@click.group()
def oai() -> None:
    """OAI-PMH harvesting."""


@oai.group()
def harvester() -> None:
    """Register, change and remove harvesters."""
