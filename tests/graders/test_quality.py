"""The verdict -> SM-2 quality table (graders/rating/quality.py), one test per row. Pure: no database."""

from __future__ import annotations

import pytest

from cards.scheduling.fsrs6 import rating_for_quality
from graders.rating.quality import DrillResult, accepted_quality, drill_quality


def test_it_rates_an_acceptance_on_the_first_submission_5() -> None:
    assert drill_quality(DrillResult("accepted", attempts=1)) == 5


def test_it_rates_an_acceptance_on_the_second_or_third_submission_4() -> None:
    assert [drill_quality(DrillResult("accepted", attempts=n)) for n in (2, 3)] == [4, 4]


def test_it_rates_an_acceptance_after_more_submissions_3() -> None:
    assert [drill_quality(DrillResult("accepted", attempts=n)) for n in (4, 5, 12)] == [3, 3, 3]


def test_it_rates_an_acceptance_after_viewing_the_reference_a_failed_recall() -> None:
    qualities = [drill_quality(DrillResult("accepted", attempts=n, reference_viewed=True)) for n in (1, 2, 3, 4)]
    assert qualities == [2, 2, 2, 2]
    assert {rating_for_quality(q) for q in qualities} == {1}  # Again to FSRS, never Hard (a recall)


def test_it_rates_a_partially_right_answer_2() -> None:
    assert drill_quality(DrillResult("wrong_answer", attempts=2, hidden_passed=1)) == 2
    assert drill_quality(DrillResult("runtime_error", attempts=1, hidden_passed=3)) == 2


def test_it_rates_a_wrong_answer_1() -> None:
    assert drill_quality(DrillResult("wrong_answer", attempts=1, hidden_passed=0)) == 1
    assert drill_quality(DrillResult("runtime_error", attempts=4)) == 1


@pytest.mark.parametrize("status", ["rejected", "time_limit", "memory_limit", "output_limit"])
def test_it_rates_no_answer_0(status: str) -> None:
    assert drill_quality(DrillResult(status, attempts=1, hidden_passed=0)) == 0


@pytest.mark.parametrize("status", ["internal_error", "queued", "running", "nonsense"])
def test_it_refuses_to_rate_what_is_not_the_learners_verdict(status: str) -> None:
    with pytest.raises(ValueError, match="does not rate"):
        drill_quality(DrillResult(status, attempts=1))


def test_it_refuses_an_acceptance_without_an_attempt() -> None:
    with pytest.raises(ValueError, match="at least one attempt"):
        accepted_quality(0, False)


@pytest.mark.parametrize(
    ("hints", "qualities"), [(0, [5, 4, 4, 3]), (1, [4, 4, 4, 3]), (2, [3, 3, 3, 3]), (3, [3] * 4)]
)
def test_each_hint_opened_caps_an_acceptance(hints: int, qualities: list[int]) -> None:
    """1 hint: at most 4 (Good), 2 or more: at most 3 (Hard); a cap never raises what attempts earned."""
    got = [drill_quality(DrillResult("accepted", attempts=n, hints_opened=hints)) for n in (1, 2, 3, 4)]
    assert got == qualities


def test_hints_never_change_a_failing_reviews_rating() -> None:
    assert drill_quality(DrillResult("wrong_answer", attempts=1, hidden_passed=1, hints_opened=3)) == 2
    assert drill_quality(DrillResult("rejected", attempts=1, hints_opened=1)) == 0
