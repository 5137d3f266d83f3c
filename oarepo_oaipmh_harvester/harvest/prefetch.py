"""Records in batches, read ahead from the provider in a thread while a batch is written.

Decision owned here: how records are cut into batches, how far reading may run ahead of writing (a bounded queue, so memory
stays flat; or, with a spool, all the way, on disk) and that a reader's failure reaches the
writer as the same exception, where the failed item would have come.
"""

from __future__ import annotations

import itertools
import os
import pickle
import queue
import struct
import tempfile
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

_END = object()


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of `size` items (the last one shorter), taken as they come."""
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def prefetch(items: Iterable[T], depth: int) -> Iterator[T]:
    """Yield `items`, produced by a background thread at most `depth` items ahead.

    Fetching and parsing the next page (network waits, lxml outside the GIL) overlaps with
    the database and search work of the current batch. The producer's exception is raised
    in the consumer at the point where the failed item would have come, so a failure never
    looks like the end of the list; memory stays bounded by `depth`.
    """
    buffer: queue.Queue = queue.Queue(maxsize=max(1, depth))
    stopped = threading.Event()

    def put(item: object) -> bool:
        while not stopped.is_set():
            try:
                buffer.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put(item):
                    return
        except BaseException as error:  # noqa: BLE001 - handed over to the consumer
            put(_Failure(error))
        else:
            put(_END)

    producer = threading.Thread(target=produce, name="oai-harvest-prefetch", daemon=True)
    producer.start()
    try:
        while True:
            item = buffer.get()
            if item is _END:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item
    finally:
        stopped.set()  # the consumer stopped early (error while writing): release the producer
        producer.join(timeout=5)


def spooled(items: Iterable[T], directory: str | None = None) -> Iterator[T]:
    """Yield `items` in order while a thread reads them as fast as the source gives them.

    Items not consumed yet wait in a temporary file (pickled, in `directory`), not in
    memory: a provider whose resumption tokens expire quickly (invenio-oaiserver: 60 s) is
    read to the end while a slow target is still writing the first batches. The file is
    removed when the consumer is done; memory holds the item in hand only.
    """
    spool = tempfile.TemporaryFile(dir=directory, prefix="oai-harvest-spool-")
    fd = spool.fileno()
    ready = threading.Condition()
    state = {"count": 0, "end": 0, "done": False, "failure": None}
    stopped = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if stopped.is_set():
                    return
                data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
                os.pwrite(fd, struct.pack(">Q", len(data)) + data, state["end"])
                with ready:
                    state["end"] += 8 + len(data)
                    state["count"] += 1
                    ready.notify()
        except BaseException as error:  # noqa: BLE001 - handed over to the consumer
            with ready:
                state["failure"] = error
        finally:
            with ready:
                state["done"] = True
                ready.notify()

    producer = threading.Thread(target=produce, name="oai-harvest-spool", daemon=True)
    producer.start()
    consumed, position = 0, 0
    try:
        while True:
            with ready:
                while state["count"] <= consumed and not state["done"]:
                    ready.wait()
                if state["count"] <= consumed:
                    if state["failure"] is not None:
                        raise state["failure"]
                    return
            (length,) = struct.unpack(">Q", os.pread(fd, 8, position))
            item = pickle.loads(os.pread(fd, length, position + 8))
            position += 8 + length
            consumed += 1
            yield item
    finally:
        stopped.set()
        producer.join(timeout=5)
        spool.close()
