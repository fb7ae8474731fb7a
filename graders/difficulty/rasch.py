"""Drill difficulty and learner skill from pass/fail first attempts: a Rasch (1PL IRT) model fitted by MAP.

Pure (numpy only, no Django): the refit job (``graders.difficulty.refit``) and ``bench/difficulty.py`` call it.

The model: learner ``u`` passes drill ``d`` on the first attempt with probability
``sigmoid(skill[u] - difficulty[d])``, both in logits. Gaussian priors (``skill ~ N(0, prior_skill^2)``,
``difficulty ~ N(0, prior_difficulty^2)``) make it a maximum a posteriori fit, which

- fixes the scale's origin (the likelihood alone only sees differences, so any shift fits equally well);
- keeps every estimate finite: a drill everyone passed (or failed) has no maximum-likelihood estimate at all
  (it runs to -inf or +inf), and with few attempts that is most drills;
- shrinks a drill seen by few learners towards the middle, in proportion to how little is known.

Why Rasch MAP rather than Elo. Elo is the same logistic model fitted by one stochastic-gradient step per
attempt, in the order the attempts came: its estimates depend on that order and on the step size K, and each
attempt is used once, when the learner's own estimate was still poor (Pelánek, "Applications of the Elo rating
system in adaptive educational systems", Computers & Education 98, 2016, discusses both effects; the same
author reports Elo close to joint estimation only once items have many attempts). Our data are a batch refitted
nightly, not a stream, and sparse (a drill has tens of first attempts, not thousands), which is where a joint fit
that uses every attempt with every learner's final estimate does best. ``bench/difficulty.py`` measures it:
Rasch MAP against Elo and against the raw solve rate, on the same synthetic attempts (docs/performance.md).

The fit alternates Newton steps on all skills (difficulties fixed) and on all difficulties (skills fixed);
each block's Hessian is diagonal, so a step is a few ``bincount`` calls and the cost is linear in the number of
attempts. Each sub-problem is strictly concave (the priors), so the alternation converges to the joint MAP.
The standard error given for a drill is the posterior's curvature in its own direction,
``1 / sqrt(sum p(1 - p) + 1 / prior_difficulty^2)`` at the fit: it treats the learners' skills as known, so it
is a little optimistic; it is used to say how sure a label's disagreement is, not as an exact interval.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

L = TypeVar("L", bound=Hashable)  # a learner's key (a user id)
D = TypeVar("D", bound=Hashable)  # a drill's key (a drill id)

PRIOR_SKILL = 1.5  # logits: learners' skills spread about this much (a prior, not a fit)
PRIOR_DIFFICULTY = 1.5
MAX_STEP = 2.0  # logits per Newton step: the first steps from 0 on a lopsided drill would otherwise overshoot
TOLERANCE = 1e-8
MAX_ITERATIONS = 500


@dataclass(frozen=True)
class Attempt(Generic[L, D]):
    learner: L
    drill: D
    passed: bool


@dataclass(frozen=True)
class DrillEstimate:
    difficulty: float  # logits: higher is harder; 0 is the prior's middle
    standard_error: float
    attempts: int
    passed: int


@dataclass(frozen=True)
class Fit(Generic[L, D]):
    drills: dict[D, DrillEstimate]
    skills: dict[L, float]
    iterations: int
    converged: bool


def _sigmoid(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # stable for any x, unlike 1 / (1 + exp(-x))


def _newton_block(
    values: NDArray[np.float64],
    index: NDArray[np.intp],
    gradient_sign: float,
    residual: NDArray[np.float64],
    weight: NDArray[np.float64],
    prior: float,
) -> NDArray[np.float64]:
    """One Newton step for every parameter of one block (skills, or difficulties) at once; returns the new values."""
    size = len(values)
    gradient = gradient_sign * np.bincount(index, weights=residual, minlength=size) - values / prior**2
    curvature = np.bincount(index, weights=weight, minlength=size) + 1.0 / prior**2
    step: NDArray[np.float64] = np.clip(gradient / curvature, -MAX_STEP, MAX_STEP)
    return values + step


def fit(
    attempts: Iterable[Attempt[L, D]],
    *,
    prior_skill: float = PRIOR_SKILL,
    prior_difficulty: float = PRIOR_DIFFICULTY,
    tolerance: float = TOLERANCE,
    max_iterations: int = MAX_ITERATIONS,
) -> Fit[L, D]:
    """The MAP skills and difficulties for these attempts (one per learner and drill: the first).

    Learners and drills are indexed in sorted key order when the keys sort (in first-seen order otherwise), so the
    result does not depend on the order the attempts come in.
    """
    rows = list(attempts)
    learners = _keys([row.learner for row in rows])
    drills = _keys([row.drill for row in rows])
    learner_index = {key: i for i, key in enumerate(learners)}
    drill_index = {key: i for i, key in enumerate(drills)}
    u = np.fromiter((learner_index[row.learner] for row in rows), dtype=np.intp, count=len(rows))
    d = np.fromiter((drill_index[row.drill] for row in rows), dtype=np.intp, count=len(rows))
    y = np.fromiter((row.passed for row in rows), dtype=np.float64, count=len(rows))
    skill = np.zeros(len(learners))
    difficulty = np.zeros(len(drills))
    iterations, converged = 0, not rows
    while rows and iterations < max_iterations:
        iterations += 1
        p = _sigmoid(skill[u] - difficulty[d])
        new_skill = _newton_block(skill, u, 1.0, y - p, p * (1 - p), prior_skill)
        p = _sigmoid(new_skill[u] - difficulty[d])
        new_difficulty = _newton_block(difficulty, d, -1.0, y - p, p * (1 - p), prior_difficulty)
        change = max(np.max(np.abs(new_skill - skill)), np.max(np.abs(new_difficulty - difficulty)))
        skill, difficulty = new_skill, new_difficulty
        if change < tolerance:
            converged = True
            break
    p = _sigmoid(skill[u] - difficulty[d])
    information = np.bincount(d, weights=p * (1 - p), minlength=len(drills)) + 1.0 / prior_difficulty**2
    counts = np.bincount(d, minlength=len(drills))
    passes = np.bincount(d, weights=y, minlength=len(drills))
    estimates = {
        key: DrillEstimate(
            difficulty=float(difficulty[i]),
            standard_error=float(1.0 / np.sqrt(information[i])),
            attempts=int(counts[i]),
            passed=int(round(passes[i])),
        )
        for i, key in enumerate(drills)
    }
    return Fit(
        drills=estimates,
        skills={key: float(skill[i]) for i, key in enumerate(learners)},
        iterations=iterations,
        converged=converged,
    )


def _keys(keys: Sequence[L]) -> list[L]:
    unique = list(dict.fromkeys(keys))
    try:
        return sorted(unique)  # type: ignore[type-var]
    except TypeError:
        return unique


def quantiles(values: dict[D, float]) -> dict[D, float]:
    """Each key's place among all, 0 (lowest) to 1 (highest); ties share their mean place; one value is 0.5."""
    if not values:
        return {}
    keys = list(values)
    ranks = average_ranks(np.array([values[key] for key in keys], dtype=np.float64))
    if len(keys) == 1:
        return {keys[0]: 0.5}
    return {key: float(rank / (len(keys) - 1)) for key, rank in zip(keys, ranks, strict=True)}


def average_ranks(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """0-based ranks, ties given the mean of the ranks they span (what Spearman's correlation ranks by)."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    sorted_values = values[order]
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start : end + 1]] = (start + end) / 2.0
        start = end + 1
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (Pearson's on average ranks); 0 when either side is constant."""
    ra = average_ranks(np.asarray(a, dtype=np.float64))
    rb = average_ranks(np.asarray(b, dtype=np.float64))
    ra -= ra.mean()
    rb -= rb.mean()
    denominator = float(np.sqrt((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum() / denominator) if denominator else 0.0


BANDS = 3  # the authored labels: easy, medium, hard
SURE = 2.0  # standard errors beyond a band's edge before a label is called wrong


def band_cuts(difficulties: Sequence[float], bands: int = BANDS) -> list[float]:
    """The fitted difficulties that split the drills into ``bands`` equal groups (tertiles for three labels)."""
    if not difficulties:
        return []
    return [float(np.quantile(np.asarray(difficulties, dtype=np.float64), k / bands)) for k in range(1, bands)]


def fitted_band(difficulty: float, cuts: Sequence[float]) -> int:
    """The band (0 = easiest) a fitted difficulty falls in, given ``band_cuts``."""
    return sum(difficulty > cut for cut in cuts)


def quantile_band(quantile: float, bands: int = BANDS) -> int:
    """The band (0 = easiest) of a drill's place among all (``quantiles``): a lone drill is the middle one."""
    return min(int(quantile * bands), bands - 1)


def disagreement(difficulty: float, standard_error: float, label_band: int, cuts: Sequence[float]) -> int:
    """+1 when the drill is surely harder than its label's band, -1 when surely easier, 0 otherwise.

    "Surely": more than ``SURE`` standard errors past the band's edge, so a drill near an edge, or one with few
    attempts, is not flagged for noise; tertile bands alone would flag about a third of correctly labelled drills.
    """
    if not cuts:
        return 0
    low = cuts[label_band - 1] if label_band > 0 else -np.inf
    high = cuts[label_band] if label_band < len(cuts) else np.inf
    if difficulty - SURE * standard_error > high:
        return 1
    if difficulty + SURE * standard_error < low:
        return -1
    return 0
