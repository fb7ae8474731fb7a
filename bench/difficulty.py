"""How many first attempts per drill the difficulty fit needs: known difficulties recovered from synthetic learners.

    .venv/bin/python bench/difficulty.py                       # 60 drills, 400 learners, 20 repetitions
    .venv/bin/python bench/difficulty.py --selection 0 --reps 50

Each repetition draws a fresh world: ``--drills`` drills with true difficulties ~ N(0, 1) logits and
``--learners`` learners with true skills ~ N(0, 1); each drill's first attempts come from ``n`` distinct learners,
drawn with weights ``exp(selection * skill * difficulty)`` (``--selection`` > 0: able learners reach the hard drills
more often, as on the site, where the hard drills come later in a track), and each attempt passes with probability
``sigmoid(skill - difficulty)``, the Rasch model itself. Attempts are then put in a random order (for Elo).

The same attempts are fitted three ways, and each fit's drill difficulties are compared with the truth by
Spearman's rank correlation:

1. Rasch MAP (``graders.difficulty.rasch.fit``): what the refit job runs;
2. Elo, the baseline: one logistic step per attempt in arrival order, with Pelánek's uncertainty function
   ``K = 1 / (1 + 0.05 * count)`` (Computers & Education 98, 2016) for both the learner and the drill;
3. the raw solve rate (passes + 0.5) / (attempts + 1), which ignores who attempted.

It prints, per ``n``, the median and the 10th percentile of each method's Spearman over the repetitions, the Rasch
fit's time, and how a label would be flagged: the share of drills whose true tertile is their label that the hub
flags (false flags), and the share of drills given a label two bands off (easy for a true hard one, or the reverse)
that it flags (caught). Last, the smallest ``n`` whose Rasch median, and whose 10th percentile, reach ``--target``.
No Django, no database: the model module is pure.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from graders.difficulty import rasch  # noqa: E402  (after the path is set)


def simulate(
    rng: np.random.Generator, drills: int, learners: int, per_drill: int, selection: float
) -> tuple[np.ndarray, list[rasch.Attempt[int, int]]]:
    """True difficulties and the first attempts (in a random arrival order) of one synthetic world."""
    difficulty = rng.normal(0.0, 1.0, drills)
    skill = rng.normal(0.0, 1.0, learners)
    attempts: list[rasch.Attempt[int, int]] = []
    for d in range(drills):
        weights = np.exp(selection * skill * difficulty[d])
        chosen = rng.choice(learners, size=min(per_drill, learners), replace=False, p=weights / weights.sum())
        passed = rng.random(len(chosen)) < 1.0 / (1.0 + np.exp(-(skill[chosen] - difficulty[d])))
        attempts += [rasch.Attempt(int(u), d, bool(ok)) for u, ok in zip(chosen, passed, strict=True)]
    order = rng.permutation(len(attempts))
    return difficulty, [attempts[i] for i in order]


def elo(attempts: list[rasch.Attempt[int, int]], drills: int) -> np.ndarray:
    skill: dict[int, float] = {}
    seen: dict[int, int] = {}
    difficulty = np.zeros(drills)
    count = np.zeros(drills)
    for row in attempts:
        theta = skill.get(row.learner, 0.0)
        p = 1.0 / (1.0 + np.exp(-(theta - difficulty[row.drill])))
        error = float(row.passed) - p
        skill[row.learner] = theta + error / (1.0 + 0.05 * seen.get(row.learner, 0))
        difficulty[row.drill] -= error / (1.0 + 0.05 * count[row.drill])
        seen[row.learner] = seen.get(row.learner, 0) + 1
        count[row.drill] += 1
    return difficulty


def solve_rate(attempts: list[rasch.Attempt[int, int]], drills: int) -> np.ndarray:
    passes = np.zeros(drills)
    counts = np.zeros(drills)
    for row in attempts:
        passes[row.drill] += row.passed
        counts[row.drill] += 1
    return -(passes + 0.5) / (counts + 1.0)


def flags(truth: np.ndarray, fit: rasch.Fit[int, int], rng: np.random.Generator) -> tuple[float, float]:
    """(false flags among true labels, caught among labels two bands off), labels drawn from the true tertiles."""
    true_cuts = rasch.band_cuts(list(truth))
    label = np.array([rasch.fitted_band(b, true_cuts) for b in truth])
    wrong = rng.random(len(truth)) < 0.2  # a fifth of the drills labelled at the other extreme, where one exists
    wrong &= label != 1
    label = np.where(wrong, 2 - label, label)
    estimates = [fit.drills[d] for d in range(len(truth))]
    cuts = rasch.band_cuts([e.difficulty for e in estimates])
    flagged = np.array(
        [rasch.disagreement(e.difficulty, e.standard_error, int(label[d]), cuts) != 0 for d, e in enumerate(estimates)]
    )
    false_share = float(flagged[~wrong].mean()) if (~wrong).any() else 0.0
    caught = float(flagged[wrong].mean()) if wrong.any() else float("nan")
    return false_share, caught


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drills", type=int, default=60)
    parser.add_argument("--learners", type=int, default=400)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--attempts", default="5,10,20,30,40,45,50,55,60,80,120", help="attempts per drill, a list")
    parser.add_argument("--selection", type=float, default=0.5)
    parser.add_argument("--target", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=41)
    args = parser.parse_args()
    sizes = [int(n) for n in args.attempts.split(",")]
    print(
        f"{args.drills} drills, {args.learners} learners, selection {args.selection}, {args.reps} repetitions, "
        f"seed {args.seed}; Spearman against the true difficulties, median / 10th percentile"
    )
    print("| attempts per drill | Rasch MAP | Elo | solve rate | Rasch fit ms (median) | false flags | caught |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    reached: dict[str, int | None] = {"median": None, "p10": None}
    for n in sizes:
        rng = np.random.default_rng([args.seed, n])
        scores: dict[str, list[float]] = {"rasch": [], "elo": [], "rate": []}
        times, false_flags, caught = [], [], []
        for _ in range(args.reps):
            truth, attempts = simulate(rng, args.drills, args.learners, n, args.selection)
            start = time.perf_counter()
            fit = rasch.fit(attempts)
            times.append((time.perf_counter() - start) * 1000)
            fitted = [fit.drills[d].difficulty for d in range(args.drills)]
            scores["rasch"].append(rasch.spearman(fitted, truth))
            scores["elo"].append(rasch.spearman(elo(attempts, args.drills), truth))
            scores["rate"].append(rasch.spearman(solve_rate(attempts, args.drills), truth))
            false_share, caught_share = flags(truth, fit, rng)
            false_flags.append(false_share)
            caught.append(caught_share)
        cells = [f"{np.median(v):.3f} / {np.percentile(v, 10):.3f}" for v in scores.values()]
        print(
            f"| {n} | {' | '.join(cells)} | {np.median(times):.1f} | {np.mean(false_flags):.1%} | "
            f"{np.nanmean(caught):.0%} |"
        )
        if reached["median"] is None and np.median(scores["rasch"]) >= args.target:
            reached["median"] = n
        if reached["p10"] is None and np.percentile(scores["rasch"], 10) >= args.target:
            reached["p10"] = n
    for which, n in reached.items():
        print(f"smallest attempts per drill with Rasch MAP's {which} Spearman >= {args.target}: {n or 'not reached'}")


if __name__ == "__main__":
    main()
