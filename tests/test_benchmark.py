"""The benchmark the performance claims come from, run as its README says (`./run.sh bench`),
on a small corpus: it must still run its phases end to end, check what each wrote and report
the targets. Its numbers are not asserted (a timed test says nothing on a shared machine)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_benchmark_runs_its_fetch_and_rdm_phases(tmp_path, search_server):
    """fetch, rdm and rdm_workers (one real Celery worker, which runs the site's PID tasks
    too: the clock waits for them) with its growth step, rdm_grown with a site of 40
    records, formats with 3 real records of each format, and matching."""
    pytest.importorskip("invenio_rdm_records")
    database = os.environ.get("SQLALCHEMY_DATABASE_URI", "")
    if not database.startswith("postgresql"):
        pytest.skip("The benchmark runs on PostgreSQL (SQLALCHEMY_DATABASE_URI).")
    host = search_server[0]
    report = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, "benchmarks/harvest.py"]
        + [
            "--phases",
            "fetch,journal,rdm,rdm_workers,rdm_grown,formats,matching",
            "--format-records",
            "3",
        ]
        + ["--records", "300", "--rdm-records", "6", "--rdm-worker-counts", "1"]
        + ["--rdm-site-records", "40", "--rdm-growth-records", "12"]
        + ["--quiet-wait", "0", "--json", str(report)],
        cwd=ROOT,
        env={
            **os.environ,
            "SQLALCHEMY_DATABASE_URI": database.rsplit("/", 1)[0] + "/oaiharvest_bench_smoke",
            # The session's node: a second JVM would cost the machine more than the run.
            "SEARCH_HOSTS": repr([{"host": host["host"], "port": host["port"]}]),
        },
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "ratios and targets (issue 26, InvenioRDM speed)" in result.stdout
    assert "check rdm.full: 6 published records, 0 open drafts, 0 tombstones" in result.stdout
    outcome = json.loads(report.read_text())
    assert outcome["arguments"]["rdm_without_access_cache"] is False
    summary = outcome["summary"]
    for key in ("rdm_full_over_loop", "reader_over_sickle", "rdm_hours_for_200000"):
        assert summary[key] is not None and summary[key] > 0, key
    assert outcome["phases"]["fetch"]["steps"]["our_reader"]["records"] == 300
    # Each record the loop published is queued to be indexed again (its versions, by the
    # parent's commit); the harvest indexes each once, in its batch's request.
    rdm_steps = outcome["phases"]["rdm"]["steps"]
    assert rdm_steps["create_publish_each"]["queued_documents"] == 6
    assert rdm_steps["full"]["queued_documents"] == 0
    # Nothing new at the provider: Identify and one ListRecords, nothing written into RDM.
    assert summary["rdm_no_change_requests"] == 2
    # Each format's reader and writer per record, on recorded real records (issue 35).
    assert "formats into InvenioRDM (issue 35), real records" in result.stdout
    formats = outcome["phases"]["formats"]["steps"]
    for prefix in ("oai_dc", "oai_datacite", "lido", "marcxml", "oai_openaire"):
        row = formats[f"{prefix}_per_record"]
        assert (row["records"], row["failed"]) == (3, 0), (prefix, row)
        assert row["reader_ms"] > 0 and row["writer_ms"] > 0, (prefix, row)
    assert summary["rdm_no_change_writes"] == {"target_sql": 0, "search": 0, "entries": 0}
    assert "check rdm_workers.1: 6 published records, 0 open drafts" in result.stdout
    workers = outcome["phases"]["rdm_workers"]["1"]["steps"]["full"]
    # InvenioRDM would register each new record's PIDs (the DOI and the OAI id) in two tasks
    # after its commit; the harvest registers these local-only PIDs in its batch.
    assert workers["site_tasks"] == {}
    assert workers["queued_documents"] == 0
    assert workers["celery_rss_mb"][0]["start_mb"] > 100  # a booted InvenioRDM worker's
    # The growth step: twice the records with as many workers, set against the step above.
    assert "check rdm_workers_growth.1: 12 published records, 0 open drafts" in result.stdout
    assert summary["rdm_growth_records"] == 12
    assert summary["rdm_growth_time_per_record_ratio"] > 0
    assert "time a record at 12 / at N (1 worker(s))" in result.stdout
    # The grown site: its one published record (the copies' model, in the search) and 40
    # copies in the tables; the same 6 records harvested into each of the three sites.
    grown = outcome["phases"]["rdm_grown"]["steps"]
    assert grown["grown"]["site"]["rows"]["rdm_records_metadata"] == 41
    assert grown["grown"]["site"]["rows"]["oai_harvested_record"] == 40
    for name in ("empty", "grown", "grown_indexed"):
        assert grown[name]["total_entries"] == 6, name
        assert f"check rdm_grown.{name}: 7 published records, 0 open drafts" in result.stdout
    assert summary["rdm_grown_indexed_over_empty"] > 0
    # The run journal (issue 37): a harvest with and without it, and the undo of a run.
    journal = outcome["phases"]["journal"]["steps"]
    assert journal["full_off"]["inserted_entries"] == journal["full_on"]["inserted_entries"] == 300
    assert journal["undo"]["run_status"] == "SUCCESS"
    assert journal["undo_plan"]["counts"]["revert"] == journal["incremental_on"]["updated_entries"]
    assert journal["summary"]["full_on_over_off"] > 0
    assert "journal / no journal, time a record: full " in result.stdout
    # Matching by identifiers (issue 38): the same records with a Handle each, three ways.
    matching = outcome["phases"]["matching"]["steps"]
    for name in ("full_off", "full_on", "full_on_indexed"):
        assert matching[name]["inserted_entries"] == 6, name
    # Each new record's Handle costs the harvest a look-up, and only with matching on.
    sql = matching["summary"]["sql_per_record"]
    assert sql["on"] > sql["off"] and sql["on_indexed"] > sql["off"]
    assert "matching / none, time a record: without the index " in result.stdout


def test_the_benchmark_runs_its_files_phase(tmp_path, search_server):
    """files (issue 36) with 3 records of 300,000-byte files and one of 5,000,000 bytes: the
    plain download, the harvests with files none and copy, the large file's VmRSS; every
    copied file read back from InvenioRDM's storage holds the source's bytes."""
    pytest.importorskip("invenio_rdm_records")
    database = os.environ.get("SQLALCHEMY_DATABASE_URI", "")
    if not database.startswith("postgresql"):
        pytest.skip("The benchmark runs on PostgreSQL (SQLALCHEMY_DATABASE_URI).")
    host = search_server[0]
    report = tmp_path / "files.json"
    result = subprocess.run(
        [sys.executable, "benchmarks/harvest.py", "--phases", "files"]
        + ["--file-records", "3", "--file-size", "300000", "--big-file-size", "5000000"]
        + ["--quiet-wait", "0", "--json", str(report)],
        cwd=ROOT,
        env={
            **os.environ,
            "SQLALCHEMY_DATABASE_URI": database.rsplit("/", 1)[0] + "/oaiharvest_bench_files_smoke",
            "SEARCH_HOSTS": repr([{"host": host["host"], "port": host["port"]}]),
        },
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "files into InvenioRDM (issue 36): 3 files of 300,000 bytes" in result.stdout
    assert "check files.copy: 3 of 3 records hold the source's bytes" in result.stdout
    steps = json.loads(report.read_text())["phases"]["files"]["steps"]
    summary = steps["summary"]
    for key in (
        "plain_seconds", "copy_seconds", "none_seconds", "file_part_seconds",
        "plain_files_per_second", "plain_bytes_per_second", "copy_files_per_second",
        "copy_bytes_per_second", "plain_over_file_part", "big_seconds", "big_rss_growth_mb",
    ):  # fmt: skip
        assert key in summary, key
    assert summary["plain_seconds"] > 0 and summary["copy_seconds"] > 0
    assert (summary["files"], summary["file_size"], summary["concurrency"]) == (3, 300_000, 1)
    assert steps["plain"]["bytes"] == steps["fetcher"]["bytes"] == 3 * 300_000
    assert summary["fetcher_seconds"] > 0 and "attach_ms_per_file" in summary
    # Metadata only downloads nothing; copy downloads each file once and publishes it.
    assert (steps["none"]["downloads"], steps["copy"]["downloads"]) == (0, 3)
    for name in ("none", "copy"):
        assert steps[name]["run_status"] == "SUCCESS", steps[name]
        assert steps[name]["stored"]["published"] == 3, steps[name]["stored"]
    assert steps["copy"]["verified"] == {"records": 3, "right": 3, "wrong": 0, "problems": []}
    big = steps["big"]
    assert big["verified"] == {"records": 1, "right": 1, "wrong": 0, "problems": []}
    assert big["file_bytes"] == 5_000_000 and big["vmrss_samples"] > 0
    assert big["vmrss_peak_mb"] >= big["vmrss_start_mb"] > 100  # a booted InvenioRDM's
