"""Faults between the processes of the compose topology: a Redis restart, a PostgreSQL outage and
a grading worker killed mid-grade. Each test puts the topology back as it found it.

What must hold, read from the private cluster's rows: every stored submission reaches exactly one
final verdict (a later redelivery never overwrites it), a rating never depends on Redis, and a
database outage is a clear 503 that ends by itself when the database is back.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
import requests

from tests.topology.conftest import (
    FINAL,
    Browser,
    Topology,
    reference_code,
    review_logs,
    submission_rows,
    submission_uuid,
    wait_final,
    wait_until,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("topology")]

BURST = 30
# Enough for a duplicate message to arrive if one is coming: three periods of the topology's reaper
# (2 s), which sends again every row whose message may be lost.
REDELIVERY_WINDOW = 6.5
# A right answer to reverse-1d that first burns about half a second of CPU (its limit is 2 s), so
# that a test can catch it while it is being graded.
SLOW_REVERSE = """import torch

w = torch.ones(256, 256)
for k in range(60):
    w = torch.mm(w, w) / 256


def solution(x):
    return torch.flip(x, dims=[0])
"""


def new_learner(browser: Browser) -> str:
    username = f"learner-{uuid.uuid4().hex[:8]}"
    browser.sign_up(username, f"pw-{uuid.uuid4().hex}")
    return username


def final_snapshot(rows: list[dict[str, Any]]) -> dict[int, tuple[Any, ...]]:
    return {row["id"]: (row["status"], row["finished_at"], row["worker"]) for row in rows}


def submit_burst(browser: Browser, code: str, halfway: threading.Event, answers: list[int]) -> None:
    for number in range(BURST):
        if number == BURST // 3:
            halfway.set()
        try:
            answers.append(browser.submit_drill("reverse-1d", code).status_code)
        except requests.RequestException:
            answers.append(0)
        time.sleep(0.05)
    halfway.set()


def test_it_grades_every_submission_once_and_keeps_every_review_through_a_redis_restart(
    topology: Topology, browser: Browser
) -> None:
    """Steps: 1. a burst of submissions from one learner  2. a third of the way in, Redis stops
    3. another learner rates cards while it is down  4. Redis starts again on the same port and folder
    5. every stored submission ends final, and stays so through a redelivery window."""
    submitter = new_learner(browser)
    reviewer = Browser(topology.web_url)
    reviewer_name = new_learner(reviewer)
    code = reference_code(topology, "reverse-1d")
    halfway, answers = threading.Event(), []
    burst = threading.Thread(target=submit_burst, args=(browser, code, halfway, answers))
    burst.start()
    try:
        assert halfway.wait(30)
        topology.redis.stop()
        ratings = []
        for _ in range(3):
            started = time.monotonic()
            card, response = reviewer.review_one(quality=4)
            assert response is not None
            ratings.append((card, response.status_code, time.monotonic() - started))
        time.sleep(2.0)  # a few more submissions arrive while the broker is away
    finally:
        topology.redis.start()
        burst.join(60)
    # A rating needs only the database: each one answered and each one is stored.
    assert [status for _, status, _ in ratings] == [200, 200, 200], ratings
    assert review_logs(topology, reviewer_name) == [(card, 4) for card, _, _ in ratings]
    # A submission the server accepted (302) is stored; one it refused while Redis was down may be
    # stored too (the row commits before the publish), and must then be graded all the same.
    assert len(answers) == BURST and set(answers) <= {302, 500}, answers
    stored = len(submission_rows(topology, submitter))
    assert answers.count(302) <= stored <= BURST
    rows = wait_final(topology, submitter, expected=stored, timeout=40)
    assert {row["status"] for row in rows} == {"accepted"}, [row["verdict"] for row in rows]
    before = final_snapshot(rows)
    time.sleep(REDELIVERY_WINDOW)
    assert final_snapshot(submission_rows(topology, submitter)) == before


def test_it_answers_503_while_postgres_is_down_and_recovers_when_it_is_back(
    topology: Topology, browser: Browser
) -> None:
    username = new_learner(browser)
    assert browser.get("/review/").status_code == 200
    topology.pg.stop("fast")
    try:
        health = browser.get("/healthz")
        assert health.status_code == 503
        assert health.json()["checks"]["database"]["ok"] is False
        for path in ("/review/", "/", "/drills/reverse-1d/"):
            page = browser.get(path)
            assert page.status_code == 503, (path, page.status_code)
            assert "temporarily unavailable" in page.text
            assert page.headers["Retry-After"] == "30"
    finally:
        topology.pg.start()
    wait_until(lambda: browser.get("/healthz").status_code == 200, 15, "/healthz answering 200 again", interval=0.2)
    # Both gunicorn workers serve again: no request is left on a dead connection.
    assert [browser.get("/review/").status_code for _ in range(6)] == [200] * 6
    # The workers and beat reconnect too: a submission after the outage is graded.
    submission_uuid(browser.submit_drill("reverse-1d", reference_code(topology, "reverse-1d")))
    [row] = wait_final(topology, username, expected=1, timeout=30)
    assert row["status"] == "accepted", row["verdict"]


def test_it_grades_once_after_the_worker_is_killed_mid_grade(topology: Topology, browser: Browser) -> None:
    """Steps: 1. submit code that takes a second to grade  2. SIGKILL the grade_cpu worker's whole
    process group while the row is RUNNING  3. start a new worker  4. one final verdict, from it."""
    username = new_learner(browser)
    killed = topology.live("worker-cpu")
    submission_uuid(browser.submit_drill("reverse-1d", SLOW_REVERSE))

    def running() -> bool:
        rows = submission_rows(topology, username)
        assert not rows or rows[0]["status"] not in FINAL, "graded before the worker could be killed"
        return bool(rows) and rows[0]["status"] == "running"

    wait_until(running, 20, "the submission being graded", interval=0.01)
    killed.kill()
    [row] = submission_rows(topology, username)
    assert row["status"] == "running"
    replacement = topology.start_worker("grade_cpu,celery")
    replacement.wait_for_log(" ready.", 90)
    [row] = wait_final(topology, username, expected=1, timeout=40)
    assert row["status"] == "accepted", row["verdict"]
    assert row["attempts"] >= 2
    worker_names = replacement.log.read_text(errors="replace")
    assert row["worker"] in worker_names and row["worker"] not in killed.log.read_text(errors="replace")
    before = final_snapshot([row])
    time.sleep(REDELIVERY_WINDOW)
    assert final_snapshot(submission_rows(topology, username)) == before
