"""What several phases do: read the corpus transformed, create the harvester, run a harvest."""

from __future__ import annotations

import json
import time
from typing import Any

from harvest_bench.settings import HARVESTER_ID, TARGET, log


def read_transformed(base_url: str, limit: int | None = None, transformer: Any = None) -> list[str]:
    """The provider's live records, transformed (by default by the oai_dc transformer), as
    compact JSON."""
    from oarepo_oaipmh_harvester.harvest.transformers import DublinCoreTransformer
    from oarepo_oaipmh_harvester.protocol.client import OAIClient

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


def create_harvester(base_url: str, batch_size: int, rdm: bool = False) -> None:
    """The benchmark's harvester (`HARVESTER_ID`): oai_dc into the sample target, or with
    `rdm` into InvenioRDM's records service through `oai_dc_rdm`."""
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
    current_harvester_service.create(system_identity, data)


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
        "run_status": str(getattr(run.status, "name", run.status)),
        "run_message": run.message,
        "total_entries": run.total_entries,
        "inserted_entries": run.inserted_entries,
        "updated_entries": run.updated_entries,
        "errored_entries": run.errored_entries,
    }
