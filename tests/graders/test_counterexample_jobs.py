"""The counterexample job without a broker: when it is queued, that it goes after the verdict's announcement, what
it stores, and how the verdict page and the API show it (graders.kinds.counterexamples, graders.web.views).

Grading and the search run in this process through ``LocalRunner`` (trusted test code only); the real worker is
tests/graders/test_integration.py's, the browser tests/browser/test_counterexample.py's.
"""

from __future__ import annotations

from functools import partial
from typing import Any
from unittest import mock

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from graders.attempts import submissions
from graders.drills.local import LocalRunner
from graders.kinds.counterexamples import COUNTEREXAMPLES, wanted
from graders.kinds.verdicts import SUBMISSIONS
from graders.models import Counterexample, Drill, Submission
from jobs import lifecycle as jobs
from jobs import notify, tasks
from jobs.models import GraderHeartbeat
from jobs.status import Status
from tests.graders.conftest import HIDDEN_WRONG, RIGHT, WRONG

pytestmark = pytest.mark.django_db

SHRUNK = "torch.tensor([[0.0]], dtype=torch.float32)"


def graded(learner: User, drill: Drill, code: str) -> Submission:
    sub = submissions.submit(learner, drill, code)
    assert isinstance(sub, Submission), sub
    jobs.process(SUBMISSIONS, sub.pk, LocalRunner(), worker="celery@test")
    sub.refresh_from_db()
    return sub


def test_it_wants_one_only_where_every_example_passed_and_a_hidden_case_did_not() -> None:
    example = {"name": "small", "hidden": False, "passed": True}
    hidden = {"name": "random-1", "hidden": True, "passed": False}
    assert wanted({"status": "wrong_answer", "seed": 5, "tests": [example, hidden]})
    assert wanted({"status": "time_limit", "seed": 5, "tests": [example, hidden]})
    assert not wanted({"status": "wrong_answer", "seed": 5, "tests": [{**example, "passed": False}, hidden]})
    assert not wanted({"status": "wrong_answer", "seed": None, "tests": [example, hidden]})  # never sent
    assert not wanted({"status": "accepted", "seed": 5, "tests": [example, {**hidden, "passed": True}]})
    assert not wanted(None)


def test_it_queues_one_after_a_hidden_failure_announced_first_and_none_otherwise(
    django_capture_on_commit_callbacks: Any, learner: User, drill: Drill
) -> None:
    order: list[str] = []
    with (
        mock.patch.object(notify, "_announce", side_effect=lambda kind, pk: order.append(f"announce {kind}")),
        mock.patch("jobs.tasks.enqueue", side_effect=lambda job: order.append(f"send {type(job).__name__}")),
        django_capture_on_commit_callbacks(execute=True),
    ):
        sub = submissions.submit(learner, drill, HIDDEN_WRONG)
        assert isinstance(sub, Submission)
        jobs.process(SUBMISSIONS, sub.pk, LocalRunner(), worker="celery@test")
    # The callbacks run in the order they were registered (the submit's, then the verdict's): the verdict first.
    assert order == ["send Submission", "announce submission", "send Counterexample"]
    cex = Counterexample.objects.get()
    assert cex.submission_id == sub.pk and cex.status == Status.QUEUED
    for code in (WRONG, RIGHT):  # an example failed; accepted
        graded(learner, drill, code)
    assert Counterexample.objects.count() == 1


def test_a_cpu_drills_search_goes_to_its_own_queue_and_a_cuda_drills_stays_with_the_gpu(
    learner: User, drill: Drill
) -> None:
    """Off the verdicts' queue (bench/counterexample_queue.py: on it they delayed other learners' verdicts)."""
    sub = graded(learner, drill, HIDDEN_WRONG)
    cex = Counterexample.objects.get(submission=sub)
    with mock.patch("jobs.tasks.run_job.apply_async") as send:
        tasks.enqueue(cex)
    assert send.call_args.kwargs["queue"] == settings.GRADER_QUEUE_COUNTEREXAMPLE == "counterexample"
    cex.submission.drill.device = "cuda"
    assert COUNTEREXAMPLES.queue(cex) == settings.GRADER_QUEUE_GPU


def test_a_waiting_search_says_so_when_no_worker_consumes_its_queue(
    client_for: Client, learner: User, drill: Drill
) -> None:
    sub = graded(learner, drill, HIDDEN_WRONG)
    fragment = reverse("graders:submission_counterexample", args=[sub.uuid])
    page = client_for.get(fragment).content.decode()
    assert "data-counterexample-pending" in page and "data-counterexample-offline" in page
    GraderHeartbeat.objects.create(name="h:1", queues=["grade_cpu", "grade_gpu"], device="cpu")  # verdicts only
    assert "data-counterexample-offline" in client_for.get(fragment).content.decode()
    GraderHeartbeat.objects.create(name="h:2", queues=["counterexample"], device="cpu")
    page = client_for.get(fragment).content.decode()
    assert "data-counterexample-pending" in page and "data-counterexample-offline" not in page


def test_it_stores_the_shrunk_input_and_runs_reports_and_the_verdict_stands(learner: User, drill: Drill) -> None:
    sub = graded(learner, drill, HIDDEN_WRONG)
    cex = Counterexample.objects.get(submission=sub)
    jobs.process(COUNTEREXAMPLES, cex.pk, LocalRunner(), worker="celery@test")
    cex.refresh_from_db()
    assert cex.status == Status.DONE and cex.found and cex.result["arguments"] == SHRUNK
    assert cex.result["run"]["same"] is False and cex.result["tried"] > 0
    before = (sub.status, sub.verdict)
    sub.refresh_from_db()
    assert (sub.status, sub.verdict) == before


def test_it_says_why_none_was_found_when_the_drill_changed(learner: User, drill: Drill) -> None:
    sub = graded(learner, drill, HIDDEN_WRONG)
    Submission.objects.filter(pk=sub.pk).update(drill_version="an older version")
    cex = Counterexample.objects.get(submission=sub)
    jobs.process(COUNTEREXAMPLES, cex.pk, LocalRunner(), worker="celery@test")
    cex.refresh_from_db()
    assert cex.status == Status.DONE and not cex.found and cex.result["reason"] == "drill_changed"


def finished(sub: Submission, **result: Any) -> Counterexample:
    cex = Counterexample.objects.get(submission=sub)
    base = {"found": False, "arguments": "", "reason": "none_failed", "tried": 40, "shrinks": 0, "search_ms": 1700.0}
    Counterexample.objects.filter(pk=cex.pk).update(
        status=Status.DONE, result={**base, **result}, finished_at=sub.finished_at
    )
    cex.refresh_from_db()
    return cex


RUN = {"expected": "tensor([[1.]])", "actual": "tensor([[0.]])", "same": False, "status": "ok", "message": "differs"}


def test_the_verdict_polls_its_counterexample_in_then_shows_it_with_run(
    client_for: Client, learner: User, drill: Drill
) -> None:
    sub = graded(learner, drill, HIDDEN_WRONG)
    status_url = reverse("graders:submission_status", args=[sub.uuid])
    page = client_for.get(status_url).content.decode()
    fragment = reverse("graders:submission_counterexample", args=[sub.uuid])
    assert 'data-counterexample="queued"' in page and f'hx-get="{fragment}"' in page
    finished(sub, found=True, arguments=SHRUNK, run=RUN)
    shown = client_for.get(fragment).content.decode()
    assert 'data-counterexample="done"' in shown and "hx-get" not in shown
    assert (
        "Your code gets this input wrong" in shown and "solution(torch.tensor([[0.0]], dtype=torch.float32))" in shown
    )
    assert f'data-counterexample-text="{SHRUNK}"' in shown and "tensor([[1.]])" in shown and "tensor([[0.]])" in shown


def test_it_says_none_was_found_and_is_nobody_elses(client_for: Client, learner: User, drill: Drill) -> None:
    sub = graded(learner, drill, HIDDEN_WRONG)
    finished(sub)
    fragment = reverse("graders:submission_counterexample", args=[sub.uuid])
    assert "No input your code gets wrong was found in 1700 ms" in client_for.get(fragment).content.decode()
    other = Client()
    other.force_login(User.objects.create_user("other", password="x"))
    assert other.get(fragment).status_code == 404
    accepted = graded(learner, drill, RIGHT)
    assert client_for.get(reverse("graders:submission_counterexample", args=[accepted.uuid])).status_code == 404


def test_the_api_serves_it_with_the_submission(learner: User, drill: Drill) -> None:
    sub, right = graded(learner, drill, HIDDEN_WRONG), graded(learner, drill, RIGHT)
    finished(sub, found=True, arguments=SHRUNK, run=RUN)
    api = APIClient()
    api.force_authenticate(learner)
    served = api.get(f"/api/v1/submissions/{sub.uuid}/").json()["counterexample"]
    assert (served["status"], served["found"], served["arguments"]) == ("done", True, SHRUNK)
    assert served["result"]["run"]["expected"] == "tensor([[1.]])"
    assert api.get(f"/api/v1/submissions/{right.uuid}/").json()["counterexample"] is None
    listed = partial(api.get, "/api/v1/submissions/")().json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert {row["uuid"]: row["counterexample"] is not None for row in rows} == {
        str(sub.uuid): True,
        str(right.uuid): False,
    }
