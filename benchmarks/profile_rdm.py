"""Where an InvenioRDM record's write goes: RDM's per-record loop next to our full harvest.

    SQLALCHEMY_DATABASE_URI=... .venv/bin/python benchmarks/profile_rdm.py
        [--records 100] [--batch-size 10] [--access-cache] [--cprofile DIR] [--json FILE]

Serves `--records` oai_dc records from the bundled provider and writes them (in a fresh
process, fresh database and indices, as `./run.sh bench --phases rdm` does) once by
``service.create`` + ``service.publish`` per record and once by our full harvest, with SQL
statements and wall time attributed to labelled code (`harvest_bench.phases.rdm_profile`).
Prints, per record: SQL statements by kind and table, and exclusive time, calls and SQL
per label. The labels cost a little time of their own; compare the two columns, not the
rates with the benchmark's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from harvest_bench.harness.provider import ProviderProcess
from harvest_bench.harness.services import (
    drop_database_if_exists,
    exclusive_database,
    fresh_database,
    start_search,
)
from harvest_bench.harness.worker import run_in_fresh_process
from harvest_bench.settings import DEFAULT_DB, log


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100)
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--cprofile", metavar="DIR", help="also write loop.prof, harvest.prof")
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--top", type=int, default=30, help="rows of each table")
    parser.add_argument(
        "--access-cache", action="store_true", help="set ACCESS_CACHE (as a site may)"
    )
    args = parser.parse_args(argv)
    uri = os.environ.get("SQLALCHEMY_DATABASE_URI", DEFAULT_DB)
    with exclusive_database(uri):
        outcome = _run(args, uri)
    print_profile(outcome["steps"], args.top)
    if args.json:
        Path(args.json).write_text(json.dumps(outcome, indent=2, default=str))
        log(f"results written to {args.json}")
    return 0


def _run(args: argparse.Namespace, uri: str) -> dict[str, Any]:
    server, provider = None, None
    try:
        server, search_hosts, _ = start_search()
        fresh_database(uri)
        provider = ProviderProcess(args.records, 100)
        params = {
            "rdm": True,
            "access_cache": args.access_cache,
            "search_hosts": search_hosts,
            "database_uri": uri,
            "base_url": provider.base_url,
            "provider_address": provider.address,
            "batch_size": args.batch_size,
            "cprofile_dir": os.path.abspath(args.cprofile) if args.cprofile else None,
        }
        return run_in_fresh_process("rdm_profile", params, quiet_wait=0)
    finally:
        if provider is not None:
            provider.stop()
        if server is not None:
            server.close()
        with contextlib.suppress(Exception):
            drop_database_if_exists(uri)


def print_profile(steps: dict[str, Any], top: int, out=sys.stdout) -> None:
    loop, ours = steps["loop"], steps["harvest"]
    print(f"records: loop {loop['records']}, harvest {ours['records']}", file=out)
    for name, step in (("loop", loop), ("harvest", ours)):
        seconds = step["seconds"]
        print(
            f"{name}: {seconds:.1f} s, {1000 * seconds / max(step['records'], 1):.0f} ms and "
            f"{step['sql_statements'] / max(step['records'], 1):.0f} SQL statements per record",
            file=out,
        )
    print("\nSQL statements per record, by kind and table   loop  harvest", file=out)
    kinds = sorted(
        set(loop["sql_by_kind"]) | set(ours["sql_by_kind"]),
        key=lambda k: -(loop["sql_by_kind"].get(k, 0) + ours["sql_by_kind"].get(k, 0)),
    )
    for kind in kinds[:top]:
        print(
            f"  {kind:<44} {loop['sql_by_kind'].get(kind, 0):5.1f}  "
            f"{ours['sql_by_kind'].get(kind, 0):7.1f}",
            file=out,
        )
    print("\nper record, exclusive      ms (loop / harvest)  calls   SQL", file=out)
    rows = {row["label"]: [row, None] for row in loop["by_label"]}
    for row in ours["by_label"]:
        rows.setdefault(row["label"], [None, None])[1] = row
    ordered = sorted(
        rows.items(), key=lambda item: -max(r["ms_per_record"] if r else 0 for r in item[1])
    )
    for label, (a, b) in ordered[:top]:
        cells = [
            f"{r[key]:6.1f}" if r else "     -"
            for key in ("ms_per_record", "calls_per_record", "sql_per_record")
            for r in (a, b)
        ]
        print(f"  {label:<44} " + " ".join(cells), file=out)


if __name__ == "__main__":
    sys.exit(main())
