"""Paging, sorting and query strings for services that search SQL tables, not an index."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from invenio_db import db

from ..text import echoed, unstorable_reason
from .errors import HarvesterValidationError

MAX_OFFSET = 2**63 - 1
"""PostgreSQL's OFFSET is a bigint: a page that starts further is refused, not sent."""


def first_value(value: Any) -> Any:
    """The first of a multi-valued query argument (``?x=a&x=b``), or the value itself."""
    if isinstance(value, list | tuple):
        return value[0] if value else None
    return value


def resolve_search_params(options: Any, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """page, size and sort from the request, with the defaults of `options`; bad values 400."""
    params = dict(params or {})
    errors: dict[str, list[str]] = {}

    def positive(name: str, default: int) -> int:
        raw = first_value(params.get(name))
        if raw in (None, ""):
            return default
        try:
            value = int(raw)
        except (TypeError, ValueError):
            errors[name] = ["Not a valid integer."]
            return default
        if value < 1:
            errors[name] = ["Must be greater than or equal to 1."]
        return value

    page = positive("page", 1)
    size = positive("size", options.default_size)
    if size > options.max_size:
        errors["size"] = [f"Page size cannot be greater than {options.max_size}."]
    elif "page" not in errors and "size" not in errors and (page - 1) * size > MAX_OFFSET:
        last = MAX_OFFSET // size + 1
        errors["page"] = [
            f"Page {page} is out of range: with {size} hits per page, pages go up to {last}."
        ]
    errors.update(_unstorable_arguments(params))
    q = (first_value(params.get("q")) or "").strip()
    sort = first_value(params.get("sort")) or (
        options.sort_default if q else options.sort_default_no_query
    )
    if sort not in options.sort_options:
        errors["sort"] = [
            f"Unknown sort {echoed(sort)} (known: {', '.join(options.sort_options)})."
        ]
    if errors:
        raise HarvesterValidationError(errors)
    return {**params, "page": page, "size": size, "sort": sort, "q": q}


def _unstorable_arguments(params: Mapping[str, Any]) -> dict[str, list[str]]:
    """Arguments the database could not compare (NUL characters): refused rather than sent."""
    errors: dict[str, list[str]] = {}

    def check(name: str, value: Any) -> None:
        if isinstance(value, Mapping):  # the facets the resource collected
            for key, inner in value.items():
                check(str(key), inner)
        elif isinstance(value, list | tuple):
            for inner in value:
                check(name, inner)
        elif isinstance(value, str) and name not in errors:
            reason = unstorable_reason(value)
            if reason is not None:
                errors[name] = [reason]

    for name, value in params.items():
        check(str(name), value)
    return errors


def query_words(q: str) -> list[str]:
    """Words of a query string; ``*`` (what search boxes send for "everything") means none."""
    return [word for word in q.split() if word != "*"]


def contains_all_words(columns: Iterable[Any], words: list[str]) -> Any:
    """Every word appears (case-insensitively) in at least one of the columns."""
    conditions = []
    for word in words:
        escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        pattern = f"%{escaped}%"
        conditions.append(sa.or_(*[column.ilike(pattern, escape="\\") for column in columns]))
    return sa.and_(*conditions)


def order_by(model: Any, fields: list[str]) -> list[Any]:
    """Column orderings from sort fields (``-name`` sorts descending)."""
    ordering = []
    for name in fields:
        column = getattr(model, name.lstrip("-"))
        ordering.append(column.desc() if name.startswith("-") else column.asc())
    return ordering


def fetch_page(
    query: sa.Select, model: Any, options: Any, params: dict[str, Any]
) -> tuple[list, int]:
    """The rows of the requested page and the total number of matching rows."""
    total = db.session.scalar(sa.select(sa.func.count()).select_from(query.subquery())) or 0
    ordered = query.order_by(*order_by(model, options.sort_options[params["sort"]]["fields"]))
    rows = list(
        db.session.scalars(
            ordered.offset((params["page"] - 1) * params["size"]).limit(params["size"])
        )
    )
    return rows, total
