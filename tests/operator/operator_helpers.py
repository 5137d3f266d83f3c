"""Helpers of the operator tests (a module of its own: conftest is not importable by name)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from flask import Flask
from invenio_db import db
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from oarepo_oaipmh_harvester.models import OAIHarvestedRecord


def path_of(url: str) -> str:
    """The path (and query) of an absolute link, for the test client."""
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}" if parts.query else parts.path


def track(harvester_id: str, identifier: str, **extra: Any) -> OAIHarvestedRecord:
    """A tracking row as the writer leaves it (for tests that need no harvest)."""
    row = OAIHarvestedRecord(
        harvester_id=harvester_id,
        oai_identifier=identifier,
        datestamp=extra.pop("datestamp", "2024-01-01T00:00:00Z"),
        deleted=extra.pop("deleted", False),
        harvested_at=extra.pop("harvested_at", datetime(2024, 6, 1, tzinfo=UTC)),
        original_xml=extra.pop(
            "original_xml",
            f"<record><header><identifier>{identifier}</identifier></header></record>",
        ),
        **extra,
    )
    db.session.add(row)
    db.session.commit()
    return row


def mounted_api_app(app: Flask) -> Flask:
    """The REST application the combined app mounts under /api (it has its own config)."""
    wsgi = app.wsgi_app
    while not isinstance(wsgi, DispatcherMiddleware):
        wsgi = wsgi.app  # ProxyFix and similar wrappers
    return wsgi.mounts["/api"]
