"""The one way a submission is made, for the drill page and the API alike (the web side of grading), called
through ``graders.attempts.actions.submit``.

``submit`` does, in order: 1. the code's size and content; 2. the learner's rate limit; 3. the seed of
the learner's current review of the drill (so a drill solved through the API rates its card exactly as
on the page); 4. the ``queued`` row, sent to its queue once the transaction commits. A refusal writes
nothing. Steps 2 to 4 run in one transaction that first locks the learner (``lock_learner``): a second
submit of the same learner waits there and then counts the first one's row, so concurrent submits cannot
all pass a count that none of them has added to yet.

Why the rate limit counts rows in the database rather than a cache: every web process must agree (the
default cache is per process) and the rows are written anyway. Both kinds count: "Run examples" also
costs a worker's time.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from fastpath.submission_window import limit_th_newest
from graders.kinds.verdicts import SUBMISSIONS
from graders.models import Drill, DrillRun, Submission
from graders.rating import reviews
from jobs import notify, tasks


@dataclass(frozen=True)
class RateLimit:
    limit: int
    window_seconds: int

    @classmethod
    def from_settings(cls) -> RateLimit:
        return cls(limit=settings.GRADER_RATE_LIMIT, window_seconds=settings.GRADER_RATE_WINDOW)


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    retry_after: int  # seconds until the oldest counted submission leaves the window (0 when allowed)

    def message(self, rule: RateLimit) -> str:
        return _("Too many submissions: at most %(limit)d every %(window)d seconds. Try again in %(retry)d s.") % {
            "limit": rule.limit,
            "window": rule.window_seconds,
            "retry": self.retry_after,
        }


def check_rate(
    user_id: int, now: datetime, rule: RateLimit | None = None, model: type[Submission | DrillRun] = Submission
) -> RateDecision:
    """Allowed while fewer than ``limit`` rows of ``model`` (submissions; "Run"s have their own limit) were
    queued in the last ``window_seconds``.

    Reads one row whatever the limit: the ``limit``-th newest in the window. If there is one, the window
    is full, and it is the oldest that counts, so its age says when a place frees up.
    """
    rule = rule or RateLimit.from_settings()
    if rule.limit <= 0:
        return RateDecision(False, rule.window_seconds)
    since = now - timedelta(seconds=rule.window_seconds)
    oldest = limit_th_newest(model, rule.limit).first(user_id=user_id, since=since)
    if oldest is None:
        return RateDecision(True, 0)
    wait = (oldest + timedelta(seconds=rule.window_seconds) - now).total_seconds()
    return RateDecision(False, max(1, int(wait) + 1))


def code_limit(drill: Drill) -> int:
    """The size cap in UTF-8 bytes (what the sandbox measures): the site's, or the drill's own if smaller."""
    return min(drill.spec.constraints.max_source_bytes, settings.GRADER_MAX_CODE_BYTES)


def code_problem(code: str, limit: int) -> str | None:
    """Why this code cannot be submitted, in words a learner can act on; None when it can."""
    size = len(code.encode("utf-8", "surrogatepass"))
    if size > limit:
        return _("Your code is %(size)s bytes; the limit for this drill is %(limit)s bytes.") % {
            "size": f"{size:,}",
            "limit": f"{limit:,}",
        }
    if "\x00" in code:
        return _("Your code contains a NUL character; remove it and submit again.")
    if not code.strip():
        return _("Write some code first.")
    return None


def lock_learner(user_id: int) -> None:
    """Hold the learner until this transaction ends, so their submits count and insert one at a time.

    PostgreSQL: the learner's user row ``FOR UPDATE``; a concurrent submit waits for this commit, then its
    count (a new snapshot under READ COMMITTED) sees this submission. SQLite has no row locks and serialises
    all writers anyway, but a transaction that reads first and writes after another writer's commit fails
    ("database is locked") instead of waiting: a write as the first statement takes the write lock at once.
    """
    users = get_user_model().objects.filter(pk=user_id)
    if connection.vendor == "sqlite":
        users.update(id=F("id"))
    else:
        list(users.select_for_update().values_list("pk", flat=True))


@dataclass(frozen=True)
class Refused:
    """Nothing was stored: HTTP ``status`` (400 or 429), a message, and when to retry (429 only)."""

    status: int
    message: str
    retry_after: int = 0
    field: str = "code"  # the request field a 400 is about (a run's may be its arguments)


def submit(
    user: AbstractBaseUser, drill: Drill, code: str, kind: str = Submission.Kind.SUBMIT, now: datetime | None = None
) -> Submission | Refused:
    """Store a ``queued`` submission and send it to its queue after commit, or refuse (steps above)."""
    now = now or timezone.now()
    problem = code_problem(code, code_limit(drill))
    if problem is not None:
        return Refused(400, problem)
    rule = RateLimit.from_settings()
    with transaction.atomic():
        lock_learner(user.pk)
        decision = check_rate(user.pk, now, rule)
        if not decision.allowed:
            return Refused(429, decision.message(rule), decision.retry_after)
        session = reviews.current_review(user, drill, now)
        submission = Submission.objects.create(
            user=user,
            drill=drill,
            code=code,
            kind=kind,
            seed=session.review.seed,
            drill_version=drill.version,
            queued_at=now,
        )
        tasks.enqueue_on_commit(submission)
    return submission


def wait_for_verdict(submission: Submission) -> Submission:
    """The submission once its verdict is in within the submit's bounded wait, else as it is
    (``jobs.notify.wait_for_final``)."""
    return notify.wait_for_final(submission, SUBMISSIONS.name, submission.drill.queue)
    if notify.wait(SUBMISSIONS.name, submission.pk):
        submission.refresh_from_db()
    return submission
