"""Submissions through a real Redis and a real ``celery -A quizsite worker`` with the warm sandbox pool.

Slow by nature (each worker start imports torch in its sandbox children), so one worker
serves the module and only the SIGKILL test starts another.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.db import transaction
from django.test import override_settings

from graders.attempts import runs, submissions
from graders.models import Counterexample, Drill, DrillRun, Submission
from jobs import tasks
from jobs.status import Status
from tests.graders.conftest import CRASH, HIDDEN_WRONG, RIGHT, WRONG, Workers

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.xdist_group("celery-redis")]

# A loop the sandbox lets through and that runs for a couple of seconds, so a test can kill
# its grader mid-grade; the answer is still right, so a re-grade gives `accepted`.
SLOW_RIGHT = (
    "def solution(x):\n"
    "    total = 0\n"
    "    for i in range(1500000):\n"
    "        total = total + 1\n"
    "    return x + 1 + (total - total)\n"
)


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def create_submission(learner: User, drill: Drill, code: str) -> Submission:
    sub = submissions.submit(learner, drill, code)
    assert isinstance(sub, Submission), sub
    return sub


def final(sub: Submission) -> bool:
    sub.refresh_from_db()
    return sub.is_final


@pytest.fixture
def ready(workers: Workers, transactional_db: None) -> Workers:
    workers.current  # noqa: B018 - starts one when none is running
    return workers


def test_it_takes_a_submission_from_queued_to_its_verdict(ready: Workers, learner: User, drill: Drill) -> None:
    sub = create_submission(learner, drill, RIGHT)
    wait_for(lambda: final(sub), 30, "the verdict")
    assert sub.status == Status.ACCEPTED, sub.verdict
    assert (sub.verdict["passed"], sub.verdict["total"], sub.attempts) == (6, 6, 1)  # and a twin pair
    assert sub.worker.startswith("test-") and sub.device == "cpu"
    assert sub.queued_at < sub.claimed_at < sub.finished_at


def test_it_logs_no_line_per_task_at_the_default_task_log_level(ready: Workers, learner: User, drill: Drill) -> None:
    """The worker runs at ``-l INFO`` (as make run's does), yet Celery's "received" and "succeeded in" lines
    stay out of its log: each verdict's row says who graded it and when (TASK_LOG_LEVEL=INFO shows them)."""
    sub = create_submission(learner, drill, RIGHT)
    wait_for(lambda: final(sub), 30, "the verdict")
    log = ready.current.log.read_text(errors="replace")
    assert " ready." in log
    assert "] received" not in log and "] succeeded in" not in log


def _claimant_pid(sub: Submission) -> int:
    sub.refresh_from_db()
    return int(sub.claim_token.rsplit(":", 3)[1])


def test_it_ignores_a_duplicate_message_while_a_live_worker_grades(ready: Workers, learner: User, drill: Drill) -> None:
    sub = create_submission(learner, drill, SLOW_RIGHT)
    wait_for(lambda: Submission.objects.filter(pk=sub.pk, status=Status.RUNNING).exists(), 30, "the claim")
    tasks.enqueue(sub)  # the other thread gets it while the first still grades
    wait_for(lambda: final(sub), 30, "the verdict")
    time.sleep(0.5)
    sub.refresh_from_db()
    assert (sub.status, sub.attempts) == (Status.ACCEPTED, 1), sub.verdict


def test_it_regrades_once_after_the_whole_worker_is_killed(ready: Workers, learner: User, drill: Drill) -> None:
    sub = create_submission(learner, drill, SLOW_RIGHT)
    wait_for(lambda: Submission.objects.filter(pk=sub.pk, status=Status.RUNNING).exists(), 30, "the claim")
    assert _claimant_pid(sub) == ready.current.process.pid  # jobs run in the worker's own threads
    ready.current.kill()  # SIGKILL, mid-grade, as the OOM killer would: the message stays unacknowledged
    ready.start()  # its start-up reap sends the row again; the dead claim is taken over
    wait_for(lambda: final(sub), 40, "the verdict after the restart")
    assert (sub.status, sub.attempts) == (Status.ACCEPTED, 2), sub.verdict
    finished_at = sub.finished_at
    time.sleep(1)
    sub.refresh_from_db()
    assert (sub.status, sub.finished_at, sub.attempts) == (Status.ACCEPTED, finished_at, 2)


def test_it_gives_200_queued_submissions_one_right_verdict_each(ready: Workers, learner: User, drill: Drill) -> None:
    codes = {RIGHT: Status.ACCEPTED, WRONG: Status.WRONG_ANSWER, CRASH: Status.RUNTIME_ERROR}
    mix = list(codes) * 67
    started = time.monotonic()
    with override_settings(GRADER_RATE_LIMIT=1000), transaction.atomic():  # all 200 messages go out on commit
        subs = [create_submission(learner, drill, code) for code in mix[:200]]
    pending = Submission.objects.filter(pk__in=[s.pk for s in subs], status__in=[Status.QUEUED, Status.RUNNING])
    wait_for(lambda: not pending.exists(), 60, "200 verdicts")
    elapsed = time.monotonic() - started
    got = dict(Submission.objects.filter(pk__in=[s.pk for s in subs]).values_list("pk", "status"))
    assert [got[s.pk] for s in subs] == [codes[s.code] for s in subs]
    assert set(Submission.objects.filter(pk__in=got).values_list("attempts", flat=True)) == {1}
    print(f"200 verdicts in {elapsed:.2f}s")  # noqa: T201 - shown with -s, for the record


def test_it_grades_a_gpu_drill_on_a_cpu_worker_and_says_so(
    ready: Workers, learner: User, make_drill: Callable[..., Drill]
) -> None:
    drill = make_drill(device="cuda")
    assert drill.queue == "grade_gpu"
    sub = create_submission(learner, drill, RIGHT)
    wait_for(lambda: final(sub), 30, "the verdict")
    assert (sub.status, sub.device, sub.verdict["device"]) == (Status.ACCEPTED, "cpu", "cpu"), sub.verdict


def test_it_says_offline_when_the_worker_dies_and_grades_what_waited_once_it_is_back(
    ready: Workers, learner: User, drill: Drill
) -> None:
    from jobs.heartbeat import grader_status

    wait_for(lambda: not grader_status(drill.queue).offline, 30, "a heartbeat")
    ready.current.kill()
    killed = time.monotonic()
    wait_for(lambda: grader_status(drill.queue).offline, 15, "the grader to count as offline")
    assert time.monotonic() - killed < 10  # three missed beats of 2 s, not minutes
    sub = create_submission(learner, drill, RIGHT)  # stored while no grader is alive
    time.sleep(1)
    assert not final(sub)
    ready.start()
    wait_for(lambda: final(sub), 60, "the verdict once a worker is back")
    assert sub.status == Status.ACCEPTED


def test_it_runs_own_input_in_the_sandbox_beside_the_reference(ready: Workers, learner: User, drill: Drill) -> None:
    """ "Run" through the real worker: the arguments are made in a runner's jail (a file read there fails, and
    only the learner's input says so), both outputs and the diff come back, and nothing is graded."""
    requested = [runs.request_run(learner, drill, WRONG, text) for text in RUN_ARGUMENTS]
    assert all(isinstance(run, DrillRun) for run in requested), requested
    for run in requested:
        wait_for(lambda run=run: DrillRun.objects.get(pk=run.pk).is_final, 30, "the run")
    shown, hostile = (DrillRun.objects.get(pk=run.pk).result for run in requested)
    assert (shown["expected"], shown["actual"], shown["same"]) == (
        "tensor([2., 6.])\n# shape (2,), float32",
        "tensor([3., 7.])\n# shape (2,), float32",
        False,
    )
    assert shown["mismatch"]["kind"] == "value" and shown["device"] == "cpu"
    assert hostile["input_error"] and "root:" not in str(hostile) and hostile["actual"] is None
    assert not Submission.objects.exists()


RUN_ARGUMENTS = ("torch.tensor([1.0, 5.0])", "torch.from_file('/etc/passwd', size=64, dtype=torch.uint8)")


def test_a_hidden_failure_gets_a_counterexample_after_its_verdict_that_run_reproduces(
    ready: Workers, learner: User, drill: Drill
) -> None:
    """Through the real worker: the verdict is final with its counterexample queued behind it; the job finds an
    input of fresh seeds (shrunk to one element), "Run" on its text shows the same difference, and neither an
    attempt that failed an example nor an accepted one gets a counterexample."""
    sub = create_submission(learner, drill, HIDDEN_WRONG)
    wait_for(lambda: final(sub), 30, "the verdict")
    assert sub.status == Status.WRONG_ANSWER and sub.verdict["hidden_passed"] == 1  # the 1-D hidden case only
    cex = Counterexample.objects.get(submission=sub)
    wait_for(lambda: Counterexample.objects.get(pk=cex.pk).is_final, 30, "the counterexample")
    cex.refresh_from_db()
    assert cex.status == Status.DONE and cex.finished_at >= sub.finished_at
    assert cex.result["found"] and cex.result["arguments"] == "torch.tensor([[0.0]], dtype=torch.float32)"
    assert (cex.result["run"]["expected"], cex.result["run"]["actual"]) == (
        "tensor([[1.]])\n# shape (1, 1), float32",
        "tensor([[0.]])\n# shape (1, 1), float32",
    )
    run = runs.request_run(learner, drill, HIDDEN_WRONG, cex.result["arguments"])
    assert isinstance(run, DrillRun)
    wait_for(lambda: DrillRun.objects.get(pk=run.pk).is_final, 30, "the run")
    run.refresh_from_db()
    assert run.result["same"] is False and run.result["expected"] == cex.result["run"]["expected"]
    others = [create_submission(learner, drill, code) for code in (WRONG, RIGHT)]
    for other in others:
        wait_for(lambda other=other: final(other), 30, "the verdict")
    assert [other.status for other in others] == [Status.WRONG_ANSWER, Status.ACCEPTED]
    assert not Counterexample.objects.filter(submission__in=others).exists()
