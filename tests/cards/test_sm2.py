"""SM-2 as DESIGN.md states it: golden sequences and properties."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cards.scheduling.sm2 import Rating, SM2State, needs_same_day_repeat, preview_intervals, review

qualities = st.integers(min_value=0, max_value=5)


def run(qualities_: list[int], state: SM2State | None = None) -> list[SM2State]:
    state = state or SM2State()
    states = []
    for q in qualities_:
        state = review(state, q)
        states.append(state)
    return states


def exact_reference(qualities_: list[int]) -> list[tuple[Fraction, int, int]]:
    """The rules again, with Fractions: slow, obviously exact."""
    ef, interval, reps = Fraction(5, 2), 0, 0
    out = []
    for q in qualities_:
        if q >= 3:
            interval = 1 if reps == 0 else 6 if reps == 1 else math.ceil(interval * ef)
            reps += 1
        else:
            reps, interval = 0, 1
        ef = max(Fraction(13, 10), ef + Fraction(1, 10) - (5 - q) * (Fraction(8, 100) + (5 - q) * Fraction(2, 100)))
        out.append((ef, interval, reps))
    return out


def test_it_starts_at_the_published_defaults() -> None:
    assert SM2State() == SM2State(easiness=2.5, interval=0, repetitions=0)


def test_it_gives_the_golden_intervals_for_perfect_recall() -> None:
    assert [s.interval for s in run([5] * 6)] == [1, 6, 17, 48, 140, 420]


def test_it_gives_the_golden_intervals_for_good_recall() -> None:
    assert [s.interval for s in run([4] * 6)] == [1, 6, 15, 38, 95, 238]
    assert {s.easiness for s in run([4] * 6)} == {2.5}


def test_it_resets_on_a_lapse_and_keeps_the_lowered_easiness() -> None:
    states = run([5, 5, 5, 1, 4, 4, 4])
    assert [s.interval for s in states] == [1, 6, 17, 1, 1, 6, 14]
    assert [s.repetitions for s in states] == [1, 2, 3, 0, 1, 2, 3]
    assert states[3].easiness == pytest.approx(2.26)


def test_it_never_lets_float_drift_push_ceil_up() -> None:
    # EF 1.5 after a walk down from 2.5; 6 * 1.5 is exactly 9.
    state = SM2State(easiness=1.5, interval=6, repetitions=2)
    assert review(state, 4).interval == 9


def test_it_floors_easiness_at_1_3() -> None:
    assert run([0] * 10)[-1].easiness == 1.3


@pytest.mark.parametrize("bad", [-1, 6, 3.0, "4", None, True, False])
def test_it_rejects_a_quality_outside_0_to_5(bad: object) -> None:
    with pytest.raises(ValueError, match="quality"):
        review(SM2State(), bad)


def test_it_never_mutates_its_input() -> None:
    state = SM2State()
    review(state, 5)
    assert state == SM2State()


def test_it_labels_each_button_with_its_interval() -> None:
    assert preview_intervals(SM2State(easiness=2.5, interval=6, repetitions=2)) == {
        Rating.AGAIN: 1,
        Rating.HARD: 15,
        Rating.GOOD: 15,
        Rating.EASY: 15,
    }


def test_it_repeats_below_good_the_same_day() -> None:
    assert [needs_same_day_repeat(q) for q in range(6)] == [True] * 4 + [False] * 2


def test_it_round_trips_through_a_dict() -> None:
    state = run([5, 3, 4])[-1]
    assert SM2State.from_dict(state.to_dict()) == state


@given(st.lists(qualities, max_size=40))
def test_it_matches_exact_arithmetic_on_every_sequence(qs: list[int]) -> None:
    for state, (ef, interval, reps) in zip(run(qs), exact_reference(qs), strict=True):
        assert state.easiness_hundredths == ef * 100
        assert (state.interval, state.repetitions) == (interval, reps)


@given(st.lists(qualities, max_size=40))
def test_it_never_drops_easiness_below_1_3(qs: list[int]) -> None:
    assert all(s.easiness >= 1.3 for s in run(qs))


@given(st.lists(qualities, max_size=30), st.lists(st.integers(3, 5), min_size=1, max_size=10))
def test_it_never_shrinks_intervals_on_passing_reviews_after_the_second(qs: list[int], passes: list[int]) -> None:
    states = run(qs + passes)
    tail = states[len(qs) :]
    for before, after in zip(tail, tail[1:], strict=False):
        if before.repetitions >= 2:
            assert after.interval >= before.interval


@given(st.lists(qualities, max_size=30), st.integers(0, 2))
def test_it_always_gives_interval_1_below_3(qs: list[int], q: int) -> None:
    state = run(qs)[-1] if qs else SM2State()
    after = review(state, q)
    assert (after.interval, after.repetitions) == (1, 0)
