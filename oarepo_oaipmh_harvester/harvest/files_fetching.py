"""The downloader of a harvester's files, built from the harvester and the site's settings.

Decision owned here: the rules a file download follows are the provider's own (forbidden
networks, the provider's credentials for its own origin only, the User-Agent, retries bounded
as the OAI-PMH requests' are), plus the files' own limits (size, deadline, hosts, politeness),
and where downloads at once per host are counted: in the site's Redis, so that the limit holds
across its worker processes, else in each process.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import cache
from typing import Any

from ..credentials import provider_credentials
from ..protocol.downloads import FileFetcher
from ..protocol.host_slots import HostSlots, ProcessHostSlots, RedisHostSlots
from .settings import HarvestSettings
from .targets.options import FilesOptions
from .targets.record_files import RecordFiles, RunBytes


def record_files_for(
    harvester: Any,
    options: FilesOptions,
    settings: HarvestSettings,
    config: Mapping[str, Any],
) -> RecordFiles | None:
    """What fetches a harvester's files (None: it copies none)."""
    if not options.fetches:
        return None
    protocol = settings.protocol
    fetcher = FileFetcher(
        harvester.base_url,
        allowed_hosts=options.hosts,
        max_size=options.max_size,
        max_redirects=protocol.max_redirects,
        deadline=float(config["OAI_HARVESTER_FILES_DEADLINE"]),
        timeout=protocol.timeout
        if isinstance(protocol.timeout, tuple)
        else (protocol.timeout, protocol.timeout),
        forbidden_networks=protocol.forbidden_networks,
        credentials=provider_credentials(harvester.credentials),
        per_host=int(config["OAI_HARVESTER_FILES_PER_HOST"]),
        host_slots=host_slots_for(config),
        retries=protocol.max_retries,
        max_retry_wait=protocol.max_retry_wait,
        user_agent=settings.user_agent_for(harvester.id),
    )
    return RecordFiles(options, fetcher, RunBytes(options.max_run_bytes))


log = logging.getLogger(__name__)

_REDIS_CACHE_TYPES = frozenset({"redis", "rediscache", "flask_caching.backends.rediscache"})


def host_slots_for(config: Mapping[str, Any]) -> HostSlots:
    """Where downloads at once per host are counted (OAI_HARVESTER_FILES_SLOTS_REDIS_URL; by
    default the site's cache Redis where the cache is Redis)."""
    per_host = int(config["OAI_HARVESTER_FILES_PER_HOST"])
    url = config.get("OAI_HARVESTER_FILES_SLOTS_REDIS_URL")
    if url is None and str(config.get("CACHE_TYPE", "")).lower() in _REDIS_CACHE_TYPES:
        url = config.get("CACHE_REDIS_URL")
    if not url:
        return ProcessHostSlots(per_host)
    client = _redis_client(url)
    try:
        client.ping()
    except Exception as error:  # noqa: BLE001 - any failure to reach it: count per process
        log.warning(
            "Redis at %s does not answer (%s): downloads at once per host are counted in each "
            "process, not across the site's workers.", url, error,
        )  # fmt: skip
        return ProcessHostSlots(per_host)
    lease = float(config["OAI_HARVESTER_FILES_DEADLINE"]) + 60.0
    return RedisHostSlots(client, per_host, lease=lease)


@cache
def _redis_client(url: str) -> Any:
    """One client (and connection pool) a URL and process (redis-py reopens after a fork)."""
    import redis

    return redis.Redis.from_url(url, socket_connect_timeout=2.0)
