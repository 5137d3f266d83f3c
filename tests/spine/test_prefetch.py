"""Read-ahead: same items in order, failures surface where they happened, bounded, stoppable."""

import threading

import pytest
from factories import holds_for, wait_until

from oarepo_oaipmh_harvester.harvest.prefetch import prefetch, spooled


def test_items_in_order():
    assert list(prefetch(iter(range(1000)), depth=7)) == list(range(1000))


@pytest.mark.parametrize("read_ahead", ["prefetch", "spooled"])
def test_failure_is_raised_after_the_items_before_it(read_ahead, tmp_path):
    def items():
        yield 1
        yield 2
        raise ValueError("page 3 is not XML")

    stream = (
        prefetch(items(), depth=10) if read_ahead == "prefetch" else spooled(items(), str(tmp_path))
    )
    seen = []
    with pytest.raises(ValueError, match="page 3"):
        for item in stream:
            seen.append(item)
    assert seen == [1, 2]


def test_read_ahead_is_bounded_and_producer_stops_with_consumer():
    produced = []

    def items():
        for number in range(10_000):
            produced.append(number)
            yield number

    def producer_threads():
        return [t for t in threading.enumerate() if t.name == "oai-harvest-prefetch"]

    bound = 5 + 2  # queue depth, the item in hand, the one being put
    stream = prefetch(items(), depth=5)
    assert next(stream) == 0
    # Once the producer has run as far ahead as it may, it must stay there.
    wait_until(lambda: len(produced) >= bound, message="the producer to fill the queue")
    holds_for(lambda: len(produced) <= bound, 0.3, message=f"at most {bound} items produced")
    stream.close()  # consumer gives up (e.g. a database error while writing)
    wait_until(lambda: not producer_threads(), timeout=5, message="the producer thread to end")
    count = len(produced)
    holds_for(lambda: len(produced) == count, 0.2, message="nothing produced after the end")


def test_the_spool_yields_every_item_in_order_and_removes_its_file(tmp_path):
    items = [{"n": n, "xml": "x" * n} for n in range(500)]
    assert list(spooled(iter(items), str(tmp_path))) == items
    assert list(tmp_path.iterdir()) == []  # an unnamed temporary file, gone with the run


def test_the_spool_reads_to_the_end_while_the_consumer_is_slow(tmp_path):
    produced = []

    def items():
        for number in range(1000):
            produced.append(number)
            yield number

    stream = spooled(items(), str(tmp_path))
    assert next(stream) == 0
    # The consumer holds one item; the reader does not wait for it.
    wait_until(lambda: len(produced) == 1000, timeout=10, message="the reader waited")
    assert list(stream) == list(range(1, 1000))
