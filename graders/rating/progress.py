"""A learner's standing on each drill (new, due, solved on first try, solved, attempted, given up).

The one definition the drill hub and the deck's drill rows read. ``drill_status`` is pure: it takes
the facts (``DrillFacts``) that ``learner_facts`` gathers in three aggregate queries, whatever the
number of drills or submissions, and the learner's day.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Max, Min, Q, QuerySet
from django.utils.translation import gettext_lazy as _

from cards.models import CardState
from graders.models import DrillReview, Submission
from jobs.status import VERDICTS, Status


class DrillStatus(StrEnum):
    NEW = "new"
    DUE = "due"
    SOLVED_FIRST_TRY = "solved_first_try"
    SOLVED = "solved"
    ATTEMPTED = "attempted"
    GAVE_UP = "gave_up"

    @property
    def label(self) -> str:
        return str(STATUS_LABELS[self])


STATUS_LABELS = {
    DrillStatus.NEW: _("New"),
    DrillStatus.DUE: _("Due"),
    DrillStatus.SOLVED_FIRST_TRY: _("Solved on first try"),
    DrillStatus.SOLVED: _("Solved"),
    DrillStatus.ATTEMPTED: _("Attempted"),
    DrillStatus.GAVE_UP: _("Given up"),
}

# Best first: an accepted verdict beats a wrong answer, which says more than a crash or a rejection.
VERDICT_RANK = {status: rank for rank, status in enumerate(VERDICTS) if status != Status.INTERNAL_ERROR}


@dataclass(frozen=True)
class DrillFacts:
    """What one learner's rows say about one drill (attempts are ``submit`` submissions only)."""

    attempts: int = 0
    accepted: bool = False
    first_attempt_accepted: bool = False
    best_verdict: Status | None = None
    gave_up_last: bool = False  # the latest finished review of the drill ended in giving up
    due: date | None = None  # the card's due day, once it has been rated at least once
    suspended: bool = False


def drill_status(facts: DrillFacts, today: date) -> DrillStatus:
    """Due comes first (it is what to do today); then what the learner's attempts achieved.

    - due: the drill card was rated before and its due day has come (it is in today's review);
    - solved on first try: the first graded attempt was accepted;
    - solved: some attempt was accepted, not the first;
    - given up: never accepted, and the latest finished review ended by giving up;
    - attempted: graded attempts, none accepted, not given up;
    - new: no graded attempt and never rated.
    """
    if facts.due is not None and facts.due <= today and not facts.suspended:
        return DrillStatus.DUE
    if facts.accepted:
        return DrillStatus.SOLVED_FIRST_TRY if facts.first_attempt_accepted else DrillStatus.SOLVED
    if facts.gave_up_last:
        return DrillStatus.GAVE_UP
    if facts.attempts:
        return DrillStatus.ATTEMPTED
    return DrillStatus.NEW


@dataclass
class _Tally:
    attempts: int = 0
    first_at: datetime | None = None
    accepted_first_at: datetime | None = None
    best: Status | None = None


def attempts(user: AbstractBaseUser | int) -> QuerySet[Submission]:
    """A learner's attempts, as the drill page, the hub and the team boards all count them.

    ``submit`` submissions only ("Run examples" is practice), pending ones included (a slow answer
    sent first is still the first try), internal errors left out (ours, never the learner's).
    They are ordered by ``queued_at``, when the learner sent them.
    """
    user_id = user if isinstance(user, int) else user.pk
    submitted = Submission.objects.filter(user_id=user_id, kind=Submission.Kind.SUBMIT)
    return submitted.exclude(status=Status.INTERNAL_ERROR)


def learner_facts(user: AbstractBaseUser) -> dict[int, DrillFacts]:
    """Facts per drill id for every drill the learner touched: three queries, each grouped in the database."""
    tallies: dict[int, _Tally] = {}
    per_status = attempts(user).values("drill_id", "status").annotate(n=Count("id"), first_at=Min("queued_at"))
    for row in per_status.order_by():
        tally = tallies.setdefault(row["drill_id"], _Tally())
        status = Status(row["status"])
        tally.attempts += row["n"]
        if tally.first_at is None or row["first_at"] < tally.first_at:
            tally.first_at = row["first_at"]
        if status == Status.ACCEPTED:
            tally.accepted_first_at = row["first_at"]
        if status in VERDICT_RANK and (tally.best is None or VERDICT_RANK[status] < VERDICT_RANK[tally.best]):
            tally.best = status
    gave_up = _gave_up_last(user)
    states = {
        row["card__drill"]: row
        for row in CardState.objects.filter(user=user, card__drill__isnull=False, last_reviewed_at__isnull=False)
        .values("card__drill", "due", "suspended")
        .order_by()
    }
    facts: dict[int, DrillFacts] = {}
    for drill_id in tallies.keys() | gave_up | states.keys():
        tally = tallies.get(drill_id, _Tally())
        state = states.get(drill_id, {})
        facts[drill_id] = DrillFacts(
            attempts=tally.attempts,
            accepted=tally.accepted_first_at is not None,
            first_attempt_accepted=tally.accepted_first_at is not None and tally.accepted_first_at == tally.first_at,
            best_verdict=tally.best,
            gave_up_last=drill_id in gave_up,
            due=state.get("due"),
            suspended=bool(state.get("suspended")),
        )
    return facts


def _gave_up_last(user: AbstractBaseUser) -> set[int]:
    """Drills whose latest finished review ended in giving up: its finish time is also the latest give-up."""
    finished = DrillReview.objects.filter(user=user, finished_at__isnull=False)
    rows = (
        finished.values("drill_id")
        .annotate(
            last=Max("finished_at"), last_gave_up=Max("finished_at", filter=Q(outcome=DrillReview.Outcome.GAVE_UP))
        )
        .order_by()
    )
    return {row["drill_id"] for row in rows if row["last_gave_up"] is not None and row["last_gave_up"] == row["last"]}
