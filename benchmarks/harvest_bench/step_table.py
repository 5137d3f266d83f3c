"""A phase's steps as a table of the report: records, time and SQL statements a record."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO


def print_steps(
    out: TextIO, title: str, rows: Sequence[tuple[str, str]], steps: dict[str, Any]
) -> None:
    """One line a (label, step name) of `rows`, under a header named `title`."""
    header = f"{title:<52}{'records':>9}{'ms/rec':>8}{'SQL/rec':>9}"
    print("\n" + header + "\n" + "-" * len(header), file=out)
    for label, name in rows:
        step = steps[name]
        sql = step.get("sql_per_record")
        print(
            f"{label:<52}{step['records']:>9}"
            f"{1000 * step['seconds'] / max(step['records'], 1):>8.2f}"
            f"{'-' if sql is None else f'{sql:.1f}':>9}",
            file=out,
        )
