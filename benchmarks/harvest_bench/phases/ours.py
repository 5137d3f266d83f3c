"""Our harvester into the sample target: full, incremental, no-change and re-harvest runs
(phase `ours`) and the batch-size sweep (phase `batch`)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from harvest_bench.harness.provider import provider_command
from harvest_bench.phases.shared import (
    create_harvester,
    no_change_incremental,
    run_harvest,
    search_writes_to_records,
)
from harvest_bench.settings import log

if TYPE_CHECKING:
    from harvest_bench.harness.worker import PhaseWorker


# The tables a write to the sample target touches: a run that writes nothing leaves them alone.
TARGET_TABLES = ("oai_sample_record_metadata", "pidstore_pid", "transaction")


def target_sql_writes(result: dict[str, Any]) -> int:
    """SQL writes of a step to the target's tables (the harvester's own tracking excluded)."""
    writes = result.get("sql_writes_by_table", {})
    return sum(count for table, count in writes.items() if table.startswith(TARGET_TABLES))


def phase_ours(worker: PhaseWorker, params: dict[str, Any]) -> dict[str, Any]:
    """Four runs on one database: full, incremental after `change_fraction` changed at the
    provider, incremental with nothing new, full re-harvest with nothing changed."""
    worker.boot()
    worker.reset_storage()
    create_harvester(params["base_url"], params["batch_size"])
    address = params["provider_address"]
    n = params["records"]
    steps: dict[str, Any] = {}

    log(f"ours: full harvest of {n} records, batch size {params['batch_size']}")

    def profile(name: str) -> str | None:
        return os.path.join(params["profile"], name) if params.get("profile") else None

    before = len(provider_command(address, "requests"))
    with worker.step({}, profile_path=profile("full-harvest")) as result:
        result.update(run_harvest("ours full", n))
        result["records"] = result["total_entries"]
    result["requests"] = len(provider_command(address, "requests")) - before
    result["stored"] = worker.stored()
    steps["full"] = result

    changed = provider_command(address, "change", params["change_fraction"], 11)
    log(f"ours: incremental after {changed['changed']} records changed")
    before = len(provider_command(address, "requests"))
    with worker.step({}, profile_path=profile("incremental")) as result:
        result.update(run_harvest("ours incremental", changed["changed"]))
        result["records"] = result["total_entries"]
    result["requests"] = len(provider_command(address, "requests")) - before
    result["changed_at_provider"] = changed["changed"]
    steps["incremental"] = result

    steps["no_change_incremental"] = no_change_incremental(
        worker, address, "ours", target_sql_writes, search_writes_to_records
    )

    provider_command(address, "tick", 1)
    log(f"ours: full re-harvest of {n} records, nothing changed")
    before = len(provider_command(address, "requests"))
    with worker.step({}, profile_path=profile("full-reharvest")) as result:
        result.update(run_harvest("ours re-harvest", n, full=True))
        result["records"] = result["total_entries"]
    result["requests"] = len(provider_command(address, "requests")) - before
    result["target_sql_writes"] = target_sql_writes(result)
    result["search_writes"] = result.get("search_requests", {}).get("write", 0)
    result["stored"] = worker.stored()
    steps["full_reharvest"] = result
    return {"steps": steps}


def phase_batch(worker: PhaseWorker, params: dict[str, Any]) -> dict[str, Any]:
    """One full harvest at the batch size `batch_size` (one call per size of the sweep)."""
    worker.boot()
    worker.reset_storage()
    create_harvester(params["base_url"], params["batch_size"])
    log(f"batch size {params['batch_size']}: full harvest of {params['records']} records")
    with worker.step({}) as result:
        result.update(run_harvest(f"batch {params['batch_size']}", params["records"]))
        result["records"] = result["total_entries"]
    result["stored"] = worker.stored()
    return {"steps": {"full": result}}
