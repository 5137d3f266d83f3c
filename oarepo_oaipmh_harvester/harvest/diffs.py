"""What differs between the data a target holds and the data a harvest would write. Pure.

Decision owned here: which part of a target's record is compared (the fields the harvest
writes: a service adds its own - ids, links, revision, expanded vocabulary titles - and those
are no difference), when two values are the same, and the JSON-Patch-like list of changes
that a preview shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Change = dict[str, Any]
"""``{"op": "add" | "remove" | "replace", "path": "/metadata/title", "value": ...}``"""


def project(current: Any, like: Any) -> Any:
    """The part of `current` that has the shape of `like`: keys `like` has, recursively.

    A target returns more than it was given (``{"id": "eng", "title": {...}}`` for
    ``{"id": "eng"}``); only what the harvest writes can differ from what it would write.
    Lists are compared item by item, each projected on the item of `like` at its position.
    """
    if isinstance(like, Mapping) and isinstance(current, Mapping):
        return {key: project(current[key], like[key]) for key in like if key in current}
    if isinstance(like, list) and isinstance(current, list):
        return [
            project(item, like[index]) if index < len(like) else item
            for index, item in enumerate(current)
        ]
    return current


def merged_shape(*shapes: Any) -> Any:
    """A template with every key of the given dicts (the data written last time and the data
    a harvest would write now): a field dropped by a new mapping is still compared."""
    dicts = [shape for shape in shapes if isinstance(shape, Mapping)]
    if dicts:
        keys = list(dict.fromkeys(key for shape in dicts for key in shape))
        return {key: merged_shape(*(shape[key] for shape in dicts if key in shape)) for key in keys}
    lists = [shape for shape in shapes if isinstance(shape, list)]
    if lists:
        longest = max(len(shape) for shape in lists)
        return [
            merged_shape(*(shape[index] for shape in lists if index < len(shape)))
            for index in range(longest)
        ]
    return shapes[0] if shapes else None


def changes(old: Any, new: Any, path: str = "") -> list[Change]:
    """The changes that turn `old` into `new`, JSON-Patch-like (RFC 6902 paths)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        found: list[Change] = []
        for key in old:
            if key not in new:
                found.append({"op": "remove", "path": _join(path, key)})
        for key in new:
            if key not in old:
                found.append({"op": "add", "path": _join(path, key), "value": new[key]})
            else:
                found.extend(changes(old[key], new[key], _join(path, key)))
        return found
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        found = []
        for index, (before, after) in enumerate(zip(old, new, strict=True)):
            found.extend(changes(before, after, _join(path, str(index))))
        return found
    if old == new:
        return []
    return [{"op": "replace", "path": path or "/", "value": new}]


def target_changes(
    current: Mapping[str, Any] | None, new: Mapping[str, Any], written: Mapping[str, Any] | None
) -> list[Change]:
    """What writing `new` changes in the target's `current` data, compared on the fields the
    harvest writes now or wrote last time (`written`)."""
    if current is None:
        return changes({}, dict(new))
    shape = merged_shape(new, written) if written is not None else new
    return changes(project(current, shape), dict(new))


def holds(current: Mapping[str, Any] | None, written: Mapping[str, Any] | None) -> bool:
    """Whether the target still holds what the harvest wrote (no local edit since)."""
    if current is None or written is None:
        return current is None and written is None
    return not changes(project(current, written), dict(written))


def _join(path: str, key: str) -> str:
    # RFC 6901 escaping, so that a key with "/" or "~" cannot be read as two steps.
    return f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"
