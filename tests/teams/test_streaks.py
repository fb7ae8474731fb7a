"""Streak rules: learner days, the 04:00 boundary, time zones, quiet days and freezes."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from teams.streaks import (
    ActiveDay,
    DayStatus,
    compute_streak,
    day_bounds,
    day_statuses,
    learner_day,
    season_start,
    streak_for,
)

D0 = date(2026, 3, 2)  # a Monday
BERLIN = ZoneInfo("Europe/Berlin")
TOKYO = ZoneInfo("Asia/Tokyo")
LA = ZoneInfo("America/Los_Angeles")


def d(n: int) -> date:
    return D0 + timedelta(days=n)


def done_days(*offsets: int) -> list[ActiveDay]:
    """Active days that each end with the next review due tomorrow."""
    return [ActiveDay(d(n), next_due=d(n + 1)) for n in offsets]


def test_it_counts_0359_local_time_as_the_day_before() -> None:
    before = datetime(2026, 3, 3, 3, 59, tzinfo=BERLIN)
    after = datetime(2026, 3, 3, 4, 0, tzinfo=BERLIN)
    assert learner_day(before, BERLIN) == date(2026, 3, 2)
    assert learner_day(after, BERLIN) == date(2026, 3, 3)


def test_it_puts_one_instant_on_different_days_in_different_time_zones() -> None:
    instant = datetime(2026, 3, 2, 20, 0, tzinfo=UTC)  # 05:00 next day in Tokyo, 12:00 in LA
    assert learner_day(instant, TOKYO) == date(2026, 3, 3)
    assert learner_day(instant, LA) == date(2026, 3, 2)


def test_it_rejects_naive_datetimes() -> None:
    with pytest.raises(ValueError):
        learner_day(datetime(2026, 3, 2, 12, 0), BERLIN)  # noqa: DTZ001


def test_it_makes_the_day_23_hours_long_on_the_spring_dst_change() -> None:
    start, end = day_bounds(date(2026, 3, 28), BERLIN)  # clocks go forward at 02:00 on the 29th
    assert end - start == timedelta(hours=23)


def test_it_starts_seasons_on_monday_at_four_in_the_team_time_zone() -> None:
    sunday_night = datetime(2026, 3, 9, 3, 30, tzinfo=BERLIN)  # Monday 03:30 is still Sunday's learner day
    monday = datetime(2026, 3, 9, 4, 0, tzinfo=BERLIN)
    assert season_start(sunday_night, BERLIN) == date(2026, 3, 2)
    assert season_start(monday, BERLIN) == date(2026, 3, 9)


def test_it_counts_consecutive_done_days() -> None:
    streak = streak_for(done_days(0, 1, 2), today=d(2))
    assert (streak.current, streak.longest, streak.today_done) == (3, 3, True)


def test_it_keeps_the_streak_while_today_is_pending() -> None:
    streak = streak_for([*done_days(0, 1), ActiveDay(d(2), next_due=d(2))], today=d(2))
    assert streak.current == 2
    assert streak.today_done is False


def test_it_keeps_the_streak_through_a_quiet_day_with_nothing_due() -> None:
    active = [ActiveDay(d(0), next_due=d(1)), ActiveDay(d(1), next_due=d(3)), ActiveDay(d(3), next_due=d(4))]
    statuses = day_statuses(active, today=d(3))
    assert [s for _, s in statuses] == [DayStatus.DONE, DayStatus.DONE, DayStatus.NOTHING_DUE, DayStatus.DONE]
    assert compute_streak(statuses).current == 3


def test_it_breaks_the_streak_on_a_day_with_reviews_left_undone() -> None:
    active = [*done_days(0, 1), ActiveDay(d(3), next_due=d(4))]
    statuses = day_statuses(active, today=d(3))
    assert statuses[2] == (d(2), DayStatus.MISSED)
    assert streak_for(active, today=d(3)).current == 1


def test_it_treats_a_partly_done_day_as_missed() -> None:
    active = [*done_days(0), ActiveDay(d(1), next_due=d(1)), *done_days(2)]
    assert streak_for(active, today=d(2)).current == 1


def test_it_counts_a_day_that_hit_the_daily_limit_as_done() -> None:
    active = [*done_days(0), ActiveDay(d(1), next_due=d(1), limit_reached=True), *done_days(2)]
    assert streak_for(active, today=d(2)).current == 3


def test_it_breaks_the_streak_when_yesterday_was_missed_and_today_pending() -> None:
    streak = streak_for(done_days(0, 1), today=d(3))
    assert streak.current == 0


def test_it_earns_a_freeze_every_seven_days_and_holds_at_most_two() -> None:
    assert streak_for(done_days(*range(7)), today=d(6)).freezes == 1
    assert streak_for(done_days(*range(6)), today=d(5)).freezes == 0
    assert streak_for(done_days(*range(21)), today=d(20)).freezes == 2


def test_it_spends_a_freeze_on_a_missed_day_and_keeps_the_streak() -> None:
    streak = streak_for(done_days(*range(7), 8), today=d(8))
    assert (streak.current, streak.freezes, streak.freezes_used) == (8, 0, 1)


def test_it_breaks_the_streak_when_misses_outnumber_freezes() -> None:
    streak = streak_for(done_days(*range(7), 9, 10), today=d(10))
    assert (streak.current, streak.longest, streak.freezes_used) == (2, 7, 1)


def test_it_returns_an_empty_streak_for_a_learner_who_never_reviewed() -> None:
    assert streak_for([], today=d(0)).current == 0


def test_it_ignores_active_days_after_today() -> None:
    assert streak_for(done_days(0, 1, 5), today=d(1)).current == 2


def test_it_gives_the_same_streak_incrementally_as_over_the_whole_history() -> None:
    import random

    from teams.streaks import NO_STREAK, streak_before, streak_now

    rng = random.Random(3)
    for _ in range(200):
        days = sorted(rng.sample(range(60), rng.randrange(1, 40)))
        active = [ActiveDay(d(n), d(n + rng.choice([0, 1, 1, 1, 2, 4])), rng.random() < 0.05) for n in days]
        today = d(days[-1] + rng.randrange(0, 4))
        state, previous = NO_STREAK, None
        for day in active:
            state = streak_before(previous, state, day.day)
            previous = day
        assert streak_now(previous, state, today) == streak_for(active, today)
