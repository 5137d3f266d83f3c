"""One object with every setting a run needs, built once per run from the application config.

Decision owned here: which ``OAI_HARVESTER_*`` key sets which engine setting.  The defaults
themselves live in ``config.py`` only (the protocol layer's equal them, a test checks it);
engine classes receive a :class:`HarvestSettings` (or required arguments) and never read the
application config themselves.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..protocol.networks import LOOPBACK_AND_PRIVATE_NETWORKS
from ..protocol.options import ProtocolOptions, user_agent


class ReconcileMode(enum.Enum):
    """When a full window is followed by deleting the local records the provider no longer
    has (OAI_HARVESTER_RECONCILE)."""

    AUTO = "auto"
    """When the provider does not keep tombstones (deletedRecord `no` or `transient`)."""
    ALWAYS = "always"
    NEVER = "never"


PROTOCOL_KEYS = {"timeout": "OAI_HARVESTER_REQUEST_TIMEOUT"}
"""Protocol options whose config key is not ``OAI_HARVESTER_<OPTION>``."""


def protocol_config_key(option: str) -> str:
    """The ``OAI_HARVESTER_*`` key of a :class:`ProtocolOptions` field."""
    return PROTOCOL_KEYS.get(option, f"OAI_HARVESTER_{option.upper()}")


@dataclass(frozen=True)
class HarvestSettings:
    """How runs behave on this site (``OAI_HARVESTER_*``); see ``config.py`` for each."""

    protocol: ProtocolOptions
    user_agent: str | None
    contact_email: str | None
    default_batch_size: int
    drafts_largest_batch: int | None
    reconcile: ReconcileMode
    reconcile_max_share: float
    wait_for_running: bool
    lock_timeout: float
    prefetch_batches: int
    write_mode: str
    write_queue: str | None
    subtask_timeout: float
    subtask_takeover_after: float
    clock_tolerance: float
    max_run_seconds: float
    spool: bool
    spool_directory: str | None
    retry_per_run: int
    retry_max_attempts: int
    retry_backoff: float
    preview_limit: int
    preview_max_limit: int
    preview_diffs: int
    run_log_interval: float
    undo_runs: int = 20

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> HarvestSettings:
        options: dict[str, Any] = {}
        for option in fields(ProtocolOptions):
            key = protocol_config_key(option.name)
            if key in config:
                value = config[key]
                options[option.name] = tuple(value) if isinstance(value, list) else value
        if not config.get("OAI_HARVESTER_ALLOW_PRIVATE_NETWORKS", False):
            forbidden = tuple(
                options.get("forbidden_networks", ProtocolOptions().forbidden_networks)
            )
            options["forbidden_networks"] = forbidden + LOOPBACK_AND_PRIVATE_NETWORKS
        write_mode = config["OAI_HARVESTER_WRITE_MODE"]
        if write_mode not in ("local", "celery"):
            raise ValueError(
                f"OAI_HARVESTER_WRITE_MODE must be local or celery, not {write_mode!r}"
            )
        return cls(
            protocol=ProtocolOptions(**options),
            user_agent=config["OAI_HARVESTER_USER_AGENT"],
            contact_email=config["OAI_HARVESTER_CONTACT_EMAIL"],
            default_batch_size=int(config["OAI_HARVESTER_DEFAULT_BATCH_SIZE"]),
            drafts_largest_batch=_positive_or_none(config["OAI_HARVESTER_DRAFTS_LARGEST_BATCH"]),
            reconcile=ReconcileMode(config["OAI_HARVESTER_RECONCILE"]),
            reconcile_max_share=float(config["OAI_HARVESTER_RECONCILE_MAX_SHARE"]),
            wait_for_running=config["OAI_HARVESTER_CONCURRENT_RUNS"] == "wait",
            lock_timeout=float(config["OAI_HARVESTER_LOCK_TIMEOUT"]),
            prefetch_batches=int(config["OAI_HARVESTER_PREFETCH_BATCHES"]),
            write_mode=write_mode,
            write_queue=config["OAI_HARVESTER_WRITE_QUEUE"],
            subtask_timeout=float(config["OAI_HARVESTER_SUBTASK_TIMEOUT"]),
            subtask_takeover_after=float(config["OAI_HARVESTER_SUBTASK_TAKEOVER_AFTER"]),
            clock_tolerance=float(config["OAI_HARVESTER_CLOCK_TOLERANCE"]),
            max_run_seconds=float(config["OAI_HARVESTER_MAX_RUN_SECONDS"]),
            spool=bool(config["OAI_HARVESTER_SPOOL"]),
            spool_directory=config["OAI_HARVESTER_SPOOL_DIRECTORY"],
            retry_per_run=int(config["OAI_HARVESTER_RETRY_PER_RUN"]),
            retry_max_attempts=int(config["OAI_HARVESTER_RETRY_MAX_ATTEMPTS"]),
            retry_backoff=float(config["OAI_HARVESTER_RETRY_BACKOFF"]),
            preview_limit=int(config["OAI_HARVESTER_PREVIEW_LIMIT"]),
            preview_max_limit=int(config["OAI_HARVESTER_PREVIEW_MAX_LIMIT"]),
            preview_diffs=int(config["OAI_HARVESTER_PREVIEW_DIFFS"]),
            run_log_interval=float(config["OAI_HARVESTER_RUN_LOG_INTERVAL"]),
            undo_runs=int(config["OAI_HARVESTER_UNDO_RUNS"]),
        )

    def user_agent_for(self, harvester_id: str | None) -> str:
        """The configured User-Agent, or one naming the harvester (and the site's contact)."""
        if self.user_agent is not None:
            return self.user_agent
        return user_agent(
            f"harvester {harvester_id}" if harvester_id else "",
            f"mailto:{self.contact_email}" if self.contact_email else "",
        )

    def batch_size_of(self, harvester_batch_size: int | None, *, drafts: bool = False) -> int:
        """The records of one unit of work: the harvester's, at most the drafts' largest
        batch for a target whose writes grow with their transaction (`drafts`)."""
        size = max(1, int(harvester_batch_size or self.default_batch_size))
        if drafts and self.drafts_largest_batch:
            return min(size, self.drafts_largest_batch)
        return size


def _positive_or_none(value: Any) -> int | None:
    return int(value) if value else None
