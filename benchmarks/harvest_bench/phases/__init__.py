"""The phases, each run by `harness.worker` in a fresh process: `PHASE_FUNCTIONS[name]`.

A phase function takes the `PhaseWorker` and the phase's parameters and returns
`{"steps": {step name: result}}`; the worker adds `code` and `process`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harvest_bench.phases.files import phase_files
from harvest_bench.phases.formats import phase_formats
from harvest_bench.phases.journal import phase_journal
from harvest_bench.phases.limits import phase_fetch, phase_naive, phase_write
from harvest_bench.phases.matching import phase_matching
from harvest_bench.phases.ours import phase_batch, phase_ours
from harvest_bench.phases.rdm import phase_rdm
from harvest_bench.phases.rdm_grown import phase_rdm_grown
from harvest_bench.phases.rdm_profile import phase_rdm_profile
from harvest_bench.phases.workers import phase_workers

PHASE_FUNCTIONS: dict[str, Callable[..., dict[str, Any]]] = {
    "fetch": phase_fetch,
    "write": phase_write,
    "naive": phase_naive,
    "ours": phase_ours,
    "batch": phase_batch,
    "workers": phase_workers,
    "rdm": phase_rdm,
    "rdm_workers": phase_workers,
    "rdm_grown": phase_rdm_grown,
    "formats": phase_formats,
    "files": phase_files,
    "journal": phase_journal,
    "matching": phase_matching,
    "rdm_profile": phase_rdm_profile,  # benchmarks/profile_rdm.py, not a --phases name
}
