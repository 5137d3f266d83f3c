"""When the garbage collector runs during a harvest.

Decision owned here. Records of some services form reference cycles (InvenioRDM's: each
system field manager of a record points back to it), so a written record is not freed when
its batch ends but at Python's next full collection. Until then its objects stay in the
SQLAlchemy session, and sqlalchemy-continuum looks at every object of the session at each
flush: each record written costs more than the one before. A full collection among all the
objects of an Invenio application costs about 0.2 s here, too much after every batch; so a
run first freezes what exists (``gc.freeze``: the application's long-lived objects, never
garbage of the run) and then collects after each batch it wrote, which costs milliseconds.

Measured with ``./run.sh bench --phases rdm``: 300 records into InvenioRDM took 317 ms per
record without this, 200 ms with it (the per-record create + publish loop: 250 ms).

A Celery worker that writes batches of many runs freezes its process once, at its first
batch, and never thaws it (:func:`worker_process_scope`); see there why.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_open_scopes = 0
"""Runs (or batches) in this process inside a scope; gc.freeze is process-wide."""


@contextmanager
def run_scope() -> Iterator[None]:
    """Freeze the objects that exist now for the length of a run (or of a worker's batch)."""
    global _open_scopes
    with _lock:
        if _open_scopes == 0:
            gc.freeze()
        _open_scopes += 1
    try:
        yield
    finally:
        with _lock:
            _open_scopes -= 1
            if _open_scopes == 0:
                gc.unfreeze()


_frozen_for_the_process = False


@contextmanager
def worker_process_scope() -> Iterator[None]:
    """A Celery worker's batch: the first freezes what the process holds, for good.

    A worker writes batch after batch and runs other tasks between them (InvenioRDM
    registers each new record's PIDs in two). Freezing and unfreezing around every batch
    handed their garbage, and each batch's leftovers, back to the oldest generation, which
    Python collects rarely; Python's memory arenas, once grown for that garbage, stay
    (measured: a worker grew by 180 MB over 5,000 records). Frozen once, the process's
    application is never looked at again, and each batch's collection frees what was made
    since the last, other tasks' included. In a prefork pool each child does this once after
    its fork (the first collection touches, and so copies, the pages it shares with its
    parent: once per child).
    """
    global _frozen_for_the_process, _open_scopes
    with _lock:
        if not _frozen_for_the_process:
            # Once per process: what the worker's earlier tasks left is freed, not frozen.
            gc.collect()
            gc.freeze()
            _frozen_for_the_process = True
            _open_scopes += 1  # this scope lasts as long as the process
    yield


def collect_written_batch() -> None:
    """Free the cycles of a batch's records, inside a run scope only (cheap only there)."""
    if _open_scopes:
        gc.collect()
