"""The formats phase in the report: each InvenioRDM transformer's reader and writer per record."""

from __future__ import annotations

from typing import Any, TextIO


def print_formats(results: dict[str, Any], out: TextIO) -> None:
    steps = (results["phases"].get("formats") or {}).get("steps") or {}
    rows = [
        (name[: -len("_per_record")], row)
        for name, row in steps.items()
        if name.endswith("_per_record")
    ]
    if not rows:
        return
    header = (
        f"{'formats into InvenioRDM (issue 35), real records':<52}{'records':>8}{'failed':>7}"
        f"{'reader ms':>11}{'writer ms':>11}{'harvest ms':>12}{'reader/datacite':>17}"
    )
    print("\n" + header + "\n" + "-" * len(header), file=out)
    datacite = steps.get("oai_datacite_per_record", {}).get("reader_ms")
    for prefix, row in rows:
        ratio = f"{row['reader_ms'] / datacite:.2f}" if datacite else "-"
        print(
            f"{prefix + ' (' + row['transformer'] + ')':<52}{row['records']:>8}{row['failed']:>7}"
            f"{row['reader_ms']:>11.2f}{row['writer_ms']:>11.1f}{row['harvest_ms']:>12.1f}"
            f"{ratio:>17}",
            file=out,
        )
    print(
        "reader: our protocol client listing the records and the transformer (3 passes, no "
        "writes); harvest: a full harvest into InvenioRDM's records service; writer: harvest "
        "less reader, per record.",
        file=out,
    )
