"""Run history at a glance (issue 37): the last runs of a harvester in numbers, the same over
REST, on the command line and in the chart of its page; and the chart itself."""

from __future__ import annotations

import json
import re

import pytest
import sqlalchemy as sa
from invenio_db import db
from invenio_jobs.models import Run
from lxml import etree, html

from oarepo_oaipmh_harvester.administration.run_chart import KINDS, run_chart_svg
from oarepo_oaipmh_harvester.cli import oai
from oarepo_oaipmh_harvester.testing.corpus import Corpus

API = "/api/oai-harvest/harvesters"
SVG = "{http://www.w3.org/2000/svg}"


def a_run(number: int, **counts: int) -> dict:
    return {
        "id": f"run-{number}",
        "title": "Run now",
        "status": "SUCCESS",
        "started": f"2026-01-{number:02d}T10:00:00+00:00",
        "finished": f"2026-01-{number:02d}T10:01:00+00:00",
        "duration": 60.0 + number,
        **{kind: counts.get(kind, 0) for kind in KINDS},
    }


def parsed(svg: str):
    return etree.fromstring(svg.encode())


# -- the chart ---------------------------------------------------------------------------------
def test_a_chart_of_no_run_says_so():
    svg = parsed(run_chart_svg([]))
    assert svg.tag == f"{SVG}svg" and svg.get("role") == "img"
    assert "No runs yet" in "".join(svg.itertext())
    assert svg.find(f"{SVG}title").text == "Last runs of the harvester"
    assert not svg.findall(f".//{SVG}rect")


def test_one_run_is_one_stacked_bar_with_its_numbers_on_hovering():
    svg = parsed(run_chart_svg([a_run(1, created=50, updated=3, deleted=2, failed=1, held=4)]))
    (run,) = svg.findall(f'.//{SVG}g[@class="oai-run-chart-run"]')
    bars = {rect.get("class"): rect for rect in run.findall(f"{SVG}rect") if rect.get("class")}
    assert set(bars) == {f"oai-run-chart-{kind}" for kind in KINDS}
    # Stacked in KINDS' order from the axis up: each bar starts where the one below ends.
    heights = [float(bars[f"oai-run-chart-{kind}"].get("height")) for kind in KINDS]
    assert heights[0] > heights[3] * 40  # drawn to scale: 50 created, 1 failed
    tops = [float(bars[f"oai-run-chart-{kind}"].get("y")) for kind in KINDS]
    assert tops == sorted(tops, reverse=True)
    hover = bars["oai-run-chart-deleted"].find(f"{SVG}title").text
    assert hover.startswith("deleted 2 · Run now 2026-01-01 10:00 UTC: SUCCESS, 61.0 s;")
    assert "created 50, updated 3, deleted 2, failed 1, held 4" in hover
    assert "60" in "".join(run.itertext())  # the run's total above its bar
    # One run has one point of duration, written by it, and no wall of a bar.
    assert len(svg.findall(f".//{SVG}circle")) == 1 and "61.0 s" in "".join(svg.itertext())
    assert float(bars["oai-run-chart-created"].get("width")) <= 60


def test_twenty_runs_and_the_legend():
    runs = [a_run(n, created=n, updated=1, deleted=n % 3, failed=n % 2) for n in range(1, 21)]
    runs[4] = {**runs[4], "status": "FAILED", "finished": None, "duration": None}
    svg = parsed(run_chart_svg(runs))
    groups = svg.findall(f'.//{SVG}g[@class="oai-run-chart-run"]')
    assert [g.get("data-run") for g in groups] == [f"run-{n}" for n in range(1, 21)]
    assert groups[4].get("data-status") == "FAILED"
    # Every run answers a hover, one that has not finished too; 19 durations on the line.
    assert all(g.find(f"{SVG}rect/{SVG}title") is not None for g in groups)
    assert "not finished" in groups[4].find(f"{SVG}rect/{SVG}title").text
    assert len(svg.findall(f".//{SVG}circle")) == 19
    assert (
        len(svg.find(f'.//{SVG}polyline[@class="oai-run-chart-duration"]').get("points").split())
        == 19
    )
    legend = "".join(svg.find(f'.//{SVG}g[@class="oai-run-chart-legend"]').itertext())
    for kind in (*KINDS, "duration"):
        assert kind in legend
    assert "20 runs" in svg.get("aria-label") and "20 runs" in svg.find(f"{SVG}desc").text
    # Bars stay inside the picture.
    width = float(svg.get("viewBox").split()[2])
    xs = [float(r.get("x")) + float(r.get("width")) for r in svg.findall(f".//{SVG}rect")]
    assert max(xs) <= width


def test_text_in_the_chart_is_escaped():
    svg = run_chart_svg([{**a_run(1, created=1), "title": '<script>"x"</script>'}])
    assert "<script>" not in svg
    assert '<script>"x"</script> 2026-01-01' in "".join(parsed(svg).itertext())


# -- the numbers: REST, command line, page -------------------------------------------------------
@pytest.fixture()
def as_admin(login, users):
    return login(users.admin)


@pytest.fixture()
def run_cli(app):
    runner = app.test_cli_runner()
    return lambda *args: runner.invoke(oai, list(args), catch_exceptions=False)


def change_the_source(corpus: Corpus) -> None:
    """3 records changed, 1 deleted, 1 added, 1 added without a title (refused)."""
    live = sorted(corpus.live_identifiers())
    corpus.advance_clock(minutes=5)
    for identifier in live[:3]:
        corpus.update(
            identifier, metadata={**corpus.get(identifier).metadata, "title": ["Changed"]}
        )
    corpus.delete(live[3])
    corpus.add("oai:example.org:new", {"title": ["New"], "creator": ["Nový, Jan"]})
    corpus.add("oai:example.org:broken", {"creator": ["Nobody"]})
    corpus.advance_clock(hours=1)


@pytest.fixture()
def two_runs(as_admin, harvesters, corpus):
    first = as_admin.post(f"{API}/a/run").json
    assert first["status"] == "SUCCESS", first["message"]
    change_the_source(corpus)
    second = as_admin.post(f"{API}/a/run").json
    assert second["status"] == "PARTIAL_SUCCESS", second["message"]
    return first, second


def test_rest_gives_each_runs_counts_by_kind_the_oldest_first(as_admin, two_runs):
    first, second = two_runs
    link = as_admin.get(f"{API}/a").json["links"]["runs_history"]
    res = as_admin.get(link.replace("https://repo.example.org", ""))
    assert res.status_code == 200, res.json
    assert res.json["harvester_id"] == "a"
    runs = res.json["runs"]
    assert [run["id"] for run in runs] == [first["id"], second["id"]]
    counted = [{kind: run[kind] for kind in (*KINDS, "unchanged")} for run in runs]
    assert counted == [
        {"created": 50, "updated": 0, "deleted": 0, "failed": 0, "held": 0, "unchanged": 0},
        {"created": 1, "updated": 3, "deleted": 1, "failed": 1, "held": 0, "unchanged": 0},
    ]
    assert [run["status"] for run in runs] == ["SUCCESS", "PARTIAL_SUCCESS"]
    for run in runs:
        assert run["counts_known"] is True and run["duration"] >= 0
        assert run["started"] <= run["finished"]
    # The run keeps them in its arguments, where invenio-jobs' columns have no room.
    stored = db.session.get(Run, second["id"]).args["counts"]
    assert (stored["deleted"], stored["updated"], stored["created"]) == (1, 3, 1)
    assert as_admin.get(f"{API}/a/runs/{second['id']}").json["args"]["counts"] == stored

    last = as_admin.get(f"{API}/a/runs/history", query_string={"size": 1}).json["runs"]
    assert [run["id"] for run in last] == [second["id"]]
    assert as_admin.get(f"{API}/a/runs/history", query_string={"size": 0}).status_code == 400
    assert as_admin.get(f"{API}/b/runs/history").json["runs"] == []
    assert as_admin.get(f"{API}/nope/runs/history").status_code == 404


def test_a_run_from_before_the_counts_were_kept_shows_its_columns(as_admin, harvesters):
    run = as_admin.post(f"{API}/a/run").json
    db.session.execute(sa.update(Run).where(Run.id == run["id"]).values(args={"harvester_id": "a"}))
    db.session.commit()
    (shown,) = as_admin.get(f"{API}/a/runs/history").json["runs"]
    assert (shown["created"], shown["deleted"], shown["held"]) == (50, 0, 0)
    assert shown["counts_known"] is False


def test_held_deletions_are_read_from_the_kept_counts(as_admin, harvesters):
    run = as_admin.post(f"{API}/a/run").json
    stored = db.session.get(Run, run["id"]).args
    db.session.execute(
        sa.update(Run)
        .where(Run.id == run["id"])
        .values(args={**stored, "counts": {**stored["counts"], "held": 7}})
    )
    db.session.commit()
    (shown,) = as_admin.get(f"{API}/a/runs/history").json["runs"]
    assert shown["held"] == 7


def test_the_command_line_prints_the_same_numbers(as_admin, run_cli, two_runs):
    first, second = two_runs
    result = run_cli("runs", "a")
    assert result.exit_code == 0, result.output
    header, *rows = result.output.strip().splitlines()
    assert header.split() == [
        "Started", "(UTC)", "Status", "Duration", "Created", "Updated", "Deleted", "Failed",
        "Held", "Run",
    ]  # fmt: skip
    assert [row.split()[-1] for row in rows] == [first["id"], second["id"]]
    assert re.search(r"PARTIAL_SUCCESS\s+\d+\.\d s\s+1\s+3\s+1\s+1\s+0\s", rows[1]), rows[1]
    assert re.search(r"SUCCESS\s+\d+\.\d s\s+50\s+0\s+0\s+0\s+0\s", rows[0]), rows[0]

    as_json = json.loads(run_cli("runs", "a", "--json", "--size", "1").output)
    assert as_json == as_admin.get(f"{API}/a/runs/history", query_string={"size": 1}).json

    assert run_cli("runs", "b").output.strip() == "No runs yet of b."
    result = run_cli("runs", "nope")
    assert result.exit_code == 1 and "nope" in result.output


def test_the_harvester_page_draws_the_chart(as_admin, two_runs):
    first, second = two_runs
    res = as_admin.get("/administration/oai-harvesters/a")
    assert res.status_code == 200
    tree = html.fromstring(res.data)
    (figure,) = tree.xpath('//*[@id="oai-harvester-run-chart"]')
    (svg,) = figure.xpath(".//svg")
    assert svg.get("role") == "img" and "2 runs" in svg.get("aria-label")
    runs = svg.xpath('.//g[@class="oai-run-chart-run"]')
    assert [g.get("data-run") for g in runs] == [first["id"], second["id"]]
    assert (
        runs[1]
        .xpath('.//rect[@class="oai-run-chart-deleted"]/title')[0]
        .text.startswith("deleted 1 · ")
    )


def test_a_page_of_a_harvester_never_run_says_no_runs_yet(as_admin, harvesters):
    tree = html.fromstring(as_admin.get("/administration/oai-harvesters/b").data)
    (figure,) = tree.xpath('//*[@id="oai-harvester-run-chart"]')
    assert "No runs yet" in figure.text_content()
