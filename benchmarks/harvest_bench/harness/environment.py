"""What a run records about the code and the machine it measured."""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import subprocess
from typing import Any

from harvest_bench.settings import REPO_ROOT

# The packages whose versions change the numbers; recorded with every run.
MEASURED_PACKAGES = (
    "invenio-records-resources", "invenio-indexer", "invenio-jobs", "SQLAlchemy",
    "SQLAlchemy-Continuum", "sickle", "lxml", "osmem-server",
)  # fmt: skip


def _git(*args: str) -> str:
    """git's output in the checkout, or "?" where git or the checkout is missing."""
    try:
        return subprocess.run(
            ["git", *args], capture_output=True, text=True, check=True, cwd=REPO_ROOT
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return "?"


def environment() -> dict[str, Any]:
    """The checkout's commit and uncommitted files, Python, CPUs and the measured packages."""
    from importlib.metadata import version

    def safe_version(name: str) -> str:
        try:
            return version(name)
        except Exception:  # noqa: BLE001 - a package that is not installed
            return "?"

    return {
        "commit": _git("rev-parse", "--short", "HEAD").strip(),
        # Not stripped before the cut: the first line may start with a space (" M path").
        "dirty_files": [line[3:] for line in _git("status", "--porcelain").splitlines() if line],
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "packages": {name: safe_version(name) for name in MEASURED_PACKAGES},
    }


def code_version() -> str:
    """HEAD and a digest of the uncommitted changes of the package, as this worker imports it.

    Computed in every worker process: the package may change between two phases of a run.
    """
    head = _git("rev-parse", "--short", "HEAD").strip()
    diff = _git("diff", "HEAD", "--", "oarepo_oaipmh_harvester")
    untracked = _git("ls-files", "--others", "--exclude-standard", "oarepo_oaipmh_harvester")
    for name in untracked.split():
        with contextlib.suppress(OSError):
            diff += name + (REPO_ROOT / name).read_text()
    if not diff.strip():
        return head
    return f"{head}+dirty:{hashlib.sha1(diff.encode()).hexdigest()[:8]}"
