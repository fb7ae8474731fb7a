"""Card states and review logs for the stats and browse tests (users, notes, cards: tests.cards.factories).

Every field a test's expected numbers depend on is explicit at the call site; the
rest gets a plain default, so a test reads as the data it is about.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from cards.models import Card, CardState, ReviewLog


def make_state(user: AbstractBaseUser, card: Card, *, due: date, seen: bool = True, **fields: Any) -> CardState:
    """A state; ``seen`` sets last_reviewed_at, which is what separates a learnt card from a new one."""
    values: dict[str, Any] = {"user": user, "card": card, "due": due, "interval": 1, "repetitions": 1}
    if seen:
        values["last_reviewed_at"] = datetime.combine(due - timedelta(days=1), datetime.min.time(), tzinfo=UTC)
        values["last_review_day"] = due - timedelta(days=1)
    values.update(fields)
    return CardState.objects.create(**values)


def make_log(
    user: AbstractBaseUser,
    card: Card,
    *,
    reviewed_at: datetime,
    review_day: date,
    quality: int = 4,
    interval_before: int = 1,
    was_new: bool = False,
    same_day: bool = False,
    **fields: Any,
) -> ReviewLog:
    values: dict[str, Any] = {
        "user": user,
        "card": card,
        "quality": quality,
        "reviewed_at": reviewed_at,
        "review_day": review_day,
        "was_new": was_new,
        "is_same_day_repeat": same_day,
        "easiness_before": Decimal("2.50"),
        "interval_before": interval_before,
        "repetitions_before": 0 if was_new else 2,
        "due_before": None if was_new else review_day,
        "easiness_after": Decimal("2.50"),
        "interval_after": max(1, interval_before * 2),
        "repetitions_after": 3,
        "due_after": review_day + timedelta(days=max(1, interval_before * 2)),
        "duration_ms": 4200,
    }
    values.update(fields)
    return ReviewLog.objects.create(**values)
