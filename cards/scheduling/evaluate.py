"""Score SM-2 and FSRS on a review log the way srs-benchmark scores algorithms.

Why it exists: nobody could see how well either scheduler predicts this project's own learners.
Anyone can check the figures with ``python -m cards.scheduling.evaluate REVLOG.csv --json`` on a
CSV of ``card_id,day,rating`` rows (day: an integer day number; rating 1-4: Again, Hard, Good,
Easy); the calibration page calls the same functions, so the page and the command cannot disagree.

Runs in any process (the command line, the web process, a worker): pure Python, no Django, no
torch (``fsrs.Scheduler`` needs neither), no clock and no randomness.

How a log is scored (srs-benchmark's rules):

1. Per card, reviews in day order (a stable sort: one day's reviews keep the file's order).
2. A test point is every review after the card's first whose ``t`` (days since the card's previous
   review) is above 0. ``y`` is 1 unless the rating is Again; ``i`` is the review's ordinal in its
   card (2 for the second review); ``L`` counts Again ratings on the card's earlier reviews that
   themselves had ``t`` > 0.
3. SM-2 predicts ``p = 0.9 ** (t / I)``, ``I`` the interval the project's SM-2 gave after the
   previous review (Again, Hard, Good, Easy = quality 1, 3, 4, 5). As in the review flow, a review
   on the same day as the card's previous one is a same-day repeat (SM-2 step 7) and leaves the
   SM-2 state as it was.
4. FSRS predicts the retrievability the pinned ``fsrs`` package gives just before the review
   (default parameters unless others are passed, no learning or relearning steps, no fuzz), every
   review replayed with ``Scheduler.review_card`` at noon UTC of its day.
5. Two zero-parameter baselines, from the learner's own outcomes only (srs-benchmark's AVG and, in
   its spirit, MOVING-AVG): AVG predicts the share recalled on all earlier days; MOVING-AVG an
   exponentially weighted moving average of every earlier scored review in log order, each review
   moving it ``MOVING_STEP`` of the way to its outcome. Both start at ``BASELINE_PRIOR``. A model
   that does not beat them has learnt nothing about this learner's cards.
6. Log loss with ``p`` clipped to [1e-15, 1 - 1e-15]; AUC with tied predictions counted half;
   RMSE(bins): the count-weighted root mean square of (mean y - mean p) over the bins that
   :func:`bin_key` puts each point in.
7. ``--parameters`` scores FSRS with other parameters (a learner's fit), beside the defaults on the same
   points; ``--from-day`` scores only the reviews on or after a day (a fit's split day, so the figures are
   out of sample). Every earlier review still shapes each prediction: the replay and the baselines read the
   whole log.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import NotRequired, TypedDict

from fsrs import Card as FSRSCard
from fsrs import Rating as FSRSRating
from fsrs import Scheduler as FSRSScheduler
from fsrs.scheduler import DEFAULT_PARAMETERS

from cards.scheduling import sm2

AGAIN = 1
# The CSV's ratings 1-4 as the project's SM-2 qualities (DESIGN.md: 1 / 3 / 4 / 5).
SM2_QUALITY = {1: int(sm2.Rating.AGAIN), 2: int(sm2.Rating.HARD), 3: int(sm2.Rating.GOOD), 4: int(sm2.Rating.EASY)}
EPSILON = 1e-15
# Day 0 is 1970-01-01; each review happens at noon UTC of its day.
DAY_ZERO_NOON = datetime(1970, 1, 1, 12, tzinfo=UTC)
REQUIRED_COLUMNS = ("card_id", "day", "rating")
BASELINE_PRIOR = 0.9
MOVING_STEP = 0.03
BASELINES = ("avg", "moving_avg")


class RevlogError(ValueError):
    """The CSV cannot be scored; the message names the line."""


@dataclass(frozen=True)
class Review:
    card_id: str
    day: int
    rating: int


@dataclass(frozen=True)
class TestPoint:
    """One review the schedulers are scored on, with what each one predicted for it."""

    card_id: str
    day: int
    t: int
    i: int
    lapses: int
    y: int
    p_sm2: float
    p_fsrs: float


class Scores(TypedDict):
    log_loss: float | None
    rmse_bins: float | None
    auc: float | None


class Report(TypedDict):
    n: int
    sm2: Scores
    fsrs: Scores
    avg: Scores
    moving_avg: Scores
    # With ``--parameters`` or ``--from-day`` (step 7): which FSRS parameters ``fsrs`` ran with ("default" or
    # "given"), the first day scored (None: every day), and the defaults on the same points beside given ones.
    parameters: NotRequired[str]
    from_day: NotRequired[int | None]
    fsrs_default: NotRequired[Scores]


def read_revlog(lines: Iterable[str]) -> list[Review]:
    """Parse the CSV (a header naming card_id, day and rating; other columns are ignored)."""
    reader = csv.DictReader(lines)
    missing = [name for name in REQUIRED_COLUMNS if name not in (reader.fieldnames or [])]
    if missing:
        raise RevlogError(f"line 1: the header lacks {', '.join(missing)} (it needs card_id,day,rating)")
    reviews = []
    for row in reader:
        line = reader.line_num
        card_id = (row["card_id"] or "").strip()
        if not card_id:
            raise RevlogError(f"line {line}: card_id is empty")
        try:
            day = int(row["day"] or "")
        except ValueError:
            raise RevlogError(f"line {line}: day must be an integer, not {row['day']!r}") from None
        try:
            rating = int(row["rating"] or "")
        except ValueError:
            rating = 0
        if rating not in SM2_QUALITY:
            raise RevlogError(f"line {line}: rating must be 1, 2, 3 or 4, not {row['rating']!r}")
        reviews.append(Review(card_id=card_id, day=day, rating=rating))
    return reviews


def by_card(reviews: Iterable[Review]) -> dict[str, list[Review]]:
    """Each card's reviews in day order; a stable sort keeps one day's reviews in the log's order."""
    cards: dict[str, list[Review]] = defaultdict(list)
    for review in reviews:
        cards[review.card_id].append(review)
    return {card_id: sorted(history, key=lambda r: r.day) for card_id, history in cards.items()}


def noon_utc(day: int) -> datetime:
    return DAY_ZERO_NOON + timedelta(days=day)


def fsrs_scheduler(parameters: Sequence[float] = DEFAULT_PARAMETERS, desired_retention: float = 0.9) -> FSRSScheduler:
    """The FSRS scheduler the scoring replays: no learning or relearning steps, no fuzz."""
    return FSRSScheduler(
        parameters=parameters,
        desired_retention=desired_retention,
        learning_steps=(),
        relearning_steps=(),
        enable_fuzzing=False,
    )


def card_points(card_id: str, history: Sequence[Review], scheduler: FSRSScheduler) -> list[TestPoint]:
    """Replay one card's reviews through both schedulers and keep the reviews they are scored on."""
    points = []
    sm2_state = sm2.SM2State()
    # fsrs's Card reads the clock unless given an id and a due date.
    fsrs_card = FSRSCard(card_id=1, due=noon_utc(history[0].day))
    lapses = 0
    previous_day: int | None = None
    for ordinal, review in enumerate(history, start=1):
        when = noon_utc(review.day)
        t = None if previous_day is None else review.day - previous_day
        if t is not None and t > 0:
            points.append(
                TestPoint(
                    card_id=card_id,
                    day=review.day,
                    t=t,
                    i=ordinal,
                    lapses=lapses,
                    y=int(review.rating != AGAIN),
                    p_sm2=0.9 ** (t / sm2_state.interval),
                    p_fsrs=scheduler.get_card_retrievability(fsrs_card, current_datetime=when),
                )
            )
            lapses += review.rating == AGAIN
        if t is None or t > 0:
            sm2_state = sm2.review(sm2_state, SM2_QUALITY[review.rating])
        fsrs_card, _ = scheduler.review_card(fsrs_card, FSRSRating(review.rating), review_datetime=when)
        previous_day = review.day
    return points


def test_points(reviews: Iterable[Review], scheduler: FSRSScheduler | None = None) -> list[TestPoint]:
    scheduler = scheduler or fsrs_scheduler()
    points = []
    for card_id, history in by_card(reviews).items():
        points.extend(card_points(card_id, history, scheduler))
    return points


def point_losses(ys: Sequence[int], ps: Sequence[float]) -> list[float]:
    """Each point's log loss, ``p`` clipped as in step 5."""
    losses = []
    for y, p in zip(ys, ps, strict=True):
        p = min(max(p, EPSILON), 1 - EPSILON)
        losses.append(-math.log(p) if y else -math.log(1 - p))
    return losses


def baselines(reviews: Iterable[Review], points: Sequence[TestPoint]) -> dict[str, list[float]]:
    """Step 5: AVG's and MOVING-AVG's prediction for each of ``points`` (``test_points`` of ``reviews``)."""
    ordered = sorted(reviews, key=lambda r: r.day)  # stable: the log's order within a day, as ``by_card``
    ordinal: dict[str, int] = defaultdict(int)
    last_day: dict[str, int] = {}
    found: dict[tuple[str, int], tuple[float, float]] = {}
    recalled = total = 0
    today_recalled = today_total = 0
    today: int | None = None
    moving = BASELINE_PRIOR
    for review in ordered:
        if review.day != today:
            recalled, total, today_recalled, today_total = recalled + today_recalled, total + today_total, 0, 0
            today = review.day
        ordinal[review.card_id] += 1
        previous = last_day.get(review.card_id)
        last_day[review.card_id] = review.day
        if previous is None or review.day <= previous:
            continue
        y = int(review.rating != AGAIN)
        found[(review.card_id, ordinal[review.card_id])] = (recalled / total if total else BASELINE_PRIOR, moving)
        moving += MOVING_STEP * (y - moving)
        today_recalled += y
        today_total += 1
    pairs = [found[(point.card_id, point.i)] for point in points]
    return {"avg": [a for a, _ in pairs], "moving_avg": [m for _, m in pairs]}


def log_loss(ys: Sequence[int], ps: Sequence[float]) -> float:
    return sum(point_losses(ys, ps)) / len(ys)


def auc(ys: Sequence[int], ps: Sequence[float]) -> float | None:
    """The probability that a recalled review was predicted higher than a forgotten one, ties counted
    half (Mann-Whitney with mid-ranks). None when only one outcome occurs: nothing to rank."""
    positives = sum(ys)
    negatives = len(ys) - positives
    if not positives or not negatives:
        return None
    order = sorted(range(len(ps)), key=lambda k: ps[k])
    rank_sum = 0.0
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and ps[order[end + 1]] == ps[order[start]]:
            end += 1
        mid_rank = (start + end) / 2 + 1
        rank_sum += mid_rank * sum(ys[order[k]] for k in range(start, end + 1))
        start = end + 1
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def bin_key(t: int, i: int, lapses: int) -> tuple[float, float, float]:
    """srs-benchmark's bins: interval, review ordinal and lapses on geometric scales."""
    return (
        round(2.48 * 3.62 ** math.floor(math.log(t) / math.log(3.62)), 2),
        round(1.99 * 1.89 ** math.floor(math.log(i) / math.log(1.89))),
        round(1.65 * 1.73 ** math.floor(math.log(lapses) / math.log(1.73))) if lapses else 0,
    )


def rmse_bins(points: Sequence[TestPoint], ps: Sequence[float]) -> float:
    sums: dict[tuple[float, float, float], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for point, p in zip(points, ps, strict=True):
        acc = sums[bin_key(point.t, point.i, point.lapses)]
        acc[0] += point.y
        acc[1] += p
        acc[2] += 1
    squares = sum(count * (y_sum / count - p_sum / count) ** 2 for y_sum, p_sum, count in sums.values())
    return math.sqrt(squares / len(points))


def scores(points: Sequence[TestPoint], ps: Sequence[float]) -> Scores:
    if not points:
        return Scores(log_loss=None, rmse_bins=None, auc=None)
    ys = [point.y for point in points]
    return Scores(log_loss=log_loss(ys, ps), rmse_bins=rmse_bins(points, ps), auc=auc(ys, ps))


def report(points: Sequence[TestPoint], baseline: dict[str, list[float]]) -> Report:
    return Report(
        n=len(points),
        sm2=scores(points, [point.p_sm2 for point in points]),
        fsrs=scores(points, [point.p_fsrs for point in points]),
        avg=scores(points, baseline["avg"]),
        moving_avg=scores(points, baseline["moving_avg"]),
    )


def evaluate(reviews: Iterable[Review], scheduler: FSRSScheduler | None = None) -> Report:
    reviews = list(reviews)
    points = test_points(reviews, scheduler)
    return report(points, baselines(reviews, points))


def evaluate_from(reviews: Iterable[Review], parameters: Sequence[float] | None, from_day: int | None) -> Report:
    """Step 7: FSRS with ``parameters`` (None: the defaults), every predictor scored on the points from
    ``from_day`` on; given parameters come with the defaults' scores on the same points."""
    reviews = list(reviews)
    points = test_points(reviews, fsrs_scheduler(parameters or DEFAULT_PARAMETERS))
    chosen = [p for p in points if from_day is None or p.day >= from_day]
    result = report(chosen, baselines(reviews, chosen))
    result["parameters"] = "given" if parameters else "default"
    result["from_day"] = from_day
    if parameters:
        defaults = [p for p in test_points(reviews) if from_day is None or p.day >= from_day]
        result["fsrs_default"] = scores(defaults, [p.p_fsrs for p in defaults])
    return result


def parse_parameters(text: str) -> list[float]:
    """``--parameters``: FSRS-6's 21 numbers, comma-separated (a JSON list's brackets allowed)."""
    values = [float(part) for part in text.strip().strip("[]").split(",") if part.strip()]
    if len(values) != len(DEFAULT_PARAMETERS):
        raise ValueError(f"FSRS-6 takes {len(DEFAULT_PARAMETERS)} parameters, not {len(values)}")
    return values


def format_table(result: Report) -> str:
    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.4f}"

    lines = [f"{result['n']} test points", f"{'':11}{'log loss':>10}{'RMSE(bins)':>12}{'AUC':>8}"]
    names = ("sm2", "fsrs", "fsrs_default", *BASELINES) if "fsrs_default" in result else ("sm2", "fsrs", *BASELINES)
    for name in names:
        s: Scores = result[name]  # type: ignore[literal-required]
        lines.append(f"{name:11}{cell(s['log_loss']):>10}{cell(s['rmse_bins']):>12}{cell(s['auc']):>8}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cards.scheduling.evaluate",
        description="Score SM-2, FSRS (default parameters), AVG and MOVING-AVG on a review log, as srs-benchmark does.",
    )
    parser.add_argument("revlog", help="a CSV with columns card_id,day,rating (rating 1-4: Again, Hard, Good, Easy)")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of a table")
    parser.add_argument(
        "--parameters", help="score FSRS with these 21 comma-separated parameters (a fit) beside the defaults"
    )
    parser.add_argument(
        "--from-day", type=int, help="score only the reviews on or after this day (a fit's split day: out of sample)"
    )
    args = parser.parse_args(argv)
    try:
        parameters = parse_parameters(args.parameters) if args.parameters else None
    except ValueError as error:
        sys.stderr.write(f"{parser.prog}: --parameters: {error}\n")
        return 2
    try:
        with open(args.revlog, encoding="utf-8", newline="") as handle:
            reviews = read_revlog(handle)
    except (OSError, RevlogError) as error:
        sys.stderr.write(f"{parser.prog}: {args.revlog}: {error}\n")
        return 2
    if parameters is None and args.from_day is None:
        result = evaluate(reviews)  # the keys the command has always printed, and no others
    else:
        result = evaluate_from(reviews, parameters, args.from_day)
    sys.stdout.write(json.dumps(result) + "\n" if args.json else format_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
