"""Text typed by operators: what the database can store, and how much of it a message repeats.

Every surface (REST, forms, command line, fixture files) hands the services text of any length
and content. PostgreSQL refuses NUL characters and text that is not valid Unicode with an
error the caller would see as a 500; an error message that repeats a value in full can be as
large as a request body. Both rules live here so that every service applies them alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from marshmallow import ValidationError, validate

from .protocol.errors import limited

FIELD_REFERENCE = re.compile(r"`([a-z][a-z0-9_]*)`")


def field_reference(name: str) -> str:
    """How a message names another field of the input, so that each surface can write it in
    its operator's terms: REST its field name, the command line its option (``errors_only``
    is ``--errors-only``)."""
    return f"`{name}`"


def with_field_names(message: str, name_of: Callable[[str], str] = str) -> str:
    """`message` with the fields it names (:func:`field_reference`) written by `name_of`."""
    return FIELD_REFERENCE.sub(lambda match: name_of(match.group(1)), message)


ECHO_LIMIT = 200
"""Characters of an operator's value that an error message repeats."""


def echoed(value: Any, limit: int = ECHO_LIMIT) -> str:
    """`value` as an error message quotes it, cut to about `limit` characters."""
    if isinstance(value, str):
        return repr(limited(value, limit))
    # Linear in the size of the input: JSON has no shared values and fixture files refuse
    # YAML aliases, which would otherwise make this repr exponential.
    return limited(repr(value), limit)


def unstorable_reason(text: str) -> str | None:
    """Why PostgreSQL cannot store `text` (a sentence), or None when it can."""
    if "\x00" in text:
        return "Text cannot contain NUL characters (\\0)."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "Text cannot contain unpaired surrogates (it is not valid Unicode)."
    return None


def is_storable(value: Any) -> bool:
    """A text the database can compare and store (ids from URLs and files are checked first)."""
    return isinstance(value, str) and unstorable_reason(value) is None


class StorableText(validate.Validator):
    """A marshmallow validator: refuses text that PostgreSQL cannot store."""

    def __call__(self, value: str) -> str:
        reason = unstorable_reason(value)
        if reason is not None:
            raise ValidationError(reason)
        return value


TRACEBACK_HEADER = "Traceback (most recent call last):"


def without_traceback(message: str | None) -> str | None:
    """A run's message as an operator reads it on the harvester's pages.

    invenio-jobs appends the Python traceback of an unexpected error to the run's message;
    the run's page in Administration → Jobs still shows all of it.
    """
    if not message or TRACEBACK_HEADER not in message:
        return message
    return message.split(TRACEBACK_HEADER, 1)[0].rstrip()
