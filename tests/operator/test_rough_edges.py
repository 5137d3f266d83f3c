"""Smaller rough edges a new operator met (issue 39, 6), each through the surface they met it on:
the command line through click's runner, REST through the test client."""

from __future__ import annotations

import pytest
from invenio_db import db

from oarepo_oaipmh_harvester.cli import oai
from oarepo_oaipmh_harvester.models import OAIHarvester

API = "/api/oai-harvest"


@pytest.fixture()
def cli(app):
    runner = app.test_cli_runner()

    def invoke(*args: str, input: str | None = None):
        return runner.invoke(oai, list(args), input=input)

    return invoke


@pytest.fixture()
def as_admin(login, users):
    return login(users.admin)


def refused(result) -> list[str]:
    """The lines of a clean command-line refusal (Click's own exit, no traceback)."""
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    return result.output.strip().splitlines()


# -- several bad fields: one per line --------------------------------------------------------
def test_several_bad_fields_are_reported_one_per_line_each_naming_its_option(cli, harvesters):
    lines = refused(
        cli(
            "harvester",
            "create",
            "--id",
            "Bad Id",
            "--name",
            "Z",
            "--metadata-prefix",
            "oai_dc",
            "--base-url",
            "ftp://example.org",
            "--target",
            "nowhere",
            "--batch-size",
            "0",
        )  # fmt: skip
    )
    assert lines[0] == "Error: Invalid harvester:"
    problems = lines[1:]
    assert sorted(line.split(":")[0].strip() for line in problems) == [
        "--base-url", "--batch-size", "--id", "--target",
    ]  # fmt: skip
    assert all(line.startswith("  --") for line in problems), lines
    assert not any(".;" in line for line in lines)
    assert db.session.get(OAIHarvester, "Bad Id") is None


def test_one_bad_field_stays_on_one_line(cli, harvesters):
    lines = refused(cli("harvester", "update", "a", "--batch-size", "0"))
    assert lines == [
        "Error: Invalid harvester: --batch-size: Must be greater than or equal to 1 and less "
        "than or equal to 10000."
    ]
