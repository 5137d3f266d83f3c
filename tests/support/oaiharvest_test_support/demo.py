"""A demo harvest on an embedded default: SQLite, osmem-server and a bundled local provider.

    python -m oaiharvest_test_support.demo [--records 3000]
    python -m oaiharvest_test_support.demo --rdm [--records 40]
    python -m oaiharvest_test_support.demo --rdm --prefix lido [--records 40]
    python -m oaiharvest_test_support.demo --rdm --prefix marcxml|oai_openaire [--records 40]
    python -m oaiharvest_test_support.demo --rdm --files copy|link [--prefix oai_openaire]

It boots a real Invenio API application, registers a harvester with the same command an
operator types (`invenio oai harvester create`), runs a first full harvest, changes records
at the provider (edits, deletions, additions), runs an incremental harvest and checks that
the local service holds exactly the provider's live records.

With ``--rdm`` (needs the ``rdm`` extra) the target is InvenioRDM's records service
(invenio-rdm-records, draft-enabled, validated against real vocabulary entries), the
transformer is ``oai_dc_rdm``: every live source record must end up published, every deleted
one as an RDM tombstone. RDM publishes a few records a second, hence the smaller default.
With ``--prefix lido`` the provider serves its records as LIDO museum objects and the
transformer is ``lido_rdm``; with ``--prefix marcxml`` as MARC 21 bibliographic records
(``marcxml_rdm``), with ``--prefix oai_openaire`` as OpenAIRE v4 literature records
(``oai_openaire_rdm``). With ``--files copy`` (or ``link``) every OpenAIRE or MARC record
names a PDF the provider serves (its ``oaire:file``, its 856): the harvester fetches them
into InvenioRDM's storage, and the demo checks each published record holds its file, byte
for byte.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path


def _print(message: str = "") -> None:
    print(message, flush=True)


def build_app(workdir: Path, search_url: str, rdm: bool = False):
    from invenio_app.factory import create_api

    extra: dict = {}
    if rdm:
        from .rdm import rdm_config

        extra = rdm_config(external_dois=True, osmem=True)
    host, port = search_url.split("://", 1)[-1].rstrip("/").rsplit(":", 1)
    app = create_api(
        **extra,
        SQLALCHEMY_DATABASE_URI=f"sqlite:///{workdir / 'demo.db'}",
        # An installed invenio-app-rdm configures PostgreSQL connect options, which SQLite
        # refuses ("'options' is an invalid keyword argument").
        SQLALCHEMY_ENGINE_OPTIONS={},
        SEARCH_HOSTS=[{"host": host, "port": int(port)}],
        SEARCH_INDEX_PREFIX="oaidemo-",
        OAI_HARVESTER_SAMPLE_TARGET=True,
        OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS=True,  # the bundled provider runs on 127.0.0.1
        JOBS_LOGGING=False,
        CELERY_TASK_ALWAYS_EAGER=True,
        CELERY_BROKER_URL="memory://",
        BROKER_URL="memory://",
        CELERY_RESULT_BACKEND="cache",
        CELERY_CACHE_BACKEND="memory",
        CACHE_TYPE="SimpleCache",
        SECRET_KEY="demo-not-secret",
        RECORDS_REFRESOLVER_CLS="invenio_records.resolver.InvenioRefResolver",
        RECORDS_REFRESOLVER_STORE="invenio_jsonschemas.proxies.current_refresolver_store",
        TRUSTED_HOSTS=["localhost", "127.0.0.1"],
        LOGGING_CONSOLE_LEVEL="WARNING",
        MAIL_SUPPRESS_SEND=True,
    )
    if rdm:
        from .rdm import prepare_app

        prepare_app(app)
    return app


def change_provider(corpus, rng: random.Random, edits: int, deletions: int, additions: int) -> None:
    from oarepo_oaipmh_harvester.testing.corpus import synthetic_metadata

    corpus.advance_clock(hours=1)
    live = sorted(corpus.live_identifiers())
    chosen = rng.sample(live, edits + deletions)
    for identifier in chosen[:edits]:
        # The record's own number: its DOI and identifiers stay; its title changes.
        index = int(identifier.rsplit(":", 1)[-1])
        corpus.update(identifier, metadata=synthetic_metadata(rng, index, revision=2))
    for identifier in chosen[edits:]:
        corpus.delete(identifier)
    for number in range(additions):
        corpus.add(f"oai:example.org:new-{number}", synthetic_metadata(rng, 10_000_000 + number))


RDM_FORMATS = ("lido", "marcxml", "oai_openaire")
RDM_TRANSFORMERS = {
    "oai_dc": "oai_dc_rdm",
    "lido": "lido_rdm",
    "marcxml": "marcxml_rdm",
    "oai_openaire": "oai_openaire_rdm",
}


def demo_file(number: str) -> bytes:
    """The PDF of demo record `number` (different for every record)."""
    return b"%PDF-1.4\n% demo record " + number.encode() + b"\n" + b"0" * 4096


def served_formats(prefix: str, file_url=None) -> dict:
    """The provider's renderer of `prefix` from each record's number and title (LIDO and
    oai_dc it renders itself); `file_url(number)`: the URL of each record's file (none: the
    renderers' own example URLs)."""
    from oarepo_oaipmh_harvester.testing.provider import ServedFormat

    def number(record) -> str:
        return record.identifier.rsplit(":", 1)[-1]

    def title(record) -> str:
        return (record.metadata.get("title") or [record.identifier])[0]

    if prefix == "oai_openaire":
        from oarepo_oaipmh_harvester.testing.corpus_openaire import (
            OPENAIRE_NS,
            OPENAIRE_SCHEMA,
            openaire_document,
        )

        def render(record) -> str:
            files = None
            if file_url is not None:
                url = file_url(number(record))
                files = ((url, "application/pdf", "fulltext", "c_abf2"),)
            return openaire_document(number(record), title=title(record), files=files)

        return {prefix: ServedFormat(OPENAIRE_SCHEMA, OPENAIRE_NS, render)}
    if prefix == "marcxml":
        from oarepo_oaipmh_harvester.testing.corpus_marc import MARC_NS, marcxml_document

        def render(record) -> str:
            fields = [
                ("001", number(record)),
                ("008", "230101s2023    xx            000 0 eng d"),
                ("100", "1 ", [("a", "Novák, Jan,"), ("e", "author.")]),
                ("245", "10", [("a", title(record))]),
                ("264", " 1", [("a", "Prague :"), ("b", "Example Press,"), ("c", "2023.")]),
                ("520", "3 ", [("a", f"Record {number(record)} of the demo provider.")]),
            ]
            if file_url is not None:
                link = [("u", file_url(number(record))), ("q", "application/pdf")]
                fields.append(("856", "40", link))
            return marcxml_document(fields, collection=False)

        schema = "http://www.loc.gov/standards/marcxml/schema/MARC21slim.xsd"
        return {prefix: ServedFormat(schema, MARC_NS, render)}
    return {}


def run_cli(app, *args: str) -> float:
    from oarepo_oaipmh_harvester import cli

    runner = app.test_cli_runner()
    _print(f"$ invenio oai {' '.join(args)}")
    started = time.perf_counter()
    result = runner.invoke(cli.oai, list(args), catch_exceptions=False)
    elapsed = time.perf_counter() - started
    _print(result.output.rstrip())
    if result.exit_code != 0:
        raise SystemExit(f"command failed with exit code {result.exit_code}")
    return elapsed


def count_sample_records() -> dict[str, int]:
    from invenio_db import db
    from invenio_search.proxies import current_search

    from .sample_records.records import SampleRecord

    current_search.flush_and_refresh("oaisamplerecords")
    model = SampleRecord.model_cls
    return {"live": db.session.query(model).filter(model.json.is_not(None)).count()}


def count_rdm_records() -> dict[str, int]:
    from .rdm import count_records

    counts = count_records()
    return {"live": counts["published"], "tombstones": counts["tombstones"]}


def files_in_step(mode: str, provider, corpus) -> bool:
    """Whether every published record holds a file of the provider's, byte for byte (copy), or
    names its URL with nothing downloaded (link)."""
    import hashlib

    from invenio_access.permissions import system_identity
    from invenio_rdm_records.proxies import current_rdm_records_service as service
    from invenio_rdm_records.records.api import RDMRecord
    from invenio_search.proxies import current_search

    current_search.flush_and_refresh(RDMRecord.index._name)
    served = {
        "md5:" + hashlib.md5(demo_file(identifier.rsplit(":", 1)[-1])).hexdigest()  # noqa: S324
        for identifier in corpus.live_identifiers()
    }
    hits = list(service.scan(system_identity))
    right = 0
    for hit in hits:
        if mode == "link":
            urls = [r["identifier"] for r in hit["metadata"].get("related_identifiers", [])]
            right += any(url.endswith("/article.pdf") for url in urls)
            continue
        listing = service.files.list_files(system_identity, hit["id"]).to_dict()
        checksums = [entry["checksum"] for entry in listing.get("entries") or ()]
        right += len(checksums) == 1 and checksums[0] in served
    downloads = sum(1 for _, _, status in provider.file_requests if status == 200)
    _print(f"Records holding their file: {right} of {len(hits)}; files downloaded: {downloads}")
    if mode == "link":
        return right == len(hits) and downloads == 0
    return right == len(hits) and downloads >= len(hits)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rdm", action="store_true", help="harvest into InvenioRDM's service")
    parser.add_argument("--records", type=int, default=None, help="default 3000 (--rdm: 40)")
    parser.add_argument("--page-size", type=int, default=None, help="default 200 (--rdm: 10)")
    parser.add_argument(
        "--prefix",
        choices=("oai_dc", *RDM_FORMATS),
        default="oai_dc",
        help="the metadata format to harvest (all but oai_dc with --rdm)",
    )
    parser.add_argument(
        "--files",
        choices=("none", "link", "copy"),
        default="none",
        help="the records' files (with --rdm; default prefix then oai_openaire)",
    )
    options = parser.parse_args(argv)
    if options.files != "none":
        if not options.rdm:
            parser.error(f"--files {options.files} harvests into InvenioRDM: add --rdm")
        if options.prefix == "oai_dc":
            options.prefix = "oai_openaire"
        if options.prefix not in ("oai_openaire", "marcxml"):
            parser.error("--files: the demo's oai_openaire and marcxml records name files")
    if options.prefix in RDM_FORMATS and not options.rdm:
        parser.error(f"--prefix {options.prefix} harvests into InvenioRDM: add --rdm")
    records = options.records or (40 if options.rdm else 3000)
    page_size = options.page_size or (10 if options.rdm else 200)
    if options.rdm:  # a few of each on the small corpus
        edits, deletions, additions = 4, 3, 2
    else:
        edits, deletions, additions = 60, 25, 40

    from invenio_db import db
    from invenio_search.proxies import current_search
    from osmem_server import OsmemServer

    from oarepo_oaipmh_harvester.testing.corpus import Corpus
    from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider

    if options.rdm:
        transformer = RDM_TRANSFORMERS[options.prefix]
        target, batch_size, count = "records", 10, count_rdm_records
    else:
        target, transformer, batch_size, count = "oai-sample-records", "", 100, count_sample_records

    workdir = Path(tempfile.mkdtemp(prefix="oai-harvest-demo-"))
    rng = random.Random(7)
    search = OsmemServer.start(freeze=False, japanese=False)
    corpus = Corpus.generate(records, start=datetime(2023, 1, 1, tzinfo=UTC))
    corpus.set_clock(datetime(2024, 1, 1, tzinfo=UTC))
    started: list = []  # the provider, once it serves (its files' URLs name its port)
    file_url = None
    if options.files != "none":
        file_url = lambda number: started[0].file_url(f"{number}/article.pdf")  # noqa: E731
    try:
        with OAIPMHProvider(
            corpus,
            page_size=page_size,
            metadata_prefixes=("oai_dc", options.prefix),
            formats=served_formats(options.prefix, file_url),
        ) as provider:
            started.append(provider)
            provider.file_maker = lambda path: demo_file(path.split("/")[2])
            app = build_app(workdir, search.url, rdm=options.rdm)
            with app.app_context():
                db.create_all()
                list(current_search.create(ignore_existing=True))
                if options.rdm:
                    from .rdm import prepare_storage

                    prepare_storage()
                _print(
                    f"Provider: {provider.base_url} serving {len(corpus)} {options.prefix} records"
                )
                _print(f"Database: {workdir / 'demo.db'}   search: {search.url}")
                _print(
                    f"Target: {target}"
                    + (f", transformer {transformer}\n" if transformer else "\n")
                )
                create = [
                    "harvester", "create", "--id", "demo", "--name", "Demo provider",
                    "--base-url", provider.base_url, "--metadata-prefix", options.prefix,
                    "--target", target, "--batch-size", str(batch_size),
                ]  # fmt: skip
                if transformer:
                    create += ["--transformer", transformer]
                if options.files != "none":
                    create += ["--files", options.files]
                run_cli(app, *create)
                first = run_cli(app, "harvest", "demo")
                _print(f"first full harvest: {records / first:.1f} records/s\n")

                change_provider(corpus, rng, edits, deletions, additions)
                _print(
                    f"Provider changed: {edits} edited, {deletions} deleted, {additions} added.\n"
                )
                second = run_cli(app, "harvest", "demo")
                _print(f"incremental harvest: {second:.2f} s\n")

                local = count()
                expected = len(corpus.live_identifiers())
                _print(f"Provider live records: {expected}; local live records: {local['live']}")
                if "tombstones" in local:
                    _print(
                        f"Deleted at the provider: {deletions}; tombstones: {local['tombstones']}"
                    )
                if local["live"] != expected or local.get("tombstones", deletions) != deletions:
                    _print("MISMATCH: the local service is not in step with the provider")
                    return 1
                if options.files != "none" and not files_in_step(options.files, provider, corpus):
                    _print("MISMATCH: the records' files are not the provider's")
                    return 1
                _print("The local service is in step with the provider.")
    finally:
        search.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
