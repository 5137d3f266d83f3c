"""A demo harvest on an embedded default: SQLite, osmem-server and a bundled local provider.

    python -m oarepo_oaipmh_harvester.testing.demo [--records 3000]

It boots a real Invenio API application, registers a harvester with the same command an
operator types (`invenio oai harvester create`), runs a first full harvest, changes records
at the provider (edits, deletions, additions), runs an incremental harvest and checks that
the local service holds exactly the provider's live records.
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


def build_app(workdir: Path, search_url: str):
    from invenio_app.factory import create_api

    host, port = search_url.split("://", 1)[-1].rstrip("/").rsplit(":", 1)
    return create_api(
        SQLALCHEMY_DATABASE_URI=f"sqlite:///{workdir / 'demo.db'}",
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
        APP_ALLOWED_HOSTS=["localhost", "127.0.0.1"],
        LOGGING_CONSOLE_LEVEL="WARNING",
    )


def change_provider(corpus, rng: random.Random, edits: int, deletions: int, additions: int) -> None:
    from .corpus import synthetic_metadata

    corpus.advance_clock(hours=1)
    live = sorted(corpus.live_identifiers())
    chosen = rng.sample(live, edits + deletions)
    for number, identifier in enumerate(chosen[:edits]):
        corpus.update(identifier, metadata=synthetic_metadata(rng, number, revision=2))
    for identifier in chosen[edits:]:
        corpus.delete(identifier)
    for number in range(additions):
        corpus.add(f"oai:example.org:new-{number}", synthetic_metadata(rng, 10_000_000 + number))


def run_cli(app, *args: str) -> float:
    from .. import cli

    runner = app.test_cli_runner()
    _print(f"$ invenio oai {' '.join(args)}")
    started = time.perf_counter()
    result = runner.invoke(cli.oai, list(args), catch_exceptions=False)
    elapsed = time.perf_counter() - started
    _print(result.output.rstrip())
    if result.exit_code != 0:
        raise SystemExit(f"command failed with exit code {result.exit_code}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3000)
    parser.add_argument("--page-size", type=int, default=200)
    options = parser.parse_args(argv)

    from invenio_db import db
    from invenio_search.proxies import current_search
    from osmem_server import OsmemServer

    from .corpus import Corpus
    from .provider import OAIPMHProvider
    from .sample_records.records import SampleRecord

    workdir = Path(tempfile.mkdtemp(prefix="oai-harvest-demo-"))
    rng = random.Random(7)
    search = OsmemServer.start(freeze=False, japanese=False)
    corpus = Corpus.generate(options.records, start=datetime(2023, 1, 1, tzinfo=UTC))
    corpus.set_clock(datetime(2024, 1, 1, tzinfo=UTC))
    try:
        with OAIPMHProvider(corpus, page_size=options.page_size) as provider:
            app = build_app(workdir, search.url)
            with app.app_context():
                db.create_all()
                list(current_search.create(ignore_existing=True))
                _print(f"Provider: {provider.base_url} serving {len(corpus)} oai_dc records")
                _print(f"Database: {workdir / 'demo.db'}   search: {search.url}\n")
                run_cli(
                    app, "harvester", "create", "--id", "demo", "--name", "Demo provider",
                    "--base-url", provider.base_url, "--metadata-prefix", "oai_dc",
                    "--target", "oai-sample-records", "--batch-size", "100",
                )  # fmt: skip
                first = run_cli(app, "harvest", "demo")
                _print(f"first full harvest: {options.records / first:.0f} records/s\n")

                edits, deletions, additions = 60, 25, 40
                change_provider(corpus, rng, edits, deletions, additions)
                _print(
                    f"Provider changed: {edits} edited, {deletions} deleted, {additions} added.\n"
                )
                second = run_cli(app, "harvest", "demo")
                _print(f"incremental harvest: {second:.2f} s\n")

                current_search.flush_and_refresh("oaisamplerecords")
                model = SampleRecord.model_cls
                live_local = db.session.query(model).filter(model.json.is_not(None)).count()
                expected = len(corpus.live_identifiers())
                _print(f"Provider live records: {expected}; local live records: {live_local}")
                if live_local != expected:
                    _print("MISMATCH: the local service is not in step with the provider")
                    return 1
                _print("The local service is in step with the provider.")
    finally:
        search.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
