"""Hostile fixture files and echoed values (issue 11, item 2).

A 600-byte YAML file whose `id` nests aliases stands for 3.2 GB once anything walks the value;
the loader built its repr for an error message and died of MemoryError. Fixture files now
refuse anchors and aliases before any value is built, and every value a service or the loader
repeats in an error message is cut short.
"""

from __future__ import annotations

import resource
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from oarepo_oaipmh_harvester.cli import oai
from oarepo_oaipmh_harvester.fixtures import FixtureFileError, load_harvesters
from oarepo_oaipmh_harvester.models import OAIHarvester

BOMB = Path(__file__).parent / "data" / "alias-bomb.yaml"
API = "/api/oai-harvest"


@contextmanager
def address_space_headroom(megabytes: int) -> Iterator[None]:
    """Let this process grow by `megabytes` at most, so that a regression fails with MemoryError
    instead of taking gigabytes of a machine shared with others."""
    with open("/proc/self/status") as status:
        current_kb = next(int(line.split()[1]) for line in status if line.startswith("VmSize:"))
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = (current_kb + megabytes * 1024) * 1024
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@contextmanager
def peak_python_memory() -> Iterator[list[int]]:
    """The peak of Python allocations in the block, in bytes (the list's only item)."""
    peak: list[int] = []
    tracemalloc.start()
    try:
        yield peak
    finally:
        peak.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()


def test_the_alias_bomb_is_refused_by_the_command_before_it_expands(app, db):
    assert BOMB.stat().st_size < 700
    runner = app.test_cli_runner()
    with address_space_headroom(1024), peak_python_memory() as peak:
        result = runner.invoke(oai, ["harvester", "load", str(BOMB)])
    assert result.exit_code != 0
    assert "YAML anchors and aliases (&name, *name) are not allowed in fixture files" in (
        result.output
    )
    assert "line 6, column 6" in result.output  # the first anchor, `&a`
    assert isinstance(result.exception, SystemExit)  # a clean exit, no traceback
    assert peak[0] < 50 * 1024 * 1024, f"the load used {peak[0] / 1e6:.0f} MB"
    assert db.session.query(OAIHarvester).count() == 0


@pytest.mark.parametrize(
    "text",
    [
        "- &entry {id: a, name: A}\n",  # an anchor alone
        "- id: a\n  name: &n A\n- id: b\n  name: *n\n",  # an alias of a plain value
        "base: &base {target: oai-sample-records}\nharvesters:\n  - {<<: *base, id: a}\n",
    ],
    ids=["anchor", "alias", "merge-key"],
)
def test_anchors_aliases_and_merge_keys_are_refused(app, db, tmp_path, text):
    path = tmp_path / "harvesters.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FixtureFileError, match="anchors and aliases .* are not allowed"):
        load_harvesters(path)
    assert db.session.query(OAIHarvester).count() == 0


def test_a_long_value_is_echoed_short_in_the_loaders_report(app, db, users, provider, tmp_path):
    path = tmp_path / "harvesters.yaml"
    long_id = "x" * 100_000
    long_email = "y" * 100_000 + "@example.org"
    path.write_text(
        f"- id: {long_id}\n  name: Long\n"
        f"- id: managed\n  name: M\n  base_url: {provider.base_url}\n  metadata_prefix: oai_dc\n"
        f"  target: oai-sample-records\n  harvest_managers: [{long_email}]\n"
        f"- id: fine\n  name: Fine\n  base_url: {provider.base_url}\n  metadata_prefix: oai_dc\n"
        f"  target: oai-sample-records\n",
        encoding="utf-8",
    )
    result = load_harvesters(path)
    assert result.created == ["fine"]
    long_id_error, email_error = result.errors
    assert long_id_error.startswith("entry 1 (id 'xxxx") and "(100000 characters)" in long_id_error
    assert "id: Use 1-64 lowercase letters" in long_id_error and len(long_id_error) < 2000
    assert email_error.startswith("entry 2 (id 'managed'): harvest_managers: no user with e-mail")
    assert len(email_error) < 1000


@pytest.fixture()
def as_admin(login, users):
    return login(users.admin)


def test_rest_errors_echo_long_values_short(as_admin, harvesters, provider):
    res = as_admin.post(
        f"{API}/harvesters",
        json={
            "id": "long",
            "name": "Long",
            "base_url": provider.base_url,
            "metadata_prefix": "oai_dc",
            "target": "t" * 100_000,
            "transformer": "u" * 100_000,
            "harvest_managers": list(range(10**6, 10**6 + 5000)),
            "k" * 10_000: 1,
        },
    )
    assert res.status_code == 400
    errors = {error["field"]: " ".join(error["messages"]) for error in res.json["errors"]}
    assert errors["target"].startswith("No record service with id 'tttt")
    assert errors["transformer"].startswith("Unknown transformer 'uuuu")
    assert errors["harvest_managers"].startswith("No user with id 1000000, 1000001")
    unknown = next(name for name in errors if name.startswith("kkk"))
    assert "(10000 characters)" in unknown and errors[unknown] == "Unknown field."
    assert len(res.get_data()) < 3000

    for path, query in [
        (f"/harvesters/{'h' * 50_000}", {}),
        (f"/records/a/oai:{'r' * 50_000}", {}),
        (f"/harvesters/a/runs/{'r' * 50_000}", {}),
        ("/harvesters", {"sort": "s" * 50_000}),
        ("/records", {"deleted": "d" * 50_000}),
    ]:
        res = as_admin.get(API + path, query_string=query)
        assert res.status_code in (400, 404), (path, res.status_code)
        assert len(res.get_data()) < 1500, path


def test_a_file_nested_too_deeply_is_refused_with_a_message(app, db, tmp_path):
    path = tmp_path / "harvesters.yaml"
    path.write_text("[" * 5000 + "]" * 5000, encoding="utf-8")
    result = app.test_cli_runner().invoke(oai, ["harvester", "load", str(path)])
    assert result.exit_code != 0 and isinstance(result.exception, SystemExit)
    assert "nests lists or mappings too deeply" in result.output
