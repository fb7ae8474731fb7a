"""Fits for ``bench/scheduler.py --fits``, cached: the package's optimizer (torch) takes seconds per synthetic
learner, the keep rule's test takes a fraction of one, so the fits are computed once and the rule is scored
on them as often as it changes.

    nice -n 19 .venv/bin/python bench/fit_cache.py [--learners 100] [--days 50] [--new-per-day 10] [--workers 1]

Appends one JSON line per fit to ``bench/fits.jsonl`` (arm, seed, days, new cards a day, the split day, the
fitted parameters, seconds); a fit already there is skipped, so a run can be stopped and resumed. Each
learner (``cards.scheduling.synthetic``) is named by its arm and seed: arm ``defaults`` remembers by the
package's default parameters (no fit can beat them: a fit can only be worse), arm ``unlike`` by
``synthetic.drawn_parameters(random.Random(seed), UNLIKE_SPREAD)``: initial stabilities scaled by
exp(N(0, 0.8)) and the recall-growth factor by exp(N(0, 0.4)), most of them unlike the defaults, some close.
The fit sees the reviews before the time split, as
``cards.scheduling.fitting.optimise`` does, whatever the history's size (the bench studies the minimum).
Then each fitted learner goes on 120 days at the defaults, and ``bench/widened.jsonl`` gets one line per
learner: the same fit judged on held-out windows ending 0-120 days after its log (``CUTS``), each with the
true gain on the 30 days after it (:func:`widened_cuts`): the held-out sizes at which the keep rule is right.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fsrs.scheduler import DEFAULT_PARAMETERS  # noqa: E402

from cards.scheduling import evaluate, fitting, synthetic  # noqa: E402

CACHE = Path(__file__).resolve().parent / "fits.jsonl"
ARMS = ("defaults", "unlike")
UNLIKE_SPREAD = 0.8
FRESH_DAYS = 30


def truth(arm: str, seed: int) -> tuple[float, ...]:
    """The learner's true parameters, from its arm and seed alone."""
    if arm == "defaults":
        return tuple(DEFAULT_PARAMETERS)
    return synthetic.drawn_parameters(random.Random(seed), UNLIKE_SPREAD)


def key(arm: str, seed: int, days: int, new_per_day: int) -> tuple[str, int, int, int]:
    return (arm, seed, days, new_per_day)


def load(path: Path = CACHE) -> dict[tuple[str, int, int, int], dict[str, Any]]:
    found: dict[tuple[str, int, int, int], dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                found[key(row["arm"], row["seed"], row["days"], row["new_per_day"])] = row
    return found


def expected_log_loss(true_p: Sequence[float], ps: Sequence[float]) -> float:
    """The log loss ``ps`` can expect where recall happens with probability ``true_p``: no outcome noise."""
    total = 0.0
    for r, p in zip(true_p, ps, strict=True):
        p = min(max(p, 1e-15), 1 - 1e-15)
        total -= r * math.log(p) + (1 - r) * math.log(1 - p)
    return total / len(ps)


def one(job: tuple[str, int, int, int], fitted: list[float] | None = None) -> dict[str, Any] | None:
    """One learner's fit (unless given) and everything the keep rule and the truth say of it.

    ``cards``: per card of the held-out window (the split day to the log's end), the summed gain (the
    current parameters' log loss minus the fit's) and the count: the keep rule's input. ``true_before``
    and ``true_after``: the expected log loss, recall probabilities from the true model, of the defaults
    and of the fit on ``FRESH_DAYS`` more days the fit never saw (the learner goes on at the defaults).
    """
    import torch

    torch.set_num_threads(1)
    arm, seed, days, new_per_day = job
    true = truth(arm, seed)
    log = synthetic.learner_log(true, seed, days, new_per_day)
    split = fitting.time_split(log, least=0)  # the earlier 80 % of any history
    if split is None:
        return None
    started = time.perf_counter()
    if fitted is None:
        fitted = fitting.fit([review for review in log if review.day < split.day])
    seconds = round(time.perf_counter() - started, 1)
    future = synthetic.learner_log(true, seed, days + FRESH_DAYS, new_per_day)
    end = max(review.day for review in log) + 1
    points = {
        name: fitting.held_out_points(future, w, split.day)
        for name, w in (("truth", true), ("defaults", DEFAULT_PARAMETERS), ("fitted", fitted))
    }
    held = [k for k, p in enumerate(points["defaults"]) if p.day < end]
    fresh = [k for k, p in enumerate(points["defaults"]) if p.day >= end]
    found = fitting.compare([points["defaults"][k] for k in held], [points["fitted"][k] for k in held])
    ys = [points["defaults"][k].y for k in held]
    before = evaluate.point_losses(ys, [points["defaults"][k].p_fsrs for k in held])
    after = evaluate.point_losses(ys, [points["fitted"][k].p_fsrs for k in held])
    per_card: dict[str, list[float]] = {}
    for k, b, a in zip(held, before, after, strict=True):
        acc = per_card.setdefault(points["defaults"][k].card_id, [0.0, 0])
        acc[0] += b - a
        acc[1] += 1
    true_p = [points["truth"][k].p_fsrs for k in fresh]
    return {
        "arm": arm, "seed": seed, "days": days, "new_per_day": new_per_day, "split_day": split.day,
        "scored": split.train_reviews + split.test_reviews, "parameters": fitted, "seconds": seconds,
        "n": found.n, "before": found.before, "after": found.after, "se": found.se,
        "cards": [[round(total, 6), count] for total, count in per_card.values()],
        "fresh": len(fresh),
        "true_before": expected_log_loss(true_p, [points["defaults"][k].p_fsrs for k in fresh]),
        "true_after": expected_log_loss(true_p, [points["fitted"][k].p_fsrs for k in fresh]),
    }  # fmt: skip


WIDE = Path(__file__).resolve().parent / "widened.jsonl"
CUTS = (0, 10, 20, 30, 45, 60, 80, 100, 120)


def widened_cuts(row: dict[str, Any], extras: Sequence[int] = CUTS) -> dict[str, Any]:
    """The same fit judged on longer held-out windows: the learner goes on ``max(extras)`` more days at
    the defaults, and per extra the keep rule's input on the window from the split day to ``extra`` days after
    the fitted log's end (n, cards, before, after, se), and the true gain on the ``FRESH_DAYS`` days after that
    window. How many held-out reviews the rule needs: a fit of the longer history would be better still, so
    this understates the rule's power at that size. One replay (the longest) for all; one JSON line of
    ``bench/widened.jsonl``."""
    import torch

    torch.set_num_threads(1)
    true = truth(row["arm"], row["seed"])
    days, per_day = int(row["days"]), int(row["new_per_day"])
    future = synthetic.learner_log(true, row["seed"], days + max(extras) + FRESH_DAYS, per_day)
    first = min(review.day for review in future)
    points = {
        name: fitting.held_out_points(future, w, int(row["split_day"]))
        for name, w in (("truth", true), ("defaults", DEFAULT_PARAMETERS), ("fitted", row["parameters"]))
    }
    cuts = []
    for extra in extras:
        end = first + days + extra
        held = [k for k, p in enumerate(points["defaults"]) if p.day < end]
        fresh = [k for k, p in enumerate(points["defaults"]) if end <= p.day < end + FRESH_DAYS]
        found = fitting.compare([points["defaults"][k] for k in held], [points["fitted"][k] for k in held])
        true_p = [points["truth"][k].p_fsrs for k in fresh]
        gain = expected_log_loss(true_p, [points["defaults"][k].p_fsrs for k in fresh]) - expected_log_loss(
            true_p, [points["fitted"][k].p_fsrs for k in fresh]
        )
        cuts.append(
            {"extra": extra, "n": found.n, "cards": found.cards, "before": found.before, "after": found.after,
             "se": found.se, "true_gain": gain}
        )  # fmt: skip
    return {"arm": row["arm"], "seed": row["seed"], "days": days, "new_per_day": per_day, "cuts": cuts}


def load_widened(path: Path = WIDE) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_widened(rows: Sequence[dict[str, Any]], path: Path = WIDE) -> None:
    """Appends :func:`widened_cuts` of every row not yet in ``path`` (one process: the cores are shared)."""
    done = set()
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                got = json.loads(line)
                done.add(key(got["arm"], got["seed"], got["days"], got["new_per_day"]))
    todo = [row for row in rows if key(row["arm"], row["seed"], row["days"], row["new_per_day"]) not in done]
    print(f"{len(todo)} learners to replay ({len(done)} cached)", flush=True)
    with path.open("a", encoding="utf-8") as out:
        for count, row in enumerate(todo, 1):
            out.write(json.dumps(widened_cuts(row)) + "\n")
            out.flush()
            if count % 10 == 0:
                print(f"{count}/{len(todo)}", flush=True)


def run(learners: int, spans: Sequence[int], new_per_day: int, workers: int, path: Path = CACHE) -> None:
    have = load(path)
    stale = [row for row in have.values() if "true_after" not in row]  # fitted before the evaluation was kept
    jobs = [
        key(arm, seed, days, new_per_day)
        for days in spans
        for seed in range(1, learners + 1)
        for arm in ARMS
        if key(arm, seed, days, new_per_day) not in have
    ]
    if stale:
        path.write_text("".join(json.dumps(row) + "\n" for row in have.values() if "true_after" in row))
        with path.open("a", encoding="utf-8") as out:
            for row in stale:
                job = key(str(row["arm"]), int(row["seed"]), int(row["days"]), int(row["new_per_day"]))
                out.write(json.dumps(one(job, list(row["parameters"]))) + "\n")
    print(f"{len(jobs)} fits to compute ({len(have)} cached)", flush=True)
    with ProcessPoolExecutor(workers) as pool, path.open("a", encoding="utf-8") as out:
        for done, fit_row in enumerate(pool.map(one, jobs), 1):
            if fit_row is not None:
                out.write(json.dumps(fit_row) + "\n")
                out.flush()
            if done % 10 == 0:
                print(f"{done}/{len(jobs)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", type=int, default=100)
    parser.add_argument("--days", default="50")
    parser.add_argument("--new-per-day", type=int, default=10)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    spans = [int(d) for d in args.days.split(",")]
    run(args.learners, spans, args.new_per_day, args.workers)
    wanted = {(arm, seed, days) for arm in ARMS for seed in range(1, args.learners + 1) for days in spans}
    run_widened([row for k, row in load().items() if k[:3] in wanted and k[3] == args.new_per_day])


if __name__ == "__main__":
    main()
