"""The harvester against invenio-oaiserver itself, the OAI-PMH server of InvenioRDM and Zenodo.

The source is a real InvenioRDM instance in a process of its own (``oaiserver_source.py``);
tests/spine/test_invenio_provider_habits.py imitates the same habits with our own provider.
Where the target does not matter the records go into the sample service; where it does, into
the RDM records service of the test app.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

pytest.importorskip("invenio_rdm_records")

import requests
from factories import make_harvester, run_harvest, wait_until
from invenio_access.permissions import system_identity
from invenio_db import db
from invenio_rdm_records.services.errors import RecordDeletedException

from oarepo_oaipmh_harvester.harvest.assembly import build_client
from oarepo_oaipmh_harvester.harvest.results import RunOutcome
from oarepo_oaipmh_harvester.models import OAIHarvestedRecord, OAIHarvester
from oarepo_oaipmh_harvester.protocol.datestamps import Granularity
from oarepo_oaipmh_harvester.protocol.errors import TooManyRestarts
from oarepo_oaipmh_harvester.protocol.retry import may_have_been_processed
from oarepo_oaipmh_harvester.services.preflight import PreflightError, check_provider
from oarepo_oaipmh_harvester.transformers.rdm.dublin_core import DublinCoreRDMTransformer

from .conftest import RDM_TARGET
from .oaiserver_source import OAIServerSource

TOKEN_LIFETIME = 2
"""Seconds a resumption token of the source lives in the token tests (invenio's default: 60)."""


@pytest.fixture(scope="module")
def app_config(app_config):
    """The oai_dc_rdm transformer by configuration (a venv's entry points may be another
    worktree's)."""
    app_config["OAI_HARVESTER_TRANSFORMERS"] = {
        **app_config["OAI_HARVESTER_TRANSFORMERS"],
        "oai_dc_rdm": DublinCoreRDMTransformer,
    }
    return app_config


# -- helpers -----------------------------------------------------------------------------------
def record_data(title: str, resource_type: str = "dataset") -> dict[str, Any]:
    return {
        "access": {"record": "public", "files": "public"},
        "files": {"enabled": False},
        "metadata": {
            "resource_type": {"id": resource_type},
            "title": title,
            "publication_date": "2024-05-17",
            "creators": [
                {"person_or_org": {"type": "personal", "family_name": "Novák", "given_name": "Jan"}}
            ],
        },
    }


def publish(source: OAIServerSource, titles: list[str], **kwargs: Any) -> list[dict[str, Any]]:
    return [source.publish(record_data(title, **kwargs)) for title in titles]


def second_of(updated: str) -> datetime:
    return datetime.fromisoformat(updated).astimezone(UTC).replace(microsecond=0)


def wait_for_the_next_second(records: list[dict[str, Any]]) -> None:
    """Until the clock has left the second of the latest change at the source.

    invenio-oaiserver's datestamps and responseDate have seconds, and both ends of a window are
    inclusive to the second (the search rounds `until` up to the second's end): a run whose
    Identify comes in the same second as a change lists it, and so does the next run, whose
    `from` is that second. A test that counts what the next run lists waits first.
    """
    latest = max(second_of(record["updated"]) for record in records)
    wait_until(
        lambda: datetime.now(UTC).replace(microsecond=0) > latest,
        timeout=3,
        message=f"the clock to pass {latest.isoformat()}",
    )


def tracking() -> dict[str, OAIHarvestedRecord]:
    db.session.expire_all()
    rows = db.session.scalars(
        db.select(OAIHarvestedRecord).where(OAIHarvestedRecord.harvester_id == "test")
    )
    return {row.oai_identifier: row for row in rows}


def local_titles(service) -> dict[str, str]:
    """OAI identifier -> the first title of the local record harvested from it."""
    titles = {}
    for identifier, row in tracking().items():
        if row.local_pid and not row.deleted:
            titles[identifier] = service.read(system_identity, row.local_pid).data["metadata"][
                "title"
            ][0]
    return titles


def titles_at(records: list[dict[str, Any]]) -> dict[str, str]:
    return {record["oai"]: record["record"]["metadata"]["title"] for record in records}


def list_requests(source: OAIServerSource, verb: str = "ListRecords") -> list[dict[str, Any]]:
    return [entry for entry in source.requests() if entry["args"].get("verb") == verb]


def first_requests(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The requests that start a list (not continuations)."""
    return [entry for entry in entries if "resumptionToken" not in entry["args"]]


# -- Identify ------------------------------------------------------------------------------------
def test_identify_says_seconds_and_no_deleted_records(app, oai_source):
    with build_client(oai_source.base_url) as client:
        profile = client.identify()

    assert profile.granularity is Granularity.SECONDS
    assert profile.deleted_record == "no"
    assert profile.response_date.tzinfo is not None
    assert profile.response_date.microsecond == 0  # the provider's clock, to the second


# -- noRecordsMatch with HTTP 422 ------------------------------------------------------------------
def test_no_records_match_comes_with_422_and_is_an_empty_successful_window(
    app, db, clean_index, oai_source, sample_service
):
    records = publish(oai_source, ["First record", "Second record", "Third record"])
    wait_for_the_next_second(records)
    make_harvester(oai_source.base_url)
    assert run_harvest("test").counts.created == 3

    nothing_changed = run_harvest("test")

    assert nothing_changed.succeeded and nothing_changed.counts.total == 0
    assert nothing_changed.watermark_advanced
    last = list_requests(oai_source)[-1]
    assert "from" in last["args"] and "until" in last["args"]
    assert (last["status"], last["errors"]) == (422, ["noRecordsMatch"])
    # The same question asked directly: the status is really 422, the body an OAI-PMH error.
    answer = requests.get(oai_source.base_url, params=last["args"], timeout=10)
    assert answer.status_code == 422
    assert '<error code="noRecordsMatch"' in answer.text

    added = publish(oai_source, ["Fourth record"])
    next_run = run_harvest("test")

    assert next_run.succeeded and (next_run.counts.created, next_run.counts.total) == (1, 1)
    assert local_titles(sample_service) == titles_at(records + added)


# -- badResumptionToken with HTTP 422 once a token expired ----------------------------------------
@pytest.mark.parametrize("spool", [False, True], ids=["in-step", "spool"])
def test_a_token_that_expires_mid_list(
    app, db, clean_index, oai_source, sample_service, monkeypatch, spool
):
    oai_source.configure(page_size=2, token_lifetime=TOKEN_LIFETIME)
    records = publish(oai_source, [f"Record number {n}" for n in range(7)])
    make_harvester(oai_source.base_url, batch_size=2)
    monkeypatch.setitem(app.config, "OAI_HARVESTER_PREFETCH_BATCHES", 0)  # reading in step
    monkeypatch.setitem(app.config, "OAI_HARVESTER_SPOOL", spool)
    stalls = []

    def a_slow_first_batch(_progress) -> None:
        if not stalls:
            stalls.append(time.monotonic())
            # Writing the first batch takes longer than the token in hand lives (its age is
            # counted in whole seconds: it is refused once more than TOKEN_LIFETIME passed).
            time.sleep(TOKEN_LIFETIME + 1.2)

    summary = run_harvest("test", progress=a_slow_first_batch)

    assert summary.succeeded and summary.counts.created == 7
    assert local_titles(sample_service) == titles_at(records)
    pages = list_requests(oai_source)
    refused = [page for page in pages if page["errors"]]
    if spool:
        # The list was read to its end while the first batch was still being written.
        assert refused == [] and len(first_requests(pages)) == 1
    else:
        assert [(page["status"], page["errors"]) for page in refused] == [
            (422, ["badResumptionToken"])
        ]
        assert len(first_requests(pages)) == 2  # the window asked again from its start


# -- the last page: no records, an empty token --------------------------------------------------------
def test_an_exact_multiple_of_the_page_size_ends_with_an_empty_page(
    app, db, clean_index, oai_source, sample_service
):
    oai_source.configure(page_size=3)
    records = publish(oai_source, [f"Record number {n}" for n in range(6)])
    make_harvester(oai_source.base_url)

    summary = run_harvest("test")

    assert summary.succeeded and summary.counts.created == 6
    assert local_titles(sample_service) == titles_at(records)
    pages = list_requests(oai_source)
    assert [page["items"] for page in pages] == [3, 3, 0]
    last = pages[-1]
    assert last["status"] == 200 and last["token_element"] and last["token"] is None


# -- deletedRecord=no: tombstones vanish ----------------------------------------------------------
def test_a_tombstone_vanishes_and_only_a_full_harvest_removes_the_local_copy(rdm, oai_source):
    from invenio_search import current_search

    records = publish(oai_source, [f"Record number {n}" for n in range(5)])
    make_harvester(oai_source.base_url, target=RDM_TARGET, transformer="oai_dc_rdm", batch_size=5)
    assert run_harvest("test").counts.created == 5
    gone = records[2]
    local_pid = tracking()[gone["oai"]].local_pid

    oai_source.delete(gone["id"])
    with build_client(oai_source.base_url) as client:
        listed = {header.identifier for header in client.list_identifiers("oai_dc")}
    assert listed == {record["oai"] for record in records} - {gone["oai"]}

    # No deleted header ever comes: an incremental run cannot know.
    incremental = run_harvest("test")
    assert incremental.succeeded and incremental.counts.deleted == 0
    assert rdm.read(system_identity, local_pid).data["id"] == local_pid

    full = run_harvest("test", full=True)

    assert full.succeeded and full.reconciled and full.counts.deleted == 1
    with pytest.raises(RecordDeletedException):
        rdm.read(system_identity, local_pid)
    row = tracking()[gone["oai"]]
    assert row.deleted and row.local_pid == local_pid
    current_search.flush_and_refresh("rdmrecords-records")
    live = {hit["id"] for hit in rdm.search(system_identity, size=20).hits}
    assert live == {tracking()[record["oai"]].local_pid for record in records if record != gone}


# -- GetRecord of a tombstone: HTTP 500 -----------------------------------------------------------
def test_get_record_of_a_tombstone_is_an_error_of_that_identifier(
    app, db, clean_index, oai_source, sample_service, monkeypatch
):
    gone, kept = publish(oai_source, ["Going away", "Staying"])
    make_harvester(oai_source.base_url)
    assert run_harvest("test").counts.created == 2
    oai_source.delete(gone["id"])
    (added,) = publish(oai_source, ["Newly added"])
    monkeypatch.setitem(app.config, "OAI_HARVESTER_BACKOFF_FACTOR", 0.01)  # retried, quickly

    summary = run_harvest("test", identifiers=[gone["oai"], kept["oai"], added["oai"]])

    assert summary.outcome is RunOutcome.PARTIAL_SUCCESS
    assert (summary.counts.failed, summary.counts.unchanged, summary.counts.created) == (1, 1, 1)
    error = tracking()[gone["oai"]].errors[0]
    assert "HTTP 500 for GetRecord" in error
    assert local_titles(sample_service)[added["oai"]] == "Newly added"
    asked = [
        r for r in list_requests(oai_source, "GetRecord") if r["args"]["identifier"] == gone["oai"]
    ]
    assert len(asked) > 1  # retried as any 5xx, then given up
    assert {(r["status"], r["exception"]) for r in asked} == {(500, "RecordDeletedException")}


# -- tokens are scroll cursors: a token sent twice moves on ----------------------------------------
def test_a_token_is_a_cursor_that_moves_on_when_sent_again(app, oai_source):
    """What the server does, asked directly: the same token twice gives two different pages,
    each under the cursor of the first (invenio-oaiserver keeps a search scroll behind it)."""
    oai_source.configure(page_size=2)
    publish(oai_source, [f"Record number {n}" for n in range(6)])
    params = {"verb": "ListIdentifiers", "metadataPrefix": "oai_dc"}
    requests.get(oai_source.base_url, params=params, timeout=10)
    token = list_requests(oai_source, "ListIdentifiers")[-1]["token"]

    for _ in range(2):
        again = {"verb": "ListIdentifiers", "resumptionToken": token}
        answer = requests.get(oai_source.base_url, params=again, timeout=10)
        assert answer.status_code == 200 and 'cursor="2"' in answer.text

    first, second = (page["items"] for page in list_requests(oai_source, "ListIdentifiers")[1:])
    assert (first, second) == (2, 2)
    with build_client(oai_source.base_url) as client:
        listed = [header.identifier for header in client.list_identifiers("oai_dc")]
    assert len(listed) == len(set(listed)) == 6


def test_a_late_answer_to_a_continuation_loses_no_page(
    app, db, clean_index, oai_source, sample_service, monkeypatch
):
    """A continuation whose answer comes after the read timeout is sent again; the provider has
    moved its cursor meanwhile, so the answer to the retry is the page after the lost one. The
    list then comes out shorter than its completeListSize, and the harvester asks for the
    window again instead of taking the gap for the end."""
    oai_source.configure(page_size=2)
    records = publish(oai_source, [f"Record number {n}" for n in range(7)])
    make_harvester(oai_source.base_url, batch_size=2)
    monkeypatch.setitem(app.config, "OAI_HARVESTER_REQUEST_TIMEOUT", (5.0, 1.5))
    monkeypatch.setitem(app.config, "OAI_HARVESTER_BACKOFF_FACTOR", 0.01)
    oai_source.hold_back_second_pages(2.5)  # the answer to page 2 comes too late

    summary = run_harvest("test")

    pages = list_requests(oai_source)
    continuations = [
        page["args"]["resumptionToken"] for page in pages if page["args"].get("resumptionToken")
    ]
    assert len(continuations) > len(set(continuations))  # a token was sent twice
    assert summary.succeeded and summary.counts.created == 7
    assert local_titles(sample_service) == titles_at(records)
    assert len(first_requests(pages)) == 2  # the window was asked again from its start


def test_a_page_lost_again_and_again_fails_the_run_instead_of_missing(
    app, db, clean_index, oai_source, sample_service, monkeypatch
):
    oai_source.configure(page_size=2)
    publish(oai_source, [f"Record number {n}" for n in range(5)])
    make_harvester(oai_source.base_url, batch_size=2)
    monkeypatch.setitem(app.config, "OAI_HARVESTER_REQUEST_TIMEOUT", (5.0, 1.5))
    monkeypatch.setitem(app.config, "OAI_HARVESTER_BACKOFF_FACTOR", 0.01)
    monkeypatch.setitem(app.config, "OAI_HARVESTER_MAX_RESTARTS", 1)
    oai_source.hold_back_second_pages(2.5, lists=2)  # the first pass and the one restart

    with pytest.raises(
        TooManyRestarts, match=r"ended after 3 of the 5 items .* restarting the list 1 times"
    ):
        run_harvest("test")

    assert db.session.get(OAIHarvester, "test").watermark is None


def test_which_failed_attempts_may_have_reached_the_provider():
    """Only these make a shortfall of a list suspect (see the test above)."""
    from urllib3.exceptions import NewConnectionError, ProtocolError, ReadTimeoutError
    from urllib3.util.retry import RequestHistory

    def attempt(status=None, error=None):
        return RequestHistory("GET", "/oai", error, status, None)

    never_arrived = [
        attempt(error=NewConnectionError(None, "refused")),
        attempt(status=503),
        attempt(status=429),
    ]
    assert not may_have_been_processed(never_arrived)
    for lost in (
        attempt(error=ReadTimeoutError(None, "/oai", "read timed out")),
        attempt(error=ProtocolError("Connection aborted.")),
        attempt(status=502),
        attempt(status=500),
    ):
        assert may_have_been_processed([*never_arrived, lost])


def test_tokens_whose_scroll_is_gone_get_500_until_they_expire(
    app, db, clean_index, oai_source, sample_service, monkeypatch
):
    """A search cluster that restarts mid-harvest forgets the scrolls; invenio-oaiserver then
    answers a token that has not expired yet with HTTP 500 (the scroll is not found), and with
    badResumptionToken only once the token has expired (60 s in production). The retries of
    the 5xx must outlast the token for the window to restart instead of the run failing."""
    oai_source.configure(page_size=2, token_lifetime=TOKEN_LIFETIME)
    records = publish(oai_source, [f"Record number {n}" for n in range(5)])
    make_harvester(oai_source.base_url, batch_size=2)
    monkeypatch.setitem(app.config, "OAI_HARVESTER_PREFETCH_BATCHES", 0)
    # Waits of about 0.25, 0.5, 1, 2 s: past the token's end (at most TOKEN_LIFETIME + 1 s).
    monkeypatch.setitem(app.config, "OAI_HARVESTER_BACKOFF_FACTOR", 0.5)
    monkeypatch.setitem(app.config, "OAI_HARVESTER_MAX_RETRY_WAIT", 10.0)
    dropped = []

    def the_cluster_restarts(_progress) -> None:
        if not dropped:
            dropped.append(oai_source.drop_scrolls())

    summary = run_harvest("test", progress=the_cluster_restarts)

    assert summary.succeeded and summary.counts.created == 5
    assert local_titles(sample_service) == titles_at(records)
    answers = [
        (page["status"], page["exception"] or ",".join(page["errors"]))
        for page in list_requests(oai_source)
    ]
    refused = [answer for answer in answers if answer[0] != 200]
    assert refused[0] == (500, "NotFoundError")
    assert refused[-1] == (422, "badResumptionToken")
    assert set(refused[1:-1]) <= {(500, "NotFoundError")}
    assert len(first_requests(list_requests(oai_source))) == 2


# -- sets ----------------------------------------------------------------------------------------
def test_a_set_is_harvested_and_named_on_its_headers(
    app, db, clean_index, oai_source, sample_service
):
    oai_source.configure(page_size=2)  # ListSets has two pages
    for spec, resource_type in (
        ("datasets", "dataset"),
        ("software", "software"),
        ("images", "image"),
    ):
        oai_source.create_set(spec, spec.title(), f"metadata.resource_type.id:{resource_type}")
    datasets = publish(oai_source, ["Data one", "Data two", "Data three"])
    (software,) = publish(oai_source, ["Code one"], resource_type="software")

    check_provider(oai_source.base_url, "oai_dc", ["datasets", "software"])
    # A set the server does not have is only an empty list to it (noRecordsMatch, 422): the
    # preflight check, which reads ListSets, is what refuses a mistyped one.
    with pytest.raises(PreflightError, match="datasetz"):
        check_provider(oai_source.base_url, "oai_dc", ["datasetz"])
    answer = requests.get(
        oai_source.base_url,
        params={"verb": "ListRecords", "metadataPrefix": "oai_dc", "set": "datasetz"},
        timeout=10,
    )
    assert answer.status_code == 422 and 'code="noRecordsMatch"' in answer.text

    make_harvester(oai_source.base_url, setspecs=["datasets"])
    summary = run_harvest("test")

    assert summary.succeeded and summary.counts.created == 3
    assert local_titles(sample_service) == titles_at(datasets)
    with build_client(oai_source.base_url) as client:
        headers = list(client.list_identifiers("oai_dc", set_spec="software"))
        record = client.get_record(datasets[0]["oai"], "oai_dc")
    assert [(h.identifier, h.set_specs) for h in headers] == [(software["oai"], ("software",))]
    assert record.set_specs == ("datasets",)


# -- datestamps, from and until ----------------------------------------------------------------
def test_an_edit_during_a_run_reaches_the_next_run(
    app, db, clean_index, oai_source, sample_service, monkeypatch
):
    records = publish(oai_source, [f"Record number {n}" for n in range(4)])
    wait_for_the_next_second(records)
    make_harvester(oai_source.base_url, batch_size=2)
    monkeypatch.setitem(app.config, "OAI_HARVESTER_PREFETCH_BATCHES", 0)
    changed = records[3]
    edits = []

    def edit_while_harvested(_progress) -> None:
        if not edits:
            edits.append(oai_source.edit(changed["id"], {"title": "Edited while harvested"}))

    first = run_harvest("test", progress=edit_while_harvested)

    # The list was read before the edit (its one page): the run wrote what it was given, and
    # its window ended at the responseDate of its Identify, before the edit.
    assert first.succeeded and first.counts.created == 4
    assert local_titles(sample_service)[changed["oai"]] == "Record number 3"
    (edited,) = edits
    assert edited["id"] == changed["id"] and edited["revision_id"] > changed["revision_id"]

    second = run_harvest("test")

    assert second.succeeded and (second.counts.updated, second.counts.total) == (1, 1)
    assert local_titles(sample_service)[changed["oai"]] == "Edited while harvested"
    # Header datestamps are the record's `updated`, in UTC, cut to the second.
    row = tracking()[changed["oai"]]
    assert row.datestamp == second_of(edited["updated"]).strftime("%Y-%m-%dT%H:%M:%SZ")
