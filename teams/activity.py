"""The daily rollup: ``DailyActivity`` rows derived from ReviewLog and Submission.

Two ways in, one set of rules (``teams.xp``):

* ``refresh_day`` recomputes one learner day after a review or a verdict (the live path).
* ``rebuild_user`` recomputes every day of one learner from the whole history (the repair path).

Both end in the same per-day numbers, which is what lets ``rebuild_boards`` prove the live boards.
The one fact that cannot be replayed exactly is ``next_due`` on past days: the live path reads it
from ``CardState`` (suspended cards left out), the rebuild replays each review's ``due_after``
and leaves out the cards suspended now. Both agree unless a card was suspended after the day.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Min, Q, QuerySet, Subquery
from django.utils import timezone

from cards.models import CardState, Profile, ReviewLog
from graders.models import Status, Submission
from graders.rating import progress

from .models import DailyActivity
from .streaks import DAY_START_HOUR, NO_STREAK, day_bounds, learner_day, streak_before
from .xp import DrillAward, ReviewFact, SubmissionFact, drill_awards, review_totals

DEFAULT_REVIEWS_PER_DAY = 200
User = get_user_model()
REVIEW_FIELDS = (
    "card_id", "review_day", "quality", "interval_before", "is_same_day_repeat", "source", "was_new",
    "card__note__owner_id",
)  # fmt: skip


@dataclass(frozen=True)
class Clock:
    """Where a learner's days start: their zone, day start hour and daily review limit."""

    zone: ZoneInfo
    start_hour: int = DAY_START_HOUR
    reviews_per_day: int = DEFAULT_REVIEWS_PER_DAY
    floor: date | None = None  # cards.Profile.day_floor: the day begun when the zone last moved

    def today(self, now: datetime) -> date:
        """The learner's day now, as ``cards.Profile.day_at`` reckons it: never before the pinned day."""
        day = learner_day(now, self.zone, self.start_hour)
        return max(day, self.floor) if self.floor else day


def clock_for(user_id: int) -> Clock:
    """The learner's clock from their cards Profile, or the site defaults when they have none yet."""
    profile = Profile.objects.filter(user_id=user_id).first()
    if profile is None:
        return Clock(ZoneInfo(settings.TIME_ZONE))
    return Clock(profile.zone, profile.day_start_hour, profile.reviews_per_day, profile.day_floor)


def clock_of(profile: Profile) -> Clock:
    return Clock(profile.zone, profile.day_start_hour, profile.reviews_per_day, profile.day_floor)


def clocks_for(user_ids: Iterable[int]) -> dict[int, Clock]:
    """``clock_for`` for many learners in one query."""
    ids = list(user_ids)
    default = Clock(ZoneInfo(settings.TIME_ZONE))
    clocks = dict.fromkeys(ids, default)
    for profile in Profile.objects.filter(user_id__in=ids):
        clocks[profile.user_id] = Clock(
            profile.zone, profile.day_start_hour, profile.reviews_per_day, profile.day_floor
        )
    return clocks


def _reviews_here(user_id: int) -> QuerySet[ReviewLog]:
    """The learner's reviews on this site: imported history (done elsewhere or earlier) makes no day here."""
    return ReviewLog.objects.filter(user_id=user_id).exclude(source=ReviewLog.Source.IMPORT)


def _review_fact(row: dict[str, object]) -> ReviewFact:
    return ReviewFact(
        card_id=int(row["card_id"]),
        day=row["review_day"],
        quality=int(row["quality"]),
        interval_before=int(row["interval_before"]),
        same_day_repeat=bool(row["is_same_day_repeat"]),
        source=str(row["source"]),
        shared=row["card__note__owner_id"] is None,
    )


def _submission_facts(user_id: int, drill_ids: Iterable[int] | None = None) -> list[SubmissionFact]:
    """A learner's real attempts (internal errors are ours, not an attempt), oldest first."""
    qs = progress.attempts(user_id)  # the one definition of an attempt, shared with the drill hub
    if drill_ids is not None:
        qs = qs.filter(drill_id__in=list(drill_ids))
    rows = qs.values_list("pk", "drill_id", "queued_at", "finished_at", "status")
    return [
        SubmissionFact(drill_id, finished or queued, "submit", status == Status.ACCEPTED, pk, sent_at=queued)
        for pk, drill_id, queued, finished, status in rows
    ]


def _reviews_spent(rows: list[dict[str, object]]) -> int:
    """Reviews that count against the daily review limit: seen cards, own ratings, no repeats."""
    return sum(1 for r in rows if not r["was_new"] and not r["is_same_day_repeat"] and r["source"] == "self")


def _live_next_due(user_id: int) -> date | None:
    """The earliest due day among the learner's seen, unsuspended cards, as it stands now."""
    states = CardState.objects.filter(user_id=user_id, last_reviewed_at__isnull=False, suspended=False)
    return states.filter(card__active=True).aggregate(first=Min("due"))["first"]


def _neighbourhood(user_id: int, day: date) -> tuple[DailyActivity | None, DailyActivity | None, list[DailyActivity]]:
    """In one query: the reviewed day before ``day``, the row of ``day``, and the reviewed days after it."""
    before = DailyActivity.objects.filter(user_id=user_id, reviewed=True, day__lt=day).order_by("-day").values("day")
    rows = DailyActivity.objects.filter(user_id=user_id).filter(
        Q(day=day) | Q(reviewed=True, day__gt=day) | Q(day=Subquery(before[:1]))
    )
    previous = current = None
    later = []
    for row in rows.order_by("day"):
        if row.day < day:
            previous = row
        elif row.day == day:
            current = row
        else:
            later.append(row)
    return previous, current, later


def _save_day(activity: DailyActivity, previous: DailyActivity | None, later: list[DailyActivity]) -> None:
    """Save (or delete, when nothing is left) one day and re-chain the stored streaks after it."""
    empty = not activity.reviewed and activity.drills_solved == 0
    if empty and activity.pk is not None:
        activity.delete()
    chain = later if empty else [activity, *later]
    changed = chain_streaks(previous, chain)
    if not empty:
        activity.save()
    DailyActivity.objects.bulk_update([a for a in changed if a is not activity], STREAK_FIELDS)


def refresh_day(user_id: int, day: date, clock: Clock | None = None) -> DailyActivity | None:
    """After a review, its undo or an accepted verdict: recompute the whole learner day from its sources.

    One computation for both triggers. A review and the grader's verdict on the same drill arrive as two
    tasks that may run at once; when each recomputed only its own columns and saved the whole row, the
    later save put back the other's stale columns (drills solved, drill XP and first tries went missing
    from the board). Now each run reads every source row, which both triggers committed before queueing,
    and runs under a lock on the learner, so whichever saves last saves the complete day.
    """
    clock = clock or clock_for(user_id)
    with transaction.atomic():
        User.objects.select_for_update().filter(pk=user_id).first()
        rows = list(_reviews_here(user_id).filter(review_day=day).values(*REVIEW_FIELDS))
        totals = review_totals(_review_fact(r) for r in rows)
        awards = _day_awards(user_id, day, clock)
        previous, current, later = _neighbourhood(user_id, day)
        activity = current or DailyActivity(user_id=user_id, day=day)
        # Only today's row reads next_due from the card states; a past day keeps what it recorded.
        if rows and (current is None or clock.today(timezone.now()) == day):
            activity.next_due = _live_next_due(user_id)
        activity.reviewed = bool(rows)
        activity.review_xp, activity.reviews = totals.xp, totals.reviews
        activity.mature_reviews, activity.mature_passed = totals.mature_reviews, totals.mature_passed
        activity.limit_reached = _reviews_spent(rows) >= clock.reviews_per_day
        activity.drill_xp = sum(a.xp for a in awards)
        activity.drills_solved, activity.drills_first_try = len(awards), sum(a.first_try for a in awards)
        activity.xp = activity.review_xp + activity.drill_xp
        _save_day(activity, previous, later)
    return activity if activity.pk is not None else None


def _day_awards(user_id: int, day: date, clock: Clock) -> list[DrillAward]:
    """The drills first accepted on this learner day, from the whole history of just those drills."""
    start, end = day_bounds(day, clock.zone, clock.start_hour)
    accepted = Submission.objects.filter(
        user_id=user_id,
        kind=Submission.Kind.SUBMIT,
        status=Status.ACCEPTED,
        finished_at__gte=start,
        finished_at__lt=end,
    ).values_list("drill_id", flat=True)
    facts = _submission_facts(user_id, set(accepted))
    return [a for a in drill_awards(facts) if learner_day(a.at, clock.zone, clock.start_hour) == day]


STREAK_FIELDS = ["streak_before", "longest_before", "freezes_before", "freezes_used_before"]


def chain_streaks(previous: DailyActivity | None, days: Iterable[DailyActivity]) -> list[DailyActivity]:
    """Set each reviewed day's stored streak from the one before it; returns the days that changed."""
    changed = []
    for activity in days:
        if not activity.reviewed:
            continue
        before = streak_before(
            previous.active_day if previous else None, previous.streak_state if previous else NO_STREAK, activity.day
        )
        if before != activity.streak_state:
            activity.set_streak_state(before)
            changed.append(activity)
        previous = activity
    return changed


def restreak_from(user_id: int, day: date) -> None:
    """Recompute the stored streaks from ``day`` on (after rows were written by other means)."""
    previous, current, later = _neighbourhood(user_id, day)
    chain = [current, *later] if current is not None else later
    DailyActivity.objects.bulk_update(chain_streaks(previous, chain), STREAK_FIELDS)


def _replayed_next_due(user_id: int) -> dict[date, date | None]:
    """For each review day, the earliest due day after that day's last review, from ``due_after``."""
    hidden = CardState.objects.filter(user_id=user_id).filter(Q(suspended=True) | Q(card__active=False))
    suspended = set(hidden.values_list("card_id", flat=True))
    due: dict[int, date] = {}
    out: dict[date, date | None] = {}
    logs = _reviews_here(user_id).order_by("reviewed_at", "pk")
    current: date | None = None
    for card_id, day, due_after in logs.values_list("card_id", "review_day", "due_after").iterator():
        if current is not None and day != current:
            out[current] = min(due.values(), default=None)
        current = day
        if card_id not in suspended:
            due[card_id] = due_after
    if current is not None:
        out[current] = min(due.values(), default=None)
    return out


def rebuild_user(user_id: int) -> list[DailyActivity]:
    """Every learner day of one learner, recomputed from the whole history (not saved)."""
    clock = clock_for(user_id)
    by_day: dict[date, list[dict[str, object]]] = defaultdict(list)
    for row in _reviews_here(user_id).values(*REVIEW_FIELDS).iterator():
        by_day[row["review_day"]].append(row)
    awards_by_day: dict[date, list[object]] = defaultdict(list)
    for award in drill_awards(_submission_facts(user_id)):
        awards_by_day[learner_day(award.at, clock.zone, clock.start_hour)].append(award)
    next_due = _replayed_next_due(user_id)
    out = []
    for day in sorted(set(by_day) | set(awards_by_day)):
        rows, awards = by_day.get(day, []), awards_by_day.get(day, [])
        totals = review_totals(_review_fact(r) for r in rows)
        out.append(
            DailyActivity(
                user_id=user_id,
                day=day,
                xp=totals.xp + sum(a.xp for a in awards),
                review_xp=totals.xp,
                drill_xp=sum(a.xp for a in awards),
                reviewed=bool(rows),
                reviews=totals.reviews,
                mature_reviews=totals.mature_reviews,
                mature_passed=totals.mature_passed,
                drills_solved=len(awards),
                drills_first_try=sum(a.first_try for a in awards),
                next_due=next_due.get(day) if rows else None,
                limit_reached=_reviews_spent(rows) >= clock.reviews_per_day,
            )
        )
    chain_streaks(None, out)
    return out


def replace_user_days(user_id: int, days: list[DailyActivity]) -> None:
    """Swap a learner's rollup for a freshly computed one, atomically."""
    with transaction.atomic():
        DailyActivity.objects.filter(user_id=user_id).delete()
        DailyActivity.objects.bulk_create(days, batch_size=1000)
