"""A harvested record's files (issue 36) on the real InvenioRDM records service: OpenAIRE
records whose ``oaire:file`` locations the bundled provider serves, harvested through OAI-PMH
with ``files`` copy and link, and every way a file can fail."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest

pytest.importorskip("invenio_rdm_records")

from factories import make_harvester, run_harvest
from invenio_access.permissions import system_identity

from oarepo_oaipmh_harvester.testing.corpus import Corpus
from oarepo_oaipmh_harvester.testing.corpus_openaire import OPENAIRE_PREFIX, openaire_document
from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider, served_document_key

from . import test_openaire_to_rdm as openaire_module
from .conftest import RDM_TARGET
from .helpers import harvest_again, tracking

# The OpenAIRE module's app (its custom fields) and vocabularies.
TRANSFORMER = openaire_module.TRANSFORMER
app_config = openaire_module.app_config
openaire_vocabularies = openaire_module.openaire_vocabularies
rdm_openaire = openaire_module.rdm_openaire
custom_fields = openaire_module.custom_fields

PDF = b"%PDF-1.4 spectral lattice models\n" * 200
DATA = b"x,y\n1,2\n3,4\n" * 50
OPEN = "c_abf2"
RESTRICTED = "c_16ec"


def md5(content: bytes) -> str:
    return "md5:" + hashlib.md5(content).hexdigest()  # noqa: S324 - what RDM stores


class Repository:
    """The bundled provider with OpenAIRE records whose files it serves itself."""

    def __init__(self, provider: OAIPMHProvider, corpus: Corpus) -> None:
        self.provider = provider
        self.corpus = corpus

    def publish(self, name: str, files: list[tuple[str, str]], *, update: bool = False) -> str:
        """Add (or change) record `name` naming `files` ((url, COAR access right id))."""
        document = openaire_document(
            name,
            title=f"Lattice record {name}",
            files=tuple((url, "application/pdf", "fulltext", right) for url, right in files),
        )
        identifier = f"oai:repository.example.org:{name}"
        metadata = {"title": [name], served_document_key(OPENAIRE_PREFIX): [document]}
        if update:
            self.corpus.update(identifier, metadata)
        else:
            self.corpus.add(identifier, metadata)
        return identifier

    def downloads(self) -> list[str]:
        """Paths of the file requests answered with bytes so far (304s and errors aside)."""
        return [path for path, _, status in self.provider.file_requests if status == 200]


@pytest.fixture()
def repository(rdm_openaire, custom_fields):
    corpus = Corpus()
    corpus.set_clock(datetime(2024, 6, 1, tzinfo=UTC))
    with OAIPMHProvider(corpus, metadata_prefixes=(OPENAIRE_PREFIX,)) as provider:
        yield Repository(provider, corpus)


def harvester(repository: Repository, **options) -> None:
    make_harvester(
        repository.provider.base_url,
        target=RDM_TARGET,
        transformer=TRANSFORMER,
        metadata_prefix=OPENAIRE_PREFIX,
        **options,
    )


def files_of(service, pid: str) -> dict[str, str]:
    """key -> checksum of the files of published record `pid`."""
    listing = service.files.list_files(system_identity, pid).to_dict()
    return {entry["key"]: entry["checksum"] for entry in listing.get("entries") or ()}


def test_copy_publishes_the_source_files_and_a_rerun_downloads_nothing(rdm_openaire, repository):
    pdf = repository.provider.serve_file("1/article.pdf", PDF)
    data = repository.provider.serve_file("1/table.csv", DATA)
    identifier = repository.publish("1", [(pdf, OPEN), (data, OPEN)])
    harvester(repository, files="copy")

    summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (1, 0)
    assert summary.counts.files == {"fetched": 2, "bytes": len(PDF) + len(DATA), "unchanged": 0,
                                    "failed": 0}  # fmt: skip
    row = tracking()[identifier]
    assert files_of(rdm_openaire, row.local_pid) == {
        "article.pdf": md5(PDF),
        "table.csv": md5(DATA),
    }
    assert [(f["key"], f["status"], f["checksum"], f["size"]) for f in row.files] == [
        ("article.pdf", "fetched", md5(PDF), len(PDF)),
        ("table.csv", "fetched", md5(DATA), len(DATA)),
    ]
    record = rdm_openaire.read(system_identity, row.local_pid).data
    assert record["files"]["enabled"] is True
    assert "files fetched 2 (7,200 bytes), unchanged 0, failed 0" in summary.describe()

    requests_before = len(repository.provider.file_requests)
    again = harvest_again(repository.corpus)
    assert (again.counts.created, again.counts.updated) == (0, 0)
    assert len(repository.provider.file_requests) == requests_before


def test_a_changed_file_makes_a_new_version_and_unchanged_ones_are_carried_over(
    rdm_openaire, repository
):
    pdf = repository.provider.serve_file("2/article.pdf", PDF)
    data = repository.provider.serve_file("2/table.csv", DATA)
    identifier = repository.publish("2", [(pdf, OPEN), (data, OPEN)])
    harvester(repository, files="copy")
    run_harvest("test")
    first = tracking()[identifier].local_pid

    # Metadata changed, files not: the same record, nothing downloaded again (the source gives
    # neither size nor checksum: a conditional request answers 304).
    repository.corpus.advance_clock(hours=1)
    repository.publish("2", [(pdf, OPEN), (data, OPEN)], update=True)
    downloads = len(repository.downloads())
    summary = harvest_again(repository.corpus)
    assert (summary.counts.updated, summary.counts.failed) == (1, 0)
    assert summary.counts.files["unchanged"] == 2
    assert tracking()[identifier].local_pid == first
    assert len(repository.downloads()) == downloads

    changed = PDF.replace(b"spectral", b"SPECTRAL")
    repository.provider.serve_file("2/article.pdf", changed)
    repository.publish("2", [(pdf, OPEN), (data, OPEN)], update=True)
    summary = harvest_again(repository.corpus)

    assert (summary.counts.updated, summary.counts.failed) == (1, 0)
    assert summary.counts.files == {"fetched": 1, "bytes": len(changed), "unchanged": 1,
                                    "failed": 0}  # fmt: skip
    row = tracking()[identifier]
    assert row.local_pid != first, "a new version, which the tracking row follows"
    assert files_of(rdm_openaire, row.local_pid) == {
        "article.pdf": md5(changed),
        "table.csv": md5(DATA),
    }
    assert files_of(rdm_openaire, first) == {"article.pdf": md5(PDF), "table.csv": md5(DATA)}
    versions = rdm_openaire.read(system_identity, row.local_pid).data["versions"]
    assert versions["index"] == 2 and versions["is_latest"] is True
    assert repository.downloads()[-1] == "/files/2/article.pdf"


def test_a_file_that_cannot_be_fetched_leaves_the_record_without_it_or_fails_it(
    rdm_openaire, repository
):
    pdf = repository.provider.serve_file("3/article.pdf", PDF)
    missing = repository.provider.file_url("3/gone.pdf")
    identifier = repository.publish("3", [(pdf, OPEN), (missing, OPEN)])
    harvester(repository, files="copy")

    summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (1, 0)
    row = tracking()[identifier]
    assert files_of(rdm_openaire, row.local_pid) == {"article.pdf": md5(PDF)}
    failed = [f for f in row.files if f["status"] == "failed"]
    assert [f["key"] for f in failed] == ["gone.pdf"]
    assert "404" in failed[0]["error"]
    assert any("gone.pdf" in w and "without it" in w for w in row.warnings)


def test_files_failure_fail_writes_nothing_and_names_each_reason(rdm_openaire, repository):
    provider = repository.provider
    big = provider.serve_file("4/big.pdf", PDF * 10)
    elsewhere = provider.file_url("4/article.pdf").replace("127.0.0.1", "localhost")
    provider.serve_file("4/article.pdf", PDF)
    provider.file_redirects["/files/4/moved.pdf"] = "http://10.255.255.1/moved.pdf"
    moved = provider.file_url("4/moved.pdf")
    identifier = repository.publish("4", [(big, OPEN), (elsewhere, OPEN), (moved, OPEN)])
    harvester(repository, files="copy", files_failure="fail", files_max_size=len(PDF) * 2)

    summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (0, 1)
    row = tracking()[identifier]
    assert row.local_pid is None
    error = row.errors[0]
    assert "big.pdf" in error and str(len(PDF) * 2) in error.replace(",", "")
    assert "localhost" in error and "files_hosts" in error
    assert "10.255.255.1" in error
    assert rdm_openaire.search(system_identity).total == 0


def test_a_host_the_harvester_allows_serves_files_and_a_slow_drip_ends_at_the_deadline(
    app, rdm_openaire, repository, monkeypatch
):
    provider = repository.provider
    provider.serve_file("5/article.pdf", PDF)
    elsewhere = provider.file_url("5/article.pdf").replace("127.0.0.1", "localhost")
    slow = provider.serve_file("5/slow.csv", DATA[:40])
    provider.file_drip["/files/5/slow.csv"] = 0.1
    monkeypatch.setitem(app.config, "OAI_HARVESTER_FILES_DEADLINE", 1.0)
    identifier = repository.publish("5", [(elsewhere, OPEN), (slow, OPEN)])
    harvester(repository, files="copy", files_hosts=["localhost"])

    summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (1, 0)
    row = tracking()[identifier]
    assert files_of(rdm_openaire, row.local_pid) == {"article.pdf": md5(PDF)}
    slow_state = next(f for f in row.files if f["key"] == "slow.csv")
    assert slow_state["status"] == "failed"
    assert "deadline" in slow_state["error"] or "second" in slow_state["error"]


def test_restricted_files_wait_for_the_harvester_to_allow_them(rdm_openaire, repository):
    provider = repository.provider
    closed = provider.serve_file("6/closed.pdf", PDF)
    identifier = repository.publish("6", [(closed, RESTRICTED)])
    harvester(repository, files="copy")

    run_harvest("test")

    row = tracking()[identifier]
    assert files_of(rdm_openaire, row.local_pid) == {}
    assert [(f["key"], f["status"]) for f in row.files] == [("closed.pdf", "skipped")]
    assert provider.file_requests == []

    from oarepo_oaipmh_harvester.proxies import current_harvester_service

    current_harvester_service.update(
        system_identity, "test", {"files_restricted": True}, check=False
    )
    summary = run_harvest("test", force=True)
    assert summary.counts.failed == 0
    row = tracking()[identifier]
    assert files_of(rdm_openaire, row.local_pid) == {"closed.pdf": md5(PDF)}
    record = rdm_openaire.read(system_identity, row.local_pid).data
    assert record["access"]["files"] == "restricted"


def test_link_keeps_the_urls_and_downloads_nothing(rdm_openaire, repository):
    pdf = repository.provider.serve_file("7/article.pdf", PDF)
    identifier = repository.publish("7", [(pdf, OPEN)])
    harvester(repository, files="link")

    summary = run_harvest("test")

    assert (summary.counts.created, summary.counts.failed) == (1, 0)
    assert repository.provider.file_requests == []
    row = tracking()[identifier]
    record = rdm_openaire.read(system_identity, row.local_pid).data
    assert record["files"]["enabled"] is False
    related = record["metadata"]["related_identifiers"]
    assert {"identifier": pdf, "scheme": "url"}.items() <= next(
        r for r in related if r["identifier"] == pdf
    ).items()
    assert [(f["key"], f["status"]) for f in row.files] == [("article.pdf", "linked")]


def test_a_dry_run_names_the_file_changes_and_downloads_nothing(rdm_openaire, repository):
    from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service

    provider = repository.provider
    pdf = provider.serve_file("8/article.pdf", PDF)
    data = provider.serve_file("8/table.csv", DATA)
    identifier = repository.publish("8", [(pdf, OPEN)])
    harvester(repository, files="copy")
    run_harvest("test")
    first = tracking()[identifier].local_pid
    repository.corpus.advance_clock(hours=1)
    repository.publish("8", [(pdf, OPEN), (data, OPEN)], update=True)
    repository.corpus.advance_clock(hours=1)
    requests_before = len(provider.file_requests)

    report = current_harvest_runs_service.preview(system_identity, "test", {})

    assert report["counts"]["updated"] == 1, report["entries"][0].get("errors")
    entry = next(e for e in report["entries"] if e["identifier"] == identifier)
    assert [(f["key"], f["status"]) for f in entry["files"]] == [
        ("article.pdf", "to fetch"),  # no checksum nor size: only the real run asks the server
        ("table.csv", "to fetch"),
    ]
    assert len(provider.file_requests) == requests_before
    assert tracking()[identifier].local_pid == first
    assert files_of(rdm_openaire, first) == {"article.pdf": md5(PDF)}
    assert rdm_openaire.read(system_identity, first).data["versions"]["is_latest"] is True


def test_the_tracking_row_lists_its_files_over_rest_and_on_the_command_line(
    app, rdm_openaire, repository
):
    from oarepo_oaipmh_harvester.cli import oai

    provider = repository.provider
    pdf = provider.serve_file("9/article.pdf", PDF)
    gone = provider.file_url("9/gone.pdf")
    identifier = repository.publish("9", [(pdf, OPEN), (gone, OPEN)])
    harvester(repository, files="copy")
    run_harvest("test")

    from oarepo_oaipmh_harvester.services.record_schemas import HarvestedRecordSchema

    dumped = HarvestedRecordSchema().dump(tracking()[identifier])
    assert dumped["files_summary"] == "1 fetched, 1 failed"
    lines = dumped["files_text"].splitlines()
    assert lines[0] == f"article.pdf ({len(PDF):,} bytes, {md5(PDF)}): fetched"
    assert lines[1].startswith("gone.pdf (size unknown, no checksum): failed - File gone.pdf")
    result = app.test_cli_runner().invoke(oai, ["records", "test"])
    assert result.exit_code == 0, result.output
    assert "files: article.pdf fetched, gone.pdf failed" in result.output


def test_a_rewrite_from_the_stored_xml_downloads_nothing_that_did_not_change(
    rdm_openaire, repository
):
    pdf = repository.provider.serve_file("10/article.pdf", PDF)
    identifier = repository.publish("10", [(pdf, OPEN)])
    harvester(repository, files="copy")
    run_harvest("test")
    first = tracking()[identifier].local_pid
    downloads = len(repository.downloads())

    summary = run_harvest("test", rewrite=True)

    assert summary.counts.failed == 0, summary.message()
    assert len(repository.downloads()) == downloads
    row = tracking()[identifier]
    assert row.local_pid == first
    assert [(f["key"], f["status"]) for f in row.files] == [("article.pdf", "unchanged")]
    assert files_of(rdm_openaire, first) == {"article.pdf": md5(PDF)}
    assert rdm_openaire.read(system_identity, first).data["versions"]["is_latest"] is True


def test_the_undo_of_a_run_that_made_a_new_version_goes_back_to_the_earlier_version(
    rdm_openaire, repository
):
    """Undo (issue 37) where the run made a new version for a changed file: that version
    becomes a tombstone, the earlier one (with its files) is the record again, and the tracking
    row follows it back."""
    from invenio_db import db
    from invenio_jobs.models import RunStatusEnum
    from invenio_rdm_records.services.errors import RecordDeletedException

    from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service

    pdf = repository.provider.serve_file("3/article.pdf", PDF)
    identifier = repository.publish("3", [(pdf, OPEN)])
    harvester(repository, files="copy")
    run_harvest("test")
    first = tracking()[identifier].local_pid
    files_before = tracking()[identifier].files
    repository.corpus.advance_clock(hours=1)
    repository.provider.serve_file("3/article.pdf", PDF.replace(b"spectral", b"SPECTRAL"))
    repository.publish("3", [(pdf, OPEN)], update=True)
    run = current_harvest_runs_service.harvest_in_process(system_identity, "test")
    newer = tracking()[identifier].local_pid
    assert run.status == RunStatusEnum.SUCCESS and newer != first

    undo = current_harvest_runs_service.harvest_in_process(
        system_identity, "test", {"undo": str(run.id)}
    )

    assert undo.status == RunStatusEnum.SUCCESS, undo.message
    db.session.expire_all()
    row = tracking()[identifier]
    assert row.local_pid == first and row.files == files_before
    with pytest.raises(RecordDeletedException):
        rdm_openaire.read(system_identity, newer)
    assert files_of(rdm_openaire, first) == {"article.pdf": md5(PDF)}
    assert rdm_openaire.read(system_identity, first).data["versions"]["is_latest"] is True


def test_a_source_tombstone_deletes_every_version_the_changed_files_made(rdm_openaire, repository):
    """RDM makes the previous version the latest when the latest is deleted: a deletion that
    took only the version the tracking row names would leave the earlier one online."""
    from invenio_rdm_records.services.errors import RecordDeletedException

    pdf = repository.provider.serve_file("4/article.pdf", PDF)
    identifier = repository.publish("4", [(pdf, OPEN)])
    harvester(repository, files="copy")
    run_harvest("test")
    first = tracking()[identifier].local_pid
    repository.provider.serve_file("4/article.pdf", PDF.replace(b"spectral", b"SPECTRAL"))
    repository.corpus.advance_clock(hours=1)
    repository.publish("4", [(pdf, OPEN)], update=True)
    harvest_again(repository.corpus)
    newer = tracking()[identifier].local_pid
    assert newer != first

    repository.corpus.delete(identifier)
    summary = harvest_again(repository.corpus)

    assert (summary.counts.deleted, summary.counts.failed) == (1, 0)
    for pid in (first, newer):
        with pytest.raises(RecordDeletedException):
            rdm_openaire.read(system_identity, pid)
