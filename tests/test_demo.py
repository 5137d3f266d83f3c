"""The README's demo commands, run as an operator runs them (`./run.sh demo [--rdm]` runs this
module in the project's venv): a fresh process, SQLite and osmem-server of its own, the exit
code and the final line are what the operator sees."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run_demo(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "oaiharvest_test_support.demo", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_demo_harvest_into_the_sample_service_keeps_in_step():
    result = run_demo("--records", "400")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Provider changed: 60 edited, 25 deleted, 40 added." in result.stdout
    assert "Provider live records: 415; local live records: 415" in result.stdout
    assert "The local service is in step with the provider." in result.stdout


def test_demo_harvest_into_invenio_rdm_publishes_and_tombstones():
    pytest.importorskip("invenio_rdm_records")
    result = run_demo("--rdm", "--records", "24")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    output = result.stdout
    assert "Target: records, transformer oai_dc_rdm" in output
    assert "created 24, updated 0, deleted 0, unchanged 0, failed 0" in output
    assert "created 2, updated 4, deleted 3, unchanged 0, failed 0" in output
    assert "Provider live records: 23; local live records: 23" in output
    assert "Deleted at the provider: 3; tombstones: 3" in output
    assert "The local service is in step with the provider." in output
    # rdm-records' missing statistics queries would log twice per indexed record.
    assert "'record-view'" not in result.stderr


@pytest.mark.parametrize(
    ("prefix", "transformer"),
    [("lido", "lido_rdm"), ("marcxml", "marcxml_rdm"), ("oai_openaire", "oai_openaire_rdm")],
)
def test_demo_harvest_of_each_richer_format_into_invenio_rdm(prefix, transformer):
    pytest.importorskip("invenio_rdm_records")
    result = run_demo("--rdm", "--prefix", prefix, "--records", "12")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    output = result.stdout
    assert f"serving 12 {prefix} records" in output
    assert f"Target: records, transformer {transformer}" in output
    assert "created 12, updated 0, deleted 0, unchanged 0, failed 0" in output
    assert "Deleted at the provider: 3; tombstones: 3" in output
    assert "The local service is in step with the provider." in output


def test_demo_harvest_with_files_copies_each_record_s_file_into_invenio_rdm():
    """``./run.sh demo --rdm --files copy``: every record's PDF, fetched from the provider into
    InvenioRDM's storage; the edited records' files are unchanged and not fetched again."""
    pytest.importorskip("invenio_rdm_records")
    result = run_demo("--rdm", "--files", "copy", "--records", "12")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    output = result.stdout
    assert "--files copy" in output
    assert "created 12, updated 0, deleted 0, unchanged 0, failed 0; files fetched 12" in output
    assert "created 2, updated 4, deleted 3, unchanged 0, failed 0; files fetched 2" in output
    assert "unchanged 4, failed 0" in output
    assert "Records holding their file: 11 of 11" in output
    assert "The local service is in step with the provider." in output
