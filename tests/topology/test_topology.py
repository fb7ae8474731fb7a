"""The compose topology on this machine: health, a review and a graded drill, all over HTTP.

Every assertion reads the private cluster's stored rows, so a page that merely looks right
cannot pass a test.
"""

from __future__ import annotations

import uuid

import pytest

from tests.topology.conftest import (
    Browser,
    Topology,
    reference_code,
    review_logs,
    submission_uuid,
    wait_final,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("topology")]


def new_learner(browser: Browser) -> str:
    username = f"learner-{uuid.uuid4().hex[:8]}"
    browser.sign_up(username, f"pw-{uuid.uuid4().hex}")
    return username


def test_it_reports_the_database_redis_and_both_workers_healthy(topology: Topology, browser: Browser) -> None:
    response = browser.get("/healthz")
    report = response.json()
    assert response.status_code == 200, report
    assert {name: check["ok"] for name, check in report["checks"].items()} == {
        "database": True,
        "redis": True,
        "celery": True,
        "graders": True,
    }
    assert report["checks"]["celery"]["workers"] == 2  # the grade_cpu,celery worker and the grade_gpu one
    queues = report["checks"]["graders"]["queues"]
    assert (queues["grade_cpu"]["online"], queues["grade_gpu"]["online"]) == (1, 1)  # one worker each


def test_it_stores_a_review_rated_over_http(topology: Topology, browser: Browser) -> None:
    username = new_learner(browser)
    card, response = browser.review_one(quality=4)
    assert response is not None and response.status_code == 200, response
    assert review_logs(topology, username) == [(card, 4)]


def test_it_grades_drills_from_both_queues_once_each(topology: Topology, browser: Browser) -> None:
    """A CPU drill goes to the grade_cpu worker, a CUDA drill to the grade_gpu one (on its CPU here)."""
    username = new_learner(browser)
    cpu_uuid = submission_uuid(browser.submit_drill("reverse-1d", reference_code(topology, "reverse-1d")))
    gpu_code = reference_code(topology, "tensor-device-index")
    gpu_uuid = submission_uuid(browser.submit_drill("tensor-device-index", gpu_code))
    rows = {row["uuid"]: row for row in wait_final(topology, username, expected=2, timeout=30)}
    assert rows[cpu_uuid]["status"] == "accepted", rows[cpu_uuid]["verdict"]
    assert rows[gpu_uuid]["status"] == "accepted", rows[gpu_uuid]["verdict"]
    assert rows[cpu_uuid]["worker"].startswith("cpu-")
    assert rows[gpu_uuid]["worker"].startswith("gpu-")
    page = browser.get(f"/drills/submissions/{cpu_uuid}/")
    assert page.status_code == 200 and "Accepted" in page.text
