"""Read-ahead: same items in order, failures surface where they happened, bounded, stoppable."""

import threading
import time

import pytest

from oarepo_oaipmh_harvester.harvest.prefetch import prefetch


def test_items_in_order():
    assert list(prefetch(iter(range(1000)), depth=7)) == list(range(1000))


def test_failure_is_raised_after_the_items_before_it():
    def items():
        yield 1
        yield 2
        raise ValueError("page 3 is not XML")

    seen = []
    with pytest.raises(ValueError, match="page 3"):
        for item in prefetch(items(), depth=10):
            seen.append(item)
    assert seen == [1, 2]


def test_read_ahead_is_bounded_and_producer_stops_with_consumer():
    produced = []

    def items():
        for number in range(10_000):
            produced.append(number)
            yield number

    stream = prefetch(items(), depth=5)
    assert next(stream) == 0
    time.sleep(0.2)
    assert len(produced) <= 5 + 2  # queue depth, the item in hand, the one being put
    stream.close()  # consumer gives up (e.g. a database error while writing)
    time.sleep(0.3)
    count = len(produced)
    time.sleep(0.2)
    assert len(produced) == count
    assert not [t for t in threading.enumerate() if t.name == "oai-harvest-prefetch"]
