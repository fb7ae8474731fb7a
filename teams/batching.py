"""Collect items for a short while and hand them on together (plain Python, no Django).

Why: every accepted verdict used to queue its own drill-XP task, and each task recomputed its learner's
day and republished their boards (~17 queries, ~7 ms of CPU on the 2-core machine): under load that
cost more than grading the submission. A batch queues one task for many verdicts, and that task
recomputes each learner-day once.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)


class Batch:
    """Items added within ``delay()`` seconds of the first are passed to ``send`` in one call.

    A daemon thread (started on first use in each process) waits out the delay; ``flush`` sends what is
    pending at once (at worker shutdown, and when the interpreter exits normally). A ``delay()`` of 0 or
    less sends each item at once, in the caller's thread. What is pending when the process dies is lost:
    callers must tolerate that (the teams' nightly rebuild repairs it, as it repairs a failed publish).
    """

    def __init__(self, send: Callable[[list[int]], None], delay: Callable[[], float]) -> None:
        self._send = send
        self._delay = delay
        self._cond = threading.Condition()
        self._items: list[int] = []
        self._due = 0.0
        self._batch = 0  # bumped when a batch opens, so the thread never sends one that was flushed
        self._thread: threading.Thread | None = None
        self._pid = 0

    def add(self, item: int) -> None:
        delay = self._delay()
        if delay <= 0:
            self._send_safely([item])
            return
        with self._cond:
            opens = not self._items
            if opens:
                self._batch += 1
                self._due = time.monotonic() + delay
            self._items.append(item)
            self._ensure_thread()
            if opens:  # a later item changes nothing the thread waits for: it need not wake for each one
                self._cond.notify()

    def flush(self) -> None:
        with self._cond:
            items, self._items = self._items, []
        if items:
            self._send_safely(items)

    def _ensure_thread(self) -> None:
        """Called with the condition held; a forked child starts its own thread."""
        if self._thread is None or self._pid != os.getpid() or not self._thread.is_alive():
            if self._pid != os.getpid():
                atexit.register(self.flush)
            self._pid = os.getpid()
            self._thread = threading.Thread(target=self._wait_and_send, name="batch", daemon=True)
            self._thread.start()

    def _wait_and_send(self) -> None:
        while True:
            with self._cond:
                while not self._items:
                    self._cond.wait()
                batch = self._batch
                while self._items and self._batch == batch and (left := self._due - time.monotonic()) > 0:
                    self._cond.wait(left)
                if not self._items or self._batch != batch:
                    continue  # flushed meanwhile: wait for the next batch
                items, self._items = self._items, []
            self._send_safely(items)

    def _send_safely(self, items: list[int]) -> None:
        try:
            self._send(items)
        except Exception:
            logger.exception("could not send a batch of %d items through %s", len(items), self._send.__qualname__)
