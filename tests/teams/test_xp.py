"""The XP rules and the board order, without a database."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from teams.xp import (
    NEUTRAL_RETENTION,
    ReviewFact,
    SubmissionFact,
    board_score,
    drill_awards,
    rank_key,
    review_totals,
    true_retention,
)

DAY = date(2026, 3, 2)
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def test_it_gives_one_point_for_good_and_easy_only() -> None:
    facts = [ReviewFact(card, DAY, q) for card, q in enumerate([0, 1, 3, 4, 5])]
    assert review_totals(facts).xp == 2


def test_it_gives_nothing_for_same_day_repeats() -> None:
    facts = [ReviewFact(1, DAY, 1), ReviewFact(1, DAY, 4, same_day_repeat=True)]
    totals = review_totals(facts)
    assert (totals.xp, totals.reviews) == (0, 1)


def test_it_gives_xp_for_a_card_at_most_once_a_day() -> None:
    facts = [ReviewFact(1, DAY, 5), ReviewFact(1, DAY, 5), ReviewFact(1, DAY + timedelta(days=1), 5)]
    assert review_totals(facts).xp == 2


def test_it_gives_nothing_for_reviews_of_a_private_card() -> None:
    totals = review_totals([ReviewFact(1, DAY, 5, interval_before=30, shared=False), ReviewFact(2, DAY, 5)])
    assert (totals.xp, totals.reviews, totals.mature_reviews) == (1, 1, 0)


def test_it_gives_no_review_xp_for_grader_made_reviews() -> None:
    assert review_totals([ReviewFact(1, DAY, 5, source="grader")]).xp == 0


def test_a_right_output_answer_earns_xp_and_counts_as_a_review() -> None:
    """A typed output answer is the learner's own (the site only checks it): XP and the board's reviews."""
    totals = review_totals([ReviewFact(1, DAY, 4, source="output"), ReviewFact(2, DAY, 1, source="output")])
    assert (totals.xp, totals.reviews) == (1, 2)


def test_it_counts_mature_reviews_for_retention() -> None:
    facts = [ReviewFact(1, DAY, 3, interval_before=21), ReviewFact(2, DAY, 2, interval_before=30)]
    facts.append(ReviewFact(3, DAY, 5, interval_before=20))
    totals = review_totals(facts)
    assert (totals.mature_reviews, totals.mature_passed, totals.reviews) == (2, 1, 3)


def test_it_pays_ten_for_a_first_accepted_drill_and_five_more_on_the_first_try() -> None:
    subs = [SubmissionFact(7, T0, "submit", True, 1), SubmissionFact(7, T0 + timedelta(hours=1), "submit", True, 2)]
    subs.append(SubmissionFact(8, T0, "submit", False, 3))
    subs.append(SubmissionFact(8, T0 + timedelta(minutes=5), "submit", True, 4))
    awards = {a.drill_id: a for a in drill_awards(subs)}
    assert (awards[7].xp, awards[7].first_try, awards[7].submission_id) == (15, True, 1)
    assert (awards[8].xp, awards[8].first_try, awards[8].submission_id) == (10, False, 4)


def test_it_does_not_let_run_examples_spend_or_earn_the_first_try() -> None:
    subs = [SubmissionFact(7, T0, "examples", True, 1), SubmissionFact(7, T0 + timedelta(minutes=1), "submit", True, 2)]
    assert [(a.xp, a.submission_id) for a in drill_awards(subs)] == [(15, 2)]


def test_it_pays_nothing_for_a_drill_never_accepted() -> None:
    assert drill_awards([SubmissionFact(7, T0, "submit", False, 1)]) == []


def test_it_uses_a_neutral_retention_below_ten_mature_reviews() -> None:
    assert true_retention(9, 9) is None
    assert board_score(100, 9, 0) == round(100 * (0.5 + 0.5 * NEUTRAL_RETENTION), 4)
    assert board_score(100, 10, 10) == 100.0
    assert board_score(100, 10, 5) == 75.0


def test_it_ranks_by_score_then_xp_then_join_then_user_id() -> None:
    rows = [(50.0, 60, 2.0, 9), (50.0, 70, 3.0, 8), (50.0, 60, 1.0, 7), (50.0, 60, 1.0, 3), (80.0, 80, 9.0, 1)]
    ordered = sorted(rows, key=lambda r: rank_key(*r))
    assert [r[3] for r in ordered] == [1, 8, 3, 7, 9]


def test_it_keeps_the_rule_modules_free_of_django() -> None:
    import subprocess
    import sys

    code = (
        "import sys, teams.xp, teams.streaks; assert not any(m.startswith(('django', 'celery')) for m in sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
