"""Users named in harvester input: by id, or by e-mail address (ids differ between instances)."""

from __future__ import annotations

from typing import Any

from invenio_accounts.models import User
from invenio_db import db
from marshmallow import ValidationError, fields

from ..text import echoed, is_storable


def user_with_email(email: str) -> User | None:
    """The user with this e-mail address (compared without case), if any."""
    if not is_storable(email):  # the database cannot compare it, and no address contains it
        return None
    return db.session.scalars(
        db.select(User).where(db.func.lower(User.email) == email.lower())
    ).first()


class UserReference(fields.Integer):
    """A user id, also accepted as the user's e-mail address (ids differ between instances,
    and an operator at a command line knows the address)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("error_messages", {"invalid": "Give a user id or e-mail address."})
        super().__init__(strict=False, **kwargs)

    def _deserialize(self, value: Any, attr: str | None, data: Any, **kwargs: Any) -> int:
        if isinstance(value, str) and "@" in value:
            user = user_with_email(value.strip())
            if user is None:
                raise ValidationError(f"No user with e-mail address {echoed(value)}.")
            return user.id
        return super()._deserialize(value, attr, data, **kwargs)
