"""How well SM-2 and FSRS predict a learner's (or a team's) own recall: the calibration page's figures.

Runs in the web process, on the same code as the command line (:mod:`cards.scheduling.evaluate`):
the same replay, the same log loss, RMSE(bins) and AUC.

1. Time-split folds as srs-benchmark splits (scikit-learn's ``TimeSeriesSplit``, five splits): the
   scored reviews, in time order, are cut into six chunks (at day boundaries); chunks two to six
   are test folds, each scored with what came before it. SM-2 learns nothing; FSRS uses the learner's parameters,
   which the worker fitted only on reviews before its own time split.
2. Every test point is scored by both schedulers, so the two rows compare the same reviews.
3. The reliability diagram bins the predictions in tenths and plots, per bin, the mean prediction
   against the share actually recalled; true retention is the share recalled per calendar month.
4. Below ``MIN_TEST_POINTS`` the page says "not enough data yet" instead of figures.

Pure: no Django, no clock.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

from cards.scheduling import evaluate, fsrs6

FOLDS = 5
MIN_TEST_POINTS = 300
RELIABILITY_BINS = 10


@dataclass(frozen=True)
class ReliabilityBin:
    predicted: float
    recalled: float
    count: int


@dataclass(frozen=True)
class MonthRetention:
    month: date  # the first day of the month
    retention: float
    count: int


@dataclass
class Report:
    test_points: int
    enough: bool
    scores: dict[str, evaluate.Scores] = field(default_factory=dict)
    reliability: dict[str, list[ReliabilityBin]] = field(default_factory=dict)
    months: list[MonthRetention] = field(default_factory=list)


def test_fold_points(points: Sequence[evaluate.TestPoint], folds: int = FOLDS) -> list[evaluate.TestPoint]:
    """Step 1: the points of the test folds (all but the first of ``folds + 1`` time-ordered chunks).

    The log has days, not instants, so the first chunk ends at a day boundary: the test folds start
    on the day of the point that opens the second chunk, whatever order one day's reviews came in.
    """
    if not points:
        return []
    ordered = sorted(points, key=lambda p: p.day)
    first_day = ordered[len(ordered) // (folds + 1)].day
    return [p for p in ordered if p.day >= first_day]


def reliability(points: Sequence[evaluate.TestPoint], ps: Sequence[float]) -> list[ReliabilityBin]:
    """Step 3's diagram data: predictions in tenths, mean prediction and share recalled per non-empty bin."""
    sums: dict[int, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for point, p in zip(points, ps, strict=True):
        acc = sums[min(int(p * RELIABILITY_BINS), RELIABILITY_BINS - 1)]
        acc[0] += p
        acc[1] += point.y
        acc[2] += 1
    return [ReliabilityBin(predicted=s / n, recalled=y / n, count=int(n)) for _, (s, y, n) in sorted(sums.items()) if n]


def monthly_retention(points: Sequence[evaluate.TestPoint]) -> list[MonthRetention]:
    counts: dict[date, list[int]] = defaultdict(lambda: [0, 0])
    for point in points:
        day = fsrs6.EPOCH + timedelta(days=point.day)
        acc = counts[day.replace(day=1)]
        acc[0] += point.y
        acc[1] += 1
    return [MonthRetention(month, recalled / n, n) for month, (recalled, n) in sorted(counts.items())]


def report(reviews: Sequence[evaluate.Review], parameters: Sequence[float] | None = None) -> Report:
    """Steps 1-4 for one learner's or one team's reviews (a team's card ids carry the learner)."""
    everything = evaluate.test_points(reviews, fsrs6.scheduler(parameters))
    points = test_fold_points(everything)
    result = Report(test_points=len(points), enough=len(points) >= MIN_TEST_POINTS)
    result.months = monthly_retention(everything)
    if not result.enough:
        return result
    for name in ("sm2", "fsrs"):
        ps = [p.p_sm2 if name == "sm2" else p.p_fsrs for p in points]
        result.scores[name] = evaluate.scores(points, ps)
        result.reliability[name] = reliability(points, ps)
    return result


__all__ = ["MIN_TEST_POINTS", "MonthRetention", "ReliabilityBin", "Report", "report", "test_fold_points"]
