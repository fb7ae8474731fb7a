"""The stats queries on small hand-made review logs, with exact expected numbers."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest

from cards import stats
from cards.models import Card, Course, Profile
from cards.review import learner_today
from tests.cards.factories import make_card, make_note, make_user
from tests.cards.stats_factories import make_log, make_state

pytestmark = pytest.mark.django_db

TODAY = date(2026, 3, 20)
NOON = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)


def at(day: date, hour: int = 12) -> datetime:
    return datetime(day.year, day.month, day.day, hour, tzinfo=UTC)


def test_it_counts_reviews_per_learner_day_and_zero_fills_the_rest() -> None:
    learner, other = make_user("learner"), make_user("other")
    card = make_card()
    yesterday = TODAY - timedelta(days=1)
    make_log(learner, card, reviewed_at=at(yesterday), review_day=yesterday, was_new=True, quality=1)
    make_log(learner, card, reviewed_at=at(yesterday, 13), review_day=yesterday, same_day=True, quality=4)
    make_log(learner, card, reviewed_at=at(TODAY), review_day=TODAY, interval_before=1, quality=5)
    make_log(other, card, reviewed_at=at(TODAY), review_day=TODAY, quality=5)
    make_log(learner, card, reviewed_at=at(TODAY - timedelta(days=5)), review_day=TODAY - timedelta(days=5))

    activity = stats.daily_activity(learner, TODAY - timedelta(days=3), TODAY)

    assert [a.day for a in activity] == [TODAY - timedelta(days=n) for n in (3, 2, 1, 0)]
    assert [a.reviews for a in activity] == [0, 0, 2, 1]
    assert activity[2] == stats.DayActivity(day=yesterday, reviews=2, new=1)
    assert activity[3] == stats.DayActivity(day=TODAY, reviews=1, young_total=1, young_passed=1)


def test_it_splits_true_retention_into_young_and_mature_at_21_days() -> None:
    learner = make_user("learner")
    card = make_card()
    day = TODAY - timedelta(days=2)
    for interval, quality in [(20, 3), (20, 2), (1, 5), (21, 3), (21, 0), (60, 4), (90, 1), (30, 5)]:
        make_log(learner, card, reviewed_at=at(day), review_day=day, interval_before=interval, quality=quality)
    # Neither first sights nor same-day repeats measure recall of a scheduled card.
    make_log(learner, card, reviewed_at=at(day), review_day=day, was_new=True, interval_before=0, quality=5)
    make_log(learner, card, reviewed_at=at(day), review_day=day, same_day=True, interval_before=30, quality=1)
    # Ten days ago: inside the 30-day window only.
    old = TODAY - timedelta(days=10)
    make_log(learner, card, reviewed_at=at(old), review_day=old, interval_before=40, quality=1)

    activity = stats.daily_activity(learner, TODAY - timedelta(days=89), TODAY)
    week, month, quarter = stats.retention_table(activity, TODAY)

    assert (week.days, week.young_passed, week.young_total, week.mature_passed, week.mature_total) == (7, 2, 3, 3, 5)
    assert week.young_rate == pytest.approx(2 / 3)
    assert week.mature_rate == pytest.approx(0.6)
    assert (month.mature_passed, month.mature_total) == (3, 6)
    assert (quarter.days, quarter.mature_total, quarter.young_total) == (90, 6, 3)


def test_it_reports_no_retention_rate_without_reviews() -> None:
    row = stats.retention_table([], TODAY, periods=(7,))[0]
    assert row == stats.RetentionRow(days=7, young_total=0, young_passed=0, mature_total=0, mature_passed=0)
    assert row.young_rate is None
    assert row.mature_rate is None


def test_it_groups_weekly_retention_in_seven_day_blocks_ending_today() -> None:
    learner = make_user("learner")
    card = make_card()
    for back, quality in [(0, 4), (6, 1), (7, 5), (20, 5)]:
        day = TODAY - timedelta(days=back)
        make_log(learner, card, reviewed_at=at(day), review_day=day, interval_before=25, quality=quality)
    activity = stats.daily_activity(learner, TODAY - timedelta(days=27), TODAY)

    weeks = stats.weekly_retention(activity, TODAY, 4)

    assert [(w.mature_passed, w.mature_total) for w in weeks] == [(0, 0), (1, 1), (1, 1), (1, 2)]


def test_it_counts_the_streak_from_today_or_yesterday() -> None:
    def days(*back: int) -> dict[date, int]:
        return {TODAY - timedelta(days=b): 1 for b in back}

    assert stats.current_streak(days(0, 1, 2, 4), TODAY) == 3
    assert stats.current_streak(days(1, 2), TODAY) == 2  # today is not over yet
    assert stats.current_streak(days(2, 3), TODAY) == 0
    assert stats.current_streak({TODAY: 0}, TODAY) == 0


def test_it_counts_a_years_reviews_per_day_for_the_heatmap() -> None:
    learner, other = make_user("learner"), make_user("other")
    card = make_card()
    for back in (0, 0, 0, 5, 364, 365):
        day = TODAY - timedelta(days=back)
        make_log(learner, card, reviewed_at=at(day), review_day=day)
    make_log(other, card, reviewed_at=at(TODAY), review_day=TODAY)

    counts = stats.daily_counts(learner, TODAY - timedelta(days=364), TODAY)

    assert counts == {TODAY: 3, TODAY - timedelta(days=5): 1, TODAY - timedelta(days=364): 1}


def test_it_forecasts_due_cards_with_overdue_ones_counted_today() -> None:
    learner, other = make_user("learner"), make_user("other")
    note = make_note()
    cards = [make_card(note) for _ in range(9)]
    make_state(learner, cards[0], due=TODAY - timedelta(days=3))
    make_state(learner, cards[1], due=TODAY)
    make_state(learner, cards[2], due=TODAY + timedelta(days=2))
    make_state(learner, cards[3], due=TODAY + timedelta(days=29))
    make_state(learner, cards[4], due=TODAY + timedelta(days=30))  # beyond the 30 days shown
    make_state(learner, cards[5], due=TODAY, suspended=True)
    make_state(learner, cards[6], due=TODAY, seen=False)  # never reviewed: a new card, not a review
    make_state(learner, cards[7], due=TODAY, buried_until=TODAY + timedelta(days=1))
    make_state(other, cards[8], due=TODAY)
    Card.objects.filter(pk=cards[2].pk).update(active=False)
    make_state(learner, make_card(note), due=TODAY + timedelta(days=2))

    forecast = stats.due_forecast(learner, TODAY, days=30)

    assert len(forecast) == 30
    assert forecast[0] == {"day": TODAY, "count": 2}
    assert forecast[2] == {"day": TODAY + timedelta(days=2), "count": 1}
    assert forecast[29] == {"day": TODAY + timedelta(days=29), "count": 1}
    assert sum(day["count"] for day in forecast) == 4


def test_it_counts_seen_cards_per_easiness() -> None:
    learner, other = make_user("learner"), make_user("other")
    for easiness in ("2.50", "2.50", "1.30", "2.36"):
        make_state(learner, make_card(), due=TODAY, easiness=Decimal(easiness))
    make_state(learner, make_card(), due=TODAY, seen=False, easiness=Decimal("2.50"))
    make_state(other, make_card(), due=TODAY, easiness=Decimal("1.30"))

    assert stats.ease_counts(learner) == {2.5: 2, 1.3: 1, 2.36: 1}


def test_it_breaks_reviews_down_by_local_hour_across_a_dst_change() -> None:
    learner = make_user("learner")
    card = make_card()
    zone = Profile(time_zone="America/New_York").zone
    # 2026-03-08: clocks jump from 02:00 EST to 03:00 EDT.
    make_log(learner, card, reviewed_at=datetime(2026, 3, 8, 6, 30, tzinfo=UTC), review_day=date(2026, 3, 7))  # 01:30
    make_log(learner, card, reviewed_at=datetime(2026, 3, 8, 7, 30, tzinfo=UTC), review_day=date(2026, 3, 7), quality=1)
    make_log(learner, card, reviewed_at=datetime(2026, 3, 8, 7, 45, tzinfo=UTC), review_day=date(2026, 3, 7))  # 03:45
    make_log(learner, card, reviewed_at=datetime(2026, 1, 1, tzinfo=UTC), review_day=date(2025, 12, 31))  # too old

    hours = stats.hourly_breakdown(learner, zone, since=datetime(2026, 3, 1, tzinfo=UTC))

    assert len(hours) == 24
    assert {h["hour"]: (h["reviews"], h["passed"]) for h in hours if h["reviews"]} == {1: (1, 1), 3: (2, 1)}


def test_it_finds_the_exact_utc_offset_changes_of_a_zone() -> None:
    new_york = Profile(time_zone="America/New_York").zone
    year = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 12, 31, tzinfo=UTC))

    assert stats.utc_offset_segments(new_york, *year) == [
        (datetime(2026, 3, 8, 7, 0, tzinfo=UTC), -300),
        (datetime(2026, 11, 1, 6, 0, tzinfo=UTC), -240),
        (None, -300),
    ]
    assert stats.utc_offset_segments(Profile(time_zone="Asia/Kathmandu").zone, *year) == [(None, 345)]


def test_it_puts_reviews_in_a_quarter_hour_zone_into_the_right_local_hour() -> None:
    learner = make_user("learner")
    card = make_card()
    for minute in (14, 15):  # 18:14 UTC is 23:59 in Kathmandu (+05:45), 18:15 is 00:00
        make_log(learner, card, reviewed_at=datetime(2026, 3, 8, 18, minute, tzinfo=UTC), review_day=TODAY)

    hours = stats.hourly_breakdown(learner, Profile(time_zone="Asia/Kathmandu").zone, since=NOON - timedelta(days=30))

    assert {h["hour"]: h["reviews"] for h in hours if h["reviews"]} == {23: 1, 0: 1}


def test_it_counts_a_review_before_four_in_the_morning_on_the_previous_learner_day() -> None:
    """The 04:00 boundary end to end: the day the review flow stores is the day the stats group on."""
    learner = make_user("learner", time_zone="Asia/Shanghai")
    profile = Profile.objects.get(user=learner)
    card = make_card()
    times = [
        datetime(2026, 3, 19, 1, 0, tzinfo=UTC),  # 09:00 on 19 March in Shanghai
        datetime(2026, 3, 19, 19, 59, tzinfo=UTC),  # 03:59 on 20 March: still the 19th's learner day
        datetime(2026, 3, 19, 20, 0, tzinfo=UTC),  # 04:00 on 20 March: the 20th begins
    ]
    for when in times:
        make_log(learner, card, reviewed_at=when, review_day=learner_today(profile, when))

    activity = stats.daily_activity(learner, date(2026, 3, 18), date(2026, 3, 20))
    hours = stats.hourly_breakdown(learner, profile.zone, since=datetime(2026, 3, 1, tzinfo=UTC))

    assert [(a.day.isoformat(), a.reviews) for a in activity] == [
        ("2026-03-18", 0),
        ("2026-03-19", 2),
        ("2026-03-20", 1),
    ]
    assert [h["hour"] for h in hours if h["reviews"]] == [3, 4, 9]
    counts = stats.daily_counts(learner, date(2026, 3, 1), date(2026, 3, 20))
    assert stats.current_streak(counts, learner_today(profile, datetime(2026, 3, 20, 19, 59, tzinfo=UTC))) == 2


def test_it_summarises_the_learners_collection() -> None:
    learner, other = make_user("learner"), make_user("other")
    make_state(learner, make_card(), due=TODAY, interval=3)
    make_state(learner, make_card(), due=TODAY + timedelta(days=5), interval=21)
    make_state(learner, make_card(), due=TODAY, interval=40, suspended=True)
    make_state(learner, make_card(), due=TODAY, seen=False, suspended=True)
    make_state(learner, make_card(), due=TODAY, interval=3, buried_until=TODAY + timedelta(days=1))
    make_state(learner, make_card(active=False), due=TODAY, interval=3)
    make_state(other, make_card(), due=TODAY)

    summary = stats.collection_summary(learner, TODAY)

    assert summary == {"seen": 4, "young": 2, "mature": 2, "suspended": 2, "due_today": 1, "active_cards": 6}


def test_it_counts_only_the_cards_this_learner_can_study() -> None:
    """Another learner's private deck (an Anki import) and a course the learner cannot read are not theirs:
    '... of N cards seen' counted them, telling every learner how many private cards exist."""
    learner, other = make_user("learner"), make_user("other")
    make_card()
    make_card(note=make_note("private-deck", owner=other))
    make_card(note=make_note("tamers--notes", course=Course.objects.create(slug="tamers", title="Tamers")))
    assert stats.collection_summary(learner, TODAY)["active_cards"] == 1
    assert stats.collection_summary(other, TODAY)["active_cards"] == 2


def test_it_lists_decks_with_kind_counts_and_this_learners_due_and_new() -> None:
    learner, other = make_user("learner"), make_user("other")
    basics, empty = make_note("basics", title="基础"), make_note("empty", title="空")
    qa = [make_card(basics) for _ in range(3)]
    cloze = make_card(basics, kind=Card.Kind.CLOZE)
    make_card(basics, kind=Card.Kind.DRILL, active=False)
    make_state(learner, qa[0], due=TODAY - timedelta(days=1))
    make_state(learner, qa[1], due=TODAY + timedelta(days=3))
    make_state(learner, cloze, due=TODAY, seen=False, suspended=True)
    make_state(other, qa[2], due=TODAY)

    rows = {row["note"].slug: row for row in stats.deck_rows(learner, TODAY)}

    assert rows["basics"]["kinds"] == [("Cloze", 1), ("Question", 3)]
    assert (rows["basics"]["total"], rows["basics"]["due"], rows["basics"]["seen"], rows["basics"]["new"]) == (
        4,
        1,
        2,
        1,
    )
    assert (rows["empty"]["total"], rows["empty"]["due"], rows["empty"]["new"], rows["empty"]["kinds"]) == (0, 0, 0, [])
    assert empty.title == "空"


def test_it_keeps_another_learners_history_out_of_card_history() -> None:
    learner, other = make_user("learner"), make_user("other")
    card = make_card()
    zone = Profile(time_zone="Asia/Shanghai").zone
    for back, quality in ((3, 1), (1, 5)):
        day = TODAY - timedelta(days=back)
        make_log(learner, card, reviewed_at=at(day, 23), review_day=day, quality=quality, was_new=back == 3)
    make_log(other, card, reviewed_at=at(TODAY), review_day=TODAY, quality=0)

    rows, total = stats.card_history(learner, card, zone)

    assert total == 2
    assert [(r["day"], r["time"], r["rating"], r["notes"]) for r in rows] == [
        (TODAY - timedelta(days=1), "07:00", "Easy", ""),
        (TODAY - timedelta(days=3), "07:00", "Again", "first review"),
    ]
    assert rows[0]["interval"] == "1 → 2"
    assert rows[0]["source"] == "Self-rated"


def test_it_counts_all_reviews_when_the_history_is_cut_short() -> None:
    learner = make_user("learner")
    card = make_card()
    for back in range(5):
        day = TODAY - timedelta(days=back)
        make_log(learner, card, reviewed_at=at(day), review_day=day)

    rows, total = stats.card_history(learner, card, Profile(time_zone="UTC").zone, limit=3)

    assert [r["day"] for r in rows] == [TODAY, TODAY - timedelta(days=1), TODAY - timedelta(days=2)]
    assert total == 5
