"""Where the time of a profiled harvest goes: the service's work, ours, and waiting.

    .venv/bin/python benchmarks/profile_breakdown.py PROFILE [--thread MainThread] [--top 25]

PROFILE is what `./run.sh bench --profile DIR` wrote: `DIR/full-harvest.pyspy.txt` (py-spy raw
collapsed stacks, wall clock with --idle) or `DIR/full-harvest.pyisession` (pyinstrument).

Every sample is put in one *context* by the innermost frame of ours (or of the frameworks) that
explains it, and in one *detail* by the innermost library frame; see CONTEXT_RULES and
detail(). The contexts are grouped as the issue asks: the service's own work (schema,
components, SQLAlchemy-Continuum, SQL), our overhead (fetch, parse, transform, tracking rows,
counters) and waiting (HTTP to the provider and to the search engine).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

Frame = tuple[str, str]  # (function, file)

_PYSPY_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")

# (group, context label, file substring, function names or None), tried from the leaf upwards;
# the first frame that matches decides the context.
CONTEXT_RULES: list[tuple[str, str, str, tuple[str, ...] | None]] = [
    ("ours", "transform (oai_dc transformer)", "harvest/transformers.py", None),
    ("ours", "tracking rows: load (1 query per batch)", "harvest/writer.py", ("_load_tracking",)),
    ("ours", "tracking rows: save (1 upsert per batch)", "harvest/writer.py", ("_save_tracking",)),
    (
        "ours",
        "run counters (invenio-jobs Run row per batch)",
        "harvest/run.py",
        ("_update_run_counters",),
    ),
    (
        "indexing",
        "bulk index actions: reload expired record + dump",
        "harvest/unit_of_work.py",
        ("_bulk_action",),
    ),
    ("indexing", "bulk index request (opensearch-py)", "opensearchpy/helpers", None),
    (
        "service",
        "service.create/update/delete",
        "harvest/unit_of_work.py",
        ("register", "BulkIndexingUnitOfWork.register"),
    ),
    (
        "service",
        "unit-of-work commit (flush, Continuum, COMMIT)",
        "harvest/unit_of_work.py",
        ("commit", "BulkIndexingUnitOfWork.commit"),
    ),
    (
        "service",
        "service.create/update/delete",
        "harvest/writer.py",
        (
            "_upsert_local",
            "_delete_local",
            "RecordWriter._upsert_local",
            "RecordWriter._delete_local",
        ),
    ),
    (
        "ours",
        "per-record savepoint + row building",
        "harvest/writer.py",
        ("_write_one", "RecordWriter._write_one"),
    ),
    ("ours", "fetch + parse (protocol client)", "oarepo_oaipmh_harvester/protocol/", None),
    ("ours", "fetch + parse (protocol client)", "sickle/", None),
    ("ours", "prefetch", "harvest/prefetch.py", None),
    ("ours", "batch loop (writer)", "harvest/writer.py", None),
    ("ours", "run loop", "harvest/run.py", None),
    ("ours", "other (ours)", "oarepo_oaipmh_harvester/", None),
    ("framework", "invenio-jobs / celery run bookkeeping", "invenio_jobs/", None),
    ("framework", "invenio-jobs / celery run bookkeeping", "celery/", None),
]
# Rule functions are matched against the bare function name and against Class.method.


def _func_matches(func: str, names: tuple[str, ...] | None) -> bool:
    if names is None:
        return True
    bare = func.rsplit(".", 1)[-1]
    return func in names or bare in names


def context(stack: list[Frame]) -> tuple[str, str]:
    # A whole stack of the worker's main thread reaches the benchmark's own frames
    # (py-spy names them harvest.py and harvest_bench/...): one that does not was cut short.
    if not any(
        file.startswith(("oarepo_oaipmh_harvester", "harvest.py", "harvest_bench/"))
        or "/oarepo_oaipmh_harvester/" in file
        for _, file in stack
    ):
        return "other", "truncated stack (py-spy could not unwind it)"
    for func, file in reversed(stack):
        for group, label, path, names in CONTEXT_RULES:
            if path in file and _func_matches(func, names):
                return group, label
    return "other", "other"


SQL_FUNCS = ("do_execute", "do_executemany", "do_execute_no_params", "_exec_insertmany_context")
SAVEPOINT_FUNCS = ("_savepoint_impl", "_release_savepoint_impl", "_rollback_to_savepoint_impl")
IO_FILES = ("socket.py", "ssl.py", "http/client.py", "selectors.py", "<built-in>")


def detail(stack: list[Frame]) -> str:
    """The innermost library that explains a sample."""
    leaf_func, leaf_file = stack[-1]
    bare = leaf_func.rsplit(".", 1)[-1]
    if "psycopg2" in leaf_file or bare in SQL_FUNCS:
        if any(func.endswith(SAVEPOINT_FUNCS) for func, _ in stack):
            return "SQL: SAVEPOINT / RELEASE round trips"
        if any(func.endswith("_expand_action") for func, _ in stack):
            return "SQL: permission look-ups (access_actions* tables)"
        return "SQL: other statements (psycopg2 + PostgreSQL round trip)"
    if bare == "do_commit" or bare == "_commit_impl":
        return "SQL COMMIT (PostgreSQL round trip)"
    for _func, file in reversed(stack):
        if any(io in file for io in IO_FILES) or "urllib3/" in file:
            return "socket I/O (HTTP)"
        if "lxml" in file or "protocol/parsing.py" in file:
            return "XML parsing (lxml)"
        if file.startswith("json/") or "/json/" in file:
            return "JSON (de)serialisation"
        if "marshmallow" in file:
            return "marshmallow schema"
        if "jsonschema" in file or "referencing/" in file:
            return "jsonschema validation"
        if "sqlalchemy_continuum" in file:
            return "SQLAlchemy-Continuum hooks (Python)"
        if "sqlalchemy" in file:
            return "SQLAlchemy ORM/core (Python)"
        if "invenio_pidstore" in file:
            return "invenio-pidstore"
        if "invenio_records_resources" in file:
            return "invenio-records-resources (service, components, results)"
        if "invenio_records/" in file:
            return "invenio-records (record API, dumpers)"
        if "invenio_indexer" in file:
            return "invenio-indexer"
        if "opensearchpy" in file:
            return "opensearch-py"
        if "requests/" in file:
            return "requests"
        if "oarepo_oaipmh_harvester" in file:
            return "our code (Python)"
    return leaf_file.split("/")[0] or "?"


# -- loading ------------------------------------------------------------------------------


def load_pyspy(path: Path, thread: str) -> list[tuple[list[Frame], float]]:
    samples: list[tuple[list[Frame], float]] = []
    for line in path.read_text().splitlines():
        stack_text, _, count = line.rpartition(" ")
        parts = stack_text.split(";")
        if not parts or thread not in parts[0]:
            continue
        frames: list[Frame] = []
        for part in parts[1:]:
            match = _PYSPY_FRAME.match(part)
            frames.append((match["func"], match["file"]) if match else (part, ""))
        if frames:
            samples.append((frames, float(count)))
    return samples


def load_pyinstrument(path: Path) -> list[tuple[list[Frame], float]]:
    data = json.loads(path.read_text())
    samples = []
    for stack, seconds in data["frame_records"]:
        frames = []
        for info in stack:
            identifier = info.split("\x01", 1)[0]
            func, file, _ = ([*identifier.split("\x00"), "", ""])[:3]
            frames.append((func, file))
        samples.append((frames, seconds))
    return samples


# -- report -------------------------------------------------------------------------------

GROUP_TITLES = {
    "service": "the service's own work (invenio-records-resources, -records, Continuum, SQL)",
    "indexing": "indexing (dump records, bulk requests: serialise + wait on the search engine)",
    "ours": "our overhead (fetch, parse, transform, tracking rows, counters, savepoints)",
    "framework": "invenio-jobs run bookkeeping",
    "other": "other",
}


def breakdown(samples: list[tuple[list[Frame], float]]) -> dict:
    samples = [(s, w) for s, w in samples if not any("_Profiler" in f for f, _ in s)]
    total = sum(weight for _, weight in samples) or 1.0
    by_context: Counter[tuple[str, str]] = Counter()
    by_detail: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    by_group_detail: dict[str, Counter[str]] = defaultdict(Counter)
    crosscut: Counter[str] = Counter()
    crosscut_rules = {
        "SQLAlchemy-Continuum in stack (its hooks, and SAVEPOINTs they trigger)": lambda s: any(
            "sqlalchemy_continuum" in f for _, f in s
        ),
        "marshmallow in stack (schema load/dump)": lambda s: any("marshmallow" in f for _, f in s),
        "jsonschema in stack (record validation)": lambda s: any(
            "jsonschema" in f or "referencing/" in f for _, f in s
        ),
        "permission checks (require_permission: access_actions* queries)": lambda s: any(
            fn.endswith("require_permission") for fn, _ in s
        ),
        "SAVEPOINT / RELEASE (leaf in the DB driver)": lambda s: (
            s[-1][0].rsplit(".", 1)[-1] in SQL_FUNCS
            and any(fn.endswith(SAVEPOINT_FUNCS) for fn, _ in s)
        ),
        "service components (run_components)": lambda s: any(
            fn.endswith("run_components") for fn, _ in s
        ),
        "Session.flush in stack": lambda s: any(fn.endswith("Session.flush") for fn, _ in s),
        "any SQL statement wait (leaf in the DB driver)": lambda s: (
            "psycopg2" in s[-1][1]
            or s[-1][0].rsplit(".", 1)[-1] in SQL_FUNCS
            or s[-1][0].rsplit(".", 1)[-1] in ("do_commit", "_commit_impl")
        ),
        "any socket I/O (HTTP to provider or search)": lambda s: any(
            any(io in f for io in IO_FILES) or "urllib3/" in f for _, f in s
        ),
    }
    for stack, weight in samples:
        if any("_Profiler" in func for func, _ in stack):
            continue  # the profiler attaching, before the timed step
        key = context(stack)
        by_context[key] += weight
        d = detail(stack)
        by_detail[key][d] += weight
        by_group_detail[key[0]][d] += weight
        for name, rule in crosscut_rules.items():
            if rule(stack):
                crosscut[name] += weight
    return {
        "total": total,
        "by_context": by_context,
        "by_detail": by_detail,
        "by_group_detail": by_group_detail,
        "crosscut": crosscut,
    }


def render(result: dict, seconds: float | None, top: int) -> str:
    total = result["total"]
    scale = (seconds / total) if seconds else None
    lines = []

    def amount(weight: float) -> str:
        share = 100.0 * weight / total
        if scale:
            return f"{share:5.1f}%  {weight * scale:7.1f} s"
        return f"{share:5.1f}%"

    groups: Counter[str] = Counter()
    for (group, _), weight in result["by_context"].items():
        groups[group] += weight
    lines.append("By group (share of the main thread's wall-clock samples):")
    for group, weight in groups.most_common():
        lines.append(f"  {amount(weight)}  {GROUP_TITLES.get(group, group)}")
        for (g, label), w in result["by_context"].most_common():
            if g == group:
                lines.append(f"      {amount(w)}  {label}")
                for name, dw in result["by_detail"][(g, label)].most_common(top):
                    if dw / total >= 0.005:
                        lines.append(f"            {amount(dw)}  {name}")
    lines.append("")
    lines.append("By library, inside each group:")
    for group, _weight in groups.most_common():
        lines.append(f"  {GROUP_TITLES.get(group, group)}")
        for name, dw in result["by_group_detail"][group].most_common(top):
            if dw / total >= 0.003:
                lines.append(f"      {amount(dw)}  {name}")
    lines.append("")
    lines.append("Cross-cutting (inclusive, overlapping):")
    for name, weight in result["crosscut"].most_common():
        lines.append(f"  {amount(weight)}  {name}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--thread", default="MainThread", help="py-spy: thread name to keep")
    parser.add_argument("--seconds", type=float, help="wall time of the step (scales to s)")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args(argv)
    if args.profile.suffix == ".pyisession":
        samples = load_pyinstrument(args.profile)
    else:
        samples = load_pyspy(args.profile, args.thread)
    if not samples:
        print("no samples", file=sys.stderr)
        return 1
    print(render(breakdown(samples), args.seconds, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
