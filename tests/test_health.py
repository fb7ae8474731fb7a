"""/healthz: real checks against the test database, a real Redis and a real Celery worker where possible."""

from __future__ import annotations

import logging
import os
import time
import venv
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.db import OperationalError, connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from jobs import health as graders_health
from jobs.models import GraderHeartbeat
from quizsite import health
from tests.conftest import Workers

pytestmark = pytest.mark.django_db


@pytest.fixture
def fast(settings: Any) -> None:
    settings.HEALTH_CHECK_TIMEOUT_MS = 200
    settings.REDIS_URL = ""


@pytest.fixture
def graders_alive(db: None) -> None:
    GraderHeartbeat.objects.create(name="h:1", queues=["grade_cpu", "grade_gpu"], device="cpu", health={"state": "ok"})


def test_it_answers_200_with_json_when_every_check_passes(client: Client, fast: None, graders_alive: None) -> None:
    with mock.patch.object(graders_health, "ping_workers", return_value=2) as ping:
        response = client.get(reverse("healthz"))
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["redis"] == {
        "ok": True,
        "ms": body["checks"]["redis"]["ms"],
        "skipped": "REDIS_URL is not set",
    }
    assert body["checks"]["celery"]["workers"] == 2
    assert body["checks"]["graders"]["queues"]["grade_cpu"]["online"] == 1
    assert list(body["checks"]) == ["database", "redis", "celery", "graders"]  # graders registered its two
    ping.assert_called_once_with(0.2, 1)  # waits for the one live grading process, not the whole timeout
    assert "no-cache" in response["Cache-Control"]


def test_it_answers_503_when_no_worker_answers_the_ping(client: Client, fast: None, graders_alive: None) -> None:
    # A grading process beat, but the session's private filesystem broker has no worker behind it: a real
    # broadcast, no reply.
    response = client.get(reverse("healthz"))
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "fail"
    assert body["checks"]["celery"] == {
        "ok": False,
        "ms": body["checks"]["celery"]["ms"],
        "workers": 0,
        "error": "no Celery worker answered a ping",
    }
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["celery"]["ms"] >= 150  # it waited for replies, bounded by the timeout


def test_it_answers_quickly_when_no_grading_process_is_alive(client: Client, settings: Any) -> None:
    """The worker is down (no fresh heartbeat): the ping waits a quarter second, not the whole timeout."""
    settings.HEALTH_CHECK_TIMEOUT_MS, settings.REDIS_URL = 1000, ""
    started = time.monotonic()
    body = client.get(reverse("healthz"), {"only": "celery"}).json()
    assert body["checks"]["celery"]["workers"] == 0
    assert time.monotonic() - started < 0.6


def test_it_says_a_gpu_queue_is_graded_on_the_cpu_where_no_gpu_is(client: Client) -> None:
    GraderHeartbeat.objects.create(name="h:1", queues=["grade_cpu", "grade_gpu"], device="cpu", health={"state": "ok"})
    queues = client.get(reverse("healthz"), {"only": "graders"}).json()["checks"]["graders"]["queues"]
    assert queues["grade_gpu"]["devices"] == ["cpu"]
    assert queues["grade_gpu"]["note"] == "no GPU here: cuda drills are graded on the CPU"
    assert "note" not in queues["grade_cpu"]


def test_it_answers_503_when_redis_is_unreachable_naming_no_host(client: Client, fast: None, settings: Any) -> None:
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    response = client.get(reverse("healthz"), {"only": "redis"})
    assert response.status_code == 503
    assert response.json()["checks"] == {"redis": {"ok": False, "ms": mock.ANY, "error": "ConnectionError"}}


def test_it_pings_a_real_redis(client: Client, fast: None, settings: Any, redis_url: str) -> None:
    settings.REDIS_URL = redis_url
    response = client.get(reverse("healthz"), {"only": "redis,database"})
    assert response.status_code == 200
    assert set(response.json()["checks"]) == {"redis", "database"}


def test_it_answers_503_when_the_database_is_down(client: Client, fast: None) -> None:
    broken = mock.patch.object(connections["default"], "cursor", side_effect=OperationalError("server closed"))
    with broken:
        response = client.get(reverse("healthz"), {"only": "database"})
    assert response.status_code == 503
    assert response.json()["checks"]["database"] == {"ok": False, "ms": mock.ANY, "error": "OperationalError"}


def test_it_refuses_unknown_check_names(client: Client) -> None:
    response = client.get(reverse("healthz"), {"only": "database,disk"})
    assert response.status_code == 400 and response.json()["status"] == "fail"


def test_it_says_which_grading_queue_is_offline_and_since_when(client: Client) -> None:
    GraderHeartbeat.objects.create(
        name="gpu-box:7", queues=["grade_gpu"], device="cuda", seen_at=timezone.now() - timedelta(minutes=5)
    )
    GraderHeartbeat.objects.create(name="cpu-box:8", queues=["grade_cpu"], device="cpu")
    body = client.get(reverse("healthz"), {"only": "graders"}).json()
    graders = body["checks"]["graders"]
    assert body["status"] == "fail" and graders["error"] == "grade_gpu: no GPU grader online"
    assert graders["queues"]["grade_cpu"]["online"] == 1
    assert graders["queues"]["grade_gpu"]["online"] == 0 and graders["queues"]["grade_gpu"]["last_seen_s"] >= 300
    assert "box" not in str(body)  # no host names on a public endpoint


def test_it_reports_a_gpu_pool_without_cuda_as_degraded(client: Client) -> None:
    GraderHeartbeat.objects.create(name="cpu-box:8", queues=["grade_cpu"], device="cpu")
    GraderHeartbeat.objects.create(
        name="gpu-box:9",
        queues=["grade_gpu"],
        device="cuda",
        health={"state": "degraded", "device": "cpu", "error": "CUDA is not available in the sandbox runners"},
    )
    response = client.get(reverse("healthz"), {"only": "graders"})
    graders = response.json()["checks"]["graders"]
    assert response.status_code == 503 and graders["error"] == "grade_gpu: degraded"
    assert graders["queues"]["grade_gpu"]["degraded"] == ["CUDA is not available in the sandbox runners"]


def _beat_twice(pool: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, level: int) -> Any:
    """Two heartbeats of a worker whose process holds ``pool``, logs at ``level`` and up captured."""
    from graders import warm_pool as worker_pool
    from graders.worker import Heartbeat

    monkeypatch.setattr(worker_pool, "_pool", pool)
    monkeypatch.setattr(worker_pool, "_pool_pid", os.getpid())
    heartbeat = Heartbeat(60)
    with caplog.at_level(level, logger="graders.worker"):
        heartbeat.beat()
        heartbeat.beat()
    return heartbeat


@pytest.mark.sandbox
@pytest.mark.django_db(transaction=True)  # beat() closes a connection left inside a transaction, as a worker must
def test_it_shows_a_fork_server_that_cannot_start_through_the_workers_heartbeat(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A real pool whose fork server cannot import numpy (as on a host where packages are reachable only
    through PYTHONPATH): the worker logs it once, its heartbeat carries it and /healthz names it."""
    from graders.sandbox import SandboxPool

    venv.create(tmp_path / "bare", with_pip=False)
    failing = SandboxPool(size=1, python=str(tmp_path / "bare" / "bin" / "python"))
    try:
        deadline = time.monotonic() + 10
        while failing.health()["state"] == "starting" and time.monotonic() < deadline:
            time.sleep(0.05)
        heartbeat = _beat_twice(failing, monkeypatch, caplog, logging.ERROR)
    finally:
        failing.close()
    reason = "the sandbox fork server could not start: ModuleNotFoundError: No module named 'numpy'"
    assert [r.getMessage() for r in caplog.records] == [f"sandbox pool for cpu is failed: {reason}"]
    row = GraderHeartbeat.objects.get(name=heartbeat.name_key)
    assert (row.device, row.health["state"], row.health["error"]) == ("cpu", "failed", reason)
    row.queues = ["grade_cpu"]  # as a worker started with -Q grade_cpu writes it (no Celery worker here)
    row.save(update_fields=["queues"])
    response = client.get(reverse("healthz"), {"only": "graders"})
    graders = response.json()["checks"]["graders"]
    assert response.status_code == 503 and "grade_cpu: degraded" in graders["error"]
    assert graders["queues"]["grade_cpu"]["degraded"] == [reason]


@pytest.mark.sandbox
@pytest.mark.django_db(transaction=True)
def test_a_fork_server_without_huge_pages_grades_and_the_worker_says_what_it_costs(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A host that gives no transparent huge pages (here: PR_SET_THP_DISABLE, which the fork server inherits
    across exec): grading still works, the heartbeat carries ``huge_pages_mb`` 0 and the worker warns once."""
    import torch

    from graders.sandbox import SandboxPool, jail
    from graders.worker import NO_HUGE_PAGES

    try:
        jail._prctl(jail.PR_SET_THP_DISABLE, 1)
    except OSError as exc:
        pytest.skip(f"prctl(PR_SET_THP_DISABLE) refused: {exc}")
    pool = SandboxPool(size=1)
    try:
        try:
            pool.warm(60)  # its fork server has started, inheriting the flag
        finally:
            jail._prctl(jail.PR_SET_THP_DISABLE, 0)  # this process's later pools get huge pages again
        result = pool.run("def solution(x):\n    return x * 2\n", "solution", [(torch.ones(2),)])
        assert result.status == "ok", result
        heartbeat = _beat_twice(pool, monkeypatch, caplog, logging.INFO)
    finally:
        pool.close()
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [NO_HUGE_PAGES]
    row = GraderHeartbeat.objects.get(name=heartbeat.name_key)
    assert (row.health["state"], row.health["huge_pages_mb"]) == ("ok", 0)


def test_it_refuses_other_methods(client: Client) -> None:
    assert client.post(reverse("healthz")).status_code == 405


@pytest.mark.integration
@pytest.mark.slow
def test_it_counts_a_live_worker_and_fails_once_it_is_killed(
    shared_database: str, celery_on_redis: str, tmp_path: Path, settings: Any
) -> None:
    settings.REDIS_URL = celery_on_redis
    settings.HEALTH_CHECK_TIMEOUT_MS = 1000
    pool = Workers(shared_database, celery_on_redis, tmp_path, "celery")
    try:
        worker = pool.start(concurrency=1)
        report = health.run_checks(("database", "redis", "celery"))
        assert report["status"] == "ok", report
        assert report["checks"]["celery"]["workers"] == 1
        worker.kill()
        report = health.run_checks(("celery",))
        assert report["status"] == "fail" and report["checks"]["celery"]["workers"] == 0
    finally:
        pool.stop_all()
