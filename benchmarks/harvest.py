"""Harvest benchmark (issue 5): our harvester next to the fetch limit, the write limit and naive.

    ./run.sh bench [--records 20000] [--page-size 100] [--batch-size 100]
                   [--naive-sample 2000] [--batch-sizes 50,100,200,500] [--batch-records 5000]
                   [--phases fetch,write,naive,ours,batch,workers,rdm,rdm_workers]
                   [--worker-counts 0,1,2]
                   [--worker-records 5000] [--profile DIR] [--json FILE]
                   [--compare FILE] [--rdm-records 300] [--rdm-batch-size 100]
                   [--rdm-worker-counts 1,2] [--rdm-site-records 200000]
                   [--file-records 40] [--file-size 2097152] [--big-file-size 1073741824]

One run serves N synthetic oai_dc records (`Corpus.generate(N)`) from the bundled provider
(`OAIPMHProvider`) and measures, side by side:

- fetch limit: plain sickle following the token chain, touching every record; next to it our own
  reader (`OAIClient.list_records` + the `oai_dc` transformer, no writes);
- write limit: the transformed records written straight through the sample target service with
  `create_or_update_many` in chunks, in a `UnitOfWork`, bulk indexing through invenio-indexer's
  bulk queue on an in-process `memory://` kombu broker, processed explicitly
  (`indexer.process_bulk_queue()`) after every chunk and included in the time;
- naive: one `service.create` per record (its own commit and its own index request), on a sample;
- ours: a full harvest, an incremental run after 1% of the records changed at the provider, an
  incremental run that finds nothing (OAI-PMH requests and writes counted) and a full re-harvest
  where nothing changed, all through `harvest_in_process` (an invenio-jobs run, as
  `invenio oai harvest` does);
- batch sizes: full-harvest throughput per batch size on a smaller corpus;
- workers: a full harvest (`--worker-records`, default 5000) started as an invenio-jobs run
  whose batches are written by 0, 1 and 2 Celery worker processes (`--worker-counts`; 0: the
  run writes them itself), solo pool, on the Redis at `OAI_BENCH_BROKER`
  (redis://127.0.0.1:6379/9, flushed first); the workers' CPU is its own column.
- rdm (needs the `rdm` extra; `benchmarks/rdm_target.py`): `--rdm-records` (default 300)
  records into InvenioRDM's own records service with `oai_dc_rdm`: a per-record
  `create` + `publish` loop through the same service (records read and transformed before,
  not timed; three records published and wiped first so that neither side runs cold), our
  full harvest into a fresh database, and a full re-harvest where nothing changed;
- rdm_workers: the same full RDM harvest written by 1 and 2 Celery worker processes
  (`--rdm-worker-counts`), whose app is `oaiharvest_test_support.rdm_celery`;
- rdm_grown (by name only): the same full RDM harvest into an empty site, into a site grown in
  SQL to `--rdm-site-records` records (default 200000), and into that site with the
  `parent_id` indexes: what a record costs at the end of a 200,000-record harvest, measured.
- files (issue 36; `harvest_bench.phases.files`): `--file-records` OpenAIRE records, each
  naming one file of `--file-size` bytes the provider serves: a plain `requests` download of
  the files, a harvest with `files` none and one with `files` copy into InvenioRDM (the files'
  part: copy less none), and a harvest of one record with a file of `--big-file-size` bytes
  while VmRSS is sampled every 50 ms.

Processes: the provider runs in its own process (as a remote provider would; in the harvesting
process it would compete for the GIL), the search server (a real OpenSearch node unless
`--search osmem` or SEARCH_HOSTS) is its own process, and every phase runs in
a fresh worker process that boots the Invenio API app, drops and recreates the database schema
and the search indices, and reports its own memory. So "peak RSS" is the harvesting process
alone (Invenio app included, provider and search server excluded), sampled every 20 ms with
psutil during each step, next to `ru_maxrss` of the whole worker.

The database is `SQLALCHEMY_DATABASE_URI` (run.sh: PostgreSQL `oaiharvest_bench`), created
fresh for the run and dropped at the end (`--keep-db` keeps it).

This file parses the command line and runs the phases in order; the processes, the phases and
the report are in the package `harvest_bench` beside it (its docstring has the map).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from harvest_bench.harness.environment import environment
from harvest_bench.harness.provider import ProviderProcess
from harvest_bench.harness.services import (
    drop_database_if_exists,
    exclusive_database,
    fresh_database,
    postgres_settings,
    start_search,
)
from harvest_bench.harness.worker import run_in_fresh_process
from harvest_bench.report import print_report
from harvest_bench.settings import (
    DEFAULT_DB,
    DEFAULT_PHASES,
    PHASES,
    RDM_PHASES,
    SEPARATE_PROVIDER_PHASES,
    log,
)
from harvest_bench.summary import build_summary, load_comparison


def build_parser() -> argparse.ArgumentParser:
    """The command line (`./run.sh bench --help`); every option lands in the JSON `arguments`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", "-n", type=int, default=20_000, help="N (default 20000)")
    parser.add_argument("--page-size", type=int, default=100, help="provider page size")
    parser.add_argument("--batch-size", type=int, default=100, help="harvester batch size")
    parser.add_argument(
        "--write-chunk", type=int, default=None, help="create_or_update_many chunk (batch size)"
    )
    parser.add_argument("--naive-sample", type=int, default=2000)
    parser.add_argument("--batch-sizes", default="50,100,200,500")
    parser.add_argument("--batch-records", type=int, default=5000, help="N of the batch-size sweep")
    parser.add_argument("--change-fraction", type=float, default=0.01)
    parser.add_argument(
        "--worker-counts",
        default="0,1,2",
        help="Celery worker processes for the workers phase (0: the run writes itself)",
    )
    parser.add_argument("--worker-records", type=int, default=5000, help="N of the workers phase")
    parser.add_argument(
        "--rdm-records", type=int, default=300, help="N of the RDM phases (default 300)"
    )
    parser.add_argument(
        "--rdm-batch-size",
        type=int,
        default=100,
        help="the harvester's batch size in the RDM phases (a harvester's default, 100; each "
        "transaction into RDM has at most OAI_HARVESTER_DRAFTS_LARGEST_BATCH records)",
    )
    parser.add_argument(
        "--rdm-worker-counts", default="1,2", help="Celery worker processes of rdm_workers"
    )
    parser.add_argument(
        "--rdm-growth-records",
        type=int,
        default=None,
        metavar="M",
        help="rdm_workers: then write M records with the most workers too, for the per-record "
        "growth from N to M and the workers' memory (issue 26: M=5000 against N=2000)",
    )
    parser.add_argument(
        "--rdm-parent-indexes",
        action="store_true",
        help="rdm_workers: create the parent_id indexes a run's log asks a site for first",
    )
    parser.add_argument(
        "--format-records",
        type=int,
        default=100,
        help="recorded real records of each format in the formats phase (default 100)",
    )
    parser.add_argument(
        "--file-records",
        type=int,
        default=40,
        help="records of the files phase, each with one file (default 40)",
    )
    parser.add_argument(
        "--file-size",
        type=int,
        default=2 * 2**20,
        help="bytes of each file of the files phase's throughput steps (default 2 MiB)",
    )
    parser.add_argument(
        "--big-file-size",
        type=int,
        default=2**30,
        help="bytes of the one file of the files phase's memory step (default 1 GiB)",
    )
    parser.add_argument(
        "--rdm-site-records",
        type=int,
        default=200_000,
        help="records the grown site of rdm_grown holds before its harvest (default 200000)",
    )
    parser.add_argument("--phases", default=",".join(DEFAULT_PHASES), help=",".join(PHASES))
    parser.add_argument(
        "--profile", metavar="DIR", help="profile the full harvest (numbers then not comparable)"
    )
    parser.add_argument("--profiler", choices=("py-spy", "pyinstrument"), default=None)
    parser.add_argument("--json", metavar="FILE", help="write all results as JSON")
    parser.add_argument("--compare", metavar="FILE", help="JSON of a run at another N (RSS)")
    parser.add_argument(
        "--access-cache",
        action="store_true",
        help="set ACCESS_CACHE (invenio-access caches permission look-ups) in every phase",
    )
    parser.add_argument(
        "--rdm-without-access-cache",
        action="store_true",
        help="the RDM phases without ACCESS_CACHE (invenio-app-rdm sets it; the results before "
        "2026-12-04 were measured without it)",
    )
    parser.add_argument(
        "--search",
        choices=("opensearch", "osmem"),
        default="opensearch",
        help="search server started for the run unless SEARCH_HOSTS is set: a real OpenSearch "
        "node (default) or osmem-server (the imitation the results before 2026-12-04 used)",
    )
    parser.add_argument("--keep-db", action="store_true")
    parser.add_argument(
        "--quiet-wait",
        type=float,
        default=900.0,
        metavar="SECONDS",
        help="before each phase wait up to this long for the machine to be idle (0: never)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the chosen phases, print the report, write the JSON (`--json`)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.write_chunk = args.write_chunk or args.batch_size
    phases = [name.strip() for name in args.phases.split(",") if name.strip()]
    unknown = set(phases) - set(PHASES)
    if unknown:
        parser.error(f"unknown phases {sorted(unknown)}")
    batch_sizes = [int(size) for size in args.batch_sizes.split(",") if size.strip()]

    database_uri = os.environ.get("SQLALCHEMY_DATABASE_URI", DEFAULT_DB)
    results: dict[str, Any] = {
        "arguments": vars(args),
        "environment": environment(),
        "database": database_uri.split("@")[-1],
        "phases": {},
    }
    if args.compare:
        results["compare"] = load_comparison(args.compare)

    with exclusive_database(database_uri):
        run_phases(args, phases, batch_sizes, database_uri, results)
    results["summary"] = build_summary(results)
    print_report(results, args)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
        log(f"results written to {args.json}")
    return 0


def _counts(option: str) -> list[int]:
    """The worker counts of a comma-separated option."""
    return [int(count) for count in option.split(",") if count.strip()]


def _provider_params(provider: ProviderProcess) -> dict[str, Any]:
    """What a phase needs to reach its provider: the OAI-PMH URL, the control listener, the pid."""
    return {
        "base_url": provider.base_url,
        "provider_address": provider.address,
        "provider_pid": provider.process.pid,
    }


def run_phases(
    args: argparse.Namespace,
    phases: list[str],
    batch_sizes: list[int],
    database_uri: str,
    results: dict[str, Any],
) -> None:
    """Start the search server, the fresh database and the providers; run every phase (each
    batch size, each worker count) in a fresh process; stop and drop everything after."""
    server = None
    providers: list[ProviderProcess] = []

    def start_provider(records: int, file_size: int | None = None) -> ProviderProcess:
        provider = ProviderProcess(records, args.page_size, file_size)
        providers.append(provider)
        return provider

    def run(phase: str, params: dict[str, Any]) -> dict[str, Any]:
        return run_in_fresh_process(phase, params, args.quiet_wait)

    try:
        server, search_hosts, results["search"] = start_search(args.search)
        log(f"fresh database {results['database']}")
        fresh_database(database_uri)
        results["environment"]["postgresql"] = postgres_settings(database_uri)
        common = {
            "access_cache": args.access_cache,
            "search": "hosts" if "SEARCH_HOSTS" in os.environ else args.search,
            "search_hosts": search_hosts,
            "database_uri": database_uri,
            "search_pid": server.pid if server is not None else None,
        }

        main_phases = [phase for phase in phases if phase not in SEPARATE_PROVIDER_PHASES]
        if main_phases:
            log(f"provider: generating {args.records} records")
            provider = start_provider(args.records)
            params = {
                **common,
                **_provider_params(provider),
                "records": args.records,
                "batch_size": args.batch_size,
                "write_chunk": args.write_chunk,
                "naive_sample": args.naive_sample,
                "change_fraction": args.change_fraction,
                "profile": os.path.abspath(args.profile) if args.profile else None,
                "profiler": args.profiler,
            }
            for phase in main_phases:
                log(f"phase {phase}")
                results["phases"][phase] = run(phase, params)
        if "batch" in phases:
            log(f"provider: generating {args.batch_records} records for the batch-size sweep")
            small = start_provider(args.batch_records)
            results["phases"]["batch"] = {}
            for size in batch_sizes:
                params = {
                    **common,
                    **_provider_params(small),
                    "records": args.batch_records,
                    "batch_size": size,
                }
                results["phases"]["batch"][str(size)] = run("batch", params)
        if "workers" in phases:
            log(f"provider: generating {args.worker_records} records for the workers phase")
            fan = start_provider(args.worker_records)
            results["phases"]["workers"] = {}
            for count in _counts(args.worker_counts):
                params = {
                    **common,
                    **_provider_params(fan),
                    "records": args.worker_records,
                    "batch_size": args.batch_size,
                    "worker_processes": count,
                }
                results["phases"]["workers"][str(count)] = run("workers", params)
        rdm_phases = [phase for phase in phases if phase in RDM_PHASES]
        if rdm_phases:
            log(f"provider: generating {args.rdm_records} records for the RDM phases")
            rdm_provider = start_provider(args.rdm_records)
            rdm_params = {
                **common,
                "rdm": True,
                **_provider_params(rdm_provider),
                "records": args.rdm_records,
                "batch_size": args.rdm_batch_size,
                # invenio-app-rdm sets ACCESS_CACHE: the RDM phases run as its sites do.
                "access_cache": not args.rdm_without_access_cache,
                "parent_indexes": args.rdm_parent_indexes,
            }
            if "rdm" in phases:
                log("phase rdm")
                results["phases"]["rdm"] = run("rdm", rdm_params)
            if "rdm_workers" in phases:
                results["phases"]["rdm_workers"] = {}
                for count in _counts(args.rdm_worker_counts):
                    log(f"phase rdm_workers, {count} Celery worker process(es)")
                    params = {**rdm_params, "worker_processes": count}
                    outcome = run("rdm_workers", params)
                    results["phases"]["rdm_workers"][str(count)] = outcome
                if args.rdm_growth_records:
                    count = max(_counts(args.rdm_worker_counts))
                    records = args.rdm_growth_records
                    log(f"provider: generating {records} records for the growth step")
                    grown = start_provider(records)
                    log(f"phase rdm_workers, {count} Celery worker process(es), {records} records")
                    params = {
                        **rdm_params,
                        **_provider_params(grown),
                        "records": records,
                        "worker_processes": count,
                    }
                    results["phases"]["rdm_workers_growth"] = {
                        str(count): run("rdm_workers", params)
                    }
            if "formats" in phases:
                log("phase formats: each format's reader and writer on real records")
                params = {**rdm_params, "format_records": args.format_records}
                results["phases"]["formats"] = run("formats", params)
            if "rdm_grown" in phases:
                log(f"phase rdm_grown, a site of {args.rdm_site_records} records")
                params = {**rdm_params, "site_records": args.rdm_site_records}
                results["phases"]["rdm_grown"] = run("rdm_grown", params)
            if "matching" in phases:
                # Last of the RDM phases: it gives the provider's records a Handle each.
                log("phase matching: a full harvest without and with matching by identifiers")
                results["phases"]["matching"] = run("matching", rdm_params)
        if "files" in phases:
            run_files_phase(args, common, start_provider, results)
    finally:
        for provider in providers:
            provider.stop()
        if server is not None:
            server.close()
        if not args.keep_db:
            with contextlib.suppress(Exception):
                drop_database_if_exists(database_uri)


def run_files_phase(
    args: argparse.Namespace,
    common: dict[str, Any],
    start_provider: Any,
    results: dict[str, Any],
) -> None:
    """The files phase: a provider of `--file-records` OpenAIRE records each naming a file of
    `--file-size` bytes, another of one record with a file of `--big-file-size` bytes."""
    log(
        f"provider: {args.file_records} OpenAIRE records with files of {args.file_size:,} "
        f"bytes, and one with a file of {args.big_file_size:,} bytes"
    )
    throughput = start_provider(args.file_records, file_size=args.file_size)
    big = start_provider(1, file_size=args.big_file_size)
    params = {
        **common,
        "rdm": True,
        **_provider_params(throughput),
        "big_base_url": big.base_url,
        "records": args.file_records,
        "batch_size": args.rdm_batch_size,
        "access_cache": not args.rdm_without_access_cache,
        "file_size": args.file_size,
        "big_file_size": args.big_file_size,
    }
    log("phase files: a harvest's files against a plain download; a large file's memory")
    results["phases"]["files"] = run_in_fresh_process("files", params, args.quiet_wait)


if __name__ == "__main__":
    sys.exit(main())
