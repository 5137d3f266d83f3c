"""The journal phase in the report: what keeping each run undoable costs (issue 37)."""

from __future__ import annotations

from typing import Any, TextIO


def print_journal(results: dict[str, Any], out: TextIO) -> None:
    steps = (results["phases"].get("journal") or {}).get("steps") or {}
    summary = steps.get("summary")
    if not summary:
        return
    header = f"{'run journal (issue 37: undo a run)':<52}{'records':>9}{'ms/rec':>8}{'SQL/rec':>9}"
    print("\n" + header + "\n" + "-" * len(header), file=out)
    for label, name in (
        ("full harvest, no journal (OAI_HARVESTER_UNDO_RUNS=0)", "full_off"),
        ("full harvest, journal", "full_on"),
        ("incremental after changes, no journal", "incremental_off"),
        ("incremental after changes, journal", "incremental_on"),
        ("undo of that incremental run: its plan (dry run)", "undo_plan"),
        ("undo of that incremental run", "undo"),
    ):
        step = steps[name]
        sql = step.get("sql_per_record")
        print(
            f"{label:<52}{step['records']:>9}"
            f"{1000 * step['seconds'] / max(step['records'], 1):>8.2f}"
            f"{'-' if sql is None else f'{sql:.1f}':>9}",
            file=out,
        )
    print(
        f"journal / no journal, time a record: full {summary['full_on_over_off']:.2f}, "
        f"incremental {summary['incremental_on_over_off']:.2f}",
        file=out,
    )
