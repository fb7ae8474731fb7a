"""Fitting a learner's FSRS parameters, and the held-out test that decides whether to keep them.

Runs on the worker (``cards.tasks.optimise_parameters``): :func:`fit` imports the package's
optimizer, which needs torch, pandas and tqdm, only when it is called, so importing this module
stays light. Everything else is pure Python and shared with the scoring
(:mod:`cards.scheduling.evaluate`): the same replay, the same log loss.

1. Time split: the reviews are ordered by day and the split day is where ``TRAIN_SHARE`` of the
   scored reviews (``t`` > 0) lie before it. Training sees only the reviews before that day.
2. Both parameter sets (the learner's current ones and the fitted ones) replay every card's full
   history, and are scored on the reviews from the split day on: the held-out log loss.
3. The fitted parameters are kept only if their held-out log loss is lower.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fsrs.scheduler import DEFAULT_PARAMETERS

from cards.scheduling import evaluate, fsrs6

TRAIN_SHARE = 0.8
# The package's optimizer returns the defaults below one mini-batch of scored reviews (512), and it
# sees only the training share: about 640 scored reviews in all.
MIN_TRAIN_REVIEWS = 512
MIN_REVIEWS = math.ceil(MIN_TRAIN_REVIEWS / TRAIN_SHARE)


@dataclass(frozen=True)
class Split:
    day: int  # the first held-out day
    train_reviews: int  # scored reviews (t > 0) before it
    test_reviews: int


def scored_days(reviews: Sequence[evaluate.Review]) -> list[int]:
    """The day of every review that is scored (after a card's first, ``t`` > 0), sorted."""
    days: list[int] = []
    for history in evaluate.by_card(reviews).values():
        days.extend(b.day for a, b in zip(history, history[1:], strict=False) if b.day > a.day)
    return sorted(days)


def time_split(reviews: Sequence[evaluate.Review], share: float = TRAIN_SHARE) -> Split | None:
    """Step 1; None when there is nothing to hold out."""
    days = scored_days(reviews)
    if len(days) < 2:
        return None
    day = days[min(len(days) - 1, int(len(days) * share))]
    train = sum(1 for d in days if d < day)
    if train == 0:
        return None
    return Split(day=day, train_reviews=train, test_reviews=len(days) - train)


def held_out_log_loss(
    reviews: Sequence[evaluate.Review], parameters: Sequence[float] | None, split_day: int
) -> tuple[float, int]:
    """Step 2 for one parameter set: log loss over the scored reviews on or after ``split_day``."""
    points = [p for p in evaluate.test_points(reviews, fsrs6.scheduler(parameters)) if p.day >= split_day]
    if not points:
        return float("nan"), 0
    return evaluate.log_loss([p.y for p in points], [p.p_fsrs for p in points]), len(points)


def fit(reviews: Sequence[evaluate.Review]) -> list[float]:
    """The package's optimizer on these reviews (each at noon UTC of its day). Imports torch."""
    from fsrs import Rating, ReviewLog
    from fsrs.optimizer import Optimizer  # torch, pandas and tqdm: the worker only

    ids: dict[str, int] = {}
    logs = [
        ReviewLog(
            card_id=ids.setdefault(review.card_id, len(ids) + 1),
            rating=Rating(review.rating),
            review_datetime=fsrs6.noon_utc(review.day),
            review_duration=None,
        )
        for review in reviews
    ]
    return [float(value) for value in Optimizer(logs).compute_optimal_parameters()]


@dataclass(frozen=True)
class Outcome:
    split: Split | None
    parameters: list[float] | None  # the fitted ones, None when nothing was fitted
    loss_before: float | None
    loss_after: float | None
    test_points: int
    keep: bool
    message: str


def optimise(reviews: Sequence[evaluate.Review], current: Sequence[float] | None) -> Outcome:
    """Steps 1-3: fit on the past, keep the result only if it predicts the held-out future better."""
    split = time_split(reviews)
    if split is None or split.train_reviews < MIN_TRAIN_REVIEWS:
        have = len(scored_days(reviews))
        message = (
            f"Default parameters until {max(MIN_REVIEWS, have + 1)} reviews ({have} so far): the fit learns "
            f"from the earlier {TRAIN_SHARE:.0%} of them and needs {MIN_TRAIN_REVIEWS}."
        )
        return Outcome(split, None, None, None, 0, False, message)
    fitted = fit([review for review in reviews if review.day < split.day])
    before, n = held_out_log_loss(reviews, current or DEFAULT_PARAMETERS, split.day)
    after, _ = held_out_log_loss(reviews, fitted, split.day)
    keep = after < before
    verdict = "kept" if keep else "not kept: the current parameters predict better"
    message = f"Held-out log loss {before:.4f} -> {after:.4f} on {n} reviews; new parameters {verdict}."
    return Outcome(split, fitted, before, after, n, keep, message)


__all__ = ["MIN_REVIEWS", "MIN_TRAIN_REVIEWS", "Outcome", "Split", "fit", "held_out_log_loss", "optimise", "time_split"]
