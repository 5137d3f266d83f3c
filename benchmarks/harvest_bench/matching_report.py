"""The matching phase in the report: what matching new records by identifiers costs (issue 38)."""

from __future__ import annotations

from typing import Any, TextIO


def print_matching(results: dict[str, Any], out: TextIO) -> None:
    steps = (results["phases"].get("matching") or {}).get("steps") or {}
    summary = steps.get("summary")
    if not summary:
        return
    header = f"{'matching by identifiers (issue 38: match_on)':<52}{'records':>9}{'ms/rec':>8}{'SQL/rec':>9}"
    print("\n" + header + "\n" + "-" * len(header), file=out)
    for label, name in (
        ("full harvest into RDM, match_on empty", "full_off"),
        ("full harvest, match_on default, no identifiers index", "full_on"),
        ("full harvest, match_on default, identifiers index", "full_on_indexed"),
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
        f"matching / none, time a record: without the index {summary['on_over_off']:.2f}, "
        f"with it {summary['on_indexed_over_off']:.2f}",
        file=out,
    )
