"""FIRe-style credit (cards.scheduling.fire): a fraction of FSRS's own Good review, never more, never a loss."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cards.scheduling import fire, fsrs6

FSRS = fsrs6.scheduler()
TODAY = date(2026, 3, 10)


def memory(stability: float, difficulty: float, days_ago: int) -> fsrs6.Memory:
    return fsrs6.Memory(stability, difficulty, TODAY - timedelta(days=days_ago))


def test_no_weight_changes_nothing_and_full_weight_is_a_good_review() -> None:
    before = memory(5.0, 5.0, 4)
    assert fire.credit(FSRS, before, TODAY, 0)[0] == before
    good, interval = fsrs6.review(FSRS, before, 4, TODAY)
    credited, days = fire.credit(FSRS, before, TODAY, 1)
    assert days == interval
    # The same due day, counted from the real last review: recall predicted there is the desired retention.
    due = TODAY + timedelta(days=days)
    assert fsrs6.retrievability(FSRS, credited, due) == pytest.approx(fsrs6.retrievability(FSRS, good, due), abs=0.02)
    # A quarter of a review: later than no credit, well short of a whole review.
    quarter = fire.credit(FSRS, before, TODAY, fire.WEIGHT)[1]
    plain = fire.credit(FSRS, before, TODAY, 0)[1]
    assert plain < quarter < interval, (plain, quarter, interval)
    for stability, days_ago in ((5.0, 4), (20.0, 18), (60.0, 50)):
        card = memory(stability, 5.0, days_ago)
        none, full = fire.credit(FSRS, card, TODAY, 0)[1], fire.credit(FSRS, card, TODAY, 1)[1]
        # about a quarter of the way from no credit to a whole Good review
        assert abs(fire.credit(FSRS, card, TODAY, 0.25)[1] - (none + 0.25 * (full - none))) <= 2
    with pytest.raises(ValueError):
        fire.credit(FSRS, before, TODAY, 1.5)


def test_a_card_reviewed_today_gets_no_credit() -> None:
    before = memory(5.0, 5.0, 0)
    assert fire.credit(FSRS, before, TODAY, 0.25)[0] == before


@settings(max_examples=200, deadline=None)
@given(st.floats(0.5, 200), st.floats(1, 10), st.integers(1, 300), st.floats(0.05, 0.95), st.floats(0.0, 0.05))
def test_credit_grows_with_weight_and_never_shortens_an_interval(
    stability: float, difficulty: float, days_ago: int, weight: float, more: float
) -> None:
    before = memory(stability, difficulty, days_ago)
    plain = fire.credit(FSRS, before, TODAY, 0)[1]
    low, low_days = fire.credit(FSRS, before, TODAY, weight)
    high, high_days = fire.credit(FSRS, before, TODAY, min(1.0, weight + more))
    assert low.stability >= stability and low.difficulty == difficulty and low.last_day == before.last_day
    assert plain <= low_days <= high_days
    assert low_days <= fsrs6.review(FSRS, before, 4, TODAY)[1] + 1
