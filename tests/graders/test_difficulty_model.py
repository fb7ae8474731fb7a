"""The Rasch fit (graders.difficulty.rasch): pure, no database."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.difficulty import rasch


def synthetic(seed: int, drills: int = 12, learners: int = 150, per_drill: int = 60) -> tuple[list[float], list]:
    rng = np.random.default_rng(seed)
    truth = np.linspace(-2.0, 2.0, drills)
    skill = rng.normal(0.0, 1.0, learners)
    attempts = []
    for d in range(drills):
        for u in rng.choice(learners, per_drill, replace=False):
            passed = rng.random() < 1.0 / (1.0 + math.exp(-(skill[u] - truth[d])))
            attempts.append(rasch.Attempt(int(u), d, bool(passed)))
    return list(truth), attempts


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_it_recovers_the_ordering_of_known_difficulties(seed: int) -> None:
    truth, attempts = synthetic(seed)
    fit = rasch.fit(attempts)
    assert fit.converged
    fitted = [fit.drills[d].difficulty for d in range(len(truth))]
    assert rasch.spearman(fitted, truth) >= 0.9


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_it_does_not_depend_on_how_learners_are_named_or_attempts_ordered(seed: int, shuffle: int) -> None:
    _, attempts = synthetic(seed, drills=6, learners=40, per_drill=15)
    rng = np.random.default_rng(shuffle)
    names = rng.permutation(1000)[:40]
    renamed = [rasch.Attempt(int(names[a.learner]), a.drill, a.passed) for a in attempts]
    renamed = [renamed[i] for i in rng.permutation(len(renamed))]
    one, other = rasch.fit(attempts), rasch.fit(renamed)
    for drill, estimate in one.drills.items():
        assert math.isclose(estimate.difficulty, other.drills[drill].difficulty, abs_tol=1e-6)
        assert math.isclose(estimate.standard_error, other.drills[drill].standard_error, abs_tol=1e-6)
    for learner, skill in one.skills.items():
        assert math.isclose(skill, other.skills[int(names[learner])], abs_tol=1e-6)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 8), st.integers(0, 4), st.booleans()),
        min_size=1,
        max_size=60,
        unique_by=lambda row: (row[0], row[1]),
    )
)
def test_every_estimate_is_finite_whatever_the_attempts(rows: list[tuple[int, int, bool]]) -> None:
    fit = rasch.fit(rasch.Attempt(u, d, ok) for u, d, ok in rows)
    assert fit.converged
    for estimate in fit.drills.values():
        assert math.isfinite(estimate.difficulty) and math.isfinite(estimate.standard_error)
        assert 0 < estimate.standard_error <= rasch.PRIOR_DIFFICULTY
    assert all(math.isfinite(skill) for skill in fit.skills.values())


def test_a_drill_everyone_passed_is_easier_than_one_everyone_failed_and_both_stay_finite() -> None:
    attempts = [rasch.Attempt(u, "all-pass", True) for u in range(30)]
    attempts += [rasch.Attempt(u, "all-fail", False) for u in range(30)]
    attempts += [rasch.Attempt(u, "half", u % 2 == 0) for u in range(30)]
    fit = rasch.fit(attempts)
    easy, hard, half = (fit.drills[key] for key in ("all-pass", "all-fail", "half"))
    assert -10 < easy.difficulty < half.difficulty < hard.difficulty < 10
    assert (easy.attempts, easy.passed, hard.passed, half.passed) == (30, 30, 0, 15)


def test_more_attempts_give_a_smaller_standard_error() -> None:
    few = rasch.fit(rasch.Attempt(u, 1, u % 2 == 0) for u in range(10)).drills[1]
    many = rasch.fit(rasch.Attempt(u, 1, u % 2 == 0) for u in range(200)).drills[1]
    assert many.standard_error < few.standard_error


def test_it_fits_nothing_to_nothing() -> None:
    fit = rasch.fit([])
    assert fit.drills == {} and fit.skills == {} and fit.converged


def test_a_label_is_flagged_only_when_the_fit_is_surely_past_its_band() -> None:
    assert rasch.band_cuts([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0, -3.0]) == pytest.approx([-2 / 3, 2 / 3])
    cuts = [-1.0, 1.0]
    assert [rasch.fitted_band(b, cuts) for b in (-2.0, 0.0, 2.0)] == [0, 1, 2]
    assert [rasch.quantile_band(q) for q in (0.0, 0.3, 0.5, 2 / 3, 1.0)] == [0, 0, 1, 2, 2]
    assert rasch.disagreement(2.5, 0.2, 0, cuts) == 1  # labelled easy, surely hard
    assert rasch.disagreement(-2.5, 0.2, 2, cuts) == -1  # labelled hard, surely easy
    assert rasch.disagreement(-1.2, 0.2, 1, cuts) == 0  # below medium's edge, but within two errors
    assert rasch.disagreement(2.5, 2.0, 0, cuts) == 0  # far off, but too unsure
    assert rasch.disagreement(0.0, 0.1, 1, cuts) == 0


def test_spearman_and_quantiles_rank_with_ties() -> None:
    assert rasch.spearman([1, 2, 3], [10, 20, 30]) == 1.0
    assert rasch.spearman([1, 2, 3], [3, 2, 1]) == -1.0
    assert rasch.spearman([1, 1, 1], [1, 2, 3]) == 0.0
    assert rasch.quantiles({"a": 0.0, "b": 1.0, "c": 1.0, "d": 2.0}) == {"a": 0.0, "b": 0.5, "c": 0.5, "d": 1.0}
    assert rasch.quantiles({"only": 3.0}) == {"only": 0.5}
