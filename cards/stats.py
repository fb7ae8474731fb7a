"""The numbers behind the stats and browse pages.

Every function here is a few aggregate queries whose size does not grow with the
number of review logs: the database groups and counts, Python only folds at most a
few hundred grouped rows (one per day, hour, note or easiness value). A learner
with 100k reviews must get the stats page in well under 100 ms.

Days are always the learner's days: ``ReviewLog.review_day`` is stored in the
learner's time zone with their day boundary (04:00 by default) when the review is
recorded, so grouping on it needs no time zone arithmetic here; the caller passes
``today`` from ``cards.review.learner_today``.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypedDict

from django.db import connections
from django.db.models import Case, Count, F, Func, IntegerField, Q, Value, When
from django.db.models.functions import ExtractHour
from django.utils.translation import gettext, pgettext_lazy

from .models import Card, CardState, Note, ReviewLog
from .review import ForecastDay, get_profile, queue_snapshot, streak_days

# A card is mature once its interval before the review is at least 21 days (Anki's convention).
MATURE_INTERVAL = 21
# SM-2 counts q >= 3 as a successful recall; the Hard button is q = 3 (DESIGN.md).
PASS_QUALITY = 3
RETENTION_PERIODS = (7, 30, 90)

# Reviews that measure recall of a scheduled card: not its first sight, not a same-day repeat.
_SCHEDULED = Q(was_new=False, is_same_day_repeat=False)
_PASSED = Q(quality__gte=PASS_QUALITY)
_YOUNG = _SCHEDULED & Q(interval_before__lt=MATURE_INTERVAL)
_MATURE = _SCHEDULED & Q(interval_before__gte=MATURE_INTERVAL)


@dataclass(frozen=True)
class DayActivity:
    """One learner day: all reviews, first sights, and the young/mature recall counts."""

    day: date
    reviews: int = 0
    new: int = 0
    young_total: int = 0
    young_passed: int = 0
    mature_total: int = 0
    mature_passed: int = 0


@dataclass(frozen=True)
class RetentionRow:
    days: int
    young_total: int
    young_passed: int
    mature_total: int
    mature_passed: int

    @property
    def young_rate(self) -> float | None:
        return self.young_passed / self.young_total if self.young_total else None

    @property
    def mature_rate(self) -> float | None:
        return self.mature_passed / self.mature_total if self.mature_total else None


class HourRow(TypedDict):
    hour: int
    reviews: int
    passed: int


class Summary(TypedDict):
    seen: int
    young: int
    mature: int
    suspended: int
    due_today: int
    active_cards: int


class DeckRow(TypedDict):
    note: Note
    total: int
    kinds: list[tuple[str, int]]
    due: int
    new: int
    seen: int


def _not_buried(today: date) -> Q:
    """The burial half of CardStateQuerySet.available, for use inside conditional counts."""
    return Q(buried_until__isnull=True) | Q(buried_until__lte=today)


def daily_counts(user: Any, start: date, end: date) -> dict[date, int]:
    """Reviews per learner day from ``start`` to ``end``, days without reviews left out.

    For the year heatmap and the streak: an index-only scan of reviewlog_user_day_idx,
    several times cheaper than ``daily_activity``'s per-row conditions over a whole year.
    """
    rows = (
        ReviewLog.objects.filter(user=user, review_day__gte=start, review_day__lte=end)
        .values_list("review_day")
        .annotate(n=Count("*"))
        .order_by()
    )
    return dict(rows)


def daily_activity(user: Any, start: date, end: date) -> list[DayActivity]:
    """One row per learner day from ``start`` to ``end`` inclusive, zero-filled.

    One query, grouped on (user, review_day) and served by reviewlog_user_day_idx; the
    reviews-per-day chart and both retention views fold it. Each row costs several
    conditions, so callers keep the window short (90 days) and use ``daily_counts`` for a year.
    """
    rows = (
        ReviewLog.objects.filter(user=user, review_day__gte=start, review_day__lte=end)
        .values("review_day")
        .annotate(
            reviews=Count("id"),
            new=Count("id", filter=Q(was_new=True)),
            young_total=Count("id", filter=_YOUNG),
            young_passed=Count("id", filter=_YOUNG & _PASSED),
            mature_total=Count("id", filter=_MATURE),
            mature_passed=Count("id", filter=_MATURE & _PASSED),
        )
        .order_by()
    )
    by_day = {row.pop("review_day"): row for row in rows}
    span = (end - start).days + 1
    return [DayActivity(day=day, **by_day.get(day, {})) for day in (start + timedelta(days=i) for i in range(span))]


def retention_table(
    activity: Sequence[DayActivity], today: date, periods: Iterable[int] = RETENTION_PERIODS
) -> list[RetentionRow]:
    """True retention of young and mature cards over the last N days, for each N in ``periods``."""
    table = []
    for days in periods:
        first = today - timedelta(days=days - 1)
        window = [a for a in activity if first <= a.day <= today]
        table.append(
            RetentionRow(
                days=days,
                young_total=sum(a.young_total for a in window),
                young_passed=sum(a.young_passed for a in window),
                mature_total=sum(a.mature_total for a in window),
                mature_passed=sum(a.mature_passed for a in window),
            )
        )
    return table


def weekly_retention(activity: Sequence[DayActivity], today: date, weeks: int) -> list[RetentionRow]:
    """Retention per 7-day block ending on ``today``, oldest first, for the retention line chart."""
    rows = []
    for back in range(weeks - 1, -1, -1):
        last = today - timedelta(days=7 * back)
        rows.extend(retention_table([a for a in activity if a.day <= last], last, periods=(7,)))
    return rows


def current_streak(counts: dict[date, int], today: date) -> int:
    """The streak as the dashboard counts it, from the days already loaded for the heatmap."""
    return streak_days([day for day, n in counts.items() if n], today)


def due_forecast(user: Any, today: date, days: int = 30) -> list[ForecastDay]:
    """Reviews falling due on each of the next ``days`` days; overdue cards count for today.

    Served by cardstate_user_due_idx (user, due); grouped rows are at most one per due day.
    """
    end = today + timedelta(days=days - 1)
    rows = (
        CardState.objects.available(user, today)
        .filter(last_reviewed_at__isnull=False, due__lte=end)
        .values("due")
        .annotate(n=Count("id"))
        .order_by()
    )
    counts = dict.fromkeys((today + timedelta(days=i) for i in range(days)), 0)
    for row in rows:
        counts[max(row["due"], today)] += row["n"]
    return [ForecastDay(day=day, count=n) for day, n in counts.items()]


def ease_counts(user: Any) -> dict[float, int]:
    """How many of the learner's seen cards sit at each easiness (EF moves in 0.02 steps, so few groups)."""
    rows = (
        CardState.objects.filter(user=user, card__active=True, last_reviewed_at__isnull=False)
        .values("easiness")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {float(row["easiness"]): row["n"] for row in rows}


def utc_offset_segments(zone: zoneinfo.ZoneInfo, start: datetime, end: datetime) -> list[tuple[datetime | None, int]]:
    """The zone's UTC offset in minutes over [start, end], as ``(until, offset)`` runs; the last ``until`` is None.

    An offset applies to instants before its ``until``. Found by probing day by day and
    bisecting to the exact second of each change (a DST switch), so a year costs about
    365 + 2 x 17 offset look-ups and no time zone database in SQL.
    """

    def offset_at(ts: int) -> int:
        delta = datetime.fromtimestamp(ts, tz=zone).utcoffset()
        return int(delta.total_seconds() // 60) if delta is not None else 0

    segments: list[tuple[datetime | None, int]] = []
    probe, stop = int(start.timestamp()), int(end.timestamp())
    offset = offset_at(probe)
    while probe < stop:
        step = min(probe + 86400, stop)
        if offset_at(step) != offset:
            low, high = probe, step  # offset_at(low) == offset != offset_at(high)
            while high - low > 1:
                middle = (low + high) // 2
                low, high = (middle, high) if offset_at(middle) == offset else (low, middle)
            segments.append((datetime.fromtimestamp(high, tz=UTC), offset))
            offset = offset_at(high)
            step = high
        probe = step
    segments.append((None, offset))
    return segments


class SqliteLocalHour(Func):
    """The local hour of a UTC datetime column on SQLite, given an offset-in-minutes expression.

    Django's ``ExtractHour(tzinfo=...)`` calls a Python function per row on SQLite
    (half a second for 100k reviews). Django stores SQLite datetimes as UTC text
    ``YYYY-MM-DD HH:MM:SS[.ffffff]``, so the UTC hour and minute are fixed-position
    substrings, which SQLite reads in C. PostgreSQL uses ``ExtractHour`` (native
    ``AT TIME ZONE``) instead.
    """

    arity = 2
    output_field = IntegerField()

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        column, column_params = compiler.compile(self.source_expressions[0])
        offset, offset_params = compiler.compile(self.source_expressions[1])
        minute = f"(CAST(substr({column}, 12, 2) AS INTEGER) * 60 + CAST(substr({column}, 15, 2) AS INTEGER))"
        sql = f"(((({minute} + {offset}) %% 1440) + 1440) %% 1440 / 60)"
        return sql, [*column_params, *column_params, *offset_params]


def _local_hour(zone: zoneinfo.ZoneInfo, since: datetime, until: datetime) -> Any:
    if connections[ReviewLog.objects.db].vendor != "sqlite":
        return ExtractHour("reviewed_at", tzinfo=zone)
    segments = utc_offset_segments(zone, since, until)
    whens = [When(reviewed_at__lt=end, then=Value(offset)) for end, offset in segments[:-1]]
    offset = Case(*whens, default=Value(segments[-1][1])) if whens else Value(segments[-1][1])
    return SqliteLocalHour(F("reviewed_at"), offset)


def hourly_breakdown(
    user: Any, zone: zoneinfo.ZoneInfo, since: datetime, until: datetime | None = None
) -> list[HourRow]:
    """Reviews and passes per hour of the learner's local clock from ``since`` to ``until`` (24 rows)."""
    until = until or datetime.now(UTC)
    rows = (
        ReviewLog.objects.filter(user=user, reviewed_at__gte=since, reviewed_at__lte=until)
        .annotate(hour=_local_hour(zone, since, until))
        .values("hour")
        .annotate(reviews=Count("id"), passed=Count("id", filter=_PASSED))
        .order_by()
    )
    by_hour = {row["hour"]: row for row in rows}
    return [
        HourRow(hour=h, reviews=by_hour.get(h, {}).get("reviews", 0), passed=by_hour.get(h, {}).get("passed", 0))
        for h in range(24)
    ]


def collection_summary(user: Any, today: date) -> Summary:
    """Card counts by state for the header of the stats page: two small aggregate queries, and "due today"
    from the review queue itself (``cards.review.queue_snapshot``: limits and burying included), so the
    stats page, the dashboard and the review page say one number."""
    seen = Q(last_reviewed_at__isnull=False)
    # Aliases must not shadow field names ("suspended"), or Django reads them as aggregates.
    counts = CardState.objects.filter(user=user, card__active=True).aggregate(
        n_seen=Count("id", filter=seen),
        n_young=Count("id", filter=seen & Q(interval__lt=MATURE_INTERVAL)),
        n_mature=Count("id", filter=seen & Q(interval__gte=MATURE_INTERVAL)),
        n_suspended=Count("id", filter=Q(suspended=True)),
    )
    queue = queue_snapshot(user, get_profile(user), today)
    return Summary(
        seen=counts["n_seen"],
        young=counts["n_young"],
        mature=counts["n_mature"],
        suspended=counts["n_suspended"],
        due_today=queue.due + queue.repeats,
        active_cards=Card.objects.active().visible_to(user).count(),  # none of other learners' or teams'
    )


def deck_rows(user: Any, today: date) -> list[DeckRow]:
    """Every note as a deck: active card counts by kind, and this learner's due and new counts.

    Three queries whatever the size: notes, active cards grouped by (note, kind), and
    the learner's states grouped by note. The state filters mirror CardStateQuerySet's
    ``due_for`` and ``blocking_new``, folded into one grouped query.
    """
    notes = list(Note.objects.visible_to(user).order_by("title", "slug"))
    kinds: dict[int, list[tuple[str, int]]] = {}
    for row in Card.objects.active().values("note_id", "kind").annotate(n=Count("id")).order_by("note_id", "kind"):
        kinds.setdefault(row["note_id"], []).append((Card.Kind(row["kind"]).label, row["n"]))
    seen = Q(last_reviewed_at__isnull=False)
    states = {
        row["card__note_id"]: row
        for row in CardState.objects.filter(user=user, card__active=True)
        .values("card__note_id")
        .annotate(
            due=Count("id", filter=seen & Q(suspended=False, due__lte=today) & _not_buried(today)),
            seen=Count("id", filter=seen),
            blocked=Count("id", filter=seen | Q(suspended=True) | Q(buried_until__gt=today)),
        )
        .order_by()
    }
    rows = []
    for note in notes:
        total = sum(n for _, n in kinds.get(note.pk, []))
        state = states.get(note.pk, {})
        rows.append(
            DeckRow(
                note=note,
                total=total,
                kinds=kinds.get(note.pk, []),
                due=state.get("due", 0),
                seen=state.get("seen", 0),
                new=total - state.get("blocked", 0),
            )
        )
    return rows


def card_states(user: Any, card_ids: Iterable[int]) -> dict[int, CardState]:
    """This learner's states for the cards on one page, by card id (one query)."""
    return {state.card_id: state for state in CardState.objects.filter(user=user, card_id__in=list(card_ids))}


class HistoryRow(TypedDict):
    day: date
    time: str
    quality: int
    rating: str
    notes: str
    source: str
    interval: str
    ease: str
    seconds: int


QUALITY_NAMES = {
    0: pgettext_lazy("rating", "Blackout"),
    1: pgettext_lazy("rating", "Again"),
    2: pgettext_lazy("rating", "Wrong"),
    3: pgettext_lazy("rating", "Hard"),
    4: pgettext_lazy("rating", "Good"),
    5: pgettext_lazy("rating", "Easy"),
}


def card_history(user: Any, card: Card, zone: zoneinfo.ZoneInfo, limit: int = 100) -> tuple[list[HistoryRow], int]:
    """This learner's latest reviews of one card, newest first, ready to print, and their total count.

    Rows are formatted here rather than in the template: a busy card has hundreds of
    reviews and per-cell template filters cost more than the query (reviewlog_card_idx).
    """
    logs = ReviewLog.objects.filter(card=card, user=user)
    rows = []
    for log in logs.order_by("-reviewed_at", "-pk")[:limit]:
        notes = [
            text
            for flag, text in (
                (log.was_new, gettext("first review")),
                (log.is_same_day_repeat, gettext("same-day repeat")),
            )
            if flag
        ]
        rows.append(
            HistoryRow(
                day=log.review_day,
                time=log.reviewed_at.astimezone(zone).strftime("%H:%M"),
                quality=log.quality,
                rating=str(QUALITY_NAMES.get(log.quality, log.quality)),
                notes=", ".join(notes),
                source=ReviewLog.Source(log.source).label,
                interval=f"{log.interval_before} → {log.interval_after}",
                ease=f"{log.easiness_before} → {log.easiness_after}",
                seconds=round(log.duration_ms / 1000),
            )
        )
    total = len(rows) if len(rows) < limit else logs.count()
    return rows, total
