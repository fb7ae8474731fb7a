"""A counterexample as a job (the worker side): an input the learner's code gets wrong, after a hidden case failed.

``queue_for`` is called in the transaction that records a verdict (``graders.kinds.verdicts``): an attempt whose
examples all passed and whose hidden cases did not gets a ``Counterexample`` row, sent after that transaction
commits, behind the verdict's own announcement, so the verdict never waits for it; it goes to a queue of its own
(a cuda drill's: the GPU queue), so other learners' verdicts never wait for it either. A worker runs it here
(``graders.drills.counterexample.find``, bounded by ``GRADER_COUNTEREXAMPLE_MS``): fresh seeds, never the
submission's hidden one, whose inputs are made only to be left out. Finishing records nothing else: no
verdict changes, no rating. The lifecycle is ``jobs.lifecycle``'.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from django.conf import settings

from fastpath.grading_drills import grading_drill
from graders.kinds.examples import format_value
from graders.models import Counterexample, Submission
from jobs import tasks
from jobs.lifecycle import Finished, Infrastructure, register
from jobs.status import Status


def wanted(verdict: dict[str, Any] | None) -> bool:
    """A verdict that failed hidden cases only: every example passed, some hidden case did not, and its hidden
    seed is known (the cases were sent)."""
    if not verdict or verdict.get("status") == Status.ACCEPTED or verdict.get("seed") is None:
        return False
    tests = verdict.get("tests") or []
    return all(t.get("passed") for t in tests if not t.get("hidden")) and any(
        not t.get("passed") for t in tests if t.get("hidden")
    )


def queue_for(submission: Submission, verdict: dict[str, Any]) -> Counterexample | None:
    """Inside the verdict's transaction: the row, sent after commit, for an attempt that failed hidden cases only."""
    if not submission.is_attempt or not wanted(verdict) or settings.GRADER_COUNTEREXAMPLE_MS <= 0:
        return None
    row = Counterexample.objects.create(submission=submission)
    tasks.enqueue_on_commit(row)
    return row


class CounterexampleKind:
    name: ClassVar[str] = "counterexample"
    model: ClassVar[type[Counterexample]] = Counterexample
    related: ClassVar[tuple[str, ...]] = ("submission__drill",)

    def queue(self, job: Counterexample) -> str:
        """A CPU drill's search goes to its own queue, off the verdicts' (settings.GRADER_QUEUE_COUNTEREXAMPLE says
        why); a cuda drill's stays on the GPU queue, where the device it asks for is."""
        queue = job.submission.drill.queue
        return settings.GRADER_QUEUE_COUNTEREXAMPLE if queue == settings.GRADER_QUEUE_CPU else queue

    def load(self, pk: int) -> Counterexample:
        return Counterexample.objects.select_related("submission__drill").get(pk=pk)

    def attach(self, job: Counterexample) -> Counterexample:
        job.submission = Submission.objects.get(pk=job.submission_id)
        job.submission.drill = grading_drill(job.submission.drill_id)
        return job

    def run(self, job: Counterexample, pool: Any, *, worker: str) -> Finished:
        """The search against the drill version the verdict was graded on; a runner's internal error retries."""
        from graders.drills.counterexample import find
        from graders.drills.own_input import RunFailure

        submission = job.submission
        spec = submission.drill.spec
        if submission.cases_seed is None or spec.version != submission.drill_version:
            # The drill changed since the verdict (or it had no hidden seed): its inputs are not the verdict's.
            return Finished(Status.DONE, {"result": _none("drill_changed")})
        try:
            report = find(
                spec,
                submission.code,
                pool,
                format_value,
                hidden_seed=submission.cases_seed,
                seconds=settings.GRADER_COUNTEREXAMPLE_MS / 1000,
            )
        except RunFailure as exc:
            raise Infrastructure(str(exc)) from exc
        return Finished(Status.DONE, {"result": dict(report)})

    def failed(self, message: str) -> Finished:
        result = {**_none("internal_error"), "internal_error": message[:2000]}
        return Finished(Status.INTERNAL_ERROR, {"result": result})

    def on_finish(self, job: Counterexample, finished: Finished, now: datetime) -> None:
        """Nothing: the verdict and the card's rating stand as they were."""
        return None


def _none(reason: str) -> dict[str, Any]:
    return {"found": False, "arguments": "", "reason": reason, "tried": 0, "shrinks": 0, "search_ms": 0.0}


COUNTEREXAMPLES = register(CounterexampleKind())
