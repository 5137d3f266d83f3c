"""Text typed by operators: how much of it an error message repeats.

Every surface (REST, forms, command line, fixture files) hands the services text of any length;
an error message that repeats a value in full can be as large as a request body.
"""

from __future__ import annotations

from typing import Any

from .protocol.errors import limited

ECHO_LIMIT = 200
"""Characters of an operator's value that an error message repeats."""


def echoed(value: Any, limit: int = ECHO_LIMIT) -> str:
    """`value` as an error message quotes it, cut to about `limit` characters."""
    if isinstance(value, str):
        return repr(limited(value, limit))
    # Linear in the size of the input: JSON has no shared values and fixture files refuse
    # YAML aliases, which would otherwise make this repr exponential.
    return limited(repr(value), limit)
