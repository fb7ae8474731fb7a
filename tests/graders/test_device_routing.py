"""Routing by device through a real Redis and real ``celery -A quizsite worker`` processes.

A worker without a GPU started with ``-Q grade_cpu,grade_gpu`` (as make run's is, minus the fallback)
grades CPU drills and leaves cuda ones waiting, while the page and /healthz say "no GPU grader online";
a worker that declares it may grade cuda drills (``GRADER_CPU_FALLBACK=1``: this machine's stand-in for a
GPU host) then takes them. A worker asked to consume only the GPU queue without a GPU refuses to start.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from graders.attempts import submissions
from graders.models import Drill, Submission
from jobs.models import GraderHeartbeat
from jobs.status import Status
from quizsite import health
from tests.graders.conftest import RIGHT, Workers, drill_text
from tests.graders.test_integration import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("celery-redis")]

NO_FALLBACK = {"GRADER_STALE_AFTER": "30", "GRADER_CPU_FALLBACK": "0"}


def final(sub: Submission) -> bool:
    sub.refresh_from_db()
    return sub.is_final


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("routing-logs")


@pytest.fixture
def pools(shared_database: str, celery_on_redis: str, logs: Path, transactional_db: None) -> Iterator[list[Workers]]:
    # A worker of an earlier module in this process may have beaten once more after its test's flush: these
    # tests count heartbeats, so they start from none.
    GraderHeartbeat.objects.all().delete()
    started: list[Workers] = []
    yield started
    for pool in started:
        pool.stop_all()


def test_it_keeps_cuda_drills_off_a_cpu_worker_until_a_gpu_worker_takes_them(
    pools: list[Workers],
    shared_database: str,
    celery_on_redis: str,
    logs: Path,
    learner: User,
    client_for: Client,
    make_drill: Callable[..., Drill],
    settings: Any,
) -> None:
    settings.REDIS_URL = celery_on_redis
    cpu_drill = make_drill()
    cuda_drill = make_drill(drill_text("cuda").replace('slug = "add-one"', 'slug = "add-one-gpu"'))
    cpu_only = Workers(shared_database, celery_on_redis, logs / "cpu", "grade_cpu,grade_gpu", NO_FALLBACK)
    (logs / "cpu").mkdir()
    pools.append(cpu_only)
    cpu_worker = cpu_only.start(concurrency=2)

    on_gpu = submissions.submit(learner, cuda_drill, RIGHT)
    on_cpu = submissions.submit(learner, cpu_drill, RIGHT)
    assert isinstance(on_gpu, Submission) and isinstance(on_cpu, Submission)
    wait_for(lambda: final(on_cpu), 60, "the CPU verdict")
    time.sleep(3)  # a worker that took grade_gpu would have graded it by now
    on_gpu.refresh_from_db()
    assert (on_cpu.status, on_gpu.status) == (Status.ACCEPTED, Status.QUEUED)
    assert "not consuming grade_gpu" in cpu_worker.log.read_text(errors="replace")
    assert list(GraderHeartbeat.objects.values_list("queues", flat=True)) == [["grade_cpu"]]
    page = client_for.get(reverse("graders:submission_status", args=[on_gpu.uuid]), HTTP_HX_REQUEST="true")
    assert "No GPU grader online" in page.content.decode()
    report = health.run_checks()
    assert report["checks"]["graders"]["error"] == "grade_gpu: no GPU grader online"
    assert report["checks"]["celery"] == {"ok": True, "ms": report["checks"]["celery"]["ms"], "workers": 1}

    gpu_host = Workers(shared_database, celery_on_redis, logs / "gpu", "grade_gpu", {"GRADER_CPU_FALLBACK": "1"})
    (logs / "gpu").mkdir()
    pools.append(gpu_host)
    gpu_worker = gpu_host.start(concurrency=1)
    wait_for(lambda: final(on_gpu), 60, "the cuda verdict from the GPU worker")
    assert on_gpu.status == Status.ACCEPTED, on_gpu.verdict
    assert on_gpu.worker == gpu_worker.name.replace("%h", on_gpu.worker.split("@", 1)[1])
    assert on_cpu.worker != on_gpu.worker
    wait_for(lambda: health.run_checks(("graders",))["status"] == "ok", 10, "both queues online")


def test_it_answers_healthz_fast_with_live_workers(
    pools: list[Workers], shared_database: str, celery_on_redis: str, logs: Path, settings: Any
) -> None:
    """The ping returns once every worker with a live heartbeat answered, not at its timeout (1 s)."""
    settings.REDIS_URL = celery_on_redis
    settings.HEALTH_CHECK_TIMEOUT_MS = 1000
    pool = Workers(shared_database, celery_on_redis, logs / "fast", "grade_cpu,celery", {"GRADER_CPU_FALLBACK": "1"})
    (logs / "fast").mkdir()
    pools.append(pool)
    pool.start(concurrency=1)
    pool.start(concurrency=1)
    wait_for(lambda: GraderHeartbeat.objects.count() == 2, 10, "two heartbeats")
    took = []
    for _ in range(5):
        started = time.perf_counter()
        report = health.run_checks(("database", "redis", "celery", "graders"))
        took.append(time.perf_counter() - started)
        assert report["checks"]["celery"]["workers"] == 2, report
    assert sorted(took)[2] < 0.2, took  # the median; ~10 ms on a quiet machine


def test_it_refuses_to_start_a_gpu_only_worker_without_a_gpu(
    pools: list[Workers], shared_database: str, celery_on_redis: str, logs: Path
) -> None:
    pool = Workers(shared_database, celery_on_redis, logs / "refused", "grade_gpu", NO_FALLBACK)
    (logs / "refused").mkdir()
    pools.append(pool)
    with pytest.raises(RuntimeError, match="the worker exited") as failed:
        pool.start(concurrency=1)
    assert "its sandbox has no GPU" in str(failed.value)
