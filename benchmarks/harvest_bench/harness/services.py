"""The services a run uses: the search server (OpenSearch, osmem-server or SEARCH_HOSTS) and the
database.

The database is created fresh for a run and dropped at its end; an advisory lock keeps two
runs from sharing it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

from harvest_bench.settings import log


class StartedSearch:
    """A search server the run started: its process id (for the CPU meter) and `close`."""

    def __init__(self, pid: int, close: Callable[[], None]) -> None:
        self.pid = pid
        self.close = close


def start_search(
    kind: str = "opensearch",
) -> tuple[StartedSearch | None, list[dict[str, Any]], str]:
    """The search server of the run: the cluster named by SEARCH_HOSTS, else a real
    OpenSearch node (`kind` "opensearch", the suite's node: what sites run) or an
    osmem-server ("osmem", the in-memory imitation the earlier results were measured on),
    started here (the caller closes it).

    Returns the started server (None for SEARCH_HOSTS), the hosts and a description for the
    report.
    """
    if "SEARCH_HOSTS" in os.environ:
        import ast

        search_hosts = ast.literal_eval(os.environ["SEARCH_HOSTS"])
        return None, search_hosts, str(search_hosts)
    if kind == "opensearch":
        from oaiharvest_test_support.search_node import SearchServer

        log("search: starting an OpenSearch node (./run.sh opensearch)")
        node = SearchServer.start_node()
        return StartedSearch(node.process.pid, node.stop), node.hosts, node.describe()
    from osmem_server import OsmemServer

    server = OsmemServer.start(freeze=False, japanese=False)
    host, port = server.url.rstrip("/").split("://", 1)[-1].rsplit(":", 1)
    search_hosts = [{"host": host, "port": int(port)}]
    started = StartedSearch(server.pid, server.close)
    return started, search_hosts, f"osmem-server {server.version} at {server.url}"


@contextlib.contextmanager
def exclusive_database(uri: str) -> Iterator[None]:
    """Hold a PostgreSQL advisory lock named after the benchmark database for the whole run.

    Two benchmark runs on one database would drop it under each other (and measure each
    other's load): the second one waits here until the first has finished.
    """
    import zlib

    import sqlalchemy as sa

    url = sa.engine.make_url(uri)
    if not url.drivername.startswith("postgresql"):
        yield
        return
    engine = sa.create_engine(url.set(database="postgres"), poolclass=sa.pool.NullPool)
    key = zlib.crc32(f"oai-harvest-benchmark:{url.database}".encode())
    with engine.connect() as connection:
        if not connection.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar():
            log(f"another benchmark run uses database {url.database}; waiting for it to finish")
            connection.execute(sa.text("SELECT pg_advisory_lock(:k)"), {"k": key})
        try:
            yield
        finally:
            connection.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": key})
    engine.dispose()


def fresh_database(uri: str) -> None:
    """Drop the database if it exists and create it empty."""
    from sqlalchemy_utils.functions import create_database, database_exists, drop_database

    if database_exists(uri):
        drop_database(uri)
    create_database(uri)


def postgres_settings(uri: str) -> dict[str, str]:
    """Server settings that change the numbers (autovacuum off: no statistics on new tables)."""
    import sqlalchemy as sa

    if not uri.startswith("postgresql"):
        return {}
    engine = sa.create_engine(uri, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            return {
                name: connection.execute(sa.text(f"SHOW {name}")).scalar()
                for name in ("server_version", "autovacuum", "shared_buffers", "synchronous_commit")
            }
    finally:
        engine.dispose()


def drop_database_if_exists(uri: str) -> None:
    """Drop the run's database (unless --keep-db)."""
    from sqlalchemy_utils.functions import database_exists, drop_database

    if database_exists(uri):
        drop_database(uri)
