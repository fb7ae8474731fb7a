"""SM-2 against FSRS-6 on synthetic learners: the retention each reaches and the reviews per day it costs.

    .venv/bin/python bench/scheduler.py [--learners 10] [--days 90] [--new-per-day 20] [--retention 0.90]
    nice -n 19 .venv/bin/python bench/scheduler.py --fits --new-per-day 10 [--learners 100] [--days 50]
        [--cached] [--margins 1.645,2] [--minimums 200,500,1000,1500,2000] [--workers 1]
    .venv/bin/python bench/scheduler.py --fire [--learners 10] [--days 90] [--new-per-day 20] [--transfer 0.5]

``--fire`` measures drills' implicit credit (``cards.scheduling.fire``): one card in eight is a drill that
builds on four cards learnt before it (the bundled deck: 79 drills in ~610 cards, each needing a few
concepts); passing it (Good or Easy) really exercises them: the learner's true memory of each gets
``--transfer`` of a Good review (an assumption the table varies: 0.5, and 0 where drills transfer nothing).
FSRS at ``--retention`` schedules the same learners without credit and with the discounted credit
(``fire.WEIGHT``); the table gives reviews a day at the same desired (predicted) retention, the mean
recall FSRS predicted at the reviews, and the true retention they reached. It is the scheduler table's own
simulation (``simulate``) with a credit hook (``DrillCredit``: which cards each drill builds on, and what a
pass does to both memories), so the two measure one model of a learner.

``--fits`` tests the FSRS fit's keep rule instead (``cards.scheduling.fitting``; the fits need torch): each
synthetic learner of ``bench/fit_cache.py``'s two arms (true parameters the defaults, or unlike them) studies
``--days`` days under FSRS at the defaults, and the production fit runs on that log once (cached in
``bench/fits.jsonl``); the learner then goes on 120 days, and the same fit is judged on held-out windows
ending 0-120 days after its log (cached in ``bench/widened.jsonl``; ``--cached`` scores only what is there).
A fit is worse when its expected log loss on 30 fresh days after the window (each review's recall
probability from the true model, so no outcome noise) is not below the defaults', better when it is below
by more than ``fitting.WORTH_KEEPING``. Prints, with Wilson 95 % intervals and the number of learners, how
often the production rule kept a worse fit and rejected a better one, each learner judged once at the
rule's minimum; the same for other minimums and margins; and the fits on their own 50-day windows.
Figures: docs/scheduling.md, "Why this margin, and this minimum".

Each synthetic learner studies a deck for ``--days`` days with the same daily new-card limit under
each scheduler in turn (the project's own ``cards.scheduling.schedulers``, exactly as the review
flow calls them; SM-2 is the baseline in the same run). Every day they review what is due, then
learn new cards; a card rated Again (under SM-2 also Hard) comes back once more that day, rated
Good. Pure Python, no Django, no database.

The learner's memory is FSRS-6 with parameters of their own: the package's defaults with the
initial stabilities and the recall-growth factor scaled per learner (log-normal), and a per-card
difficulty shift, so FSRS at its default parameters does not schedule the true model. Recall is
drawn from that model's retrievability; a recalled card is rated Hard, Good or Easy
(15 / 75 / 10 %). This favours FSRS in kind (the ground truth has FSRS's form), which is why the
table also shows what each scheduler's reviews buy: cards expected to be recalled on the last day.

Prints one row per scheduler: true retention (share of reviews of cards seen on an earlier day
that were recalled), reviews per day (same-day repeats included), cards expected to be recalled at
the end, and reviews per such card.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fsrs.scheduler import DEFAULT_PARAMETERS, LOWER_BOUNDS_PARAMETERS, UPPER_BOUNDS_PARAMETERS  # noqa: E402

from cards.scheduling import fire, fsrs6, sm2  # noqa: E402
from cards.scheduling.schedulers import CardMemory, FSRSScheduler, Scheduler, SM2Scheduler  # noqa: E402

START = date(2026, 1, 5)
QUALITY = {1: int(sm2.Rating.AGAIN), 2: int(sm2.Rating.HARD), 3: int(sm2.Rating.GOOD), 4: int(sm2.Rating.EASY)}


@dataclass
class Result:
    reviews: int = 0
    recall_reviews: int = 0
    recalled: int = 0
    predicted: float = 0.0  # FSRS's predicted recall summed over recall reviews (0 under SM-2)
    credits: int = 0  # implicit credits given (``DrillCredit``)
    expected_known: float = 0.0


def learner_parameters(rng: random.Random) -> tuple[float, ...]:
    """The package's defaults, with initial stabilities and recall growth scaled for this learner."""
    w = list(DEFAULT_PARAMETERS)
    scale = math.exp(rng.gauss(0, 0.4))
    for k in range(4):
        w[k] *= scale
    w[8] *= math.exp(rng.gauss(0, 0.15))
    return tuple(
        min(max(v, lo), hi) for v, lo, hi in zip(w, LOWER_BOUNDS_PARAMETERS, UPPER_BOUNDS_PARAMETERS, strict=True)
    )


def grade(rng: random.Random, recalled: bool) -> int:
    """An FSRS rating 1-4 for one answer."""
    if not recalled:
        return 1
    draw = rng.random()
    return 2 if draw < 0.15 else 3 if draw < 0.90 else 4


@dataclass
class Learner:
    """One synthetic learner's run: the true model, and both memories (scheduler's and true) and due days."""

    truth: fsrs6.FSRSScheduler
    scheduler: Scheduler
    fsrs: fsrs6.Engine | None  # the scheduler's FSRS engine (None under SM-2), built once
    memory: dict[int, CardMemory] = field(default_factory=dict)
    true_memory: dict[int, fsrs6.Memory] = field(default_factory=dict)
    due: dict[int, date] = field(default_factory=dict)


@dataclass
class DrillCredit:
    """The ``--fire`` hook: one card in eight is a drill building on 4 cards learnt in the 6 days before it;
    a passed one gives the true memory of each ``transfer`` of a Good review, and (``weight`` > 0, under FSRS)
    the scheduler's memory ``weight`` of one, moving its due day (``cards.scheduling.fire.credit``)."""

    weight: float
    transfer: float
    builds_on: dict[int, list[int]] = field(default_factory=dict)

    def plan(self, rng: random.Random, cards: int, new_per_day: int) -> None:
        """Which earlier cards each drill builds on, drawn from the learner's own generator."""
        for card in range(cards):
            earlier = [c for c in range(card) if c % 8 != 7]
            if card % 8 == 7 and earlier:
                self.builds_on[card] = rng.sample(earlier[-6 * new_per_day :], min(4, len(earlier)))

    def passed(self, learner: Learner, card: int, today: date) -> int:
        """Credit what the drill ``card`` (just passed) builds on; returns how many scheduler credits it gave."""
        given = 0
        for base in self.builds_on.get(card, ()):
            if base not in learner.true_memory or learner.true_memory[base].last_day >= today:
                continue
            learner.true_memory[base] = fire.credit(learner.truth, learner.true_memory[base], today, self.transfer)[0]
            base_memory = learner.memory[base].fsrs
            if self.weight and base_memory is not None and learner.fsrs is not None:
                credited, interval = fire.credit(learner.fsrs, base_memory, today, self.weight)
                learner.memory[base] = CardMemory(sm2=learner.memory[base].sm2, fsrs=credited)
                learner.due[base] = today + timedelta(days=interval)
                given += 1
        return given


def simulate(scheduler: Scheduler, seed: int, days: int, new_per_day: int, credit: DrillCredit | None = None) -> Result:
    """One learner's ``days`` under ``scheduler``; with ``credit``, passed drills credit what they build on."""
    rng = random.Random(seed)
    fsrs = scheduler.fsrs if isinstance(scheduler, FSRSScheduler) else None
    learner = Learner(fsrs6.scheduler(learner_parameters(rng)), scheduler, fsrs)
    shifts = [rng.gauss(0, 1.0) for _ in range(days * new_per_day)]
    if credit is not None:
        credit.plan(rng, days * new_per_day, new_per_day)
    rng = random.Random(seed * 7919 + 1)  # the answers: the same stream for every scheduler
    truth, true_memory, due = learner.truth, learner.true_memory, learner.due
    result = Result()
    next_new = 0
    for offset in range(days):
        today = START + timedelta(days=offset)
        todays = sorted((card for card, day in due.items() if day <= today), key=lambda c: (due[c], c))
        todays += list(range(next_new, next_new + new_per_day))
        next_new += new_per_day
        for card in todays:
            if due.get(card, today) > today:  # credited earlier today: no longer due
                continue
            seen = card in true_memory
            recalled = rng.random() < fsrs6.retrievability(truth, true_memory[card], today) if seen else False
            rating = grade(rng, recalled) if seen else rng.choice([1, 2, 3, 3, 3, 4])
            result.reviews += 1
            if seen:
                result.recall_reviews += 1
                result.recalled += recalled
                fsrs_memory = learner.memory[card].fsrs
                if fsrs is not None and fsrs_memory is not None:
                    result.predicted += fsrs6.retrievability(fsrs, fsrs_memory, today)
            _answer(learner, card, rating, today, shifts[card], False)
            if due[card] == today:  # comes back today: one more answer, rated Good
                result.reviews += 1
                _answer(learner, card, 3, today, shifts[card], True)
            if credit is not None and rating >= 3:
                result.credits += credit.passed(learner, card, today)
    end = START + timedelta(days=days)
    result.expected_known = sum(fsrs6.retrievability(truth, m, end) for m in true_memory.values())
    return result


def _answer(learner: Learner, card: int, rating: int, today: date, shift: float, same_day_repeat: bool) -> None:
    quality = QUALITY[rating]
    memory, true_memory, due = learner.memory, learner.true_memory, learner.due
    step = learner.scheduler.review(memory.get(card, CardMemory(sm2=sm2.SM2State())), quality, today, same_day_repeat)
    memory[card] = step.memory
    if step.again_today and not same_day_repeat:
        due[card] = today
    elif step.interval is not None:
        due[card] = today + timedelta(days=step.interval)
    elif same_day_repeat:  # SM-2's repeat leaves its interval: the card is due that many days on
        due[card] = today + timedelta(days=step.memory.sm2.interval)
    after, _ = fsrs6.review(learner.truth, true_memory.get(card), quality, today)
    difficulty = min(max(after.difficulty + shift, 1.0), 10.0) if card not in true_memory else after.difficulty
    true_memory[card] = fsrs6.Memory(after.stability, difficulty, today)


def fire_table(learners: int, days: int, new_per_day: int, retention: float, transfer: float) -> None:
    print(
        f"{learners} synthetic learners, {days} days, {new_per_day} new cards a day, one in eight a drill building "
        f"on 4 earlier cards; FSRS-6 at desired retention {retention:.2f}\n"
    )
    print(
        "| true transfer | credit weight | reviews/day | predicted recall at reviews | true retention "
        f"| recalled at day {days} | credits/day |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for true_transfer in dict.fromkeys((transfer, 0.0)):
        for weight in (0.0, fire.WEIGHT):
            runs = [
                simulate(
                    FSRSScheduler(desired_retention=retention),
                    seed,
                    days,
                    new_per_day,
                    DrillCredit(weight, true_transfer),
                )  # fmt: skip
                for seed in range(1, learners + 1)
            ]
            reviews = sum(r.reviews for r in runs) / learners / days
            recall_reviews = sum(r.recall_reviews for r in runs)
            predicted = sum(r.predicted for r in runs) / recall_reviews
            recalled = sum(r.recalled for r in runs) / recall_reviews
            known = sum(r.expected_known for r in runs) / learners
            credits = sum(r.credits for r in runs) / learners / days
            print(
                f"| {true_transfer:.2f} | {weight:.2f} | {reviews:.1f} | {predicted:.3f} | {recalled:.3f} "
                f"| {known:.0f} | {credits:.1f} |"
            )


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95 %) of a rate ``k / n``."""
    if n == 0:
        return (0.0, 1.0)
    rate = k / n
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class FitCase:
    """One fit judged on one held-out window: what the keep rule sees, and what the truth says."""

    arm: str
    seed: int
    scored: int  # the scored reviews the fit's log holds (the fit trained on the earlier 80 %)
    comparison: Any  # cards.scheduling.fitting.Comparison on the held-out window
    true_gain: float  # expected log loss of the defaults minus the fit's, on fresh reviews

    @property
    def better(self) -> bool:
        return self.true_gain > 0


def fit_cases(rows: list[dict[str, Any]]) -> list[FitCase]:
    from cards.scheduling import fitting

    return [
        FitCase(
            row["arm"], row["seed"], row["scored"],
            fitting.Comparison(row["n"], len(row["cards"]), row["before"], row["after"], row["se"]),
            row["true_before"] - row["true_after"],
        )
        for row in rows
    ]  # fmt: skip


def cut_cases(rows: list[dict[str, Any]], minimum: int, scored: dict[tuple[str, int], int]) -> list[FitCase]:
    """Each learner of ``bench/widened.jsonl`` once, judged on its first held-out window of ``minimum`` reviews
    or more (``fit_cache.CUTS``: the window ends 0-120 days after the fitted log); learners whose longest window
    is shorter are left out."""
    from cards.scheduling import fitting

    cases = []
    for row in rows:
        cut = next((cut for cut in row["cuts"] if cut["n"] >= minimum), None)
        if cut is not None:
            found = fitting.Comparison(cut["n"], cut["cards"], cut["before"], cut["after"], cut["se"])
            cases.append(
                FitCase(row["arm"], row["seed"], scored.get((row["arm"], row["seed"]), 0), found, cut["true_gain"])
            )
    return cases


def rates(cases: list[FitCase], keep: Any, zone: float = 0.0) -> tuple[int, int, int, int]:
    """(kept worse, worse, rejected better, better) under the rule ``keep(comparison) -> bool``; a fit counts
    as better when its true gain is above ``zone`` (0: better at all)."""
    worse = [case for case in cases if not case.better]
    better = [case for case in cases if case.true_gain > zone]
    return (
        sum(keep(case.comparison) for case in worse),
        len(worse),
        sum(not keep(case.comparison) for case in better),
        len(better),
    )


def rate_text(k: int, n: int) -> str:
    low, high = wilson(k, n)
    return f"{k}/{n} = {k / max(n, 1):.1%} [{low:.1%}, {high:.1%}]"


def rule(minimum: int, z: float) -> Any:
    """The keep rule with another minimum (held-out reviews) and margin (standard errors)."""

    def keep(found: Any) -> bool:
        return bool(found.n >= minimum and found.gain > z * found.se)

    return keep


def fits(
    learners: int,
    days: list[int],
    new_per_day: int,
    workers: int,
    margins: list[float],
    cached: bool,
    minimums: list[int],
) -> None:
    """``--fits``: the keep rule's two error rates on synthetic learners with known true parameters."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import fit_cache

    from cards.scheduling import fitting

    if not cached:
        fit_cache.run(learners, days, new_per_day, workers)
    wanted = {(arm, seed, span) for arm in fit_cache.ARMS for seed in range(1, learners + 1) for span in days}
    rows = [row for k, row in fit_cache.load().items() if (k[0], k[1], k[2]) in wanted and k[3] == new_per_day]
    if not cached:
        fit_cache.run_widened(rows)
    wide = [row for row in fit_cache.load_widened() if (row["arm"], row["seed"], row["days"]) in wanted]
    scored = {(row["arm"], row["seed"]): int(row["scored"]) for row in rows}
    worth = fitting.WORTH_KEEPING
    production = rule(fitting.MIN_TEST_REVIEWS, fitting.MARGIN_SE)
    cases = cut_cases(wide, fitting.MIN_TEST_REVIEWS, scored)
    arms = {arm: sum(case.arm == arm for case in cases) for arm in fit_cache.ARMS}
    held = sorted(case.comparison.n for case in cases) or [0]
    print(
        f"The production rule: {fitting.MIN_TEST_REVIEWS}+ held-out reviews (MIN_REVIEWS = {fitting.MIN_REVIEWS} "
        f"scored) and a gain above {fitting.MARGIN_SE:g} card-clustered standard errors. A fit is worse when its "
        f"true gain (expected log loss on {fit_cache.FRESH_DAYS} fresh days) is <= 0, better when it is above "
        f"WORTH_KEEPING = {worth:g}. {len(cases)} synthetic learners ({', '.join(f'{n} {a}' for a, n in arms.items())}"
        f"), each judged once, on its first window of {fitting.MIN_TEST_REVIEWS}+ held-out reviews ({held[0]}-"
        f"{held[-1]}, median {held[len(held) // 2]}). Rates with Wilson 95 % intervals.\n"
    )
    kw, w, rb, b = rates(cases, production, worth)
    _, _, ra, a = rates(cases, production)
    print("| learners | kept a worse fit | rejected a better fit | rejected one better at all |")
    print("| --- | --- | --- | --- |")
    print(f"| {len(cases)} | {rate_text(kw, w)} | {rate_text(rb, b)} | {rate_text(ra, a)} |")
    print(
        f"\nOther minimums and margins: each learner judged once, on its first window of N+ held-out reviews "
        f"(better: by more than {worth:g})\n"
    )
    print("| held-out N | z | learners | held-out median | kept a worse fit | rejected a better fit | better at all |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for minimum in minimums:
        group = cut_cases(wide, minimum, scored)
        sizes = sorted(case.comparison.n for case in group) or [0]
        for z in margins:
            kw, w, rb, b = rates(group, rule(minimum, z), worth)
            _, _, ra, a = rates(group, rule(minimum, z))
            print(
                f"| {minimum} | {z:g} | {len(group)} | {sizes[len(sizes) // 2]} | {rate_text(kw, w)} | "
                f"{rate_text(rb, b)} | {rate_text(ra, a)} |"
            )
    base = fit_cases(rows)
    print(
        f"\nThe {len(base)} fits on their own held-out window (the last fifth of {days} days: what those histories "
        f"give), the production margin without the minimum:\n"
    )
    print("| arm | scored reviews | fits | kept a worse fit | rejected a better fit | better at all |")
    print("| --- | --- | --- | --- | --- | --- |")
    groups = [(arm, [c for c in base if c.arm == arm]) for arm in fit_cache.ARMS] + [("all", base)]
    for arm, group in groups:
        kw, w, rb, b = rates(group, rule(0, fitting.MARGIN_SE), worth)
        _, _, ra, a = rates(group, rule(0, fitting.MARGIN_SE))
        sizes = sorted(case.scored for case in group) or [0]
        print(
            f"| {arm} | {sizes[0]}-{sizes[-1]} | {len(group)} | {rate_text(kw, w)} | {rate_text(rb, b)} | "
            f"{rate_text(ra, a)} |"
        )
    gains = sorted(case.true_gain for case in base if case.better)
    if gains:
        print(
            f"\nTrue gains of the better fits (expected log loss, fresh reviews): median {gains[len(gains) // 2]:.4f}, "
            f"smallest {gains[0]:.5f}; {sum(g <= worth for g in gains)} of {len(gains)} at most {worth:g}."
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=10)
    parser.add_argument("--days", default="90", help="days of study (with --fits: a comma-separated list)")
    parser.add_argument("--new-per-day", type=int, default=20)
    parser.add_argument("--retention", type=float, default=0.90)
    parser.add_argument("--fits", action="store_true", help="test the FSRS fit's keep rule instead")
    parser.add_argument("--fire", action="store_true", help="measure drills' implicit credit instead")
    parser.add_argument("--transfer", type=float, default=0.5, help="with --fire: what a passed drill truly does")
    parser.add_argument("--workers", type=int, default=1, help="with --fits: processes fitting what is not cached")
    parser.add_argument("--cached", action="store_true", help="with --fits: score only the fits already cached")
    parser.add_argument("--margins", default="1.645,2", help="with --fits: other margins to report")
    parser.add_argument(
        "--minimums", default="200,500,1000,1500,2000", help="with --fits: other minimums (held-out reviews) to report"
    )
    args = parser.parse_args()
    if args.fire:
        fire_table(args.learners, int(args.days), args.new_per_day, args.retention, args.transfer)
        return
    if args.fits:
        margins = [float(z) for z in args.margins.split(",")]
        fits(
            args.learners,
            [int(day) for day in args.days.split(",")],
            args.new_per_day,
            args.workers,
            margins,
            args.cached,
            [int(n) for n in args.minimums.split(",")],
        )
        return
    args.days = int(args.days)
    schedulers: list[tuple[str, Scheduler]] = [
        ("SM-2 (baseline)", SM2Scheduler()),
        (f"FSRS-6 at {args.retention:.2f}", FSRSScheduler(desired_retention=args.retention)),
    ]
    print(
        f"{args.learners} synthetic learners, {args.days} days, {args.new_per_day} new cards a day "
        f"({args.days * args.new_per_day} cards each)\n"
    )
    print(f"| scheduler | true retention | reviews/day | recalled at day {args.days} | reviews per recalled card | s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, scheduler in schedulers:
        started = time.perf_counter()
        results = [simulate(scheduler, seed, args.days, args.new_per_day) for seed in range(1, args.learners + 1)]
        recalled = sum(r.recalled for r in results) / sum(r.recall_reviews for r in results)
        per_day = sum(r.reviews for r in results) / args.learners / args.days
        known = sum(r.expected_known for r in results) / args.learners
        cost = sum(r.reviews for r in results) / sum(r.expected_known for r in results)
        elapsed = time.perf_counter() - started
        print(f"| {name} | {recalled:.3f} | {per_day:.1f} | {known:.0f} | {cost:.2f} | {elapsed:.1f} |")


if __name__ == "__main__":
    main()
