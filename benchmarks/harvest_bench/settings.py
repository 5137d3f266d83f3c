"""Names and defaults shared by the entry point, the worker processes and the phases."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

# The checkout whose commit and uncommitted changes a run records.
REPO_ROOT = Path(__file__).resolve().parents[2]

HARVESTER_ID = "bench"
TARGET = "oai-sample-records"
INDEX_ALIAS = "oaisamplerecords"
INDEX_PREFIX = "oaibench-"
DEFAULT_DB = "postgresql+psycopg2://postgres@127.0.0.1:5432/oaiharvest_bench"
PHASES = (
    "fetch", "write", "naive", "ours", "batch", "workers", "rdm", "rdm_workers", "rdm_grown",
    "formats", "files", "journal", "matching",
)  # fmt: skip
RDM_PHASES = ("rdm", "rdm_workers", "rdm_grown", "formats", "matching")
# rdm_grown grows a site to --rdm-site-records first: asked for by name only.
DEFAULT_PHASES = tuple(phase for phase in PHASES if phase != "rdm_grown")
# Phases whose corpus size differs from --records: each gets a provider of its own.
# files: providers of its own serving OpenAIRE records with files (`files_content`).
SEPARATE_PROVIDER_PHASES = ("batch", "workers", *RDM_PHASES, "files")
# Flushed at the start of every workers phase: a database of its own, not the tests'.
CELERY_BROKER = os.environ.get("OAI_BENCH_BROKER", "redis://127.0.0.1:6379/9")
ACCESS_CACHE_REDIS = os.environ.get("OAI_BENCH_ACCESS_CACHE", "redis://127.0.0.1:6379/8")


def log(message: str) -> None:
    """Progress on stderr, so that stdout carries the report alone."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
