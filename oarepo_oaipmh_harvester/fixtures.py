"""Harvesters from a YAML file: missing ones are created, existing ones updated.

The file is a list of harvesters (or a mapping with a ``harvesters`` list), each written as
for the REST API or ``invenio oai harvester create``::

    - id: zenodo
      name: Zenodo
      base_url: https://zenodo.org/oai2d
      metadata_prefix: oai_dc
      setspecs: [user-cern]
      target: records
      harvest_managers: [manager@example.org, 12]   # e-mail addresses or user ids

By default it is ``<instance path>/app_data/oai_harvesters.yaml`` (``OAI_HARVESTER_FIXTURES_FILE``
overrides it). Every entry goes through the harvester service, so the same validation (and the
preflight check, unless disabled) applies. An entry that fails is reported by its position and
id and the others are still loaded.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from flask import current_app
from invenio_access.permissions import system_identity
from invenio_db import db

from .credentials import CredentialsUnavailable, unseal
from .models import OAIHarvester
from .proxies import current_harvester_service
from .services.errors import HarvesterServiceError
from .services.harvesters import EDITABLE_FIELDS
from .services.users import user_with_email
from .text import echoed, is_storable

log = logging.getLogger(__name__)


class FixtureFileError(Exception):
    """The file cannot be read as a list of harvesters."""


class AliasRefused(yaml.composer.ComposerError):
    """The file uses a YAML anchor or alias."""


class FixtureYAMLLoader(yaml.SafeLoader):
    """Safe YAML without anchors and aliases, refused before any value is built.

    An alias repeats a value; aliases of aliases make a file of a few hundred bytes stand for
    gigabytes as soon as something walks the value (a repr for an error message did, until
    MemoryError). A list of harvesters never needs them.
    """

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise AliasRefused(
                problem="YAML anchors and aliases (&name, *name) are not allowed in fixture "
                "files; write each value out",
                problem_mark=event.start_mark,
            )
        return super().compose_node(parent, index)


@dataclass
class FixtureLoadResult:
    """What loading a fixture file did, by harvester id; `errors` name the failed entries."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def default_fixtures_path() -> Path:
    """Where the instance keeps its harvester fixtures."""
    configured = current_app.config.get("OAI_HARVESTER_FIXTURES_FILE")
    if configured:
        return Path(configured)
    return Path(current_app.instance_path) / "app_data" / "oai_harvesters.yaml"


def read_fixture_file(path: str | Path) -> list[Any]:
    """The entries of a fixture file."""
    path = Path(path)
    try:
        content = yaml.load(path.read_text(encoding="utf-8"), Loader=FixtureYAMLLoader)
    except OSError as error:
        raise FixtureFileError(f"Cannot read {path}: {error.strerror or error}") from None
    except AliasRefused as error:
        mark = error.problem_mark
        raise FixtureFileError(
            f"{path}, line {mark.line + 1}, column {mark.column + 1}: {error.problem}."
        ) from None
    except yaml.YAMLError as error:
        raise FixtureFileError(f"{path} is not valid YAML: {error}") from None
    except RecursionError:
        # PyYAML composes nested collections recursively: thousands of "[" exhaust the stack.
        raise FixtureFileError(f"{path} nests lists or mappings too deeply.") from None
    if content is None:
        return []
    if isinstance(content, dict) and "harvesters" in content:
        content = content["harvesters"]
    if not isinstance(content, list):
        raise FixtureFileError(
            f"{path} must hold a list of harvesters (or a mapping with a 'harvesters' list)."
        )
    return content


def load_harvesters(
    path: str | Path | None = None,
    *,
    identity: Any = system_identity,
    check: bool | None = None,
) -> FixtureLoadResult:
    """Create the harvesters of the file that do not exist and update those that do."""
    path = Path(path) if path else default_fixtures_path()
    result = FixtureLoadResult()
    for position, entry in enumerate(read_fixture_file(path), start=1):
        name = _entry_name(position, entry)
        try:
            if not isinstance(entry, dict):
                raise HarvesterServiceError("an entry must be a mapping of fields.")
            data = _resolve_users(entry)
            harvester_id = data.get("id")
            # Only a text id can name a stored harvester; any other (a number, a list) goes to
            # create, whose validation names the problem.
            existing = (
                db.session.get(OAIHarvester, harvester_id) if is_storable(harvester_id) else None
            )
            if existing is None:
                current_harvester_service.create(identity, data, check=check)
                result.created.append(harvester_id)
            elif _same(existing, data):
                result.unchanged.append(harvester_id)
            else:
                current_harvester_service.update(identity, harvester_id, data, check=check)
                result.updated.append(harvester_id)
        except HarvesterServiceError as error:
            db.session.rollback()
            result.errors.append(f"{name}: {error}")
        except Exception as error:
            # One entry that trips something unforeseen must not cost the entries after it.
            log.exception("Fixture %s of %s could not be loaded", name, path)
            db.session.rollback()
            result.errors.append(
                f"{name}: could not be loaded ({type(error).__name__}: {echoed(str(error))})."
            )
    return result


def _entry_name(position: int, entry: Any) -> str:
    harvester_id = entry.get("id") if isinstance(entry, dict) else None
    return f"entry {position} (id {echoed(harvester_id)})" if harvester_id else f"entry {position}"


def _resolve_users(entry: dict) -> dict:
    """Harvest managers and the owner may be written as e-mail addresses: ids differ between
    instances (and an unchanged entry must compare equal to what is stored)."""
    entry = dict(entry)
    owner = entry.get("owner")
    if isinstance(owner, str) and "@" in owner:
        user = user_with_email(owner)
        if user is None:
            raise HarvesterServiceError(f"owner: no user with e-mail address {echoed(owner)}.")
        entry["owner"] = user.id
    managers = entry.get("harvest_managers")
    if not managers or not isinstance(managers, list):
        return entry
    resolved: list[Any] = []
    for manager in managers:
        if isinstance(manager, str) and "@" in manager:
            user = user_with_email(manager)
            if user is None:
                raise HarvesterServiceError(
                    f"harvest_managers: no user with e-mail address {echoed(manager)}."
                )
            resolved.append(user.id)
        else:
            resolved.append(manager)
    return {**entry, "harvest_managers": resolved}


def _same(harvester: OAIHarvester, data: dict) -> bool:
    """Whether the entry would change nothing (so no update, no preflight, no timestamp)."""
    for name in EDITABLE_FIELDS:
        if name not in data:
            continue
        current, wanted = getattr(harvester, name), data[name]
        if isinstance(current, list) or isinstance(wanted, list):
            try:
                current, wanted = list(current or []), list(dict.fromkeys(wanted or []))
            except TypeError:
                # Nested lists or mappings: a change, which the update refuses by field.
                return False
        if current != wanted:
            return False
    return _same_credentials(harvester, data)


def _same_credentials(harvester: OAIHarvester, data: dict) -> bool:
    """Whether the entry's auth and headers (if it gives them) are the stored ones."""
    if not any(name in data for name in ("auth", "headers", "clear_credentials")):
        return True
    if data.get("clear_credentials"):
        return not harvester.credentials
    try:
        stored = unseal(harvester.credentials)
    except CredentialsUnavailable:
        return False
    auth = data.get("auth", stored.get("auth"))
    if isinstance(auth, dict):
        auth = {"username": auth.get("username"), "password": auth.get("password") or ""}
    headers = data.get("headers", stored.get("headers"))
    return auth == stored.get("auth") and (headers or None) == (stored.get("headers") or None)
