"""InvenioRDM as the target (phase `rdm`; needs the `rdm` extra and `benchmarks/rdm_target.py`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from harvest_bench.harness.provider import provider_command
from harvest_bench.phases.shared import (
    create_harvester,
    no_change_incremental,
    read_transformed,
    run_harvest,
    search_writes_to_records,
)
from harvest_bench.settings import log

if TYPE_CHECKING:
    from harvest_bench.harness.worker import PhaseWorker


# The tables a write into InvenioRDM touches: a run that writes nothing leaves them alone.
RDM_TABLES = ("rdm_", "pidstore_pid", "files_", "transaction", "communities_")


def rdm_sql_writes(result: dict[str, Any]) -> int:
    """SQL writes of a step to InvenioRDM's tables (the harvester's own tracking excluded)."""
    writes = result.get("sql_writes_by_table", {})
    return sum(count for table, count in writes.items() if table.startswith(RDM_TABLES))


def phase_rdm(worker: PhaseWorker, params: dict[str, Any]) -> dict[str, Any]:
    """InvenioRDM: a per-record create + publish loop, our full harvest, an incremental one
    with nothing new, a full one with nothing changed.

    The loop's records are read and transformed before its clock starts; three of them are
    published and wiped first so that neither side runs cold. Each step ends by indexing
    what the indexers' queues hold, as a site's beat task would, on its clock.
    """
    import rdm_target

    worker.boot()
    worker.reset_storage()
    n = params["records"]
    log(f"rdm: reading and transforming {n} records with {rdm_target.TRANSFORMER} (not timed)")
    from oarepo_oaipmh_harvester.proxies import current_oai_harvester

    transformer = current_oai_harvester.transformers.get(rdm_target.TRANSFORMER)
    prepared = read_transformed(params["base_url"], transformer=transformer)
    rdm_target.create_and_publish_each(prepared[:3])  # warm-up, wiped below
    rdm_target.index_queued_documents()
    worker.reset_storage()
    steps: dict[str, Any] = {}

    log(f"rdm: create + publish, one record at a time, {len(prepared)} records")
    with worker.step({}) as result:
        elapsed, errors = rdm_target.create_and_publish_each(prepared)
        began = time.perf_counter()
        result["queued_documents"] = rdm_target.index_queued_documents()
        elapsed += time.perf_counter() - began
        result.update(records=len(prepared), errors=len(errors), _seconds=elapsed)
    result["first_errors"] = errors[:3]
    result["stored"] = worker.stored()
    steps["create_publish_each"] = result

    worker.reset_storage()
    create_harvester(params["base_url"], params["batch_size"], rdm=True)
    address = params["provider_address"]
    log(f"rdm: our full harvest of {n} records, batch size {params['batch_size']}")
    before = len(provider_command(address, "requests"))
    with worker.step({}) as result:
        result.update(run_harvest("rdm full", n))
        result["records"] = result["total_entries"]
        result["queued_documents"] = rdm_target.index_queued_documents()
    result["requests"] = len(provider_command(address, "requests")) - before
    result["stored"] = worker.stored()
    steps["full"] = result

    steps["no_change_incremental"] = no_change_incremental(
        worker, address, "rdm", rdm_sql_writes, search_writes_to_records
    )

    provider_command(address, "tick", 1)
    log(f"rdm: full re-harvest of {n} records, nothing changed")
    before = len(provider_command(address, "requests"))
    with worker.step({}) as result:
        result.update(run_harvest("rdm re-harvest", n, full=True))
        result["records"] = result["total_entries"]
        result["queued_documents"] = rdm_target.index_queued_documents()
    result["requests"] = len(provider_command(address, "requests")) - before
    result["search_writes"] = result.get("search_requests", {}).get("write", 0)
    result["stored"] = worker.stored()
    steps["full_reharvest"] = result
    return {"steps": steps}
