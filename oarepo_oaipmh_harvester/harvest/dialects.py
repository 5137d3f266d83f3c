"""The SQL dialect of the session: what the few statements that differ between PostgreSQL and
SQLite (an upsert) are built with."""

from __future__ import annotations

from typing import Any

from invenio_db import db
from sqlalchemy.dialects import postgresql, sqlite


def dialect_name() -> str:
    return db.session.get_bind().dialect.name


def dialect_insert() -> Any:
    """The INSERT construct of the session's database, the one with ON CONFLICT."""
    name = dialect_name()
    if name == "postgresql":
        return postgresql.insert
    if name == "sqlite":
        return sqlite.insert
    raise RuntimeError(f"Unsupported database {name!r}: use PostgreSQL or SQLite.")
