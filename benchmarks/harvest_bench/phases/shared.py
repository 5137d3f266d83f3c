"""What several phases do: read the corpus transformed, create the harvester, run a harvest."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from harvest_bench.harness.provider import provider_command
from harvest_bench.settings import HARVESTER_ID, TARGET, log

if TYPE_CHECKING:
    from collections.abc import Callable

    from harvest_bench.harness.worker import PhaseWorker


def read_transformed(base_url: str, limit: int | None = None, transformer: Any = None) -> list[str]:
    """The provider's live records, transformed (by default by the oai_dc transformer), as
    compact JSON."""
    from oarepo_oaipmh_harvester.protocol.client import OAIClient
    from oarepo_oaipmh_harvester.transformers import DublinCoreTransformer

    transformer = transformer or DublinCoreTransformer()
    out: list[str] = []
    with OAIClient(base_url) as client:
        for record in client.list_records("oai_dc"):
            if record.deleted:
                continue
            out.append(json.dumps(transformer.transform(record), separators=(",", ":")))
            if limit is not None and len(out) >= limit:
                break
    return out


def create_harvester(base_url: str, batch_size: int, rdm: bool = False, **options: Any) -> None:
    """The benchmark's harvester (`HARVESTER_ID`): oai_dc into the sample target, or with
    `rdm` into InvenioRDM's records service through `oai_dc_rdm`; `options`: more of its
    fields (``match_on``)."""
    from invenio_access.permissions import system_identity

    from oarepo_oaipmh_harvester.proxies import current_harvester_service

    data = {
        "id": HARVESTER_ID,
        "name": "Benchmark provider",
        "base_url": base_url,
        "metadata_prefix": "oai_dc",
        "target": TARGET,
        "batch_size": batch_size,
    }
    if rdm:
        import rdm_target

        data.update(target=rdm_target.TARGET, transformer=rdm_target.TRANSFORMER)
    current_harvester_service.create(system_identity, {**data, **options})


def run_harvest(label: str, total_hint: int | None, **kwargs: Any) -> dict[str, Any]:
    """One run through the harvester service, as `invenio oai harvest` does; its counts.

    `label` and `total_hint` are for the progress log (every 30 s); `kwargs` go to
    `harvest_in_process` (`full=True`: a full harvest).
    """
    from invenio_access.permissions import system_identity

    from oarepo_oaipmh_harvester.proxies import current_harvest_runs_service

    started = time.perf_counter()
    last = [started]

    def progress(update: Any) -> None:
        now = time.perf_counter()
        if now - last[0] >= 30:
            last[0] = now
            done = update.counts.total
            log(f"{label}: {done}/{total_hint or '?'} records, {done / (now - started):.0f}/s")

    run = current_harvest_runs_service.harvest_in_process(
        system_identity, HARVESTER_ID, progress=progress, **kwargs
    )
    return {
        "run_id": str(run.id),
        "run_status": str(getattr(run.status, "name", run.status)),
        "run_message": run.message,
        "total_entries": run.total_entries,
        "inserted_entries": run.inserted_entries,
        "updated_entries": run.updated_entries,
        "errored_entries": run.errored_entries,
    }


def no_change_incremental(
    worker: PhaseWorker,
    address: Any,
    label: str,
    target_sql_writes: Callable[[dict[str, Any]], int],
    search_writes: Callable[[dict[str, Any]], int],
) -> dict[str, Any]:
    """A minute passes with nothing new at the provider; an incremental run then: its
    requests (the target: Identify and one ListRecords) and what it wrote to the target."""
    provider_command(address, "tick", 1)
    log(f"{label}: incremental, nothing changed")
    requests_before = provider_command(address, "requests")
    with worker.step({}) as result:
        result.update(run_harvest(f"{label} no-change", 0))
        result["records"] = result["total_entries"]
    requests = provider_command(address, "requests")[len(requests_before) :]
    result["requests"] = len(requests)
    result["request_verbs"] = [item.get("verb") for item in requests]
    result["target_sql_writes"] = target_sql_writes(result)
    result["search_writes"] = search_writes(result)
    return result


def search_writes_to_records(result: dict[str, Any]) -> int:
    """Write requests to the search server other than the run's log lines (invenio-jobs
    writes those to its job-logs index)."""
    writes = result.get("search_writes_by_index", {})
    return sum(count for index, count in writes.items() if "job-logs" not in index)
