"""The run journal's cost (phase `journal`, issue 37: undo a run): a full harvest and an
incremental after changes, each without a journal (OAI_HARVESTER_UNDO_RUNS = 0) and with one,
on fresh storage; then the undo of the journaled incremental run, planned and done."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvest_bench.harness.provider import provider_command
from harvest_bench.phases.shared import HARVESTER_ID, create_harvester, run_harvest
from harvest_bench.settings import log

if TYPE_CHECKING:
    from harvest_bench.harness.worker import PhaseWorker

UNDO_RUNS = 20
"""The journals kept (config.py's default)."""


def phase_journal(worker: PhaseWorker, params: dict[str, Any]) -> dict[str, Any]:
    from flask import current_app

    worker.boot()
    address = params["provider_address"]
    n = params["records"]
    steps: dict[str, Any] = {}
    # Each pass changes its own records (a seed of its own): the same seed would write the
    # second pass's records with the content the first pass gave them, changing nothing.
    for label, keep, seed in (("off", 0, 21), ("on", UNDO_RUNS, 22)):
        worker.reset_storage()
        current_app.config["OAI_HARVESTER_UNDO_RUNS"] = keep
        create_harvester(params["base_url"], params["batch_size"])
        log(f"journal {label}: full harvest of {n} records")
        with worker.step({}) as result:
            result.update(run_harvest(f"journal {label} full", n))
            result["records"] = result["total_entries"]
        steps[f"full_{label}"] = result
        changed = provider_command(address, "change", params["change_fraction"] * 5, seed)
        log(f"journal {label}: incremental after {changed['changed']} records changed")
        with worker.step({}) as result:
            result.update(run_harvest(f"journal {label} incremental", changed["changed"]))
            result["records"] = result["total_entries"]
        steps[f"incremental_{label}"] = result

    run_id = steps["incremental_on"]["run_id"]
    log(f"journal: undo of the incremental run {run_id}, planned, then done")
    with worker.step({}) as result:
        result.update(_plan(run_id))
        result["records"] = result["steps"]
    steps["undo_plan"] = result
    with worker.step({}) as result:
        result.update(run_harvest("journal undo", None, undo=run_id))
        result["records"] = steps["incremental_on"]["records"]
    steps["undo"] = result
    steps["summary"] = _summary(steps)
    return {"steps": steps}


def _plan(run_id: str) -> dict[str, Any]:
    from invenio_access.permissions import system_identity

    from oarepo_oaipmh_harvester.proxies import current_harvester_service
    from oarepo_oaipmh_harvester.services.undo import undo_plan

    plan = undo_plan(current_harvester_service, system_identity, HARVESTER_ID, run_id)
    return {"steps": len(plan["steps"]), "counts": plan["counts"]}


def _summary(steps: dict[str, Any]) -> dict[str, Any]:
    def per_record(name: str) -> float:
        step = steps[name]
        return step["seconds"] / max(step["records"], 1)

    return {
        "full_on_over_off": per_record("full_on") / per_record("full_off"),
        "incremental_on_over_off": per_record("incremental_on") / per_record("incremental_off"),
        "full_ms_per_record": {k: 1000 * per_record(f"full_{k}") for k in ("off", "on")},
        "incremental_ms_per_record": {
            k: 1000 * per_record(f"incremental_{k}") for k in ("off", "on")
        },
        "undo_ms_per_record": 1000 * per_record("undo"),
        "undo_plan_ms_per_record": 1000 * per_record("undo_plan"),
        "sql_per_record": {
            name: steps[name].get("sql_per_record")
            for name in ("full_off", "full_on", "incremental_off", "incremental_on")
        },
    }
