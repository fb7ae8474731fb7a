"""Grading a submission as a job (the worker side): run it, record the verdict, rate the drill card.

The lifecycle is ``jobs.lifecycle``'; this kind supplies only how a submission runs and what recording
its verdict means: in the transaction that records an accepted attempt, the drill card is rated
(``graders.rating.reviews.rate_accepted``) and the learner day it lands on is marked for the teams rollup
(``cards.touched``), so neither a page nor a board can see the verdict without the other.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, ClassVar

from cards.models import Profile
from cards.review import Outcome, learner_today
from cards.touched import touch
from fastpath import profiles
from fastpath.grading_drills import grading_drill
from graders.drills.solution_key import solution_key
from graders.kinds import counterexamples
from graders.models import Submission
from graders.rating import reviews
from jobs.lifecycle import Finished, Infrastructure, register
from jobs.status import VERDICTS, Status

logger = logging.getLogger(__name__)


def internal_error_verdict(message: str) -> dict[str, Any]:
    return {"status": Status.INTERNAL_ERROR.value, "message": message, "tests": [], "passed": 0, "total": 0}


class SubmissionKind:
    name: ClassVar[str] = "submission"
    model: ClassVar[type[Submission]] = Submission
    related: ClassVar[tuple[str, ...]] = ("drill",)

    def queue(self, job: Submission) -> str:
        return job.drill.queue

    def load(self, pk: int) -> Submission:
        return Submission.objects.select_related("drill").get(pk=pk)

    def attach(self, job: Submission) -> Submission:
        job.drill = grading_drill(job.drill_id)
        return job

    def run(self, job: Submission, pool: Any, *, worker: str) -> Finished:
        """Grade against the stored drill version; an attempt on hidden cases of a fresh seed (kept on the row,
        so re-grading reproduces it), an example run on the examples alone. Our own failures raise."""
        from graders.drills.grading import ReferenceFailure, grade

        seed = job.cases_seed if job.is_attempt else job.seed
        try:
            verdict = dict(grade(job.drill.spec, job.code, seed=seed, runner=pool, visible_only=not job.is_attempt))
        except ReferenceFailure as exc:
            raise Infrastructure(str(exc)) from exc
        status = verdict.get("status")
        if status == Status.INTERNAL_ERROR:
            raise Infrastructure(str(verdict.get("message") or "internal error"))
        if status not in VERDICTS:
            raise Infrastructure(f"the grader returned the unknown status {status!r}")
        fields = {
            "verdict": verdict,
            # The visible phase's wall time as the runner measured it, never the whole grade's: how long the hidden
            # phase takes is the submission's to choose (a loop on chosen hidden inputs), and served it would say
            # far more than one bit per hidden case (docs/security.md, "Hidden data").
            "grading_ms": round(float(verdict.get("wall_ms") or 0)),
            "worker": worker[:200],
            "device": str(verdict.get("device") or "")[:16],
            "drill_version": job.drill.version,
        }
        if job.is_attempt:
            fields["cases_seed"] = verdict.get("seed")
            if status == Status.ACCEPTED:
                fields["solution_key"] = solution_key(job.code)  # its group among the drill's solutions
        return Finished(Status(status), fields)

    def failed(self, message: str) -> Finished:
        return Finished(Status.INTERNAL_ERROR, {"verdict": internal_error_verdict(message)})

    def on_finish(self, job: Submission, finished: Finished, now: datetime) -> None:
        """An accepted attempt, in the verdict's transaction: rate the card and mark the learner day (drill XP).
        A rating that was recorded marked that day already (``cards.review.rate``), with the same clock. An attempt
        that failed hidden cases only gets its counterexample job, sent after this commits (after the verdict's
        own announcement: ``lifecycle._finish``)."""
        if finished.status == Status.ACCEPTED and job.is_attempt:
            if reviews.rate_accepted(job, now) != Outcome.RECORDED:
                _touch_drill_day(job.user_id, now)
        elif job.is_attempt:
            counterexamples.queue_for(job, finished.fields.get("verdict") or {})


def _touch_drill_day(user_id: int, finished_at: datetime) -> None:
    """The learner day the drill XP lands on (``teams.activity``'s clock: the site's defaults without a profile)."""
    profile = profiles.BY_USER.first(user_id=user_id) or Profile(user_id=user_id)
    touch(user_id, learner_today(profile, finished_at))


SUBMISSIONS = register(SubmissionKind())
