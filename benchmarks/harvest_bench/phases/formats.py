"""The metadata formats into InvenioRDM (phase `formats`): each transformer's reader and writer
time per record, on the real records of tests/rdm/data/real.

For each format the bundled provider (in this process, on a thread) serves up to
`format_records` recorded records under its prefix; the reader step lists them through our
protocol client and transforms each (no writes), three passes; the harvest step is a full
harvest of them into InvenioRDM's records service, and the writer's time is the harvest's
less the reader's. A record that fails is counted, not timed apart.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from harvest_bench.settings import REPO_ROOT, log

if TYPE_CHECKING:
    from harvest_bench.harness.worker import PhaseWorker

REAL_RECORDS = REPO_ROOT / "tests" / "rdm" / "data" / "real"
FORMATS = (  # prefix, transformer, folder of recorded records
    ("oai_dc", "oai_dc_rdm", "oai_dc"),
    ("oai_datacite", "oai_datacite_rdm", "datacite"),
    ("lido", "lido_rdm", "lido"),
    ("marcxml", "marcxml_rdm", "marc"),
    ("oai_openaire", "oai_openaire_rdm", "openaire"),
)
READER_PASSES = 3


def phase_formats(worker: PhaseWorker, params: dict[str, Any]) -> dict[str, Any]:
    from invenio_access.permissions import system_identity
    from oaiharvest_test_support.rdm import MUSEUM_VOCABULARY_ENTRIES, load_vocabularies

    from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service
    from oarepo_oaipmh_harvester.testing.provider import OAIPMHProvider
    from oarepo_oaipmh_harvester.testing.recorded import corpus_of, recorded_documents

    worker.boot()
    worker.reset_storage()
    load_vocabularies(MUSEUM_VOCABULARY_ENTRIES)
    steps: dict[str, Any] = {}
    for prefix, transformer, folder in FORMATS:
        if not (REAL_RECORDS / folder).is_dir():
            log(f"formats: no recorded {prefix} records in {REAL_RECORDS / folder}")
            continue
        documents = dict(
            list(recorded_documents(REAL_RECORDS / folder).items())[: params["format_records"]]
        )
        corpus = corpus_of(documents, prefix)
        with OAIPMHProvider(corpus, page_size=50, metadata_prefixes=(prefix,)) as provider:
            log(f"formats: {prefix}: reading and transforming {len(documents)} records")
            with worker.step({}) as reader:
                reader.update(_read(provider.base_url, prefix, transformer))
            steps[f"{prefix}_reader"] = reader
            _create_harvester(
                f"bench-{prefix.replace('_', '-')}", provider.base_url, prefix, transformer
            )
            log(f"formats: {prefix}: harvesting {len(documents)} records into InvenioRDM")
            with worker.step({}) as harvest:
                run = current_harvest_runs_service.harvest_in_process(
                    system_identity, f"bench-{prefix.replace('_', '-')}"
                )
                harvest.update(
                    records=run.total_entries or 0,
                    failed=run.errored_entries or 0,
                    run_status=run.status.name,
                )
            steps[f"{prefix}_harvest"] = harvest
        reader_ms = reader["seconds"] / max(reader["records"], 1) * 1000
        harvest_ms = harvest["seconds"] / max(harvest["records"], 1) * 1000
        steps[f"{prefix}_per_record"] = {
            "transformer": transformer,
            "records": harvest["records"],
            "failed": harvest["failed"],
            "reader_ms": reader_ms,
            "harvest_ms": harvest_ms,
            "writer_ms": max(harvest_ms - reader_ms, 0.0),
        }
    return {"steps": steps}


def _read(base_url: str, prefix: str, transformer_name: str) -> dict[str, Any]:
    """Every record listed and transformed READER_PASSES times; the seconds of that alone."""
    from oarepo_oaipmh_harvester.protocol.client import OAIClient
    from oarepo_oaipmh_harvester.proxies import current_oai_harvester
    from oarepo_oaipmh_harvester.transformers import TransformError

    transformer = current_oai_harvester.transformers.get(transformer_name)
    records = failed = 0
    began = time.perf_counter()
    for _ in range(READER_PASSES):
        with OAIClient(base_url) as client:
            for record in client.list_records(prefix):
                records += 1
                try:
                    transformer.transform(record)
                except TransformError:
                    failed += 1
    return {"records": records, "failed": failed, "_seconds": time.perf_counter() - began}


def _create_harvester(harvester_id: str, base_url: str, prefix: str, transformer: str) -> None:
    from invenio_access.permissions import system_identity

    from oarepo_oaipmh_harvester.proxies import current_harvester_service

    current_harvester_service.create(
        system_identity,
        {
            "id": harvester_id,
            "name": f"Benchmark {prefix}",
            "base_url": base_url,
            "metadata_prefix": prefix,
            "target": "records",
            "transformer": transformer,
            "batch_size": 10,
        },
        check=False,
    )
