"""`invenio oai ...` commands."""

import json

import pytest

from oarepo_oaipmh_harvester.cli import oai

from .helpers import live_local_count


@pytest.fixture()
def run_cli(app):
    runner = (
        app.test_cli_runner(mix_stderr=False) if _supports_mix_stderr() else app.test_cli_runner()
    )

    def invoke(*args):
        return runner.invoke(oai, list(args), catch_exceptions=False)

    return invoke


def _supports_mix_stderr():
    import inspect

    from click.testing import CliRunner

    return "mix_stderr" in inspect.signature(CliRunner.__init__).parameters


def create(run_cli, base_url, *extra):
    return run_cli(
        "harvester", "create", "--id", "cli", "--name", "CLI harvester",
        "--base-url", base_url, "--metadata-prefix", "oai_dc",
        "--target", "oai-sample-records", *extra,
    )  # fmt: skip


def test_create_list_update_delete(run_cli, db, provider):
    result = create(
        run_cli, provider.base_url, "--set", "phys", "--set", "math", "--batch-size", "5"
    )
    assert result.exit_code == 0, result.output
    listed = json.loads(run_cli("harvester", "list", "--json").stdout)
    assert [(h["id"], h["setspecs"], h["batch_size"]) for h in listed] == [
        ("cli", ["phys", "math"], 5)
    ]

    result = run_cli("harvester", "update", "cli", "--name", "Renamed", "--clear-sets")
    assert result.exit_code == 0, result.output
    listed = json.loads(run_cli("harvester", "list", "--json").stdout)
    assert (listed[0]["name"], listed[0]["setspecs"], listed[0]["batch_size"]) == ("Renamed", [], 5)

    assert "cli" in run_cli("harvester", "list").stdout
    assert run_cli("harvester", "delete", "cli").exit_code == 0
    assert json.loads(run_cli("harvester", "list", "--json").stdout) == []


def test_invalid_input_exits_non_zero_with_message(run_cli, db, provider):
    result = create(run_cli, "ftp://example.org")
    assert result.exit_code != 0
    assert "Invalid harvester: --base-url: Give an http:// or https:// URL" in result.stderr
    result = run_cli("harvester", "delete", "nope")
    assert result.exit_code != 0 and "No harvester with id 'nope'" in result.stderr


def test_a_wrong_target_is_named_with_what_the_provider_said(
    app, run_cli, db, provider, monkeypatch
):
    monkeypatch.setitem(app.config, "OAI_HARVESTER_PREFLIGHT_CHECK", True)
    result = run_cli(
        "harvester", "create", "--id", "cli", "--name", "CLI harvester",
        "--base-url", provider.base_url, "--metadata-prefix", "marc21",
        "--target", "no-such-service", "--set", "chem",
    )  # fmt: skip
    assert result.exit_code != 0
    assert "--target" in result.stderr and "--metadata-prefix" in result.stderr
    assert "--set" in result.stderr and "no set 'chem'" in result.stderr


def test_harvest_prints_summary_and_is_incremental_by_default(
    run_cli, db, clean_index, provider, corpus
):
    create(run_cli, provider.base_url)
    result = run_cli("harvest", "cli")
    assert result.exit_code == 0, result.output + result.stderr
    assert "SUCCESS" in result.stdout
    assert "created 50, updated 0, deleted 0, unchanged 0, failed 0" in result.stdout
    assert live_local_count() == 50

    corpus.advance_clock(hours=1)
    corpus.delete(sorted(corpus.live_identifiers())[0])
    result = run_cli("harvest", "cli")
    assert "created 0, updated 0, deleted 1, unchanged 0, failed 0" in result.stdout
    assert provider.requests_for("ListRecords")[-1]["from"] == "2024-06-01T12:00:00Z"

    result = run_cli("harvest", "cli", "--full")
    assert "unchanged 50" in result.stdout
    assert "from" not in provider.requests_for("ListRecords")[-1]

    result = run_cli("harvest", "cli", "--since", "2024-01-01T00:45:00")
    assert provider.requests_for("ListRecords")[-1]["from"] == "2024-01-01T00:45:00Z"


def test_harvest_failures_exit_non_zero_and_records_lists_them(
    run_cli, db, clean_index, provider, corpus
):
    bad = sorted(corpus.live_identifiers())[0]
    corpus.update(bad, metadata={"subject": ["untitled"]})
    create(run_cli, provider.base_url)

    result = run_cli("harvest", "cli")
    assert result.exit_code == 1
    assert "PARTIAL_SUCCESS" in result.stdout and f"({bad})" in result.stderr

    records = json.loads(run_cli("records", "cli", "--json").stdout)
    assert len(records) == 50
    errors = json.loads(run_cli("records", "cli", "--json", "--errors-only").stdout)
    assert [r["oai_identifier"] for r in errors] == [bad]
    assert "title" in errors[0]["errors"][0] and errors[0]["local_pid"] is None

    provider.quirks.fail_requests = 100
    provider.quirks.fail_status = 404
    result = run_cli("harvest", "cli", "--identifier", bad)
    assert result.exit_code == 1 and "FAILED" in result.stdout


def test_harvest_selected_identifier(run_cli, db, clean_index, provider, corpus):
    create(run_cli, provider.base_url)
    wanted = sorted(corpus.live_identifiers())[7]
    result = run_cli("harvest", "cli", "--identifier", wanted)
    assert result.exit_code == 0 and "created 1," in result.stdout
    records = json.loads(run_cli("records", "cli", "--json").stdout)
    assert [r["oai_identifier"] for r in records] == [wanted]


def test_reconcile_only_lists_identifiers_and_removes_vanished(
    run_cli, db, clean_index, provider, corpus
):
    create(run_cli, provider.base_url)
    run_cli("harvest", "cli")
    corpus.purge(sorted(corpus.live_identifiers())[0])
    provider.requests.clear()
    result = run_cli("harvest", "cli", "--reconcile-only")
    assert result.exit_code == 0, result.output
    assert "deleted 1, unchanged 0" in result.stdout
    assert {r["verb"] for r in provider.requests} == {"Identify", "ListIdentifiers"}
    assert live_local_count() == 49


def test_a_harvester_is_paused_and_resumed_from_the_command_line(run_cli, db, provider):
    assert create(run_cli, provider.base_url, "--paused").exit_code == 0
    listed = json.loads(run_cli("harvester", "list", "--json").stdout)
    assert listed[0]["active"] is False
    assert run_cli("harvester", "list").stdout.rstrip().endswith("paused")
    assert run_cli("harvester", "update", "cli", "--active").exit_code == 0
    assert json.loads(run_cli("harvester", "list", "--json").stdout)[0]["active"] is True
