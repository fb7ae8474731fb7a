"""The job lifecycle without a broker: enqueue on commit, claim, run, finish, retry, reap.

Grading runs in this process through ``graders.drills.local.LocalRunner`` (trusted test code
only); the real sandbox pool and a real worker are exercised in test_integration.py. Submissions
are the kind under test; tests/graders/test_examples.py and tests/outputs run the other kinds
through the same ``jobs.lifecycle.process``.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from cards.models import TouchedDay
from graders.attempts import submissions
from graders.drills.local import LocalRunner
from graders.kinds.verdicts import SUBMISSIONS
from graders.models import Drill, Submission
from graders.rating import reviews
from jobs import lifecycle as jobs
from jobs.lifecycle import Outcome
from jobs.status import Status
from quizsite import claims
from tests.conftest import Published, celery_broker, published_tasks
from tests.graders.conftest import CRASH, HIDDEN_WRONG, RIGHT, WRONG

pytestmark = pytest.mark.django_db


class BrokenRunner:
    """A sandbox pool whose children keep dying: an infrastructure error, not the learner's."""

    device = "cpu"

    def make_cases(self, specs: Any, **kwargs: Any) -> Any:
        return LocalRunner().make_cases(specs, **kwargs)  # the drill's cases are fine: its runs fail

    def run(self, *args: Any, **kwargs: Any) -> Any:
        raise BrokenPipeError("sandbox child went away")


class FlakyRunner:
    """A pool that fails a different way on every run (a different exception from a different place)."""

    device = "cpu"

    def make_cases(self, specs: Any, **kwargs: Any) -> Any:
        return LocalRunner().make_cases(specs, **kwargs)  # the drill's cases are fine: its runs fail

    def __init__(self) -> None:
        self.runs = 0

    def run(self, *args: Any, **kwargs: Any) -> Any:
        self.runs += 1
        if self.runs % 3 == 1:
            raise BrokenPipeError("sandbox child went away")
        if self.runs % 3 == 2:
            raise ConnectionResetError("the fork server hung up")
        return {}["no such key"]


class CrashingRunner(LocalRunner):
    """The worker's own code raising on one learner's input, as ``ast.parse`` did on 19,000 minus signs
    (issue 36): every run of that code raises the same way, in the parent, from the same place."""

    def run(self, code: str, *args: Any, **kwargs: Any) -> Any:
        if "CRASH_THE_PARENT" in code:
            return self.parse(code)
        return super().run(code, *args, **kwargs)

    def parse(self, code: str) -> Any:
        raise RecursionError("maximum recursion depth exceeded during ast construction")


PARENT_CRASH = "def solution(x):\n    return x + 1  # CRASH_THE_PARENT\n"


def grade(sub: Submission, runner: Any = None) -> Outcome:
    return jobs.process(SUBMISSIONS, sub.pk, runner or LocalRunner(), worker="celery@test")


def queued(learner: User, drill: Drill, code: str = RIGHT, kind: str = Submission.Kind.SUBMIT) -> Submission:
    sub = submissions.submit(learner, drill, code, kind)
    assert isinstance(sub, Submission), sub
    return sub


def claimed(sub: Submission) -> jobs.Claim:
    claim = jobs.claim(SUBMISSIONS, sub.pk, timezone.now())
    assert claim.job is not None
    return claim


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_it_enqueues_on_commit_on_the_drills_queue(
    django_capture_on_commit_callbacks: Any, learner: User, drill: Drill
) -> None:
    with published_tasks() as sent:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            sub = queued(learner, drill)
        assert sent == []
        for callback in callbacks:
            callback()
    assert sent == [Published("jobs.tasks.run_job", ["submission", sub.pk], {}, "grade_cpu")]
    sub.refresh_from_db()
    assert (sub.status, sub.drill_version, sub.attempts) == (Status.QUEUED, drill.version, 0)


def test_it_sends_cuda_drills_to_the_gpu_queue(
    django_capture_on_commit_callbacks: Any, learner: User, make_drill: Any
) -> None:
    drill = make_drill(device="cuda")
    with published_tasks() as sent, django_capture_on_commit_callbacks(execute=True):
        sub = queued(learner, drill)
    assert sent == [Published("jobs.tasks.run_job", ["submission", sub.pk], {}, "grade_gpu")]


def test_it_keeps_a_submission_queued_when_the_broker_is_down(
    django_capture_on_commit_callbacks: Any, learner: User, drill: Drill, caplog: pytest.LogCaptureFixture
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        sub = queued(learner, drill)
    with (
        celery_broker("redis://127.0.0.1:1/0"),
        published_tasks() as sent,
        caplog.at_level(logging.ERROR, logger="jobs.tasks"),
    ):
        callbacks[0]()  # returns: the learner's submit is not turned into a server error
    assert sent == []
    assert "the reaper will send it again" in caplog.text
    sub.refresh_from_db()
    assert sub.status == Status.QUEUED


def test_it_seeds_each_submission_from_the_learners_current_review(learner: User, drill: Drill) -> None:
    first, second = queued(learner, drill), queued(learner, drill)
    assert first.seed == second.seed == reviews.current_review(learner, drill).review.seed


def test_it_grades_an_accepted_submission(learner: User, drill: Drill) -> None:
    sub = queued(learner, drill)
    assert grade(sub) == Outcome("accepted")
    sub.refresh_from_db()
    assert sub.status == Status.ACCEPTED
    assert (sub.verdict["passed"], sub.verdict["total"], sub.verdict["hidden_total"]) == (6, 6, 3)  # and a twin pair
    assert (sub.worker, sub.device, sub.attempts) == ("celery@test", "cpu", 1)
    assert sub.queued_at <= sub.claimed_at <= sub.finished_at and sub.grading_ms is not None


# Right on every case, and busy for SLEEP seconds on each call with a 2-D input: the hidden cases only (the example
# is 1-D), as a submission that signals a hidden input's bits through how long its hidden phase takes.
SLEEP = 0.25
SLEEPS_IN_HIDDEN = f"""import time

def solution(x):
    if x.dim() != 1:
        end = time.perf_counter() + {SLEEP}
        while time.perf_counter() < end:
            pass
    return x + 1
"""


def test_it_serves_the_visible_phases_timings_whatever_the_hidden_phase_takes(learner: User, drill: Drill) -> None:
    """The hidden phase's duration is the submission's to choose: served, it says more than a bit per case."""
    client = APIClient()
    client.force_authenticate(learner)
    served, took = {}, {}
    for code in (RIGHT, SLEEPS_IN_HIDDEN):
        sub = queued(learner, drill, code)
        started = time.perf_counter()
        assert grade(sub) == Outcome("accepted")
        took[code] = time.perf_counter() - started
        data = client.get(reverse("api:submission", args=[sub.uuid])).json()
        assert (data["verdict"]["hidden_total"], data["verdict"]["hidden_passed"]) == (3, 3)  # the hidden phase ran
        served[code] = {"grading_ms": data["grading_ms"], **{k: data["verdict"][k] for k in ("cpu_ms", "wall_ms")}}
    assert took[SLEEPS_IN_HIDDEN] - took[RIGHT] >= 1.5 * SLEEP  # the two 2-D hidden cases slept (the twins are 1-D)
    for field, plain in served[RIGHT].items():
        assert abs(served[SLEEPS_IN_HIDDEN][field] - plain) < SLEEP * 1000, (field, served)


def test_it_records_the_learners_mistakes_as_verdicts(learner: User, drill: Drill) -> None:
    wrong, crash = queued(learner, drill, WRONG), queued(learner, drill, CRASH)
    assert grade(wrong).status == Status.WRONG_ANSWER
    assert grade(crash).status == Status.RUNTIME_ERROR
    crash.refresh_from_db()
    assert crash.status == Status.RUNTIME_ERROR and "undefined_name" in crash.verdict["message"]


def test_it_grades_only_the_examples_for_run_examples(learner: User, drill: Drill) -> None:
    sub = queued(learner, drill, kind=Submission.Kind.EXAMPLES)
    grade(sub)
    sub.refresh_from_db()
    assert (sub.status, sub.verdict["total"], sub.verdict["hidden_total"]) == (Status.ACCEPTED, 1, 0)


def test_it_ignores_a_duplicate_message_for_a_finished_submission(learner: User, drill: Drill) -> None:
    sub = queued(learner, drill)
    grade(sub)
    sub.refresh_from_db()
    finished_at = sub.finished_at
    assert grade(sub) == Outcome("final")
    sub.refresh_from_db()
    assert (sub.finished_at, sub.attempts) == (finished_at, 1)


def test_it_defers_while_a_live_grader_holds_the_claim(learner: User, drill: Drill) -> None:
    sub = queued(learner, drill)
    claim = claimed(sub)
    try:
        outcome = grade(sub)
    finally:
        jobs.release_claim(claim.token)
    assert outcome.status == "busy" and outcome.retry_in is not None and outcome.retry_in > 60
    sub.refresh_from_db()
    assert (sub.status, sub.claim_token, sub.attempts) == (Status.RUNNING, claim.token, 1)


def test_it_reclaims_a_row_whose_grader_process_died(learner: User, drill: Drill) -> None:
    sub = queued(learner, drill)
    host = claims._process_identity(0).split(":")[0]
    token = f"{host}:{dead_pid()}:12345:abcd"
    Submission.objects.filter(pk=sub.pk).update(
        status=Status.RUNNING, claim_token=token, claimed_at=timezone.now(), attempts=1
    )
    assert grade(sub) == Outcome("accepted")
    sub.refresh_from_db()
    assert (sub.status, sub.attempts) == (Status.ACCEPTED, 2)


def test_it_waits_for_a_claim_from_another_host_until_it_is_stale(learner: User, drill: Drill) -> None:
    sub = queued(learner, drill)
    Submission.objects.filter(pk=sub.pk).update(
        status=Status.RUNNING, claim_token="elsewhere:1:1:x", claimed_at=timezone.now(), attempts=1
    )
    assert grade(sub).status == "busy"
    Submission.objects.filter(pk=sub.pk).update(claimed_at=timezone.now() - timedelta(minutes=10))
    assert grade(sub) == Outcome("accepted")


def test_it_retries_errors_of_ours_that_differ_then_records_internal_error(
    learner: User, drill: Drill, caplog: pytest.LogCaptureFixture
) -> None:
    sub, runner = queued(learner, drill, kind=Submission.Kind.EXAMPLES), FlakyRunner()  # one run per claim
    with caplog.at_level(logging.ERROR, logger="jobs.lifecycle"):
        first = grade(sub, runner)
        assert first.status == "retry" and first.retry_in is not None
        sub.refresh_from_db()
        assert (sub.status, sub.claim_token, sub.attempts) == (Status.QUEUED, "", 1)
        assert sub.failure.startswith("BrokenPipeError:")
        outcomes = [grade(sub, runner) for _ in range(2)]
    assert outcomes == [Outcome("retry", retry_in=4.0), Outcome(Status.INTERNAL_ERROR)]
    sub.refresh_from_db()
    assert (sub.status, sub.attempts) == (Status.INTERNAL_ERROR, 3)
    reference = caplog.records[-1].getMessage().split("reference ")[1][:8]
    assert sub.verdict["message"] == jobs.failure_message(reference)
    assert "KeyError" in caplog.text and "KeyError" not in sub.verdict["message"]


def test_a_job_that_fails_the_same_way_twice_is_the_learners_internal_error_with_a_reference(
    learner: User, drill: Drill, caplog: pytest.LogCaptureFixture
) -> None:
    """Never a retry loop, never a traceback on the learner's page: the traceback is in the log, under the
    reference the verdict names."""
    sub, runner = queued(learner, drill, PARENT_CRASH), CrashingRunner()
    with caplog.at_level(logging.ERROR, logger="jobs.lifecycle"):
        assert grade(sub, runner).status == "retry"
        assert grade(sub, runner) == Outcome(Status.INTERNAL_ERROR)
    sub.refresh_from_db()
    assert (sub.status, sub.attempts) == (Status.INTERNAL_ERROR, 2)
    message = sub.verdict["message"]
    reference = message.split("(reference ")[1][:8]
    assert len(reference) == 8 and int(reference, 16) >= 0
    assert "Traceback" not in message and "RecursionError" not in message and "test_jobs" not in message
    logged = [r for r in caplog.records if f"reference {reference}" in r.getMessage()]
    assert len(logged) == 1 and logged[0].exc_info is not None
    assert logged[0].exc_info[0] is RecursionError and "in parse" in caplog.text  # the traceback, server-side
    assert grade(queued(learner, drill), runner) == Outcome("accepted")  # other code: the worker grades on


def test_the_task_ends_a_job_that_fails_the_same_way_twice_without_a_retry_loop(learner: User, drill: Drill) -> None:
    """Through the Celery task (eager: a retry runs at once): two runs, then the verdict."""
    from jobs.tasks import run_job

    sub, runner = queued(learner, drill, PARENT_CRASH), CrashingRunner()
    with (
        mock.patch("jobs.tasks.get_pool", return_value=runner),
        mock.patch.object(runner, "parse", wraps=runner.parse) as parse,
    ):
        result = run_job.apply(args=["submission", sub.pk])
    assert result.get() == Status.INTERNAL_ERROR and parse.call_count == 2
    sub.refresh_from_db()
    assert (sub.status, sub.attempts) == (Status.INTERNAL_ERROR, 2) and "reference" in sub.verdict["message"]


def test_it_gives_up_on_a_submission_that_keeps_killing_its_grader(learner: User, drill: Drill) -> None:
    sub = queued(learner, drill)
    Submission.objects.filter(pk=sub.pk).update(
        status=Status.RUNNING, claim_token="elsewhere:1:1:x", claimed_at=timezone.now() - timedelta(hours=1), attempts=3
    )
    assert grade(sub).status == "exhausted"
    sub.refresh_from_db()
    assert sub.status == Status.INTERNAL_ERROR and "3 attempts" in sub.verdict["message"]


def test_it_drops_the_verdict_of_a_grader_that_lost_its_claim(learner: User, drill: Drill) -> None:
    sub = queued(learner, drill)
    claim = claimed(sub)
    Submission.objects.filter(pk=sub.pk).update(claim_token="someone-else:1:1:x")
    finished = jobs.Finished(Status.ACCEPTED, {"verdict": {"status": "accepted", "tests": []}})
    assert not jobs.finish(SUBMISSIONS, claim.job, claim.token, finished)
    sub.refresh_from_db()
    assert sub.status == Status.RUNNING


def test_it_records_a_failed_task_as_internal_error(
    learner: User, drill: Drill, caplog: pytest.LogCaptureFixture
) -> None:
    sub = queued(learner, drill)
    with caplog.at_level(logging.ERROR, logger="jobs.lifecycle"):
        assert jobs.fail(SUBMISSIONS, sub.pk, "the task failed: TimeLimitExceeded: hard time limit")
        assert not jobs.fail(SUBMISSIONS, sub.pk, "again")
    sub.refresh_from_db()
    reference = sub.verdict["message"].split("(reference ")[1][:8]
    assert (sub.status, sub.verdict["message"]) == (Status.INTERNAL_ERROR, jobs.failure_message(reference))
    assert f"reference {reference}): the task failed: TimeLimitExceeded" in caplog.text


def test_it_resends_only_stuck_submissions(learner: User, drill: Drill) -> None:
    from jobs.tasks import reap

    old = timezone.now() - timedelta(hours=1)
    lost_message = queued(learner, drill)
    Submission.objects.filter(pk=lost_message.pk).update(queued_at=old)
    dead_claim = queued(learner, drill)
    Submission.objects.filter(pk=dead_claim.pk).update(status=Status.RUNNING, claim_token="h:1:1:x", claimed_at=old)
    queued(learner, drill)  # fresh: its message is still on its way
    with published_tasks() as sent:
        assert reap.apply().get() == 2
    assert sorted(sent, key=str) == sorted(
        (Published("jobs.tasks.run_job", ["submission", s.pk], {}, "grade_cpu") for s in (lost_message, dead_claim)),
        key=str,
    )


def test_it_resends_what_a_killed_worker_took_as_soon_as_a_worker_starts(learner: User, drill: Drill) -> None:
    """A fresh queued row (its message may have died with the worker) and a fresh claim of a dead process."""
    from jobs.tasks import reap

    host = claims._process_identity(0).split(":")[0]
    just_queued = queued(learner, drill)
    dead_claim = queued(learner, drill)
    Submission.objects.filter(pk=dead_claim.pk).update(
        status=Status.RUNNING, claim_token=f"{host}:{dead_pid()}:12345:abcd", claimed_at=timezone.now()
    )
    live_claim = queued(learner, drill)
    claim = claimed(live_claim)  # held by this live process: not lost
    try:
        with published_tasks() as sent:
            assert reap.apply().get() == 1  # on the schedule: only the dead claim; the queued one is too young
            assert reap.apply(kwargs={"startup": True}).get() == 2
    finally:
        jobs.release_claim(claim.token)
    assert sent[0].args[1] == dead_claim.pk
    assert sorted(message.args[1] for message in sent[1:]) == sorted([just_queued.pk, dead_claim.pk])


def test_it_grades_through_the_task_wrapper(learner: User, drill: Drill) -> None:
    from jobs.tasks import run_job

    sub = queued(learner, drill, WRONG)
    with mock.patch("jobs.tasks.get_pool", return_value=LocalRunner()):
        result = run_job.apply(args=["submission", sub.pk])
    assert result.get() == Status.WRONG_ANSWER
    sub.refresh_from_db()
    assert sub.status == Status.WRONG_ANSWER


def test_it_marks_the_learner_day_of_an_accepted_verdict_once(learner: User, drill: Drill) -> None:
    """In the verdict's transaction (no on-commit hook); a duplicate message marks nothing more."""
    sub = queued(learner, drill)
    grade(sub)
    assert list(TouchedDay.objects.values_list("user_id", flat=True)) == [learner.pk]
    TouchedDay.objects.all().delete()  # as beat's tick would
    grade(sub)
    assert not TouchedDay.objects.exists()
    rejected = queued(learner, drill, WRONG)
    grade(rejected)
    assert not TouchedDay.objects.exists()  # a wrong answer earns no XP: its day is not marked
    practice = queued(learner, drill)  # the card is rated already: no rating now, but drill XP all the same
    grade(practice)
    assert list(TouchedDay.objects.values_list("user_id", flat=True)) == [learner.pk]


def test_it_takes_over_its_own_claim_after_a_database_error(learner: User, drill: Drill) -> None:
    from django.db import OperationalError

    sub = queued(learner, drill)
    with (
        mock.patch("jobs.lifecycle._finish", side_effect=OperationalError("database is locked")),
        pytest.raises(OperationalError),
    ):
        grade(sub)  # the task's autoretry would send it again
    sub.refresh_from_db()
    assert sub.status == Status.RUNNING
    assert grade(sub) == Outcome("accepted")  # this process's dead claim: no wait for staleness
    sub.refresh_from_db()
    assert (sub.status, sub.attempts) == (Status.ACCEPTED, 2)


def test_it_makes_reference_outputs_for_a_batch_of_fresh_seeds_at_once(learner: User, drill: Drill) -> None:
    """Every attempt has a seed of its own; the references for four seeds come from one run of the reference."""
    from graders.drills.grading import SeedReservoir
    from graders.drills.grading import grade as grade_code

    runner = LocalRunner()
    subs = [queued(learner, drill, HIDDEN_WRONG) for _ in range(5)]
    grade_code(drill.spec, RIGHT, seed=0, runner=runner, visible_only=True)  # the examples' reference, cached
    with (
        mock.patch("graders.drills.grading.DEFAULT_RESERVOIR", SeedReservoir(batch=4, background=False)),
        mock.patch.object(runner, "run", wraps=runner.run) as run,
    ):
        for sub in subs:
            grade(sub, runner)
    assert run.call_count == 5 + 2  # the five attempts, and the references of 4 + 4 seeds in two runs
    assert len({sub.cases_seed for sub in Submission.objects.all()}) == 5


def test_it_never_stores_an_accepted_verdict_without_its_rating(learner: User, drill: Drill) -> None:
    """The rating runs in the verdict's transaction: if it fails, the verdict is not recorded either."""
    from cards.models import ReviewLog

    sub = queued(learner, drill)
    with (
        mock.patch("graders.rating.reviews.rate_accepted", side_effect=RuntimeError("rating broke")),
        pytest.raises(RuntimeError),
    ):
        grade(sub)
    sub.refresh_from_db()
    assert sub.status == Status.RUNNING and sub.verdict is None and not ReviewLog.objects.exists()
    assert jobs.fail(SUBMISSIONS, sub.pk, "the task failed: RuntimeError: rating broke")  # the task's on_failure
    sub.refresh_from_db()
    assert sub.status == Status.INTERNAL_ERROR


def test_it_rates_the_drill_card_in_the_same_transaction_as_the_verdict(learner: User, drill: Drill) -> None:
    from cards.models import CardState, ReviewLog

    sub = queued(learner, drill)
    assert grade(sub) == Outcome("accepted")
    log = ReviewLog.objects.get(card=drill.card, user=learner)
    assert (log.quality, log.source) == (5, "grader")
    assert CardState.objects.get(card=drill.card, user=learner).repetitions == 1


def test_it_claims_a_queued_row_in_one_statement_that_returns_it_with_its_kept_drill(
    learner: User, drill: Drill, django_assert_num_queries: Any
) -> None:
    sub = queued(learner, drill)
    claimed(queued(learner, drill))  # the worker now keeps this drill version
    now = timezone.now()
    with django_assert_num_queries(2):  # the claim returning the row, the drill's version
        claim = jobs.claim(SUBMISSIONS, sub.pk, now)
    job = claim.job
    assert isinstance(job, Submission)
    assert (job.pk, job.status, job.attempts, job.claim_token) == (sub.pk, Status.RUNNING, 1, claim.token)
    assert (job.claimed_at, job.queued_at) == (now, sub.queued_at)  # aware datetimes, as the ORM reads them
    assert (job.code, job.seed, job.uuid, job.verdict) == (sub.code, sub.seed, sub.uuid, None)
    assert job.drill.spec == drill.spec
    sub.refresh_from_db()
    assert (sub.status, sub.claim_token, sub.attempts) == (Status.RUNNING, claim.token, 1)


def test_it_grades_against_the_stored_drill_once_the_drill_has_moved_on(learner: User, drill: Drill) -> None:
    first, second = queued(learner, drill), queued(learner, drill, code=RIGHT)
    assert grade(first) == Outcome("accepted")  # this worker now keeps the drill's first version
    Drill.objects.filter(pk=drill.pk).update(
        definition=drill.definition.replace("return x + 1", "return x + 2"), version="v2"
    )
    assert grade(second) == Outcome("wrong_answer")  # graded against v2, not the v1 row this worker kept
    second.refresh_from_db()
    assert second.drill_version == "v2"


def test_each_attempt_gets_hidden_cases_of_its_own_seed_and_keeps_it(learner: User, drill: Drill) -> None:
    """Attempts of one review share its seed (the grouping) but never their hidden cases (issue 24)."""
    from graders.drills.grading import ReferenceCache
    from graders.drills.grading import grade as grade_code

    first, second = queued(learner, drill, HIDDEN_WRONG), queued(learner, drill, HIDDEN_WRONG)
    assert first.seed == second.seed and first.cases_seed is None
    grade(first), grade(second)
    first.refresh_from_db(), second.refresh_from_db()
    assert None not in (first.cases_seed, second.cases_seed) and first.cases_seed != second.cases_seed
    assert first.verdict["seed"] == first.cases_seed and first.status == Status.WRONG_ANSWER
    again = grade_code(drill.spec, HIDDEN_WRONG, seed=first.cases_seed, runner=LocalRunner(), cache=ReferenceCache())
    assert again["tests"] == first.verdict["tests"]  # the recorded seed reproduces the verdict
    failed_example = queued(learner, drill, WRONG)
    grade(failed_example)
    failed_example.refresh_from_db()  # an example failed: no hidden case was sent, so no seed was spent
    assert failed_example.cases_seed is None and failed_example.verdict["seed"] is None
    example = queued(learner, drill, WRONG, Submission.Kind.EXAMPLES)
    grade(example)
    example.refresh_from_db()
    assert example.cases_seed is None  # an example run has no hidden cases


def test_one_process_has_one_pool_and_refuses_a_second_device() -> None:
    from graders import warm_pool

    class FakePool:  # the real one forks a fork server; this test is about the module's bookkeeping
        def __init__(self, size: int | None, device: str) -> None:
            self.size, self.device, self.requested_device = size or 1, device, device

        def close(self) -> None:
            pass

    with mock.patch("graders.sandbox.SandboxPool", FakePool), mock.patch.object(warm_pool, "_pool", None):
        pool = warm_pool.get_pool("cpu")
        assert warm_pool.get_pool() is pool and warm_pool.get_pool("cpu") is pool
        with pytest.raises(ValueError, match="cpu pool, not a cuda one"):
            warm_pool.get_pool("cuda")
