"""A finished job is announced to whoever waits for it, so a verdict reaches the page in its own request.

Why a list per job and not pub/sub: the worker may finish before the web request starts to wait (a
verdict takes a few milliseconds), and a published message nobody was subscribed to is lost. The worker
pushes one item to the job's own list once the final status has committed, with a short expiry; the web
request blocks on that list (``BLPOP``) for a bounded time and then reads the row. Nothing depends on the
announcement: a lost one (no Redis, Redis down, the wait ran out) leaves the page polling, as before.

A waiting request holds a web thread, so at most ``GRADER_SUBMIT_WAITERS`` requests of a process wait at
once: the others answer at once with the pending verdict (which polls), and a rating or a page view always
finds a thread.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import TypeVar

import redis
from django.conf import settings
from django.db import transaction

from jobs.heartbeat import grader_status
from jobs.models import Job

JobRow = TypeVar("JobRow", bound=Job)

logger = logging.getLogger(__name__)

KEY_SECONDS = 30  # an announcement nobody waited for expires on its own


@functools.cache
def _waiters(count: int) -> threading.BoundedSemaphore:
    return threading.BoundedSemaphore(count)


def _key(kind: str, pk: int) -> str:
    return f"{settings.GRADER_NOTIFY_PREFIX}{kind}:{pk}"


@functools.cache
def _client(url: str, timeout: float) -> redis.Redis:
    # socket_timeout above the longest wait: a BLPOP that is still waiting is not a dead connection.
    return redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=timeout + 2)


def _redis() -> redis.Redis | None:
    url = settings.REDIS_URL
    return _client(url, settings.GRADER_SUBMIT_WAIT_MS / 1000) if url else None


def announce_on_commit(kind: str, pk: int) -> None:
    """Call inside the transaction that makes the job final: the announcement leaves once it commits."""
    transaction.on_commit(functools.partial(_announce, kind, pk))


def _announce(kind: str, pk: int) -> None:
    client = _redis()
    if client is None:
        return
    try:
        with client.pipeline(transaction=False) as pipe:
            pipe.rpush(_key(kind, pk), 1).expire(_key(kind, pk), KEY_SECONDS).execute()
    except redis.RedisError as exc:  # the waiter falls back to polling
        logger.warning("could not announce %s %s: %s", kind, pk, exc)


def wait(kind: str, pk: int, seconds: float | None = None) -> bool:
    """Block until the job is announced final or ``seconds`` (default: the submit wait) ran out.

    True means the row is final now (read it); False means not known yet (poll). Never raises: the wait
    is a shortcut, and a broken one costs the learner only the polling they had before.
    """
    client = _redis()
    seconds = settings.GRADER_SUBMIT_WAIT_MS / 1000 if seconds is None else seconds
    if client is None or seconds <= 0:
        return False
    slots = _waiters(settings.GRADER_SUBMIT_WAITERS)
    if not slots.acquire(blocking=False):
        return False  # this process's waiting threads are all taken: poll
    try:
        return client.blpop([_key(kind, pk)], timeout=seconds) is not None
    except redis.RedisError as exc:
        logger.warning("could not wait for %s %s: %s", kind, pk, exc)
        return False
    finally:
        slots.release()


def wait_for_final(row: JobRow, kind: str, queue: str) -> JobRow:
    """``row`` once its job is final, if that comes within ``GRADER_SUBMIT_WAIT_MS`` (the submit's bounded wait);
    else as it is (pending: the page polls). No wait at all while no grader for ``queue`` is alive."""
    grader = grader_status(queue)
    if grader is not None and grader.offline:
        return row
    if wait(kind, row.pk):
        row.refresh_from_db()
    return row
