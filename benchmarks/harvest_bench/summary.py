"""The summary of a run (its JSON `summary`: the ratios the issues set targets for) and the
figures of an earlier run that `--compare` reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def load_comparison(path: str) -> dict[str, Any]:
    """The N and the peak RSS of an earlier run's JSON (`--compare`): the full harvest's, and
    the Celery workers' of each RDM workers step."""
    other = json.loads(Path(path).read_text())
    phases = other["phases"]
    other_full = phases.get("ours", {}).get("steps", {}).get("full")
    return {
        "records": other["arguments"]["records"],
        "rdm_records": other["arguments"].get("rdm_records"),
        "rss_peak_mb": other_full["rss_peak_mb"] if other_full else None,
        "rdm_workers_rss_peak_mb": _workers_rss(phases),
    }


def _workers_rss(phases: dict[str, Any]) -> dict[str, float]:
    """The largest peak RSS of a Celery worker in each RDM workers step, by worker count."""
    return {
        count: outcome["steps"]["full"]["celery_rss_peak_mb"]
        for count, outcome in phases.get("rdm_workers", {}).items()
        if "celery_rss_peak_mb" in outcome["steps"]["full"]
    }


def _rate(step: dict[str, Any] | None) -> float | None:
    return step.get("records_per_second") if step else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def _growth(results: dict[str, Any], rdm_workers: dict[str, Any]) -> dict[str, Any]:
    """The run's growth step (`--rdm-growth-records`) against its rdm_workers step with as
    many workers: the time a record, the hours it gives for 200,000, the workers' memory."""
    growth = results["phases"].get("rdm_workers_growth") or {}
    if not growth:
        return {}
    count, outcome = next(iter(growth.items()))
    grown, base = outcome["steps"]["full"], rdm_workers.get(count)
    rate = _rate(grown)
    rss = grown.get("celery_rss_peak_mb"), (base or {}).get("celery_rss_peak_mb")
    return {
        "rdm_growth_records": grown.get("records"),
        "rdm_growth_workers": int(count),
        "rdm_growth_time_per_record_ratio": _ratio(_rate(base), rate),
        "rdm_growth_records_per_second": rate,
        "rdm_growth_hours_for_200000": 200_000 / rate / 3600 if rate else None,
        "rdm_growth_workers_rss_growth_mb": rss[0] - rss[1] if all(rss) else None,
    }


def build_summary(results: dict[str, Any]) -> dict[str, Any]:
    """The ratios the issues set targets for (JSON `summary`)."""
    steps = {}
    for phase, outcome in results["phases"].items():
        for name, step in outcome.get("steps", {}).items():
            steps[f"{phase}.{name}"] = step
    full = steps.get("ours.full")
    reharvest = steps.get("ours.full_reharvest")
    no_change = steps.get("ours.no_change_incremental")
    summary: dict[str, Any] = {
        "full_over_write_limit": _ratio(
            _rate(full), _rate(steps.get("write.create_or_update_many"))
        ),
        "full_over_naive": _ratio(_rate(full), _rate(steps.get("naive.create_each"))),
        "full_over_fetch_limit": _ratio(_rate(full), _rate(steps.get("fetch.sickle"))),
        "reharvest_speedup": (
            full["seconds"] / reharvest["seconds"] if full and reharvest else None
        ),
        "full_harvest_peak_rss_mb": full["rss_peak_mb"] if full else None,
    }
    rdm_full, rdm_loop = steps.get("rdm.full"), steps.get("rdm.create_publish_each")
    rdm_reharvest = steps.get("rdm.full_reharvest")
    rdm_workers = {
        count: outcome["steps"]["full"]
        for count, outcome in results["phases"].get("rdm_workers", {}).items()
    }
    summary["rdm_full_over_loop"] = _ratio(_rate(rdm_full), _rate(rdm_loop))
    summary["rdm_reharvest_speedup"] = (
        rdm_full["seconds"] / rdm_reharvest["seconds"] if rdm_full and rdm_reharvest else None
    )
    summary["rdm_two_workers_over_one"] = _ratio(
        _rate(rdm_workers.get("2")), _rate(rdm_workers.get("1"))
    )
    summary["reader_over_sickle"] = _ratio(
        _rate(steps.get("fetch.our_reader")), _rate(steps.get("fetch.sickle"))
    )
    summary["rdm_workers_rss_peak_mb"] = _workers_rss(results["phases"])
    rdm_rates = [_rate(step) for step in (rdm_full, *rdm_workers.values())]
    summary["rdm_best_records_per_second"] = max(filter(None, rdm_rates), default=None)
    summary["rdm_hours_for_200000"] = (
        200_000 / summary["rdm_best_records_per_second"] / 3600
        if summary["rdm_best_records_per_second"]
        else None
    )
    summary.update(_growth(results, rdm_workers))
    empty, grown, grown_indexed = (
        steps.get(f"rdm_grown.{name}") for name in ("empty", "grown", "grown_indexed")
    )
    for key, step in (("rdm_grown", grown), ("rdm_grown_indexed", grown_indexed)):
        summary[f"{key}_over_empty"] = _ratio(_rate(step), _rate(empty))
        # A first harvest's record costs what the site holds by then: from nothing to the
        # grown size, taken as linear between the two measured ends.
        summary[f"{key}_hours_for_200000"] = (
            200_000 * (1 / _rate(empty) + 1 / _rate(step)) / 2 / 3600
            if _rate(empty) and _rate(step)
            else None
        )
    for prefix, step in (("", no_change), ("rdm_", steps.get("rdm.no_change_incremental"))):
        if step:
            summary[f"{prefix}no_change_requests"] = step["requests"]
            summary[f"{prefix}no_change_writes"] = {
                "target_sql": step["target_sql_writes"],
                "search": step["search_writes"],
                "entries": (step["inserted_entries"] or 0) + (step["updated_entries"] or 0),
            }
    return summary
