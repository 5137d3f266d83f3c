"""The repair tools from the command line, as an operator runs them (issue 13).

`invenio oai harvest ID` with --rewrite (and --errors-only, --identifier), --dry-run (with
--json and --limit), --retry-errors and --force, and `invenio oai harvester purge ID` (a
prompt or --confirm, --forget): the real click commands against the local OAI-PMH provider
and the sample target service on PostgreSQL. Every test asserts the exit code and what an
operator reads, and checks the effect on the provider's request log, the tracking rows, the
local records and their revisions.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from click.testing import CliRunner, Result
from factories import make_harvester
from flask import Flask
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_jobs.models import Run
from invenio_search import current_search_client
from invenio_search.proxies import current_search
from invenio_search.utils import build_alias_name
from oaiharvest_test_support.sample_records.records import SampleRecord

from oarepo_oaipmh_harvester.cli import oai
from oarepo_oaipmh_harvester.models import OAIHarvestedRecord, OAIHarvester
from oarepo_oaipmh_harvester.protocol.records import OAIRecord
from oarepo_oaipmh_harvester.testing.corpus import Corpus
from oarepo_oaipmh_harvester.transformers import DublinCoreTransformer

SAMPLE_INDEX = "oaisamplerecords"

MAPPING = {"version": 1}
"""The mapping the switchable transformer applies: version 2 is a site's fixed transformer."""


class SwitchableTransformer(DublinCoreTransformer):
    """oai_dc; version 2 gives a record without a title "Untitled" and writes the titles of
    even-numbered records in capitals."""

    def transform(self, record: OAIRecord) -> dict[str, Any]:
        data = super().transform(record)
        if MAPPING["version"] == 2:
            metadata = data["metadata"]
            metadata.setdefault("title", ["Untitled"])
            if is_even(record.identifier):
                metadata["title"] = [title.upper() for title in metadata["title"]]
        return data


@pytest.fixture(scope="module")
def app_config(app_config):
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {"switchable": SwitchableTransformer}
    return app_config


@pytest.fixture(autouse=True)
def first_mapping() -> Iterator[None]:
    MAPPING["version"] = 1
    yield
    MAPPING["version"] = 1


@pytest.fixture()
def run_cli(app: Flask) -> Callable[..., Result]:
    """Invoke `invenio oai ...` in the test's application (`typed`: what the operator types
    at a prompt); stdout and stderr kept apart."""
    if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters:
        runner = app.test_cli_runner(mix_stderr=False)
    else:
        runner = app.test_cli_runner()

    def invoke(*args: str, typed: str | None = None) -> Result:
        result = runner.invoke(oai, list(args), input=typed, catch_exceptions=False)
        db.session.expire_all()  # the command committed through the same session
        return result

    return invoke


@pytest.fixture()
def harvester(app, db, clean_index, provider, sample_service) -> str:
    """Harvester "test" with the switchable transformer, nothing harvested yet."""
    make_harvester(provider.base_url, transformer="switchable")
    return "test"


@pytest.fixture()
def harvested(harvester, run_cli, corpus) -> str:
    """Harvester "test" after a first harvest from the command line (50 records)."""
    result = run_cli("harvest", "test")
    assert result.exit_code == 0, shown(result)
    assert "created 50, updated 0, deleted 0, unchanged 0, failed 0" in result.stdout
    return "test"


# -- helpers -----------------------------------------------------------------------------------
def shown(result: Result) -> str:
    """Everything the command printed, for assertion messages."""
    return f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def is_even(identifier: str) -> bool:
    return int(identifier[-1]) % 2 == 0


def tracking(harvester_id: str = "test") -> dict[str, OAIHarvestedRecord]:
    """The harvester's tracking rows by OAI identifier, as stored now."""
    db.session.expire_all()
    rows = db.session.scalars(
        sa.select(OAIHarvestedRecord).where(OAIHarvestedRecord.harvester_id == harvester_id)
    )
    return {row.oai_identifier: row for row in rows}


def versions(harvester_id: str = "test") -> dict[str, int]:
    """OAI identifier -> revision (version_id) of the local record the harvester wrote."""
    pids = {i: row.local_pid for i, row in tracking(harvester_id).items() if row.local_pid}
    model = SampleRecord.model_cls
    by_id = dict(db.session.execute(sa.select(model.id, model.version_id)).all())
    return {i: by_id[SampleRecord.pid.resolve(pid).id] for i, pid in pids.items()}


def local_titles(service: Any, harvester_id: str = "test") -> dict[str, list[str]]:
    """OAI identifier -> title of the local record, read through the target service."""
    return {
        identifier: service.read(system_identity, row.local_pid).data["metadata"]["title"]
        for identifier, row in tracking(harvester_id).items()
        if row.local_pid
    }


def live_local_count() -> int:
    """Records in the target's table that are not deleted."""
    model = SampleRecord.model_cls
    return db.session.scalar(sa.select(sa.func.count()).where(model.json.is_not(None)))


def searchable_ids(service: Any) -> set[str]:
    """Ids of every record the target service finds (the index as an operator sees it)."""
    current_search.flush_and_refresh(SAMPLE_INDEX)
    return {hit["id"] for hit in service.search(system_identity, size=500).hits}


def snapshot() -> dict[str, list[Any]]:
    """The database rows and search documents a run could touch, as they are now."""
    db.session.expire_all()
    tables: dict[str, list[Any]] = {}
    for table in ("oai_harvester", "oai_harvested_record", SampleRecord.model_cls.__tablename__,
                  "pidstore_pid", Run.__tablename__):  # fmt: skip
        rows = db.session.execute(sa.text(f"SELECT * FROM {table}")).all()
        tables[table] = sorted(repr(tuple(row)) for row in rows)
    current_search.flush_and_refresh(SAMPLE_INDEX)
    hits = current_search_client.search(
        index=build_alias_name(SAMPLE_INDEX), body={"size": 1000, "version": True}
    )["hits"]["hits"]
    tables["index"] = sorted((hit["_id"], hit["_version"]) for hit in hits)
    return tables


def change_the_source(corpus: Corpus) -> None:
    """At the provider: 3 titles changed, 1 record deleted, 1 added, 1 added without a title
    (which the sample target refuses)."""
    live = sorted(corpus.live_identifiers())
    corpus.advance_clock(minutes=5)
    for identifier in live[:3]:
        corpus.update(
            identifier, metadata={**corpus.get(identifier).metadata, "title": ["Changed"]}
        )
    corpus.delete(live[3])
    corpus.add("oai:example.org:new", {"title": ["New"], "creator": ["Nový, Jan"]})
    corpus.add("oai:example.org:broken", {"creator": ["Nobody"]})
    corpus.advance_clock(hours=1)


# -- rewrite from the stored XML ---------------------------------------------------------------
def test_rewrite_writes_only_what_the_new_mapping_changes_without_asking_the_provider(
    harvested, run_cli, provider, corpus, sample_service
):
    before = versions()
    asked = len(provider.requests)
    MAPPING["version"] = 2

    result = run_cli("harvest", "test", "--rewrite")

    assert result.exit_code == 0, shown(result)
    assert "SUCCESS" in result.stdout
    assert "created 0, updated 25, deleted 0, unchanged 25, failed 0" in result.stdout
    assert len(provider.requests) == asked  # not a single request to the provider
    after = versions()
    titles = local_titles(sample_service)
    for identifier, version in before.items():
        source = corpus.get(identifier).metadata["title"]
        if is_even(identifier):
            assert titles[identifier] == [title.upper() for title in source]
            assert after[identifier] == version + 1
        else:
            assert titles[identifier] == source
            assert after[identifier] == version  # no new revision

    again = run_cli("harvest", "test", "--rewrite")
    assert again.exit_code == 0, shown(again)
    assert "created 0, updated 0, deleted 0, unchanged 50, failed 0" in again.stdout
    assert versions() == after and len(provider.requests) == asked


def test_rewrite_of_given_identifiers_only(harvested, run_cli, provider, sample_service):
    evens = sorted(identifier for identifier in tracking() if is_even(identifier))
    chosen, untouched = evens[:2], evens[2]
    before = versions()
    asked = len(provider.requests)
    MAPPING["version"] = 2

    result = run_cli("harvest", "test", "--rewrite", "--identifier", chosen[0],
                     "--identifier", chosen[1])  # fmt: skip

    assert result.exit_code == 0, shown(result)
    assert "created 0, updated 2, deleted 0, unchanged 0, failed 0" in result.stdout
    assert len(provider.requests) == asked
    after = versions()
    assert {i for i in before if after[i] != before[i]} == set(chosen)
    titles = local_titles(sample_service)
    assert all(title.isupper() for i in chosen for title in titles[i])
    assert not any(title.isupper() for title in titles[untouched])


def test_rewrite_of_records_with_errors_only(harvester, run_cli, provider, corpus, sample_service):
    untitled = sorted(corpus.live_identifiers())[1]  # odd: version 2 adds "Untitled" only
    corpus.update(untitled, metadata={"subject": ["no title"]})
    first = run_cli("harvest", "test")
    assert first.exit_code == 1, shown(first)  # a partial success
    assert "created 49, updated 0, deleted 0, unchanged 0, failed 1" in first.stdout
    assert "1 × Validation failed: " in first.stderr and f"({untitled})" in first.stderr
    before = versions()
    asked = len(provider.requests)
    MAPPING["version"] = 2  # the fixed transformer: a record without a title gets one

    result = run_cli("harvest", "test", "--rewrite", "--errors-only")

    assert result.exit_code == 0, shown(result)
    assert "created 1, updated 0, deleted 0, unchanged 0, failed 0" in result.stdout
    assert len(provider.requests) == asked
    assert {i: v for i, v in versions().items() if i != untitled} == before  # evens untouched
    assert local_titles(sample_service)[untitled] == ["Untitled"]
    assert not tracking()[untitled].errors
    listed = run_cli("records", "test", "--errors-only", "--json")
    assert json.loads(listed.stdout) == []


def test_rewrite_refuses_force_and_options_of_other_runs(harvested, run_cli, provider):
    asked = len(provider.requests)

    forced = run_cli("harvest", "test", "--rewrite", "--force")
    errors_only = run_cli("harvest", "test", "--errors-only")

    assert forced.exit_code != 0
    assert "--force: Only for a run that asks the provider, not with --rewrite." in forced.stderr
    assert errors_only.exit_code != 0
    assert "--errors-only: Only with --rewrite." in errors_only.stderr
    assert len(provider.requests) == asked


# -- dry runs ----------------------------------------------------------------------------------
def test_a_dry_run_of_a_first_harvest_prints_a_summary_and_writes_nothing(
    harvester, run_cli, provider
):
    before = snapshot()

    result = run_cli("harvest", "test", "--dry-run")

    assert result.exit_code == 0, shown(result)
    assert (
        "Dry run of test (nothing was written): examined 50; would create 50, update 0, "
        "delete 0, leave 0 unchanged; 0 would fail." in result.stdout
    )
    # No pid: the one minted in the rolled-back transaction is not the record's.
    assert "  create oai:example.org:0000000\n" in result.stdout
    assert "  (the first 20 of 50 records listed;" in result.stdout
    assert "Stopped at the limit" not in result.stdout
    assert provider.requests_for("ListRecords")  # it did fetch the records
    assert snapshot() == before  # no record, tracking row, run or watermark
    assert tracking() == {} and live_local_count() == 0
    assert db.session.get(OAIHarvester, "test").watermarks is None
    assert json.loads(run_cli("records", "test", "--json").stdout) == []


def test_a_dry_run_as_json_predicts_the_real_run(harvested, run_cli, corpus):
    change_the_source(corpus)
    before = snapshot()

    result = run_cli("harvest", "test", "--dry-run", "--json")
    text = run_cli("harvest", "test", "--dry-run")

    assert result.exit_code == 0, shown(result)
    report = json.loads(result.stdout)
    assert report["dry_run"] is True and report["harvester"] == "test"
    counts = report["counts"]
    assert counts == {
        "examined": 6, "created": 1, "updated": 3, "deleted": 1, "unchanged": 0, "failed": 1,
    }  # fmt: skip
    assert not report["stopped_early"]
    by_action = {entry["action"]: entry for entry in report["entries"]}
    assert {
        "op": "replace",
        "path": "/metadata/title/0",
        "value": "Changed",
    } in by_action["update"]["changes"]
    assert by_action["fail"]["identifier"] == "oai:example.org:broken"
    assert "title" in by_action["fail"]["errors"][0]
    assert text.exit_code == 0, shown(text)
    assert "would create 1, update 3, delete 1, leave 0 unchanged; 1 would fail." in text.stdout
    first_update = by_action["update"]["identifier"]
    assert f"  update {first_update} ({by_action['update']['pid']})" in text.stdout
    assert '      replace /metadata/title/0: "Changed"' in text.stdout
    assert "  fail oai:example.org:broken" in text.stdout
    assert snapshot() == before

    real = run_cli("harvest", "test")

    assert real.exit_code == 1, shown(real)  # the broken record makes it partial
    assert "PARTIAL_SUCCESS" in real.stdout
    assert (
        f"created {counts['created']}, updated {counts['updated']}, deleted "
        f"{counts['deleted']}, unchanged 0, failed {counts['failed']}" in real.stdout
    )


def test_a_dry_run_of_a_rewrite_asks_nothing_and_writes_nothing(harvested, run_cli, provider):
    MAPPING["version"] = 2
    before = snapshot()
    asked = len(provider.requests)

    result = run_cli("harvest", "test", "--rewrite", "--dry-run", "--json")

    assert result.exit_code == 0, shown(result)
    counts = json.loads(result.stdout)["counts"]
    assert (counts["examined"], counts["updated"], counts["unchanged"]) == (50, 25, 25)
    assert snapshot() == before and len(provider.requests) == asked


def test_a_limited_dry_run_stops_early_and_says_so(harvester, run_cli):
    before = snapshot()

    result = run_cli("harvest", "test", "--dry-run", "--limit", "7")
    report = json.loads(run_cli("harvest", "test", "--dry-run", "--limit", "7", "--json").stdout)

    assert result.exit_code == 0, shown(result)
    assert "examined 7; would create 7, update 0" in result.stdout
    assert "Stopped at the limit of 7 records (--limit)." in result.stdout
    assert report["stopped_early"] and report["limit"] == 7
    assert report["counts"]["examined"] == 7 and report["counts"]["created"] == 7
    assert snapshot() == before


def test_limit_and_json_need_a_dry_run(harvester, run_cli, provider):
    for option in (["--limit", "7"], ["--json"]):
        result = run_cli("harvest", "test", *option)
        assert result.exit_code != 0
        assert "--limit and --json work only with --dry-run (a preview)." in result.stderr
    assert provider.requests == []  # refused before anything ran
    assert tracking() == {}


# -- retrying failed records -------------------------------------------------------------------
def test_retry_errors_heals_a_record_that_failed_for_a_transient_fault(
    harvester, run_cli, provider, corpus, sample_service
):
    identifier = sorted(corpus.live_identifiers())[5]
    provider.quirks.server_error_for = {identifier}
    failed = run_cli("harvest", "test", "--identifier", identifier)
    assert failed.exit_code == 1, shown(failed)
    [reason] = [line for line in failed.stderr.splitlines() if " × " in line]
    assert reason.startswith("  1 × The provider answered HTTP 500") and identifier in reason
    errors = json.loads(run_cli("records", "test", "--errors-only", "--json").stdout)
    assert [(row["oai_identifier"], row["local_pid"]) for row in errors] == [(identifier, None)]

    still = run_cli("harvest", "test", "--retry-errors")  # the fault is still there
    assert still.exit_code == 1, shown(still)
    assert "Asked again for 1 failed records." in still.stderr
    assert "created 0, updated 0, deleted 0, unchanged 0, failed 1" in still.stdout
    assert tracking()[identifier].attempts == 2

    provider.quirks.server_error_for = set()
    asked = len(provider.requests_for("GetRecord"))
    healed = run_cli("harvest", "test", "--retry-errors")

    assert healed.exit_code == 0, shown(healed)
    assert "SUCCESS" in healed.stdout
    assert "created 1, updated 0, deleted 0, unchanged 0, failed 0" in healed.stdout
    assert "Asked again for 1 failed records." in healed.stdout
    assert [r["identifier"] for r in provider.requests_for("GetRecord")[asked:]] == [identifier]
    row = tracking()[identifier]
    assert not row.errors and row.local_pid and row.attempts == 0
    assert local_titles(sample_service) == {identifier: corpus.get(identifier).metadata["title"]}
    assert json.loads(run_cli("records", "test", "--errors-only", "--json").stdout) == []


# -- force ---------------------------------------------------------------------------------------
def test_force_rewrites_records_the_provider_did_not_change(harvested, run_cli, provider):
    before = versions()

    unchanged = run_cli("harvest", "test", "--full")
    assert unchanged.exit_code == 0, shown(unchanged)
    assert "created 0, updated 0, deleted 0, unchanged 50, failed 0" in unchanged.stdout
    assert versions() == before

    forced = run_cli("harvest", "test", "--full", "--force")

    assert forced.exit_code == 0, shown(forced)
    assert "created 0, updated 50, deleted 0, unchanged 0, failed 0" in forced.stdout
    assert "from" not in provider.requests_for("ListRecords")[-1]  # fetched again, in full
    assert versions() == {identifier: version + 1 for identifier, version in before.items()}


# -- purge ---------------------------------------------------------------------------------------
@pytest.fixture()
def two_harvesters(harvested, run_cli, provider, sample_service) -> dict[str, set[str]]:
    """Harvesters "test" and "other" with 50 records each, and one record made locally."""
    make_harvester(provider.base_url, harvester_id="other", transformer="switchable")
    result = run_cli("harvest", "other")
    assert result.exit_code == 0, shown(result)
    local = sample_service.create(system_identity, {"metadata": {"title": ["Made here"]}}).id
    return {
        "test": {row.local_pid for row in tracking("test").values()},
        "other": {row.local_pid for row in tracking("other").values()},
        "local": {local},
    }


@pytest.mark.parametrize(
    ("arguments", "answer"),
    [([], "no\n"), ([], "other\n"), (["--confirm", "other"], None)],
    ids=["prompt-answered-no", "prompt-answered-wrong-id", "confirm-wrong-id"],
)
def test_purge_without_the_right_id_removes_nothing(
    two_harvesters, run_cli, sample_service, arguments, answer
):
    before = snapshot()

    result = run_cli("harvester", "purge", "test", *arguments, typed=answer)

    assert result.exit_code != 0, shown(result)
    if answer is not None:
        assert "Type its id to confirm" in result.stdout  # it asked
    assert "type the harvester's id (test) to confirm it" in result.stderr
    assert snapshot() == before
    assert searchable_ids(sample_service) == set().union(*two_harvesters.values())


def test_purge_removes_exactly_the_harvesters_records_and_marks_them_purged(
    two_harvesters, run_cli, sample_service, corpus
):
    result = run_cli("harvester", "purge", "test", "--confirm", "test")

    assert result.exit_code == 0, shown(result)
    assert "SUCCESS" in result.stdout
    assert "created 0, updated 0, deleted 50, unchanged 0, failed 0" in result.stdout
    assert searchable_ids(sample_service) == two_harvesters["other"] | two_harvesters["local"]
    assert live_local_count() == 51
    rows = tracking()
    assert len(rows) == 50
    assert all(row.purged and row.local_pid is None for row in rows.values())
    assert len(tracking("other")) == 50 and not any(r.purged for r in tracking("other").values())
    assert db.session.get(OAIHarvester, "test").watermarks is None

    again = run_cli("harvest", "test")  # no watermark: a full harvest recreates them

    assert again.exit_code == 0, shown(again)
    assert "created 50, updated 0, deleted 0, unchanged 0, failed 0" in again.stdout
    assert not any(row.purged for row in tracking().values())
    assert live_local_count() == 101


def test_purge_confirmed_at_the_prompt_and_forget(two_harvesters, run_cli, sample_service):
    result = run_cli("harvester", "purge", "test", "--forget", typed="test\n")

    assert result.exit_code == 0, shown(result)
    assert "Type its id to confirm" in result.stdout
    assert "deleted 50" in result.stdout
    assert "Forgot 50 tracked records of the harvester." in result.stdout
    assert tracking() == {}
    assert len(tracking("other")) == 50
    assert searchable_ids(sample_service) == two_harvesters["other"] | two_harvesters["local"]
    assert json.loads(run_cli("records", "test", "--json").stdout) == []
