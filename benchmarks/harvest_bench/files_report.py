"""The files phase in the report: a harvest's files against a plain download, a large file's
memory (issue 36)."""

from __future__ import annotations

from typing import Any, TextIO


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value / 2**20:.1f}"


def print_files(results: dict[str, Any], out: TextIO) -> None:
    steps = (results["phases"].get("files") or {}).get("steps") or {}
    summary = steps.get("summary")
    if not summary:
        return
    files, size = summary["files"], summary["file_size"]
    header = (
        f"{'files into InvenioRDM (issue 36): ' + str(files) + ' files of ' + f'{size:,}' + ' bytes':<60}"
        f"{'seconds':>9}{'files/s':>9}{'MiB/s':>8}"
    )
    print("\n" + header + "\n" + "-" * len(header), file=out)
    rows = (
        ("plain download (requests, stream, 1 MiB chunks, 1 at a time)", "plain"),
        ("the harvester's downloader alone (FileFetcher, 1 at a time)", "fetcher"),
        ("harvest, files copy", "copy"),
        ("harvest, files none (metadata only)", "none"),
        ("the files' part of the harvest (copy - none)", "file_part"),
    )
    for label, name in rows:
        print(
            f"{label:<60}{summary[name + '_seconds']:>9.2f}"
            + (
                f"{summary[name + '_files_per_second']:>9.1f}"
                f"{_mb(summary[name + '_bytes_per_second']):>8}"
                if summary.get(name + "_files_per_second") is not None
                else f"{'-':>9}{'-':>8}"
            ),
            file=out,
        )
    ratio = summary["plain_over_file_part"]
    print(
        f"plain / (copy - none): {'-' if ratio is None else f'{ratio:.2f}'} (target at least "
        f"0.8); copy / plain: {summary['copy_seconds'] / summary['plain_seconds']:.2f}; "
        f"plain / FileFetcher: {summary['plain_over_fetcher']:.2f}; the files' part less the "
        f"download (InvenioRDM's file writes): {summary['attach_ms_per_file']:.0f} ms a file",
        file=out,
    )
    big = steps["big"]
    print(
        f"one file of {summary['big_file_bytes']:,} bytes, files copy: "
        f"{summary['big_seconds']:.1f} s ({_mb(summary['big_bytes_per_second'])} MiB/s), "
        f"VmRSS {big['vmrss_start_mb']:.0f} -> peak {big['vmrss_peak_mb']:.0f} MB, growth "
        f"{summary['big_rss_growth_mb']:.1f} MB (target < 100)",
        file=out,
    )
    for name in ("copy", "big"):
        verified = steps[name].get("verified") or {}
        print(
            f"  check files.{name}: {verified.get('right')} of {verified.get('records')} "
            f"records hold the source's bytes; run {steps[name].get('run_status')}"
            + (f"; {verified['problems']}" if verified.get("problems") else ""),
            file=out,
        )
