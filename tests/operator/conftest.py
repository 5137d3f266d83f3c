"""Operator surfaces: one application serving the UI (administration panel) and ``/api``.

Users: an administrator (``administration-access``), the manager of harvester "a" (not of
"b") and a plain user. Harvesters "a" and "b" point at the local provider.
"""

from __future__ import annotations

from typing import Any

import pytest
from factories import harvester_data
from flask import Flask
from flask_webpackext.manifest import JinjaManifest, JinjaManifestEntry, JinjaManifestLoader
from invenio_access.models import ActionRoles
from invenio_access.permissions import system_identity
from invenio_accounts.testutils import login_user_via_session
from invenio_app.factory import create_app as create_ui_and_api
from operator_helpers import mounted_api_app, track
from simplekv.memory import DictStore

from oarepo_oaipmh_harvester.proxies import current_harvester_service

_SESSIONS = DictStore()


class _AnyBundleManifest(JinjaManifest):
    """Every webpack bundle exists (the tests run without built assets)."""

    def __getitem__(self, key: str) -> JinjaManifestEntry:
        return JinjaManifestEntry(key, [key])

    def __getattr__(self, name: str) -> JinjaManifestEntry:
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]


class AnyBundleManifestLoader(JinjaManifestLoader):
    """Loads `_AnyBundleManifest` whatever the path."""

    def load(self, filepath: str) -> _AnyBundleManifest:
        return _AnyBundleManifest()


@pytest.fixture(scope="module")
def create_app():
    """The UI application with the REST API mounted under /api (what a browser talks to)."""
    return create_ui_and_api


@pytest.fixture(scope="module")
def app_config(app_config):
    app_config.update(
        {
            "WEBPACKEXT_MANIFEST_LOADER": AnyBundleManifestLoader,
            # The UI and /api share sessions, as behind one web server.
            "ACCOUNTS_SESSION_STORE_FACTORY": lambda app: _SESSIONS,
            "SITE_UI_URL": "https://repo.example.org",
            "SITE_API_URL": "https://repo.example.org/api",
            "REST_CSRF_ENABLED": False,
            "THEME_SITENAME": "Test repository",
            "MAIL_DEFAULT_SENDER": "repository@example.org",
        }
    )
    return app_config


@pytest.fixture()
def set_config(app):
    """Change configuration of the UI and the API application for one test."""
    apps = [app, mounted_api_app(app)]
    saved: list[tuple[Flask, str, bool, Any]] = []

    def change(**values: Any) -> None:
        for target in apps:
            for key, value in values.items():
                saved.append((target, key, key in target.config, target.config.get(key)))
                target.config[key] = value

    yield change
    for target, key, present, value in reversed(saved):
        if present:
            target.config[key] = value
        else:
            target.config.pop(key, None)


class Users:
    """The people of the permission matrix."""

    def __init__(self, admin: Any, manager: Any, plain: Any) -> None:
        self.admin = admin
        self.manager = manager
        self.plain = plain


@pytest.fixture()
def users(app, db, UserFixture) -> Users:
    from invenio_accounts.proxies import current_datastore

    admin = UserFixture(email="admin@example.org", password="password").create(app, db)
    manager = UserFixture(email="manager@example.org", password="password").create(app, db)
    plain = UserFixture(email="plain@example.org", password="password").create(app, db)
    role = current_datastore.create_role(name="administrators")
    current_datastore.add_role_to_user(admin.user, role)
    db.session.add(ActionRoles(action="administration-access", role=role))
    db.session.commit()
    return Users(admin, manager, plain)


@pytest.fixture()
def login(client):
    """Log the test client in as one of the users (None: stay anonymous)."""

    def log_in(user: Any) -> Any:
        if user is not None:
            login_user_via_session(client, email=user.email)
        return client

    return log_in


@pytest.fixture()
def harvesters(app, db, users, provider):
    """Harvester "a" (managed by the manager) and "b" (managed by nobody)."""
    a = current_harvester_service.create(
        system_identity,
        harvester_data("a", provider.base_url, harvest_managers=[users.manager.user.id]),
    )
    b = current_harvester_service.create(system_identity, harvester_data("b", provider.base_url))
    return a, b


@pytest.fixture()
def tracked(harvesters):
    """Tracking rows of both harvesters: live, deleted and failed ones."""
    return [
        track("a", "oai:a:1", local_pid="abc-1", transformed={"metadata": {"title": ["One"]}}),
        track(
            "a", "oai:a:2", datestamp="2024-03-01T00:00:00Z", errors=["Validation failed: title"]
        ),
        track("a", "oai:a:3", deleted=True, datestamp="2024-05-01"),
        track("b", "oai:b:1", local_pid="abc-2"),
        track("b", "oai:b:2", errors=["TransformError: no metadata"]),
    ]
