"""The InvenioRDM releases the plugin supports, and what each test site of them owns.

Every site runs on services shared with other test runs on the same machine: each release has
its own database, its own Redis database (broker, cache, sessions) and its own index prefix.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Release:
    """One InvenioRDM release as a site installs it."""

    key: str
    """Short name: folders (.site/<key>), test ids, report folders."""
    title: str
    requirement: str
    """What `pip install` is given for the application (invenio-app-rdm from PyPI)."""
    database: str
    redis_db: int
    npm_overrides: dict[str, str] = field(default_factory=dict)
    """`overrides` written into the instance's package.json, before the lock is used: a
    dependency range that the npm registry cannot satisfy yet is pinned to a served release."""

    @property
    def index_prefix(self) -> str:
        return f"oaiharvest-{self.key}-"

    @property
    def redis_url(self) -> str:
        base = os.environ.get("OAI_HARVESTER_SITE_REDIS", "redis://127.0.0.1:6379")
        return f"{base.rstrip('/')}/{self.redis_db}"

    def database_uri(self) -> str:
        base = os.environ.get(
            "OAI_HARVESTER_SITE_DATABASE_SERVER", "postgresql+psycopg2://postgres@127.0.0.1:5432"
        )
        return f"{base.rstrip('/')}/{self.database}"


# @webrecorder/wabac (invenio-previewer's web archive viewer) asks for warcio ^2.4.12, which the
# npm registry does not serve everywhere yet; 2.4.11 has what the viewer uses.
_WARCIO = {"warcio": "2.4.11"}

RELEASES: dict[str, Release] = {
    release.key: release
    for release in (
        Release(
            key="rdm14",
            title="InvenioRDM 14",
            requirement="invenio-app-rdm[opensearch2]==14.0.5",
            database="oaiharvest_site14",
            redis_db=10,
            npm_overrides=_WARCIO,
        ),
        Release(
            key="rdm15",
            title="InvenioRDM 15",
            requirement="invenio-app-rdm[opensearch2]==15.0.0b6.dev0",
            database="oaiharvest_site15",
            redis_db=15,
            npm_overrides=_WARCIO,
        ),
    )
}


def selected_releases() -> list[Release]:
    """All releases, or those named in OAI_HARVESTER_SITE_RELEASES (e.g. "rdm15")."""
    names = os.environ.get("OAI_HARVESTER_SITE_RELEASES")
    if not names:
        return list(RELEASES.values())
    return [RELEASES[name.strip()] for name in names.split(",") if name.strip()]
