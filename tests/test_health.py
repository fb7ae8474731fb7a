"""/healthz: real checks against the test database, a real Redis and a real Celery worker where possible."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.db import OperationalError, connections
from django.test import Client
from django.urls import reverse

from quizsite import health
from tests.conftest import Workers

pytestmark = pytest.mark.django_db


@pytest.fixture
def fast(settings: Any) -> None:
    settings.HEALTH_CHECK_TIMEOUT_MS = 200
    settings.REDIS_URL = ""


def test_it_answers_200_with_json_when_every_check_passes(client: Client, fast: None) -> None:
    with mock.patch.object(health, "ping_workers", return_value=2) as ping:
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
    ping.assert_called_once_with(0.2)
    assert "no-cache" in response["Cache-Control"]


def test_it_answers_503_when_no_worker_answers_the_ping(client: Client, fast: None) -> None:
    # The session's private filesystem broker has no worker behind it: a real broadcast, no reply.
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
        report = health.run_checks()
        assert report["status"] == "ok", report
        assert report["checks"]["celery"]["workers"] == 1
        worker.kill()
        report = health.run_checks(("celery",))
        assert report["status"] == "fail" and report["checks"]["celery"]["workers"] == 0
    finally:
        pool.stop_all()
