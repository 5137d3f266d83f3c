"""Who may see and act on which harvester: the check every harvester-scoped service makes."""

from __future__ import annotations

from typing import Any

from invenio_access.permissions import system_user_id
from invenio_db import db

from ..models import OAIHarvester
from ..protocol.errors import limited
from ..text import is_storable
from .errors import HarvesterNotFound


class HarvesterAccessMixin:
    """For services configured with the harvester permission policy (harvesters, runs)."""

    def get_harvester(self, identity: Any, harvester_id: str, action: str = "read") -> OAIHarvester:
        """The harvester, if `identity` may do `action` on it.

        Callers who may not use the API at all: 403 before any look-up. A harvester they may
        not read: not found, as if it did not exist (names of other harvesters do not leak).
        Readable but not allowed `action`: 403.
        """
        self.require_permission(identity, "use")
        # An id the database cannot compare (a NUL from a URL, a list from a file) names no
        # harvester: asking would fail with a database error.
        harvester = (
            db.session.get(OAIHarvester, harvester_id) if is_storable(harvester_id) else None
        )
        if harvester is None or not self.check_permission(identity, "read", harvester=harvester):
            raise HarvesterNotFound(harvester_id)
        if action != "read":
            self.require_permission(identity, action, harvester=harvester)
        return harvester

    def visible_harvester_ids(self, identity: Any) -> list[str] | None:
        """Ids of the harvesters `identity` may read; None means all of them."""
        if self.check_permission(identity, "manage"):
            return None
        return [
            harvester.id
            for harvester in db.session.scalars(db.select(OAIHarvester))
            if self.check_permission(identity, "read", harvester=harvester)
        ]


def is_user(identity: Any) -> bool:
    """A person (not the system identity)."""
    return isinstance(getattr(identity, "id", None), int) and identity.id != system_user_id


FIELD_NAME_LIMIT = 100
MESSAGE_LIMIT = 1000


def flatten_messages(messages: Any, prefix: str = "") -> dict[str, list[str]]:
    """marshmallow's nested error messages as {"field.sub": [messages]}.

    Names and messages are cut short: an unknown field's name is the client's own key, and a
    400 should not send a megabyte of it back.
    """
    flat: dict[str, list[str]] = {}
    if isinstance(messages, dict):
        for key, value in messages.items():
            name = (
                f"{prefix}.{limited(key, FIELD_NAME_LIMIT)}"
                if prefix
                else limited(key, FIELD_NAME_LIMIT)
            )
            if isinstance(value, dict):
                flat.update(flatten_messages(value, name))
            else:
                flat[name] = [
                    limited(v, MESSAGE_LIMIT)
                    for v in (value if isinstance(value, list) else [value])
                ]
    else:
        flat[prefix or "_schema"] = [limited(messages, MESSAGE_LIMIT)]
    return flat


def link_args(params: dict[str, Any]) -> dict[str, Any]:
    """Query arguments repeated in the search links (defaults dropped)."""
    return {k: v for k, v in params.items() if v not in (None, "", [], {}) and k != "facets"}
