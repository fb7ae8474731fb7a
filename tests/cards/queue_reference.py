"""The review queue as the SQL it was until cards.queueing replaced it: the reference the tests compare
the kept-in-memory queue with, after every step of a day (tests/cards/test_review_day.py,
tests/cards/test_queueing.py). Slow on purpose: correlated subqueries, nothing kept."""

from __future__ import annotations

from datetime import date

from django.contrib.auth.models import AbstractBaseUser
from django.db import models
from django.db.models import Exists, OuterRef, Q, Subquery

from cards.models import Card, CardState, Profile, ReviewLog, answered_today, has_sibling, sibling_cards
from cards.queueing import QueueSnapshot


class _RowCount(Subquery):
    template = "(SELECT COUNT(*) FROM (%(subquery)s) _rows)"
    output_field = models.IntegerField()


def new_cards(user: AbstractBaseUser, today: date) -> models.QuerySet[Card]:
    """Active cards not seen, suspended or buried, in note order, less the ones a sibling buries today."""
    blocking = CardState.objects.blocking_new(user, today).filter(card=OuterRef("pk"))
    due = due_states(user, today).filter(card=OuterRef("pk"))
    earlier = Q(position__lt=OuterRef("position")) | Q(position=OuterRef("position"), pk__lt=OuterRef("pk"))
    burying = answered_today(user, today) | Exists(due) | (earlier & Q(active=True) & ~Exists(blocking))
    return (
        Card.objects.active()
        .visible_to(user)
        .exclude(Exists(blocking))
        .exclude(has_sibling("", sibling_cards().filter(burying)))
        .order_by("active", "note_id", "position", "pk")
    )


def due(user: AbstractBaseUser, today: date) -> models.QuerySet[CardState]:
    """Due reviews, most overdue first, less the ones a sibling buries (answered today, or due and earlier)."""
    earlier = (
        Q(due__lt=OuterRef(OuterRef("due")))
        | Q(due=OuterRef(OuterRef("due")), last_reviewed_at__lt=OuterRef(OuterRef("last_reviewed_at")))
        | Q(
            due=OuterRef(OuterRef("due")),
            last_reviewed_at=OuterRef(OuterRef("last_reviewed_at")),
            pk__lt=OuterRef(OuterRef("pk")),
        )
    )
    due_earlier = due_states(user, today).filter(earlier, card=OuterRef("pk"))
    burying = answered_today(user, today) | Exists(due_earlier)
    return (
        due_states(user, today)
        .exclude(has_sibling("card__", sibling_cards("card__").filter(burying)))
        .order_by("due", "last_reviewed_at", "pk")
    )


def due_states(user: AbstractBaseUser, today: date) -> models.QuerySet[CardState]:
    return CardState.objects.available(user, today).filter(last_reviewed_at__isnull=False, due__lte=today)


def snapshot(user: AbstractBaseUser, profile: Profile, today: date) -> QueueSnapshot:
    """Every count and queue head as scalar subqueries of one SELECT, as the queue used to read them."""
    due_q = due(user, today)
    repeats = CardState.objects.repeats_for(user, today)
    new = new_cards(user, today)
    logs = ReviewLog.objects.filter(user=user, review_day=today).order_by()
    firsts = logs.filter(is_same_day_repeat=False)
    row = (
        Profile.objects.filter(pk=profile.pk)
        .annotate(
            due_count=_RowCount(due_q.order_by().values("pk")[: profile.reviews_per_day]),
            new_count=_RowCount(new.order_by().values("pk")[: profile.new_cards_per_day]),
            repeat_count=_RowCount(repeats.order_by().values("pk")),
            new_done=_RowCount(firsts.filter(was_new=True).values("pk")),
            reviews_done=_RowCount(firsts.filter(was_new=False).values("pk")),
            reviewed_today=_RowCount(logs.values("pk")),
            next_due=Subquery(due_q.values("pk")[:1]),
            next_new=Subquery(new.values("pk")[:1]),
            next_repeat=Subquery(repeats.values("pk")[:1]),
        )
        .values(
            "due_count",
            "new_count",
            "repeat_count",
            "new_done",
            "reviews_done",
            "reviewed_today",
            "next_due",
            "next_new",
            "next_repeat",
        )
        .get()
    )
    row = {key: value or 0 if key.endswith(("count", "done", "today")) else value for key, value in row.items()}
    due_left = max(0, min(row["due_count"], profile.reviews_per_day - row["reviews_done"]))
    new_left = max(0, min(row["new_count"], profile.new_cards_per_day - row["new_done"]))
    return QueueSnapshot(
        due=due_left,
        new=new_left,
        repeats=row["repeat_count"],
        reviewed_today=row["reviewed_today"],
        next_due=row["next_due"] if due_left else None,
        next_new=row["next_new"] if new_left else None,
        next_repeat=row["next_repeat"],
    )
