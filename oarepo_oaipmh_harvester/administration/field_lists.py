"""The fields an admin list or details view shows, as invenio-administration reads them."""

from __future__ import annotations

from typing import Any


def field_list(*fields: tuple[str, Any] | tuple[str, Any, int]) -> dict[str, dict[str, Any]]:
    """A view's ``item_field_list`` from (name, title) or, for a list's columns, (name,
    title, width), in the order the view shows them."""
    return {
        name: {"text": title, "order": order, **({"width": rest[0]} if rest else {})}
        for order, (name, title, *rest) in enumerate(fields, start=1)
    }
