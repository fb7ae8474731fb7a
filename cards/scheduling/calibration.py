"""How well SM-2 and FSRS predict a learner's (or a team's) own recall: the calibration page's figures.

Runs in the web process, on the same code as the command line (:mod:`cards.scheduling.evaluate`):
the same replay, the same log loss, RMSE(bins) and AUC.

1. Time-split folds as srs-benchmark splits (scikit-learn's ``TimeSeriesSplit``, five splits): the
   scored reviews, in time order, are cut into six chunks (at day boundaries); chunks two to six
   are the test folds.
2. Every predictor on the page is scored out of sample, on the same test points:
   SM-2 (learns nothing), FSRS-6 at the package's default parameters (fitted on other people's
   reviews, never on these), and the two zero-parameter baselines AVG and MOVING-AVG, which predict
   each review from the learner's earlier outcomes only (``cards.scheduling.evaluate`` step 5).
   A learner's own fitted parameters were trained on every review before their fit's split day
   (``cards.scheduling.fitting``), most of the folds: they are scored, with all the others, only on
   the held-out tail, the test points from that day on (``scope`` "held_out"), and once that tail
   holds ``MIN_TEST_POINTS``. Until then the page scores the folds without them and says how many
   held-out reviews there are (``pending``). Refitting per fold (srs-benchmark's way) would cost five
   fits of seconds to minutes per page; scoring the tail costs one replay.
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


PREDICTORS = ("fsrs", "fsrs_default", "sm2", "avg", "moving_avg")


@dataclass
class Report:
    test_points: int
    enough: bool
    scores: dict[str, evaluate.Scores] = field(default_factory=dict)
    reliability: dict[str, list[ReliabilityBin]] = field(default_factory=dict)
    months: list[MonthRetention] = field(default_factory=list)
    scope: str = "folds"  # or "held_out": the test points from ``held_out_from`` on (step 2)
    held_out_from: date | None = None
    pending: int | None = None  # fitted parameters waiting for enough held-out reviews: how many so far

    @property
    def beats_moving_avg(self) -> bool | None:
        """Whether FSRS (the learner's parameters, or the defaults while those wait) predicts better (lower
        log loss) than the moving average; None without figures."""
        fsrs, moving = self.scores.get("fsrs") or self.scores.get("fsrs_default"), self.scores.get("moving_avg")
        if not fsrs or not moving or fsrs["log_loss"] is None or moving["log_loss"] is None:
            return None
        return fsrs["log_loss"] < moving["log_loss"]


def test_fold_start(points: Sequence[evaluate.TestPoint], folds: int = FOLDS) -> int | None:
    """Step 1: the first day of the test folds (all but the first of ``folds + 1`` time-ordered chunks).

    The log has days, not instants, so the first chunk ends at a day boundary: the test folds start
    on the day of the point that opens the second chunk, whatever order one day's reviews came in.
    """
    if not points:
        return None
    days = sorted(p.day for p in points)
    return days[len(days) // (folds + 1)]


def test_fold_points(points: Sequence[evaluate.TestPoint], folds: int = FOLDS) -> list[evaluate.TestPoint]:
    """The points of the test folds, in day order."""
    first_day = test_fold_start(points, folds)
    return [p for p in sorted(points, key=lambda p: p.day) if first_day is not None and p.day >= first_day]


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


def report(
    reviews: Sequence[evaluate.Review], parameters: Sequence[float] | None = None, fitted_before: int | None = None
) -> Report:
    """Steps 1-4 for one learner's or one team's reviews (a team's card ids carry the learner).

    ``parameters``: the learner's fitted FSRS parameters (None: the defaults); ``fitted_before``: the first
    day their fit did not train on (None: unknown, so no review is out of sample for them)."""
    everything = evaluate.test_points(reviews, fsrs6.scheduler(None))
    baseline = evaluate.baselines(reviews, everything)
    predictions = {
        "fsrs_default": [p.p_fsrs for p in everything],
        "sm2": [p.p_sm2 for p in everything],
        **baseline,
    }
    first_day = test_fold_start(everything)
    in_days = sorted(range(len(everything)), key=lambda k: everything[k].day)  # as ``test_fold_points``
    chosen = [k for k in in_days if first_day is not None and everything[k].day >= first_day]
    held_out_from = None
    pending = None
    if parameters:
        fitted = evaluate.test_points(reviews, fsrs6.scheduler(parameters))
        predictions["fsrs"] = [p.p_fsrs for p in fitted]
        tail = [k for k in chosen if fitted_before is not None and everything[k].day >= fitted_before]
        if len(tail) >= MIN_TEST_POINTS:
            chosen = tail
            held_out_from = fsrs6.EPOCH + timedelta(days=fitted_before) if fitted_before is not None else None
        else:
            del predictions["fsrs"]
            pending = len(tail)
    else:
        predictions["fsrs"] = predictions.pop("fsrs_default")
    points = [everything[k] for k in chosen]
    result = Report(
        test_points=len(points),
        enough=len(points) >= MIN_TEST_POINTS,
        scope="held_out" if held_out_from is not None else "folds",
        held_out_from=held_out_from,
        pending=pending,
    )
    result.months = monthly_retention(everything)
    if not result.enough:
        return result
    for name in PREDICTORS:
        if name in predictions:
            ps = [predictions[name][k] for k in chosen]
            result.scores[name] = evaluate.scores(points, ps)
            result.reliability[name] = reliability(points, ps)
    return result


__all__ = [
    "MIN_TEST_POINTS",
    "PREDICTORS",
    "MonthRetention",
    "ReliabilityBin",
    "Report",
    "report",
    "test_fold_points",
    "test_fold_start",
]
