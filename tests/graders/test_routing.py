"""Routing by device: which queues a worker consumes, what it does with a GPU job it should not run,
what the reaper re-sends while no GPU grader is online, and what the pages and /healthz say meanwhile.

The worker's side runs against a real Celery worker in test_device_routing.py; these need no broker.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from graders.attempts import submissions
from graders.models import Drill, Submission
from jobs import routing
from jobs.models import GraderHeartbeat
from jobs.tasks import reap, takes_from
from quizsite import health
from tests.conftest import published_tasks
from tests.graders.conftest import drill_text

GPU, CPU = "grade_gpu", "grade_cpu"
OK_GPU = {"state": "ok", "device": "cuda"}
NO_CUDA = {"state": "degraded", "device": "cuda", "error": "CUDA is not available in the sandbox runners: 304"}


def test_it_keeps_every_queue_for_a_gpu_worker() -> None:
    assert routing.allowed_queues([CPU, GPU, "celery"], GPU, "cuda", cpu_fallback=False) == [CPU, GPU, "celery"]


def test_it_drops_the_gpu_queue_for_a_worker_without_a_gpu() -> None:
    assert routing.allowed_queues([CPU, GPU, "celery"], GPU, "cpu", cpu_fallback=False) == [CPU, "celery"]
    assert routing.allowed_queues([GPU], GPU, "cpu", cpu_fallback=False) == []


def test_it_keeps_the_gpu_queue_on_a_cpu_worker_only_with_the_fallback() -> None:
    assert routing.allowed_queues([CPU, GPU], GPU, "cpu", cpu_fallback=True) == [CPU, GPU]


@pytest.mark.parametrize(
    ("health", "works"),
    [
        (OK_GPU, True),
        ({"state": "starting", "device": "cuda"}, True),
        ({"state": "degraded", "device": "cuda", "error": "seccomp is not available in the sandbox runners"}, True),
        (NO_CUDA, False),
        ({"state": "failed", "device": "cuda", "error": "the sandbox cannot start a child"}, False),
        ({"state": "ok", "device": "cpu"}, False),
    ],
)
def test_it_tells_a_working_gpu_from_its_pools_health(health: dict[str, Any], works: bool) -> None:
    assert routing.gpu_works(health) is works


def test_it_stops_and_resumes_a_gpu_workers_consumer_with_its_gpu() -> None:
    assert routing.gpu_consumer_change(True, True, NO_CUDA, cpu_fallback=False) is False
    assert routing.gpu_consumer_change(True, False, NO_CUDA, cpu_fallback=False) is None
    assert routing.gpu_consumer_change(True, False, OK_GPU, cpu_fallback=False) is True
    assert routing.gpu_consumer_change(True, True, OK_GPU, cpu_fallback=False) is None


def test_it_never_adds_a_gpu_queue_a_worker_was_not_started_with() -> None:
    assert routing.gpu_consumer_change(False, False, OK_GPU, cpu_fallback=False) is None
    assert routing.gpu_consumer_change(True, True, NO_CUDA, cpu_fallback=True) is None  # the fallback grades anyway
    assert routing.gpu_consumer_change(True, True, {"state": "ok", "device": "cpu"}, cpu_fallback=False) is None


class Pool:
    """A pool that reports a fixed health (what ``takes_from`` reads of a SandboxPool)."""

    def __init__(self, report: dict[str, Any]) -> None:
        self.report = report

    def health(self) -> dict[str, Any]:
        return self.report


def test_it_runs_a_gpu_job_only_where_the_gpu_works(settings: Any) -> None:
    settings.GRADER_CPU_FALLBACK = False
    assert takes_from(Pool(OK_GPU), GPU)
    assert not takes_from(Pool(NO_CUDA), GPU)
    assert not takes_from(Pool({"state": "ok", "device": "cpu"}), GPU)
    assert takes_from(Pool({"state": "ok", "device": "cpu"}), CPU)
    assert takes_from(Pool({"state": "ok", "device": "cpu"}), None)  # a direct call, no delivery
    settings.GRADER_CPU_FALLBACK = True
    assert takes_from(Pool({"state": "ok", "device": "cpu"}), GPU)


# ------------------------------------------------------------------------------ with the database


@pytest.fixture
def cuda_drill(make_drill: Any) -> Drill:
    return make_drill(drill_text("cuda").replace('slug = "add-one"', 'slug = "add-one-gpu"'))


def cpu_grader_only() -> GraderHeartbeat:
    """A live worker without a GPU, started with -Q grade_cpu,grade_gpu: it kept grade_cpu only."""
    return GraderHeartbeat.objects.create(name="cpu-host:1", queues=[CPU], device="cpu", health={"state": "ok"})


@pytest.mark.django_db
def test_it_says_no_gpu_grader_online_on_the_page_while_a_cuda_submission_waits(
    client_for: Client, learner: User, cuda_drill: Drill
) -> None:
    cpu_grader_only()
    sub = submissions.submit(learner, cuda_drill, "def solution(x):\n    return x + 1\n")
    assert isinstance(sub, Submission) and sub.drill.queue == GPU
    page = client_for.get(reverse("graders:submission_status", args=[sub.uuid]), HTTP_HX_REQUEST="true")
    text = page.content.decode()
    assert "No GPU grader online" in text and "The grader is offline" not in text
    GraderHeartbeat.objects.create(name="gpu-host:1", queues=[GPU], device="cuda", health=OK_GPU)
    text = client_for.get(reverse("graders:submission_status", args=[sub.uuid]), HTTP_HX_REQUEST="true").content
    assert b"No GPU grader online" not in text and "Waiting for a grader" in text.decode()


@pytest.mark.django_db
def test_it_says_no_gpu_grader_online_in_healthz() -> None:
    cpu_grader_only()
    report = health.run_checks(("graders",))["checks"]["graders"]
    assert report["ok"] is False and report["error"] == "grade_gpu: no GPU grader online"
    assert (report["queues"][CPU]["online"], report["queues"][GPU]["online"]) == (1, 0)


@pytest.mark.django_db
def test_it_says_why_a_gpu_worker_that_lost_cuda_left_the_gpu_queue() -> None:
    cpu_grader_only()
    GraderHeartbeat.objects.create(name="gpu-host:1", queues=["celery"], device="cuda", health=NO_CUDA)
    report = health.run_checks(("graders",))["checks"]["graders"]
    assert report["queues"][GPU]["online"] == 0
    assert report["queues"][GPU]["degraded"] == [NO_CUDA["error"]]
    assert report["error"] == "grade_gpu: no GPU grader online; grade_gpu: degraded"


@pytest.mark.django_db
def test_it_leaves_waiting_gpu_jobs_in_their_queue_until_a_gpu_grader_is_online(
    learner: User, drill: Drill, cuda_drill: Drill
) -> None:
    """Re-sent every minute for hours, one waiting cuda submission would become hundreds of messages."""
    cpu_grader_only()
    old = timezone.now() - timedelta(hours=1)
    waiting_gpu = submissions.submit(learner, cuda_drill, "x = 1")
    lost_cpu = submissions.submit(learner, drill, "x = 1")
    Submission.objects.update(queued_at=old)
    with published_tasks() as sent:
        assert reap.apply().get() == 1
        assert sent[-1].args[1] == lost_cpu.pk
        assert reap.apply(kwargs={"startup": True}).get() == 2  # a worker's start sends every queued row
        GraderHeartbeat.objects.create(name="gpu-host:1", queues=[GPU], device="cuda", health=OK_GPU)
        assert reap.apply().get() == 2
    assert sent[-2:] != [] and {m.args[1] for m in sent[-2:]} == {waiting_gpu.pk, lost_cpu.pk}
