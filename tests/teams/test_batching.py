"""``teams.batching.Batch``: items within the delay go out together, once, and a flush never sends twice."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest

from teams.batching import Batch


class Sink:
    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.sent = threading.Event()

    def __call__(self, items: list[int]) -> None:
        self.batches.append(items)
        self.sent.set()


def eventually(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail("not in time")
        time.sleep(0.01)


def test_items_added_within_the_delay_are_sent_once_together() -> None:
    sink = Sink()
    batch = Batch(sink, lambda: 1.0)
    started = time.monotonic()
    for item in (1, 2, 3):
        batch.add(item)
    assert sink.sent.wait(10)
    assert time.monotonic() - started >= 1.0  # not before the delay
    time.sleep(0.2)
    assert sink.batches == [[1, 2, 3]]


def test_a_flush_sends_at_once_and_the_waiting_thread_does_not_send_it_again() -> None:
    sink = Sink()
    batch = Batch(sink, lambda: 1.0)
    batch.add(1)
    batch.flush()
    assert sink.batches == [[1]]
    started = time.monotonic()
    batch.add(2)  # a new batch, due a second from now, not at the first one's time
    eventually(lambda: len(sink.batches) == 2)
    assert time.monotonic() - started >= 1.0
    assert sink.batches == [[1], [2]]


def test_a_delay_of_zero_sends_each_item_in_the_callers_thread() -> None:
    sink = Sink()
    batch = Batch(sink, lambda: 0)
    batch.add(7)
    batch.add(8)
    assert sink.batches == [[7], [8]]


def test_a_failing_send_is_logged_and_the_next_batch_still_goes(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[list[int]] = []

    def send(items: list[int]) -> None:
        calls.append(items)
        if len(calls) == 1:
            raise ConnectionError("broker away")

    batch = Batch(send, lambda: 0.05)
    batch.add(1)
    eventually(lambda: len(calls) == 1)
    batch.add(2)
    eventually(lambda: len(calls) == 2)
    assert calls == [[1], [2]]
    assert "could not send a batch of 1 items" in caplog.text


def test_a_process_that_exits_normally_sends_what_is_pending() -> None:
    script = (
        "from teams.batching import Batch\n"
        "batch = Batch(lambda items: print('sent', items, flush=True), lambda: 60)\n"
        "batch.add(5)\n"
        "batch.add(6)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=True)
    assert done.stdout.strip() == "sent [5, 6]"
