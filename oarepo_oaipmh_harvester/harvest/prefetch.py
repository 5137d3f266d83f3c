"""Read ahead from the provider in a thread while the current batch is written.

Decision owned here: how far reading may run ahead of writing (a bounded queue, so memory
stays flat) and that a reader's failure reaches the writer as the same exception.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

_END = object()


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
