"""Where one record's write goes: SQL statements and wall time attributed to labelled code.

`Attribution.wrap(owner, name, label)` replaces a method (or module function) by one that
pushes `label` while it runs; every SQL statement SQLAlchemy sends is counted under the
innermost label (and by statement kind and table), and the wall time between pushes and pops
goes to the innermost label alone (exclusive time: the labels' times add up to the total).
Used by the `rdm_profile` phase (`benchmarks/profile_rdm.py`); the wrappers stay until the
process ends, which is the phase's process.
"""

from __future__ import annotations

import functools
import re
import threading
import time
from collections import Counter
from typing import Any

_FROM = re.compile(r"\bFROM\s+\"?(\w+)", re.IGNORECASE)
_WRITTEN = re.compile(r"^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+\"?(\w+)", re.IGNORECASE)
OUTSIDE = "(not labelled)"


def statement_kind(statement: str) -> str:
    """``SELECT pidstore_pid``, ``INSERT rdm_records_metadata``, ``SAVEPOINT``..."""
    text = statement.strip()
    if not text:
        return "?"
    verb = text.split(None, 1)[0].upper()
    if verb in ("INSERT", "UPDATE", "DELETE"):
        match = _WRITTEN.match(text)
        return f"{verb} {match.group(1) if match else '?'}"
    if verb in ("SELECT", "WITH"):
        match = _FROM.search(text)
        return f"SELECT {match.group(1) if match else '(no table)'}"
    return verb


class Attribution:
    """Labelled exclusive wall time, calls and SQL statements; `reset` starts a new step."""

    def __init__(self, engine: Any) -> None:
        from sqlalchemy import event

        self._stack: list[str] = [OUTSIDE]
        self._thread = threading.get_ident()
        """Only this thread's calls are attributed (the harvest reads the provider ahead in a
        thread of its own, which sends no SQL)."""
        self.reset()
        event.listen(engine, "before_cursor_execute", self._on_sql)

    def reset(self) -> None:
        self.seconds: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.sql_by_label: Counter[str] = Counter()
        self.sql_by_kind: Counter[str] = Counter()
        self.sql_by_label_kind: Counter[tuple[str, str]] = Counter()
        self.calls_by_caller: Counter[tuple[str, str]] = Counter()
        self._since = time.perf_counter()

    def _switch(self) -> None:
        now = time.perf_counter()
        self.seconds[self._stack[-1]] += now - self._since
        self._since = now

    def push(self, label: str) -> None:
        self._switch()
        self.calls_by_caller[(label, self._stack[-1])] += 1
        self._stack.append(label)
        self.calls[label] += 1

    def pop(self) -> None:
        self._switch()
        self._stack.pop()

    def _on_sql(self, conn, cursor, statement, parameters, context, executemany) -> None:
        if threading.get_ident() != self._thread:
            self.sql_by_label["(another thread)"] += 1
            self.sql_by_kind[statement_kind(statement)] += 1
            return
        kind = statement_kind(statement)
        self.sql_by_label[self._stack[-1]] += 1
        self.sql_by_kind[kind] += 1
        self.sql_by_label_kind[(self._stack[-1], kind)] += 1

    def wrap(self, owner: Any, name: str, label: str) -> None:
        """Attribute what `owner.name` does (less what labelled code inside it does) to
        `label`. A static or class method is wrapped as the function it is."""
        original = owner.__dict__.get(name) if isinstance(owner, type) else None
        if isinstance(original, (staticmethod, classmethod)):
            inner = original.__func__
            wrapped = type(original)(self._wrapped(inner, label))
        else:
            wrapped = self._wrapped(getattr(owner, name), label)
        setattr(owner, name, wrapped)

    def _wrapped(self, function: Any, label: str) -> Any:
        @functools.wraps(function)
        def labelled(*args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() != self._thread:
                return function(*args, **kwargs)
            self.push(label)
            try:
                return function(*args, **kwargs)
            finally:
                self.pop()

        return labelled

    def snapshot(self, records: int) -> dict[str, Any]:
        """The step's numbers, in total and per record (`records`)."""
        self._switch()
        per = max(records, 1)
        labels = sorted(self.seconds, key=self.seconds.__getitem__, reverse=True)
        return {
            "records": records,
            "seconds": sum(self.seconds.values()),
            "sql_statements": sum(self.sql_by_kind.values()),
            "by_label": [
                {
                    "label": label,
                    "ms_per_record": 1000 * self.seconds[label] / per,
                    "calls_per_record": self.calls[label] / per,
                    "sql_per_record": self.sql_by_label[label] / per,
                }
                for label in labels
            ],
            "sql_by_kind": {kind: n / per for kind, n in self.sql_by_kind.most_common()},
            "sql_by_label_and_kind": {
                f"{label} | {kind}": n / per
                for (label, kind), n in self.sql_by_label_kind.most_common()
            },
            "calls_by_caller": {
                f"{label} <- {caller}": n / per
                for (label, caller), n in self.calls_by_caller.most_common()
            },
        }
