""" "Run on your own input", the web side: the one way a run is asked for, by the drill page and the API alike.

``request_run`` does, in order: 1. the code's size and content (as a submission's); 2. the arguments, checked
against the case language (``graders.drills.schema.call_arguments``: the vocabulary of drill case files) and
never evaluated here: a worker's runner evaluates them; 3. the learner's own run rate limit
(``GRADER_RUN_RATE_LIMIT`` per ``GRADER_RUN_RATE_WINDOW``, counted from the runs table apart from submissions,
under the same learner lock); 4. the ``queued`` row, sent to the drill's grading queue after commit. A refusal
writes nothing. A run never touches the learner's review, their card or a hidden case.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from graders.attempts.submissions import RateLimit, Refused, check_rate, code_limit, code_problem, lock_learner
from graders.drills.schema import ARGUMENTS_CHARS, ExpressionError, call_arguments
from graders.kinds.runs import RUNS
from graders.models import Drill, DrillRun
from jobs import notify, tasks


def run_rate_limit() -> RateLimit:
    return RateLimit(limit=settings.GRADER_RUN_RATE_LIMIT, window_seconds=settings.GRADER_RUN_RATE_WINDOW)


@dataclass(frozen=True)
class Arguments:
    """The checked argument expressions, or why they cannot run (a sentence for the learner)."""

    expressions: tuple[str, ...] = ()
    problem: str | None = None


def check_arguments(text: str) -> Arguments:
    """Step 2: the arguments as the case language allows them, or a problem naming the wrong one."""
    if len(text) > ARGUMENTS_CHARS:
        return Arguments(problem=_("The arguments are %(size)d characters; at most %(limit)d.") % {
            "size": len(text),
            "limit": ARGUMENTS_CHARS,
        })  # fmt: skip
    try:
        return Arguments(call_arguments(text))
    except ExpressionError as exc:
        return Arguments(problem=_("These arguments cannot run: %(why)s.") % {"why": exc})


def request_run(
    user: AbstractBaseUser, drill: Drill, code: str, arguments: str, now: datetime | None = None
) -> DrillRun | Refused:
    """Store a ``queued`` run and send it to its queue after commit, or refuse (steps above)."""
    now = now or timezone.now()
    problem = code_problem(code, code_limit(drill))
    checked = check_arguments(arguments)
    if problem is not None:
        return Refused(400, problem)
    if checked.problem is not None:
        return Refused(400, checked.problem, field="arguments")
    rule = run_rate_limit()
    with transaction.atomic():
        lock_learner(user.pk)
        decision = check_rate(user.pk, now, rule, model=DrillRun)
        if not decision.allowed:
            message = _("Too many runs: at most %(limit)d every %(window)d seconds. Try again in %(retry)d s.") % {
                "limit": rule.limit,
                "window": rule.window_seconds,
                "retry": decision.retry_after,
            }
            return Refused(429, message, decision.retry_after)
        run = DrillRun.objects.create(
            user=user,
            drill=drill,
            drill_version=drill.version,
            code=code,
            arguments=list(checked.expressions),
            queued_at=now,
        )
        tasks.enqueue_on_commit(run)
    return run


def wait_for_run(run: DrillRun) -> DrillRun:
    """The run once it finished within the submit's bounded wait, else as it is (``jobs.notify.wait_for_final``)."""
    return notify.wait_for_final(run, RUNS.name, run.drill.queue)
    if notify.wait(RUNS.name, run.pk):
        run.refresh_from_db()
    return run
