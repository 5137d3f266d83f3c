"""Operator mistakes that were 500s or tracebacks (issue 11, item 12), through the real surfaces.

Each one must be a 400 (or 404) naming the field, or a clean command-line error, and must leave
nothing behind.
"""

from __future__ import annotations

import json

import pytest
from factories import harvester_data
from invenio_db import db
from invenio_jobs.models import Run

from oarepo_oaipmh_harvester.cli import oai
from oarepo_oaipmh_harvester.models import OAIHarvester

API = "/api/oai-harvest"
SEARCHES = ["/harvesters", "/records", "/harvesters/a/runs"]


def field_errors(response) -> dict[str, str]:
    assert response.status_code == 400, response.get_data(as_text=True)[:500]
    return {error["field"]: " ".join(error["messages"]) for error in response.json["errors"]}


def post_json(client, path: str, body: object):
    # json.dumps keeps lone surrogates as \ud800 escapes, as a hostile client would send them.
    return client.post(path, data=json.dumps(body), content_type="application/json")


@pytest.fixture()
def as_admin(login, users):
    return login(users.admin)


@pytest.fixture()
def cli(app):
    runner = app.test_cli_runner()

    def invoke(*args: str):
        return runner.invoke(oai, list(args))

    return invoke


def assert_clean_failure(result, *fragments: str) -> None:
    """Exit status non-zero, the message on the output, no traceback (Click's own exit)."""
    assert result.exit_code != 0
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    for fragment in fragments:
        assert fragment in result.output, result.output


# -- base_url longer than its column ---------------------------------------------------------
def test_a_base_url_longer_than_2048_characters_is_400_on_create_and_update(
    as_admin, harvesters, provider
):
    long_url = provider.base_url + "?" + "x" * 3000
    errors = field_errors(as_admin.post(f"{API}/harvesters", json=harvester_data("z", long_url)))
    assert errors == {"base_url": "Give a URL of at most 2048 characters (this one has 3027)."}
    assert db.session.get(OAIHarvester, "z") is None

    errors = field_errors(as_admin.put(f"{API}/harvesters/a", json={"base_url": long_url}))
    assert "at most 2048 characters" in errors["base_url"]
    assert as_admin.get(f"{API}/harvesters/a").json["base_url"] == provider.base_url

    fits = provider.base_url + "?" + "x" * (2048 - len(provider.base_url) - 1)
    assert as_admin.post(f"{API}/harvesters", json=harvester_data("z", fits)).status_code == 201


def test_a_base_url_longer_than_2048_characters_is_a_clean_cli_error(cli, harvesters, provider):
    result = cli(
        "harvester", "create", "--id", "z", "--name", "Z", "--metadata-prefix", "oai_dc",
        "--base-url", provider.base_url + "?" + "x" * 3000, "--target", "oai-sample-records",
    )  # fmt: skip
    assert_clean_failure(result, "--base-url: Give a URL of at most 2048 characters")
    assert db.session.get(OAIHarvester, "z") is None

    result = cli("harvester", "update", "a", "--base-url", provider.base_url + "/" + "y" * 3000)
    assert_clean_failure(result, "--base-url: Give a URL of at most 2048 characters")


# -- paging ----------------------------------------------------------------------------------
@pytest.mark.parametrize("path", SEARCHES)
def test_a_page_past_what_the_database_can_address_is_400(as_admin, harvesters, path):
    errors = field_errors(as_admin.get(API + path, query_string={"page": 9223372036854775807}))
    assert errors["page"].startswith("Page 9223372036854775807 is out of range:")
    assert "hits per page, pages go up to" in errors["page"]
    # Any page the database can address is answered, past the results with an empty page.
    res = as_admin.get(API + path, query_string={"page": 9223372036854775807 // 20, "size": 20})
    assert res.status_code == 200 and res.json["hits"]["hits"] == []


@pytest.mark.parametrize("path", SEARCHES)
@pytest.mark.parametrize(
    "args, field",
    [
        ({"size": 10**30}, "size"),
        ({"page": "1.5"}, "page"),
        ({"page": "x"}, "page"),
        ({"size": "-1"}, "size"),
        ({"q": "a\x00b"}, "q"),
    ],
)
def test_bad_paging_and_query_arguments_are_400(as_admin, harvesters, path, args, field):
    assert field in field_errors(as_admin.get(API + path, query_string=args))


@pytest.mark.parametrize("args", [{"harvester": "a\x00"}, {"error": "\x00"}])
def test_record_filters_the_database_cannot_compare_are_400(as_admin, tracked, args):
    (field,) = args
    assert (
        "NUL characters" in field_errors(as_admin.get(f"{API}/records", query_string=args))[field]
    )


@pytest.mark.parametrize(
    "method, path",
    [
        ("get", "/harvesters/a%00"),
        ("put", "/harvesters/a%00"),
        ("delete", "/harvesters/a%00"),
        ("post", "/harvesters/a%00/run"),
        ("get", "/records/a/oai:a:1%00"),
        ("get", "/records/a%00/oai:a:1"),
        ("post", "/records/a/oai:a:1%00/reharvest"),
    ],
)
def test_ids_the_database_cannot_compare_are_404(as_admin, tracked, method, path):
    res = getattr(as_admin, method)(API + path, json={})
    assert res.status_code == 404 and "\\x00" in res.json["message"]


# -- text PostgreSQL cannot store ------------------------------------------------------------
@pytest.mark.parametrize(
    "field, value, reported_as",
    [
        ("name", "Bad\x00name", "name"),
        ("name", "Bad\ud800name", "name"),
        ("comment", "\x00", "comment"),
        ("metadata_prefix", "oai\x00dc", "metadata_prefix"),
        ("setspecs", ["ok", "bad\x00"], "setspecs.1"),
        ("base_url", "http://example.org/oai\x00", "base_url"),
    ],
)
def test_text_the_database_cannot_store_is_400_naming_the_field(
    as_admin, harvesters, provider, field, value, reported_as
):
    errors = field_errors(
        post_json(
            as_admin, f"{API}/harvesters", {**harvester_data("z", provider.base_url), field: value}
        )
    )
    assert list(errors) == [reported_as] and errors[reported_as].startswith("Text cannot contain")
    assert db.session.get(OAIHarvester, "z") is None
    errors = field_errors(
        as_admin.put(
            f"{API}/harvesters/a", data=json.dumps({field: value}), content_type="application/json"
        )
    )
    assert reported_as in errors


def test_run_identifiers_the_database_cannot_store_are_refused_everywhere(
    as_admin, cli, harvesters
):
    runs_before = db.session.query(Run).count()
    errors = field_errors(
        post_json(as_admin, f"{API}/harvesters/a/run", {"identifiers": ["x\x00"]})
    )
    assert errors == {"identifiers.0": "Text cannot contain NUL characters (\\0)."}
    errors = field_errors(
        post_json(as_admin, f"{API}/harvesters/a/run", {"identifiers": "x\ud800"})
    )
    assert "unpaired surrogates" in errors["identifiers.0"]

    assert_clean_failure(
        cli("harvest", "a", "--identifier", "x\x00"), "--identifier (0): Text cannot"
    )
    # An empty identifier used to reach the provider as GetRecord&identifier=.
    assert_clean_failure(
        cli("harvest", "a", "--identifier", ""), "--identifier (0): Length must be"
    )
    assert db.session.query(Run).count() == runs_before


# -- command line ----------------------------------------------------------------------------
def test_records_of_an_unknown_harvester_is_a_clean_error(cli, harvesters):
    assert_clean_failure(cli("records", "nope"), "No harvester with id 'nope'.")
    assert_clean_failure(cli("records", "nope", "--json"), "No harvester with id 'nope'.")
    assert cli("records", "a").exit_code == 0


# -- fixture files ---------------------------------------------------------------------------
def test_each_bad_fixture_entry_is_reported_alone_and_the_others_are_loaded(
    cli, harvesters, provider, tmp_path
):
    valid = (
        f"  base_url: {provider.base_url}\n  metadata_prefix: oai_dc\n"
        f"  target: oai-sample-records\n"
    )
    path = tmp_path / "harvesters.yaml"
    path.write_text(
        f"- id: [1, 2]\n  name: List id\n{valid}"
        f"- id: first\n  name: First\n{valid}"
        f"- id: 123\n  name: Number id\n{valid}"
        f"- id: nested-sets\n  name: Nested sets\n  setspecs: [[phys, math]]\n{valid}"
        # "a" and "b" exist: the nested lists reach the comparison with the stored harvester.
        f"- id: a\n  name: Harvester A\n  harvest_managers: [[1]]\n{valid}"
        f"- id: b\n  name: Harvester B\n  setspecs: [phys, [math]]\n{valid}"
        f"- id: last\n  name: Last\n{valid}",
        encoding="utf-8",
    )
    result = cli("harvester", "load", str(path), "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["created"] == ["first", "last"] and report["updated"] == []
    errors = report["errors"]
    assert [error.split(":")[0] for error in errors] == [
        "entry 1 (id [1, 2])",
        "entry 3 (id 123)",
        "entry 4 (id 'nested-sets')",
        "entry 5 (id 'a')",
        "entry 6 (id 'b')",
    ]
    assert "id: Not a valid string." in errors[0] and "id: Not a valid string." in errors[1]
    assert "setspecs.0: Give plain values, not nested lists or objects." in errors[2]
    assert "harvest_managers.0: Give plain values" in errors[3]
    assert "setspecs.1: Give plain values" in errors[4]
    assert db.session.get(OAIHarvester, "a").harvest_managers != [[1]]
    assert db.session.get(OAIHarvester, "b").setspecs == []
    assert db.session.get(OAIHarvester, "nested-sets") is None
