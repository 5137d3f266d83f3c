"""Something put in place for the whole process while any thread writes a batch.

Decision owned here: how a look-up shortcut of the writing path (:mod:`.schema_references`,
:mod:`.vocabulary_relations`) is installed and removed. Invenio keeps what it replaces at
the level of a class or of an application's extension, shared by every thread, so the first
block to open installs it, later ones (nested, or in other threads) share it, and the last
one to close puts the original back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Install = Callable[[Any], Callable[[], None] | None]
"""Puts the shortcut in place for an owner and returns what undoes it; None when it does not
apply."""


class InstalledWhileOpen:
    """`install` in place while at least one block of this process is open."""

    def __init__(self, install: Install) -> None:
        self._install = install
        self._lock = threading.Lock()
        self._open = 0
        self._undo: Callable[[], None] | None = None
        self._owner: Any = None

    @contextmanager
    def block(self, owner: Any = None) -> Iterator[None]:
        """Open a block. `owner` (an application's state) must be the one the shortcut was
        installed for; a block for another owner changes nothing."""
        with self._lock:
            if self._open == 0:
                self._undo = self._install(owner)
                self._owner = owner
            joined = self._undo is not None and self._owner is owner
            if joined:
                self._open += 1
        try:
            yield
        finally:
            if joined:
                with self._lock:
                    self._open -= 1
                    if self._open == 0 and self._undo is not None:
                        self._undo()
                        self._undo = None
