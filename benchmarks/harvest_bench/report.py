"""The printed report of a run, section by section (the ratios come from `summary`).

`results` is what the entry point writes with `--json`: `arguments`, `environment`,
`database`, `search`, `phases` (an outcome per phase; `batch`, `workers` and `rdm_workers`
hold one per batch size or worker count), `summary` and, with `--compare`, `compare`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from harvest_bench.files_report import print_files
from harvest_bench.formats_report import print_formats
from harvest_bench.journal_report import print_journal
from harvest_bench.matching_report import print_matching
from harvest_bench.settings import RDM_PHASES

Step = dict[str, Any]

# Columns of the CPU table: the CpuMeter's group and its short heading.
CPU_COLUMNS = (
    ("harvesting process", "worker"),
    ("postgresql", "postgres"),
    ("search server", "search"),
    ("provider process", "provider"),
    ("celery workers", "celery"),
    ("other processes (interference)", "other"),
)


def _fmt(value: Any, spec: str = ".0f") -> str:
    if value is None:
        return "-"
    return format(value, spec)


def _step(phases: dict[str, Any], phase: str, name: str) -> Step | None:
    """A step of a phase that runs once, or None when the phase did not run."""
    return phases.get(phase, {}).get("steps", {}).get(name)


def _full_steps_by_count(phases: dict[str, Any], phase: str) -> Iterator[tuple[str, Step]]:
    """The full-harvest step of every run of a repeated phase (batch size or worker count),
    in increasing order."""
    for count, outcome in sorted(phases.get(phase, {}).items(), key=lambda kv: int(kv[0])):
        yield count, outcome["steps"]["full"]


def _batch_spread(step: Step) -> str:
    spread = "+".join(str(b) for b in step.get("batches_per_worker", []))
    own = step.get("batches_written_by_the_run_itself", 0)
    tasks = sum((step.get("site_tasks") or {}).values())
    site = f"; the site's tasks run by the workers: {tasks}" if "site_tasks" in step else ""
    return f"  batches by worker: {spread or '-'}, by the run: {own}{site}"


def print_report(results: dict[str, Any], args: argparse.Namespace) -> None:
    """The whole report on stdout: header, measurements, CPU, targets, checks."""
    out = sys.stdout
    print_header(results, args, out)
    print_measurements(results, args, out)
    print_cpu(results, out)
    print_formats(results, out)
    print_files(results, out)
    print_journal(results, out)
    print_matching(results, out)
    print_targets(results, out)
    print_checks(results, out)
    out.flush()


def print_header(results: dict[str, Any], args: argparse.Namespace, out: TextIO) -> None:
    """The corpora, the code, the machine and the services; the package code of each phase."""
    env = results["environment"]
    dirty = f" + {len(env['dirty_files'])} uncommitted files" if env["dirty_files"] else ""
    rdm = [phase for phase in RDM_PHASES if phase in results["phases"]]
    plain = [phase for phase in results["phases"] if phase not in (*rdm, "files")]
    corpus = []
    if plain:
        corpus.append(
            f"N={args.records} oai_dc records, harvester batch size {args.batch_size}, "
            f"write-limit chunk {args.write_chunk}"
        )
    if rdm:
        corpus.append(
            f"RDM phases: N={args.rdm_records} oai_dc records into InvenioRDM, "
            f"harvester batch size {args.rdm_batch_size}"
            f"{', parent_id indexed (rdm_workers)' if getattr(args, 'rdm_parent_indexes', False) else ''}"
            f"{'' if getattr(args, 'rdm_without_access_cache', True) else ', ACCESS_CACHE on'}"
        )
    if "files" in results["phases"]:
        corpus.append(
            f"files phase: {args.file_records} OpenAIRE records with a file of "
            f"{args.file_size:,} bytes each, one with {args.big_file_size:,} bytes"
        )
    print(
        f"\nHarvest benchmark: {'; '.join(corpus)}; provider page size {args.page_size}"
        f"{', ACCESS_CACHE on' if args.access_cache else ''}\n"
        f"code {env['commit']}{dirty}; python {env['python']}; {env['cpus']} CPUs; "
        f"database {results['database']}; search {results['search']}\n"
        f"postgresql: {', '.join(f'{k} {v}' for k, v in env.get('postgresql', {}).items())}",
        file=out,
    )
    codes = {}
    for phase, outcome in results["phases"].items():
        if phase in ("batch", "workers", "rdm_workers", "rdm_workers_growth"):
            for size, item in outcome.items():
                codes.setdefault(item.get("code"), []).append(f"{phase} {size}")
        else:
            codes.setdefault(outcome.get("code"), []).append(phase)
    print(
        "package code measured: "
        + "; ".join(f"{code} ({', '.join(names)})" for code, names in codes.items()),
        file=out,
    )


def print_measurements(results: dict[str, Any], args: argparse.Namespace, out: TextIO) -> None:
    """One line per step: records, seconds, rate, SQL statements per record, peak RSS."""
    header = (
        f"{'measurement':<58} {'records':>8} {'seconds':>9} {'rec/s':>8} "
        f"{'SQL/rec':>7} {'RSS peak MB':>11}"
    )
    print("\n" + header + "\n" + "-" * len(header), file=out)

    def line(label: str, step: Step | None, note: str = "") -> None:
        if step is None:
            return
        print(
            f"{label:<58} {step.get('records', 0):>8} {_fmt(step['seconds'], '.2f'):>9} "
            f"{_fmt(step.get('records_per_second')):>8} "
            f"{_fmt(step.get('sql_per_record'), '.1f'):>7} "
            f"{_fmt(step.get('rss_peak_mb'), '.0f'):>11}{note}",
            file=out,
        )

    phases = results["phases"]
    line(
        "fetch limit: plain sickle ListRecords, every record read", _step(phases, "fetch", "sickle")
    )
    line(
        "  our reader: OAIClient.list_records + oai_dc transform",
        _step(phases, "fetch", "our_reader"),
    )
    line(
        f"write limit: create_or_update_many x{args.write_chunk} + bulk queue",
        _step(phases, "write", "create_or_update_many"),
    )
    line(
        "naive: service.create per record (commit + index each)",
        _step(phases, "naive", "create_each"),
    )
    line("ours: full harvest", _step(phases, "ours", "full"))
    inc = _step(phases, "ours", "incremental")
    if inc:
        line(f"ours: incremental after {inc['changed_at_provider']} records changed (1%)", inc)
    line("ours: incremental, nothing changed", _step(phases, "ours", "no_change_incremental"))
    line("ours: full re-harvest, nothing changed", _step(phases, "ours", "full_reharvest"))
    for size, step in _full_steps_by_count(phases, "batch"):
        line(f"ours: full harvest of {args.batch_records}, batch size {size}", step)

    for count, step in _full_steps_by_count(phases, "workers"):
        if int(count):
            label = f"fan-out: {args.worker_records}, {count} Celery worker process(es)"
            line(label, step, _batch_spread(step))
        else:
            line(f"fan-out baseline: {args.worker_records}, the run writes itself", step)

    line(
        "rdm: create + publish per record, the same service",
        _step(phases, "rdm", "create_publish_each"),
    )
    line("rdm: ours, full harvest (oai_dc_rdm, drafts adapter)", _step(phases, "rdm", "full"))
    line("rdm: ours, incremental, nothing changed", _step(phases, "rdm", "no_change_incremental"))
    line("rdm: ours, full re-harvest, nothing changed", _step(phases, "rdm", "full_reharvest"))
    for count, step in _full_steps_by_count(phases, "rdm_workers"):
        line(f"rdm: full harvest, {count} Celery worker process(es)", step, _batch_spread(step))
    for count, step in _full_steps_by_count(phases, "rdm_workers_growth"):
        line(f"rdm: full harvest, {count} Celery worker process(es), growth", step)
    for name, label in GROWN_STEPS:
        line(f"rdm_grown: full harvest into {label}", _step(phases, "rdm_grown", name))


GROWN_STEPS = (
    ("empty", "an empty site"),
    ("grown", "the grown site"),
    ("grown_indexed", "the grown site, parent_id indexed"),
)


def print_cpu(results: dict[str, Any], out: TextIO) -> None:
    """CPU seconds per process group during each step; a warning for disturbed steps."""
    print(
        "\nCPU seconds used during each step (2 cores = 2 CPU-s per wall second):\n"
        f"{'':<44}{'wall':>8}" + "".join(f"{short:>10}" for _, short in CPU_COLUMNS),
        file=out,
    )
    phases = results["phases"]
    labelled = [
        ("fetch limit (sickle)", _step(phases, "fetch", "sickle")),
        ("our reader", _step(phases, "fetch", "our_reader")),
        ("write limit", _step(phases, "write", "create_or_update_many")),
        ("naive", _step(phases, "naive", "create_each")),
        ("ours: full harvest", _step(phases, "ours", "full")),
        ("ours: incremental 1%", _step(phases, "ours", "incremental")),
        ("ours: full re-harvest", _step(phases, "ours", "full_reharvest")),
    ]
    for size, step in _full_steps_by_count(phases, "batch"):
        labelled.append((f"ours: batch size {size}", step))
    for count, step in _full_steps_by_count(phases, "workers"):
        labelled.append((f"fan-out: {count} worker process(es)", step))
    labelled += [
        ("rdm: create + publish each", _step(phases, "rdm", "create_publish_each")),
        ("rdm: ours, full harvest", _step(phases, "rdm", "full")),
        ("rdm: ours, full re-harvest", _step(phases, "rdm", "full_reharvest")),
    ]
    for count, step in _full_steps_by_count(phases, "rdm_workers"):
        labelled.append((f"rdm: {count} worker process(es)", step))
    for count, step in _full_steps_by_count(phases, "rdm_workers_growth"):
        labelled.append((f"rdm: {count} worker process(es), growth", step))
    for name, label in GROWN_STEPS:
        labelled.append((f"rdm_grown: {label}", _step(phases, "rdm_grown", name)))
    disturbed = []
    for label, step in labelled:
        if step and step.get("cpu_seconds"):
            cpu = step["cpu_seconds"]
            print(
                f"  {label:<42}{step['seconds']:>8.1f}"
                + "".join(f"{cpu.get(key, 0.0):>10.1f}" for key, _ in CPU_COLUMNS),
                file=out,
            )
            other = cpu.get("other processes (interference)", 0.0)
            # Other processes using more than a tenth of a core distort a step's numbers.
            if step["seconds"] > 1 and other > 0.1 * step["seconds"]:
                disturbed.append(label)
    if disturbed:
        print(
            f"  WARNING: other processes used the CPU during: {', '.join(disturbed)} "
            "(numbers disturbed; rerun on a quiet machine)",
            file=out,
        )


def _verdict(value: float | None, target: float) -> str:
    if value is None:
        return ""
    return "  met" if value >= target else "  NOT met"


def print_targets(results: dict[str, Any], out: TextIO) -> None:
    """The ratios against the targets of issue 5 (plain target), issue 12 (InvenioRDM) and
    issue 26 (InvenioRDM speed), the no-change incremental and the peak RSS (against
    `--compare`'s run)."""
    s = results["summary"]
    phases = results["phases"]
    rdm = [phase for phase in RDM_PHASES if phase in phases]
    # fetch alone is issue 26's (the reader against sickle): issue 5 needs a plain harvest.
    plain = [phase for phase in phases if phase not in rdm and phase != "fetch"]
    if plain:
        print("\nratios and targets (issue 5)", file=out)
        print(
            f"  full harvest / write limit      {_fmt(s['full_over_write_limit'], '.2f'):>7}"
            f"   target >= 0.90{_verdict(s['full_over_write_limit'], 0.9)}",
            file=out,
        )
        print(
            f"  full harvest / naive            {_fmt(s['full_over_naive'], '.2f'):>7}"
            f"   target >= 1.70{_verdict(s['full_over_naive'], 1.7)}",
            file=out,
        )
        print(
            f"  full re-harvest speedup         {_fmt(s['reharvest_speedup'], '.1f'):>7}"
            f"   target >= 50{_verdict(s['reharvest_speedup'], 50)}",
            file=out,
        )
        print(
            f"  full harvest / fetch limit      {_fmt(s['full_over_fetch_limit'], '.3f'):>7}",
            file=out,
        )
    if rdm:
        print("ratios and targets (issue 12, InvenioRDM)", file=out)
        print(
            f"  rdm full harvest / create+publish loop {_fmt(s['rdm_full_over_loop'], '.2f'):>7}"
            f"   target >= 0.90{_verdict(s['rdm_full_over_loop'], 0.9)}",
            file=out,
        )
        print(
            f"  rdm unchanged re-harvest speedup       {_fmt(s['rdm_reharvest_speedup'], '.1f'):>7}"
            f"   target >= 50{_verdict(s['rdm_reharvest_speedup'], 50)}",
            file=out,
        )
        print(
            f"  rdm 2 workers / 1 worker               "
            f"{_fmt(s['rdm_two_workers_over_one'], '.2f'):>7}"
            f"   target >= 1.50{_verdict(s['rdm_two_workers_over_one'], 1.5)}",
            file=out,
        )
    if rdm or "fetch" in phases:
        print("ratios and targets (issue 26, InvenioRDM speed)", file=out)
    if rdm:
        print(
            f"  rdm full harvest / create+publish loop {_fmt(s['rdm_full_over_loop'], '.2f'):>7}"
            f"   target >= 1.50{_verdict(s['rdm_full_over_loop'], 1.5)}",
            file=out,
        )
        hours = s.get("rdm_hours_for_200000")
        print(
            f"  200,000 records at the best RDM rate   {_fmt(hours, '.1f'):>7} h"
            f" ({_fmt(s.get('rdm_best_records_per_second'), '.1f')} records/s)"
            f"   target <= 3 h{'' if hours is None else '  met' if hours <= 3 else '  NOT met'}",
            file=out,
        )
        if s.get("rdm_growth_records"):
            ratio, grown_hours = (
                s["rdm_growth_time_per_record_ratio"],
                s["rdm_growth_hours_for_200000"],
            )
            print(
                f"  time a record at {s['rdm_growth_records']:,} / at N "
                f"({s['rdm_growth_workers']} worker(s)) {_fmt(ratio, '.2f'):>7}"
                f"   target <= 1.15{'' if ratio is None else '  met' if ratio <= 1.15 else '  NOT met'}",
                file=out,
            )
            print(
                f"  200,000 records at the rate of {s['rdm_growth_records']:,}   "
                f"{_fmt(grown_hours, '.1f'):>7} h"
                f" ({_fmt(s.get('rdm_growth_records_per_second'), '.1f')} records/s)"
                f"   target <= 3 h{'' if grown_hours is None else '  met' if grown_hours <= 3 else '  NOT met'}",
                file=out,
            )
            growth = s.get("rdm_growth_workers_rss_growth_mb")
            print(
                f"  a Celery worker's peak RSS, N to {s['rdm_growth_records']:,}  "
                f"{_fmt(growth, '+.0f'):>7} MB"
                f"   target < +50 MB{'' if growth is None else '  met' if growth < 50 else '  NOT met'}",
                file=out,
            )
        print(
            f"  rdm unchanged re-harvest speedup       {_fmt(s['rdm_reharvest_speedup'], '.1f'):>7}"
            f"   target >= 100{_verdict(s['rdm_reharvest_speedup'], 100)}",
            file=out,
        )
    if "rdm_grown" in phases:
        size = f"{results['arguments']['rdm_site_records']:,}"
        print(f"  rdm_grown: a site of {size} records / an empty one (rates)", file=out)
        for key, label in (
            ("rdm_grown_over_empty", "as InvenioRDM creates it"),
            ("rdm_grown_indexed_over_empty", "with the parent_id indexes"),
        ):
            print(f"    {label:<36}{_fmt(s.get(key), '.2f'):>7}", file=out)
        for key, label in (
            ("rdm_grown_hours_for_200000", "as InvenioRDM creates it"),
            ("rdm_grown_indexed_hours_for_200000", "with the parent_id indexes"),
        ):
            hours = s.get(key)
            print(
                f"  200,000 records, one process, {label}: {_fmt(hours, '.1f')} h (the mean "
                f"of the empty and the grown site's time a record)",
                file=out,
            )
    for count, outcome in phases.get("rdm_workers", {}).items():
        step = outcome["steps"]["full"]
        if "celery_rss_peak_mb" not in step:
            continue
        starts = min(each["start_mb"] for each in step["celery_rss_mb"])
        print(
            f"  Celery workers' peak RSS, {count} worker(s): {step['celery_rss_peak_mb']:.0f} MB "
            f"(at the start {starts:.0f} MB; the most one grew: "
            f"{step['celery_rss_growth_mb']:+.0f} MB)",
            file=out,
        )
        other = (results.get("compare") or {}).get("rdm_workers_rss_peak_mb", {}).get(count)
        if other is not None:
            delta = step["celery_rss_peak_mb"] - other
            print(
                f"    vs N={results['compare']['rdm_records']}: {delta:+.0f} MB"
                f"   target <= +50 MB{'  met' if delta <= 50 else '  NOT met'}",
                file=out,
            )
    if "fetch" in phases:
        print(
            f"  our reader / plain sickle (fetch)      {_fmt(s.get('reader_over_sickle'), '.2f'):>7}"
            f"   target >= 0.90{_verdict(s.get('reader_over_sickle'), 0.9)}",
            file=out,
        )
    for phase in ("ours", "rdm"):
        _print_no_change(phase, _step(phases, phase, "no_change_incremental"), out)
    full = _step(phases, "ours", "full")
    if full:
        print(
            f"  peak RSS of the harvesting process during the full harvest: "
            f"{full['rss_peak_mb']:.0f} MB (at its start {full['rss_start_mb']:.0f} MB; "
            f"app booted {phases['ours']['process']['boot_rss_mb']:.0f} MB; "
            f"ru_maxrss of the worker {phases['ours']['process']['ru_maxrss_mb']:.0f} MB)",
            file=out,
        )
        if (results.get("compare") or {}).get("rss_peak_mb") is not None:
            other = results["compare"]
            delta = full["rss_peak_mb"] - other["rss_peak_mb"]
            print(
                f"  peak RSS vs N={other['records']}: {delta:+.0f} MB   target <= +50 MB"
                f"{'  met' if delta <= 50 else '  NOT met'}",
                file=out,
            )


def _print_no_change(phase: str, nc: Step | None, out: TextIO) -> None:
    """The no-change incremental's requests and writes against the target (2 requests, none)."""
    if not nc:
        return
    ok = (
        nc["requests"] == 2
        and nc["target_sql_writes"] == 0
        and nc["search_writes"] == 0
        and not (nc["inserted_entries"] or nc["updated_entries"])
    )
    print(
        f"  {phase}: no-change incremental: {nc['requests']} OAI-PMH requests "
        f"({', '.join(str(v) for v in nc['request_verbs'])}), "
        f"{nc['target_sql_writes']} SQL writes to the target's tables, "
        f"{nc['search_writes']} search write requests, "
        f"{(nc['inserted_entries'] or 0) + (nc['updated_entries'] or 0)} records written"
        f"   target: 2 requests, no writes{'  met' if ok else '  NOT met'}",
        file=out,
    )


def print_checks(results: dict[str, Any], out: TextIO) -> None:
    """What each step left stored (RDM: published, drafts, tombstones), failed runs, errors."""
    phases = results["phases"]
    rdm_checks = (
        [(f"rdm.{name}", step) for name, step in phases.get("rdm", {}).get("steps", {}).items()]
        + [
            (f"{phase}.{count}", outcome["steps"]["full"])
            for phase in ("rdm_workers", "rdm_workers_growth")
            for count, outcome in phases.get(phase, {}).items()
        ]
        + [
            (f"rdm_grown.{name}", step)
            for name, step in phases.get("rdm_grown", {}).get("steps", {}).items()
        ]
    )
    for label, step in rdm_checks:
        stored = step.get("stored") or {}
        queued = step.get("queued_documents")
        print(
            f"  check {label}: {stored.get('published')} published records, "
            f"{stored.get('open_drafts')} open drafts, {stored.get('tombstones')} tombstones"
            + (f"; indexed again from the indexers' queues: {queued}" if queued is not None else "")
            + (f"; run {step['run_status']}" if step.get("run_status") else "")
            + (f"; errors {step['first_errors']}" if step.get("first_errors") else ""),
            file=out,
        )
    for phase in ("ours", "write"):
        for name, step in phases.get(phase, {}).get("steps", {}).items():
            stored = step.get("stored")
            if stored:
                print(
                    f"  check {phase}.{name}: {stored['db_records']} live records in the "
                    f"database, {stored['index_documents']} documents in the index",
                    file=out,
                )
        for name, step in phases.get(phase, {}).get("steps", {}).items():
            if step.get("run_status") and step["run_status"] != "SUCCESS":
                print(
                    f"  WARNING {phase}.{name}: run {step['run_status']}: {step['run_message']}",
                    file=out,
                )
    write = _step(phases, "write", "create_or_update_many")
    if write and write.get("errors"):
        print(
            f"  WARNING write limit: {write['errors']} records failed: {write['first_errors']}",
            file=out,
        )
