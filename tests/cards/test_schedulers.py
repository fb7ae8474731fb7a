"""The scheduler interface: SM-2 through it is SM-2 exactly; FSRS through it is the pinned package on whole days."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from fsrs import Card as PackageCard
from fsrs import Rating as PackageRating
from fsrs import ReviewLog as PackageLog
from hypothesis import given
from hypothesis import strategies as st

from cards.scheduling import fsrs6, sm2
from cards.scheduling.schedulers import CardMemory, FSRSScheduler, SM2Scheduler, for_learner

TODAY = date(2026, 3, 10)


@given(st.lists(st.integers(min_value=0, max_value=5), min_size=1, max_size=30))
def test_it_moves_sm2_exactly_as_sm2_review_does(qualities: list[int]) -> None:
    scheduler, memory, state = SM2Scheduler(), CardMemory(sm2=sm2.SM2State()), sm2.SM2State()
    for quality in qualities:
        step = scheduler.review(memory, quality, TODAY, same_day_repeat=False)
        state = sm2.review(state, quality)
        assert step.memory.sm2 == state
        assert step.interval == state.interval
        assert step.again_today is (quality < 4)
        memory = step.memory


def test_it_leaves_sm2_alone_on_a_same_day_repeat() -> None:
    memory = CardMemory(sm2=sm2.SM2State(easiness=2.36, interval=1, repetitions=0))
    step = SM2Scheduler().review(memory, 4, TODAY, same_day_repeat=True)
    assert step.memory == memory and step.interval is None and not step.again_today


def test_it_labels_a_new_card_with_fsrs_intervals_that_differ() -> None:
    # The package's default initial stabilities are 0.212, 1.2931, 2.3065 and 8.2956 days.
    assert FSRSScheduler().preview(CardMemory(sm2=sm2.SM2State()), TODAY) == {
        sm2.Rating.AGAIN: 1,
        sm2.Rating.HARD: 1,
        sm2.Rating.GOOD: 2,
        sm2.Rating.EASY: 8,
    }


def test_it_keeps_sm2_moving_under_fsrs_so_switching_back_finds_it() -> None:
    scheduler, memory = FSRSScheduler(), CardMemory(sm2=sm2.SM2State())
    day = TODAY
    for quality in (4, 4, 5, 1, 4):
        step = scheduler.review(memory, quality, day, same_day_repeat=False)
        memory = step.memory
        day += timedelta(days=step.interval or 1)
    assert memory.sm2 == sm2.review(sm2.review(sm2.review(sm2.review(sm2.review(sm2.SM2State(), 4), 4), 5), 1), 4)
    assert memory.fsrs is not None and memory.fsrs.last_day == day - timedelta(days=step.interval or 1)


def test_it_brings_only_again_back_today_under_fsrs() -> None:
    scheduler, memory = FSRSScheduler(), CardMemory(sm2=sm2.SM2State())
    assert [scheduler.review(memory, q, TODAY, False).again_today for q in (1, 3, 4, 5)] == [True, False, False, False]


def test_it_schedules_longer_at_a_lower_desired_retention() -> None:
    memory = CardMemory(sm2=sm2.SM2State(), fsrs=fsrs6.Memory(stability=20.0, difficulty=5.0, last_day=TODAY))
    later = TODAY + timedelta(days=20)
    low = FSRSScheduler(desired_retention=0.8).review(memory, 4, later, False).interval
    high = FSRSScheduler(desired_retention=0.95).review(memory, 4, later, False).interval
    assert low is not None and high is not None and low > 2 * high


def test_it_maps_qualities_to_fsrs_ratings() -> None:
    assert [fsrs6.rating_for_quality(q) for q in range(6)] == [1, 1, 1, 2, 3, 4]
    with pytest.raises(ValueError):
        fsrs6.rating_for_quality(6)
    with pytest.raises(ValueError):
        fsrs6.rating_for_quality(True)


def test_it_replays_a_history_as_the_package_reschedules_a_card() -> None:
    history = [
        (TODAY, 4),
        (TODAY + timedelta(days=2), 3),
        (TODAY + timedelta(days=9), 1),
        (TODAY + timedelta(days=9), 4),
    ]
    ours = fsrs6.from_history(fsrs6.scheduler(), history)
    logs = [
        PackageLog(
            card_id=7,
            rating=PackageRating(fsrs6.rating_for_quality(q)),
            review_datetime=fsrs6.noon_utc(d),
            review_duration=None,
        )
        for d, q in history
    ]
    theirs = fsrs6.scheduler().reschedule_card(PackageCard(card_id=7, due=fsrs6.noon_utc(TODAY)), logs)
    assert ours is not None
    assert (ours.stability, ours.difficulty) == (theirs.stability, theirs.difficulty)
    assert ours.last_day == TODAY + timedelta(days=9)


def test_it_takes_stability_from_the_sm2_interval_and_difficulty_from_the_ease() -> None:
    fsrs = fsrs6.scheduler()
    easy = fsrs6.from_sm2(fsrs, 2.8, 30, TODAY)
    hard = fsrs6.from_sm2(fsrs, 1.3, 30, TODAY)
    assert easy.stability == pytest.approx(30) and easy.last_day == TODAY
    assert 1 <= easy.difficulty < hard.difficulty <= 10
    # At 90 % retention FSRS brings a card back after about its stability: the SM-2 interval again.
    assert fsrs6.interval(fsrs, easy.stability) == 30


def test_it_spreads_a_backlog_over_at_most_seven_days_least_recallable_first() -> None:
    overdue = [(k, TODAY - timedelta(days=k % 5), 0.5 + k / 100) for k in range(20)]
    later = [("later", TODAY + timedelta(days=3), 0.99)]
    placed = fsrs6.spread_backlog(overdue + later, TODAY)
    days = sorted(placed[k] for k in range(20))
    assert days[0] == TODAY and days[-1] <= TODAY + timedelta(days=6)
    assert max(days.count(d) for d in set(days)) == 3  # ceil(20 / 7)
    assert placed[0] == TODAY and placed[19] == TODAY + timedelta(days=6)
    assert placed["later"] == TODAY + timedelta(days=3)


def test_it_names_the_scheduler_a_learner_chose() -> None:
    assert for_learner("sm2").name == "sm2"
    fsrs = for_learner("fsrs", None, 0.85)
    assert isinstance(fsrs, FSRSScheduler) and fsrs.desired_retention == 0.85
    with pytest.raises(ValueError):
        for_learner("anki")
