"""``GET /healthz``: is this site able to serve learners and grade drills right now?

Why each check: the database holds everything (no page works without it); Redis is the broker
and the leaderboards' cache (when ``REDIS_URL`` is set); a submission waits forever unless some
Celery worker consumes the queues, and a worker that lost the broker answers no ping; ``graders``
reads the grading processes' heartbeats per queue, so a queue with no live grader ("no GPU grader
online" for the GPU queue), or one whose sandbox pool is degraded (a GPU pool whose runners cannot
get CUDA), shows here. Every check has a short timeout, so the endpoint answers within
``HEALTH_CHECK_TIMEOUT_MS`` per check even when a dependency hangs, and reports 200 only when all
the checks it ran passed.

Fast when healthy (a few milliseconds): a broadcast ping waits for replies until its timeout unless
told how many to expect, which made every call take the full second. Each grading process writes a
heartbeat, so the live heartbeats say how many workers should answer, and the ping returns as soon as
they all did; only a worker that does not answer costs the timeout.

``?only=database,redis`` runs a subset: the web container's own healthcheck leaves Celery out,
because reviews still work while the workers restart and the web must stay in rotation. The body
names no hosts or worker names, since the endpoint is public.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any, NotRequired, TypedDict

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from fastpath import database

logger = logging.getLogger(__name__)


class QueueReport(TypedDict):
    online: int  # grading processes whose heartbeat is fresh
    last_seen_s: float | None  # seconds since the newest heartbeat of any process on the queue
    devices: list[str]  # what the live processes really grade on ("cpu" for a GPU queue graded on a CPU)
    degraded: list[str]  # why a live process cannot grade as asked (a GPU pool without CUDA, say)
    note: NotRequired[str]


class CheckResult(TypedDict):
    ok: bool
    ms: float
    error: NotRequired[str]
    skipped: NotRequired[str]
    workers: NotRequired[int]
    queues: NotRequired[dict[str, QueueReport]]


class HealthReport(TypedDict):
    status: str
    checks: dict[str, CheckResult]


def timeout() -> float:
    return settings.HEALTH_CHECK_TIMEOUT_MS / 1000


def check_database() -> CheckResult:
    database.ping("default")
    return {"ok": True, "ms": 0.0}


@functools.cache
def _redis_client(url: str, timeout: float) -> Any:
    """One client (a connection pool) per process: a new connection per call was most of the check's time."""
    import redis

    return redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)


def check_redis() -> CheckResult:
    if not settings.REDIS_URL:
        return {"ok": True, "ms": 0.0, "skipped": "REDIS_URL is not set"}
    _redis_client(settings.REDIS_URL, timeout()).ping()
    return {"ok": True, "ms": 0.0}


_RUNNERS: dict[str, Callable[[], CheckResult]] = {"database": check_database, "redis": check_redis}


def register_check(name: str, check: Callable[[], CheckResult]) -> None:
    """An app's own check (graders: the Celery workers and the grading queues), run after the base ones: the
    project package names no app (its arrows point down only)."""
    _RUNNERS[name] = check


def checks() -> tuple[str, ...]:
    return tuple(_RUNNERS)


def run_checks(names: tuple[str, ...] | None = None) -> HealthReport:
    """Run each named check, timing it; an exception is a failed check, never an error page."""
    results: dict[str, CheckResult] = {}
    for name in names or checks():
        started = time.perf_counter()
        try:
            result = _RUNNERS[name]()
        except Exception as exc:
            # The class only: messages carry host names and ports, and this endpoint is public.
            logger.warning("health check %s failed: %s", name, exc)
            result = {"ok": False, "ms": 0.0, "error": type(exc).__name__}
        result["ms"] = round((time.perf_counter() - started) * 1000, 1)
        results[name] = result
    ok = all(result["ok"] for result in results.values())
    return {"status": "ok" if ok else "fail", "checks": results}


def _requested(request: HttpRequest) -> tuple[str, ...] | None:
    only = request.GET.get("only")
    if not only:
        return checks()
    names = tuple(name.strip() for name in only.split(",") if name.strip())
    if not names or any(name not in _RUNNERS for name in names):
        return None
    return names


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    names = _requested(request)
    if names is None:
        return JsonResponse({"status": "fail", "error": f"only= takes names from {', '.join(checks())}"}, status=400)
    report = run_checks(names)
    return JsonResponse(report, status=200 if report["status"] == "ok" else 503)
