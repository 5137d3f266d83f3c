"""The chart of a harvester's last runs on its page: an SVG drawn here, no script in the page.

One stacked bar per run (created, updated, deleted, failed, held, in ``KINDS``' order), the
oldest on the left, with its total above it, and the runs' durations as a line on an axis of
their own. Hovering a bar shows the run's numbers (each bar has a ``<title>``); the chart as
a whole has a title and a description for screen readers. It reads the runs as
``services.run_history.run_tally`` gives them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

KINDS = ("created", "updated", "deleted", "failed", "held")
COLOURS = {
    "created": "#21ba45",
    "updated": "#2185d0",
    "deleted": "#a333c8",
    "failed": "#db2828",
    "held": "#f2711c",
}
DURATION_COLOUR = "#1b1c1d"
STATUS_COLOURS = {"FAILED": "#db2828", "PARTIAL_SUCCESS": "#f2711c", "CANCELLED": "#767676"}

WIDTH, HEIGHT = 760, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 64, 44, 66
"""Room around the plot: the counts' axis, the durations' axis, the legend, the runs' dates."""
MAX_SLOT = 80
"""Horizontal room of one run at most: a chart of one run has one bar, not a wall."""

DURATION_SHARE = 0.9
"""Height of the longest duration, of the plot's: its point stays clear of the bars' totals."""
LABELLED_SLOT = 50
"""Room of a run from which each duration is written by its point, not only on hovering."""

TITLE = "Last runs of the harvester"


def _number(value: float) -> str:
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    if value >= 1000:
        return f"{value / 1000:.1f}k"
    return f"{value:g}"


def _seconds(value: float | None) -> str:
    if value is None:
        return "not finished"
    if value >= 3600:
        return f"{value / 3600:.1f} h"
    if value >= 120:
        return f"{value / 60:.1f} min"
    return f"{value:.1f} s"


def _when(run: dict[str, Any]) -> str:
    started = run.get("started")
    return started[:16].replace("T", " ") if started else "not started"


def run_summary(run: dict[str, Any]) -> str:
    """A run's numbers in one line: the text shown on hovering its bar."""
    counts = ", ".join(f"{kind} {run.get(kind) or 0}" for kind in KINDS)
    return (
        f"{run.get('title') or 'Run'} {_when(run)} UTC: {run.get('status') or 'unknown'}, "
        f"{_seconds(run.get('duration'))}; {counts}"
    )


def _text(x: float, y: float, text: str, **attributes: Any) -> str:
    extra = "".join(
        f" {name.replace('_', '-')}={quoteattr(str(v))}" for name, v in attributes.items()
    )
    return f'<text x="{x:.1f}" y="{y:.1f}"{extra}>{escape(text)}</text>'


def _legend() -> list[str]:
    parts, x = [], LEFT
    for kind in (*KINDS, "duration"):
        if kind == "duration":
            parts.append(
                f'<line x1="{x}" y1="16" x2="{x + 14}" y2="16" stroke="{DURATION_COLOUR}" '
                f'stroke-width="2" stroke-dasharray="4 2"/>'
            )
        else:
            parts.append(f'<rect x="{x}" y="10" width="12" height="12" fill="{COLOURS[kind]}"/>')
        parts.append(_text(x + 18, 20, kind, font_size=12))
        x += 28 + 8 * len(kind)
    return [f'<g class="oai-run-chart-legend">{"".join(parts)}</g>']


def run_chart_svg(runs: Sequence[dict[str, Any]], *, title: str = TITLE) -> str:
    """The chart of `runs` (the oldest first) as one ``<svg>`` element."""
    described = (
        f"{len(runs)} runs, the oldest on the left: bars of records created, updated, "
        f"deleted, failed and held back per run; the line is each run's duration."
        if runs
        else "No runs yet."
    )
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="oai-run-chart" role="img" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" style="max-width:{WIDTH}px" '
        f'aria-label={quoteattr(f"{title}. {described}")} font-family="sans-serif">'
        f"<title>{escape(title)}</title><desc>{escape(described)}</desc>"
    )
    if not runs:
        empty = _text(WIDTH / 2, HEIGHT / 2, "No runs yet", text_anchor="middle", font_size=16)
        return f"{head}{empty}</svg>"
    return head + "".join([*_legend(), *_plot(runs)]) + "</svg>"


def _plot(runs: Sequence[dict[str, Any]]) -> list[str]:
    plot_width, plot_height = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    base = TOP + plot_height
    slot = min(plot_width / len(runs), MAX_SLOT)
    bar = max(slot * 0.6, 2)
    start = LEFT + (plot_width - slot * len(runs)) / 2  # a few runs stand in the middle
    totals = [sum(int(run.get(kind) or 0) for kind in KINDS) for run in runs]
    peak = max(max(totals), 1)
    durations = [run.get("duration") for run in runs]
    longest = max((d for d in durations if d is not None), default=0) or 1
    parts = [
        f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" stroke="#999"/>',
        _text(LEFT - 6, base + 4, "0", text_anchor="end", font_size=11),
        _text(LEFT - 6, TOP + 4, _number(peak), text_anchor="end", font_size=11),
        f'<line x1="{LEFT}" y1="{TOP}" x2="{WIDTH - RIGHT}" y2="{TOP}" stroke="#ddd"/>',
        _text(LEFT - 6, TOP - 10, "records", text_anchor="end", font_size=11, fill="#555"),
        _text(
            WIDTH - RIGHT + 6,
            base - plot_height * DURATION_SHARE + 4,
            _seconds(longest),
            font_size=11,
        ),
        _text(WIDTH - RIGHT + 6, TOP - 10, "duration", font_size=11, fill="#555"),
    ]
    points = []
    for index, (run, total) in enumerate(zip(runs, totals, strict=True)):
        centre = start + slot * (index + 0.5)
        summary = escape(run_summary(run))
        bars = [
            # The whole column answers a hover, even over a run that counted nothing.
            f'<rect x="{centre - slot / 2:.1f}" y="{TOP}" width="{slot:.1f}" '
            f'height="{plot_height}" fill="transparent"><title>{summary}</title></rect>'
        ]
        top = base
        for kind in KINDS:
            value = int(run.get(kind) or 0)
            if not value:
                continue
            height = value / peak * plot_height
            top -= height
            bars.append(
                f'<rect class="oai-run-chart-{kind}" x="{centre - bar / 2:.1f}" y="{top:.1f}" '
                f'width="{bar:.1f}" height="{max(height, 0.5):.1f}" fill="{COLOURS[kind]}">'
                f"<title>{escape(f'{kind} {value}')} · {summary}</title></rect>"
            )
        bars.append(_text(centre, top - 4, _number(total), text_anchor="middle", font_size=10))
        status = run.get("status") or ""
        bars.append(
            _text(
                centre,
                base + 14,
                _when(run)[5:],
                text_anchor="end",
                font_size=10,
                fill=STATUS_COLOURS.get(status, "#333"),
                transform=f"rotate(-40 {centre:.1f} {base + 14})",
            )
        )
        parts.append(
            f'<g class="oai-run-chart-run" data-run={quoteattr(str(run.get("id", "")))} '
            f"data-status={quoteattr(status)}>{''.join(bars)}</g>"
        )
        if durations[index] is not None:
            y = base - durations[index] / longest * plot_height * DURATION_SHARE
            points.append((centre, y, run))
    parts.extend(_duration_line(points, labelled=slot >= LABELLED_SLOT))
    return parts


def _duration_line(
    points: list[tuple[float, float, dict[str, Any]]], *, labelled: bool
) -> list[str]:
    if not points:
        return []
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _ in points)
    parts = [
        f'<polyline class="oai-run-chart-duration" points="{path}" fill="none" '
        f'stroke="{DURATION_COLOUR}" stroke-width="2" stroke-dasharray="4 2"/>'
    ]
    for x, y, run in points:
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{DURATION_COLOUR}">'
            f"<title>{escape(_seconds(run.get('duration')))} · {escape(run_summary(run))}</title>"
            f"</circle>"
        )
        if labelled:
            halo = {"stroke": "#fff", "stroke_width": 3, "paint_order": "stroke"}
            parts.append(_text(x + 6, y - 6, _seconds(run.get("duration")), font_size=10, **halo))
    return parts
