"""The matching phase in the report: what matching new records by identifiers costs (issue 38)."""

from __future__ import annotations

from typing import Any, TextIO

from harvest_bench.step_table import print_steps


def print_matching(results: dict[str, Any], out: TextIO) -> None:
    steps = (results["phases"].get("matching") or {}).get("steps") or {}
    summary = steps.get("summary")
    if not summary:
        return
    rows = (
        ("full harvest into RDM, match_on empty", "full_off"),
        ("full harvest, match_on default, no identifiers index", "full_on"),
        ("full harvest, match_on default, identifiers index", "full_on_indexed"),
    )
    print_steps(out, "matching by identifiers (issue 38: match_on)", rows, steps)
    print(
        f"matching / none, time a record: without the index {summary['on_over_off']:.2f}, "
        f"with it {summary['on_indexed_over_off']:.2f}",
        file=out,
    )
