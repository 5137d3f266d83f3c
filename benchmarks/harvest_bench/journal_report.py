"""The journal phase in the report: what keeping each run undoable costs (issue 37)."""

from __future__ import annotations

from typing import Any, TextIO

from harvest_bench.step_table import print_steps


def print_journal(results: dict[str, Any], out: TextIO) -> None:
    steps = (results["phases"].get("journal") or {}).get("steps") or {}
    summary = steps.get("summary")
    if not summary:
        return
    rows = (
        ("full harvest, no journal (OAI_HARVESTER_UNDO_RUNS=0)", "full_off"),
        ("full harvest, journal", "full_on"),
        ("incremental after changes, no journal", "incremental_off"),
        ("incremental after changes, journal", "incremental_on"),
        ("undo of that incremental run: its plan (dry run)", "undo_plan"),
        ("undo of that incremental run", "undo"),
    )
    print_steps(out, "run journal (issue 37: undo a run)", rows, steps)
    print(
        f"journal / no journal, time a record: full {summary['full_on_over_off']:.2f}, "
        f"incremental {summary['incremental_on_over_off']:.2f}",
        file=out,
    )
