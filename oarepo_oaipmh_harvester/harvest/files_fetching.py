"""The downloader of a harvester's files, built from the harvester and the site's settings.

Decision owned here: the rules a file download follows are the provider's own (forbidden
networks, the provider's credentials for its own origin only, the User-Agent, retries bounded
as the OAI-PMH requests' are), plus the files' own limits (size, deadline, hosts, politeness).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..credentials import provider_credentials
from ..protocol.downloads import FileFetcher
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
        retries=protocol.max_retries,
        max_retry_wait=protocol.max_retry_wait,
        user_agent=settings.user_agent_for(harvester.id),
    )
    return RecordFiles(options, fetcher, RunBytes(options.max_run_bytes))
