"""Streaks, freezes, learner days and weekly seasons, as pure functions (no Django import).

The rules (docs/teams.md repeats them):

* A *learner day* runs from ``DAY_START_HOUR`` (04:00) to 04:00 the next morning in the learner's
  own time zone, so a session at 01:30 still belongs to the evening before.
* A day is ``DONE`` when the learner finished the reviews that were due that day: after their last
  review of the day nothing was due any more (or they reached their daily review limit).
* A day is ``NOTHING_DUE`` when nothing was due and they did not review. It neither breaks the
  streak nor adds to it (the issue asks for "the day's due reviews done"; a day with nothing to do
  cannot be failed). A day with reviews that ends with nothing due is ``DONE``, so the streak grows.
* A day is ``MISSED`` when reviews were due and were left undone (reviewing only some of them is
  still a miss). Today is never missed while it lasts: it is ``PENDING`` until it is done.
* The streak is the number of ``DONE`` days since the last miss that no freeze covered.
* Every 7th day of a streak earns one *freeze*; at most two are held. A ``MISSED`` day consumes a
  freeze instead of breaking the streak; the frozen day keeps the streak without adding to it.

Two steps, each pure: ``day_statuses`` expands the days on which a learner reviewed into one status
per calendar day, and ``compute_streak`` walks those statuses.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

DAY_START_HOUR = 4
FREEZE_EVERY = 7
MAX_FREEZES = 2


class DayStatus(enum.StrEnum):
    DONE = "done"
    NOTHING_DUE = "nothing_due"
    MISSED = "missed"
    PENDING = "pending"


@dataclass(frozen=True)
class ActiveDay:
    """A learner day with at least one review.

    ``next_due`` is the earliest due date among the learner's scheduled cards after the last review
    of that day (None when nothing is scheduled). Until the next active day nothing changes that
    date, so it tells which of the following quiet days had reviews waiting.
    """

    day: date
    next_due: date | None
    limit_reached: bool = False

    @property
    def cleared(self) -> bool:
        return self.limit_reached or self.next_due is None or self.next_due > self.day


@dataclass(frozen=True)
class Streak:
    current: int
    longest: int
    freezes: int
    freezes_used: int
    today_done: bool


def learner_day(instant: datetime, tz: ZoneInfo, start_hour: int = DAY_START_HOUR) -> date:
    """The learner day an aware instant falls in: 03:59 local time still counts as yesterday."""
    if instant.tzinfo is None:
        raise ValueError("learner_day needs an aware datetime")
    local = instant.astimezone(tz)
    return (local - timedelta(hours=start_hour)).date()


def day_bounds(day: date, tz: ZoneInfo, start_hour: int = DAY_START_HOUR) -> tuple[datetime, datetime]:
    """The [start, end) instants of a learner day, in UTC (23 or 25 hours long across a DST change)."""
    start = datetime.combine(day, time(start_hour), tzinfo=tz).astimezone(UTC)
    end = datetime.combine(day + timedelta(days=1), time(start_hour), tzinfo=tz).astimezone(UTC)
    return start, end


def season_start(instant: datetime, tz: ZoneInfo, start_hour: int = DAY_START_HOUR) -> date:
    """The Monday that opens the weekly season containing ``instant`` (seasons turn Monday 04:00 in ``tz``)."""
    day = learner_day(instant, tz, start_hour)
    return day - timedelta(days=day.weekday())


def day_statuses(active: Sequence[ActiveDay], today: date, *, final: bool = False) -> list[tuple[date, DayStatus]]:
    """One status per day from the first active day through ``today``.

    ``active`` may come in any order; days after ``today`` are ignored. With ``final`` the last
    day is over too (no ``PENDING``): used to settle the days before a later active day.
    """
    days = sorted((a for a in active if a.day <= today), key=lambda a: a.day)
    if not days:
        return []
    out: list[tuple[date, DayStatus]] = []
    for index, current in enumerate(days):
        if current.cleared:
            out.append((current.day, DayStatus.DONE))
        else:
            out.append((current.day, DayStatus.PENDING if current.day == today and not final else DayStatus.MISSED))
        stop = days[index + 1].day if index + 1 < len(days) else today + timedelta(days=1)
        quiet = current.day + timedelta(days=1)
        while quiet < stop:
            waiting = current.next_due is not None and current.next_due <= quiet
            if not waiting:
                out.append((quiet, DayStatus.NOTHING_DUE))
            else:
                out.append((quiet, DayStatus.PENDING if quiet == today and not final else DayStatus.MISSED))
            quiet += timedelta(days=1)
    return out


NO_STREAK = Streak(current=0, longest=0, freezes=0, freezes_used=0, today_done=False)


def compute_streak(statuses: Sequence[tuple[date, DayStatus]], start: Streak = NO_STREAK) -> Streak:
    """Walk the days in order from ``start``, earning and spending freezes. ``statuses`` must be sorted."""
    current, longest, freezes, used = start.current, start.longest, start.freezes, start.freezes_used
    today_done = False
    for position, (_day, status) in enumerate(statuses):
        last = position == len(statuses) - 1
        if status is DayStatus.DONE:
            current += 1
            longest = max(longest, current)
            if current % FREEZE_EVERY == 0:
                freezes = min(MAX_FREEZES, freezes + 1)
            today_done = last
        elif status is DayStatus.MISSED:
            if freezes:
                freezes -= 1
                used += 1
            else:
                current = 0
    return Streak(current=current, longest=longest, freezes=freezes, freezes_used=used, today_done=today_done)


def streak_for(active: Sequence[ActiveDay], today: date) -> Streak:
    """Both steps at once over a whole history: the reference the incremental functions must match."""
    return compute_streak(day_statuses(active, today))


def streak_before(previous: ActiveDay | None, before_previous: Streak, day: date) -> Streak:
    """The streak at the end of the day before ``day``, from the previous active day and the streak before it.

    Stored on each active day, so reading a streak never walks the whole history.
    """
    if previous is None:
        return NO_STREAK
    return compute_streak(day_statuses([previous], day - timedelta(days=1), final=True), before_previous)


def streak_now(last: ActiveDay | None, before_last: Streak, today: date) -> Streak:
    """The current streak from the latest active day, the streak stored before it, and the quiet days since."""
    if last is None:
        return NO_STREAK
    return compute_streak(day_statuses([last], today), before_last)
