"""Per-field policies for local edits: what a harvest does to a field a local user changed.

Decision owned here: when a field counts as changed locally (the local record's value differs
from the value the harvest wrote last, compared on the shape the harvest writes: a service's
expanded vocabulary titles are no edit), when the source changed it (the new value differs
from the one written last), what each policy writes - ``source`` the source's value,
``local`` a locally changed value kept, ``merge`` lists united (the source's items in its
order, then the items a local user added; objects matched by their ``id``) and objects merged
key by key - and what a conflict (both changed it, to different values) records. Pure: no
Flask, no database; the writer hands it the three versions of a record.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .diffs import merged_shape, project

ABSENT: Any = object()
"""A field the data does not have (distinct from a null value)."""


class FieldPolicy(StrEnum):
    """What a harvest does to a field that a local user changed."""

    SOURCE = "source"
    """The harvest writes the source's value (the default: a harvest overwrites)."""
    LOCAL = "local"
    """Once a local user changed the field, the harvest keeps the local value."""
    MERGE = "merge"
    """Lists: the union (the source's items in its order, then local additions); objects:
    key by key, a key changed locally keeps its local value."""


class FieldPolicyError(ValueError):
    """A field policy written wrongly (a path or a policy name)."""


@dataclass(frozen=True)
class FieldPolicies:
    """A harvester's policies: metadata paths (``metadata.subjects``, ``custom_fields.*``: any
    key at that step) and what each does to local edits; where two name one field, the one
    with fewer ``*`` decides (a stored mapping keeps no order: PostgreSQL's JSONB sorts it)."""

    rules: tuple[tuple[str, FieldPolicy], ...] = ()

    @classmethod
    def of(cls, stored: Mapping[str, str] | None) -> FieldPolicies:
        """The policies stored on a harvester (``{path: policy}``); a bad one raises
        :class:`FieldPolicyError` naming it."""
        rules = [
            (check_path(path), policy_named(name, path)) for path, name in (stored or {}).items()
        ]
        return cls(tuple(sorted(rules, key=lambda rule: (rule[0].count("*"), rule[0]))))

    def __bool__(self) -> bool:
        return bool(self.rules)

    def with_local_edits(
        self,
        incoming: dict[str, Any],
        written: Mapping[str, Any] | None,
        read_local: Callable[[], Mapping[str, Any] | None],
        *,
        references_by_id: bool = False,
    ) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
        """(the data to write, its conflicts or None): :meth:`resolve`, reading the local
        record (`read_local`) only where a policy can apply."""
        if not self.rules or written is None:
            return incoming, None
        resolved, conflicts = self.resolve(
            written, read_local(), incoming, references_by_id=references_by_id
        )
        return resolved, conflicts or None

    def resolve(
        self,
        written: Mapping[str, Any] | None,
        local: Mapping[str, Any] | None,
        incoming: Mapping[str, Any],
        *,
        references_by_id: bool = False,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """(the data to write, the conflicts) for a record the harvest wrote as `written`
        last, that the target holds as `local` now, and that the source sends as `incoming`.

        Without both earlier versions nothing can be told of local edits: `incoming` is
        written as it is. `references_by_id`: the target expands an object with an ``id``
        (a vocabulary entry) when read, so a local addition is written back by its id.
        """
        result = _copy(incoming)
        if not self.rules or written is None or local is None:
            return result, []
        conflicts = []
        for path, policy in self._expanded(written, local, incoming):
            base = _get(written, path)
            source = _get(incoming, path)
            mine = _as_written_form(_get(local, path), base, source, references_by_id)
            changed_locally = mine != base
            changed_at_source = source != base
            if not changed_locally:
                continue  # the source's value stands (result holds it already)
            if policy is FieldPolicy.SOURCE:
                kept, value = "source", source
            elif policy is FieldPolicy.LOCAL or not changed_at_source:
                # A field only a local user changed keeps that change under merge too.
                kept, value = "local", mine
            else:
                kept, value = "merged", _merge(base, mine, source)
            _set(result, path, value)
            if changed_at_source and mine != source:
                conflicts.append(
                    {
                        "field": ".".join(path),
                        "policy": str(policy),
                        "kept": kept,
                        "local": _plain(mine),
                        "source": _plain(source),
                    }
                )
        return result, conflicts

    def _expanded(
        self, *versions: Mapping[str, Any]
    ) -> Iterator[tuple[tuple[str, ...], FieldPolicy]]:
        """Each concrete path a rule names, once (the most specific rule naming it decides)."""
        seen: set[tuple[str, ...]] = set()
        for pattern, policy in self.rules:
            for path in _concrete(tuple(pattern.split(".")), versions):
                if path not in seen:
                    seen.add(path)
                    yield path, policy


def policy_named(name: Any, path: str) -> FieldPolicy:
    try:
        return FieldPolicy(str(name).strip().lower())
    except ValueError:
        choices = ", ".join(policy.value for policy in FieldPolicy)
        raise FieldPolicyError(f"{path}: {name!r} is no field policy (one of {choices}).") from None


def check_path(path: Any) -> str:
    """A dotted path of keys (``*``: any key at that step), stripped; else FieldPolicyError."""
    text = str(path).strip()
    steps = text.split(".")
    if not text or any(not step.strip() or step != step.strip() for step in steps):
        raise FieldPolicyError(
            f"{text!r} is no field path (dotted keys such as metadata.subjects or custom_fields.*)."
        )
    return text


def _concrete(pattern: tuple[str, ...], versions: tuple[Mapping[str, Any], ...]) -> Iterator:
    """The paths of `pattern` that exist in any of `versions` (``*`` expanded to their keys)."""
    if "*" not in pattern:
        if any(_get(version, pattern) is not ABSENT for version in versions):
            yield pattern
        return
    star = pattern.index("*")
    head = pattern[:star]
    keys: dict[str, None] = {}
    for version in versions:
        parent = _get(version, head) if head else version
        if isinstance(parent, Mapping):
            keys.update(dict.fromkeys(parent))
    for key in keys:
        yield from _concrete((*head, key, *pattern[star + 1 :]), versions)


def _get(data: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(data, Mapping) or key not in data:
            return ABSENT
        data = data[key]
    return data


def _set(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        data = data.setdefault(key, {})
    if value is ABSENT:
        data.pop(path[-1], None)
    else:
        data[path[-1]] = _copy(value)


def _identity(item: Any) -> str:
    """What makes two list items the same item: an object's ``id``, else its whole value."""
    if isinstance(item, Mapping) and "id" in item:
        return f"id:{item['id']}"
    return json.dumps(item, sort_keys=True, default=str)


def _as_written_form(value: Any, base: Any, source: Any, references_by_id: bool) -> Any:
    """The local value in the shape the harvest writes: each list item that is an item written
    last or sent now (the same ``id``, or holding all it holds) becomes that item; an object
    is cut to the keys the harvest writes; a local addition stays as read (by its id alone
    where the target expands references)."""
    if value is ABSENT:
        return ABSENT
    if isinstance(value, list):
        known = [item for items in (base, source) if isinstance(items, list) for item in items]
        return [_item_as_written(item, known, references_by_id) for item in value]
    shape = merged_shape(*(v for v in (base, source) if v is not ABSENT))
    if isinstance(value, Mapping) and isinstance(shape, Mapping):
        return project(value, shape)
    return value


def _item_as_written(item: Any, known: list[Any], references_by_id: bool) -> Any:
    for candidate in known:
        if _identity(candidate) == _identity(item) or project(item, candidate) == candidate:
            return candidate
    if references_by_id:
        return _references_by_id(item)
    return item


def _references_by_id(value: Any) -> Any:
    if isinstance(value, Mapping):
        if "id" in value:
            return {"id": value["id"]}
        return {key: _references_by_id(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_references_by_id(item) for item in value]
    return value


def _merge(base: Any, mine: Any, source: Any) -> Any:
    """Both sides changed the field: lists united, objects key by key, else the local value."""
    if isinstance(source, list) and isinstance(mine, list):
        before = {_identity(item) for item in base} if isinstance(base, list) else set()
        sent = {_identity(item) for item in source}
        added = [i for i in mine if _identity(i) not in sent and _identity(i) not in before]
        return [*source, *added]
    if isinstance(source, Mapping) and isinstance(mine, Mapping):
        base = base if isinstance(base, Mapping) else {}
        merged = {}
        for key in dict.fromkeys([*source, *mine]):
            mine_value, base_value = mine.get(key, ABSENT), base.get(key, ABSENT)
            value = mine_value if mine_value != base_value else source.get(key, ABSENT)
            if value is not ABSENT:
                merged[key] = value
        return merged
    return mine


def united(first: list[Any], second: list[Any]) -> list[Any]:
    """`first`, then the items of `second` it lacks (the same item: the same ``id``, else the
    same value)."""
    known = {_identity(item) for item in first}
    return [*first, *(item for item in second if _identity(item) not in known)]


def as_input_references(value: Any) -> Any:
    """`value` with every object that has an ``id`` (a vocabulary entry a service expanded
    when read) cut to its id: the form a service takes on input."""
    return _references_by_id(value)


def value_at(data: Any, path: tuple[str, ...]) -> Any:
    """The value at a path of keys; :data:`ABSENT` where there is none."""
    return _get(data, path)


def with_value_at(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    """Set (or, with :data:`ABSENT`, remove) the value at a path of keys."""
    _set(data, path, value)


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str)) if value is not ABSENT else ABSENT


def _plain(value: Any) -> Any:
    return None if value is ABSENT else value
