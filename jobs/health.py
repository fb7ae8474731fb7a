"""The graders' part of ``/healthz`` (registered by ``GradersConfig.ready``): are Celery workers answering,
and does every grading queue have a live grading process, grading on the device it says?

Fast when healthy: a broadcast ping waits for replies until its timeout unless told how many to expect, so
the live heartbeats say how many workers should answer and the ping returns once they all did. While no
grading process beats (the worker is down), the ping waits only ``QUICK_PING_S``: a live worker answers a
ping in milliseconds, and a load balancer polling /healthz must not hold a web thread for a second a call.
"""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from jobs.heartbeat import grader_statuses, offline_after
from jobs.models import GraderHeartbeat
from quizsite.health import CheckResult, QueueReport, timeout

QUICK_PING_S = 0.25
CPU_FALLBACK_NOTE = "no GPU here: cuda drills are graded on the CPU"


def ping_workers(seconds: float, expected: int | None = None) -> int:
    """How many Celery workers answered a broadcast ping: within ``seconds``, or as soon as ``expected`` did."""
    from quizsite.celery import app

    replies = app.control.ping(timeout=seconds, limit=expected or None) or []
    return sum(1 for reply in replies for answer in reply.values() if answer.get("ok") == "pong")


def expected_workers() -> int:
    """Celery worker processes with a fresh heartbeat: each should answer the ping."""
    return GraderHeartbeat.objects.filter(seen_at__gte=timezone.now() - offline_after()).count()


def check_celery() -> CheckResult:
    expected = expected_workers()
    workers = ping_workers(timeout() if expected else min(timeout(), QUICK_PING_S), expected)
    if not workers:
        return {"ok": False, "ms": 0.0, "workers": 0, "error": "no Celery worker answered a ping"}
    return {"ok": True, "ms": 0.0, "workers": workers}


def check_graders() -> CheckResult:
    """Every grading queue has a live grading process (heartbeats) and none reports a degraded pool; each
    queue says which devices its live processes grade on (a GPU queue served by a CPU says so)."""
    now = timezone.now()
    queues: dict[str, QueueReport] = {}
    statuses = grader_statuses([settings.GRADER_QUEUE_CPU, settings.GRADER_QUEUE_GPU], now)
    for queue, status in statuses.items():
        seen = None if status.last_seen is None else round((now - status.last_seen).total_seconds(), 1)
        report: QueueReport = {
            "online": status.online,
            "last_seen_s": seen,
            "devices": status.devices,
            "degraded": status.degraded,
        }
        if status.gpu and status.devices and "cuda" not in status.devices:
            report["note"] = CPU_FALLBACK_NOTE
        queues[queue] = report
    problems = [f"{queue}: {status.problem}" for queue, status in statuses.items() if status.offline]
    problems += [f"{q}: degraded" for q, r in queues.items() if r["degraded"]]
    result: CheckResult = {"ok": not problems, "ms": 0.0, "queues": queues}
    if problems:
        result["error"] = "; ".join(problems)
    return result
