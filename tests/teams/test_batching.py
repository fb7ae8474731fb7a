"""``teams.batching.Batch``: items within the delay go out together, once, and a flush never sends twice."""

from __future__ import annotations

import threading
import time

from teams.batching import Batch


class Sink:
    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.sent = threading.Event()

    def __call__(self, items: list[int]) -> None:
        self.batches.append(items)
        self.sent.set()


def test_items_added_within_the_delay_are_sent_once_together() -> None:
    sink = Sink()
    batch = Batch(sink, lambda: 0.2)
    for item in (1, 2, 3):
        batch.add(item)
    assert sink.batches == []  # nothing before the delay is out
    assert sink.sent.wait(5)
    time.sleep(0.3)
    assert sink.batches == [[1, 2, 3]]


def test_a_flush_sends_at_once_and_the_waiting_thread_does_not_send_it_again() -> None:
    sink = Sink()
    batch = Batch(sink, lambda: 0.3)
    batch.add(1)
    batch.flush()
    assert sink.batches == [[1]]
    batch.add(2)  # a new batch, due 0.3 s from now, not at the first one's time
    time.sleep(0.15)
    assert sink.batches == [[1]]
    time.sleep(0.5)
    assert sink.batches == [[1], [2]]


def test_a_delay_of_zero_sends_each_item_in_the_callers_thread() -> None:
    sink = Sink()
    batch = Batch(sink, lambda: 0)
    batch.add(7)
    batch.add(8)
    assert sink.batches == [[7], [8]]


def test_a_failing_send_is_logged_and_the_next_batch_still_goes(caplog) -> None:  # noqa: ANN001 - pytest fixture
    calls: list[list[int]] = []

    def send(items: list[int]) -> None:
        calls.append(items)
        if len(calls) == 1:
            raise ConnectionError("broker away")

    batch = Batch(send, lambda: 0.05)
    batch.add(1)
    time.sleep(0.3)
    batch.add(2)
    time.sleep(0.3)
    assert calls == [[1], [2]]
    assert "could not send a batch of 1 items" in caplog.text


def test_a_process_that_exits_normally_sends_what_is_pending() -> None:
    import subprocess
    import sys

    script = (
        "from teams.batching import Batch\n"
        "batch = Batch(lambda items: print('sent', items, flush=True), lambda: 60)\n"
        "batch.add(5)\n"
        "batch.add(6)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=True)
    assert done.stdout.strip() == "sent [5, 6]"
