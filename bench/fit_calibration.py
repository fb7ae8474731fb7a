"""Calibration and evaluate figures on a synthetic learner before and after an FSRS fit, with baselines.

    nice -n 19 .venv/bin/python bench/fit_calibration.py [--seed 1] [--days 120] [--after-days 60]
        [--new-per-day 10] [--truth distinct|defaults|drawn]

One synthetic learner (``cards.scheduling.synthetic``) with known true FSRS-6 parameters (``--truth``:
``distinct``, a fast forgetter unlike the defaults; ``defaults``, the package's own, which no fit can beat;
``drawn``, ``bench/fit_cache.py``'s unlike arm for ``--seed``) studies ``--days`` days under FSRS at the
default parameters. Then, in order:

1. before the fit: the calibration page's figures as the page computes them (``cards.scheduling.calibration``:
   the five test folds, FSRS-6 at the defaults beside SM-2, AVG and MOVING-AVG on the same points) and
   ``python -m cards.scheduling.evaluate --json`` on the log (run as a command, on a CSV of it);
2. the production fit (``cards.scheduling.fitting.optimise``: time split, torch fit on the earlier reviews,
   the keep rule on the held-out ones);
3. the learner goes on ``--after-days`` days, scheduled with the fitted parameters if the rule kept them (the
   defaults if not), and the same figures are computed on the longer log: the page with the parameters it
   would use, scored from the fit's split day (``fitting``'s held-out reviews and everything after), and the
   command with ``--parameters`` and ``--from-day`` set to the same day. A third column scores only the
   reviews after the fit ran, which neither its training nor its keep rule saw.

Every column also scores FSRS-6 at the learner's true parameters on the same points: the best any fit can do.
Torch runs the fit (seconds to a minute); the rest is pure Python. Figures: docs/scheduling.md, "Calibration
before and after a fit".
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fsrs.scheduler import DEFAULT_PARAMETERS  # noqa: E402

from cards.scheduling import calibration, evaluate, fitting, fsrs6, synthetic  # noqa: E402

ROWS = (
    ("fsrs", "FSRS-6 (the page's)"),
    ("fsrs_default", "FSRS-6 default"),
    ("truth", "FSRS-6 true parameters"),
    ("sm2", "SM-2"),
    ("avg", "AVG"),
    ("moving_avg", "MOVING-AVG"),
)


def truth_of(kind: str, seed: int) -> tuple[float, ...]:
    if kind == "defaults":
        return tuple(DEFAULT_PARAMETERS)
    if kind == "drawn":
        return synthetic.drawn_parameters(random.Random(seed), 0.8)  # bench/fit_cache.py's UNLIKE_SPREAD
    return synthetic.distinct_parameters()


def command_json(reviews: Sequence[evaluate.Review], *options: str) -> dict[str, Any]:
    """``python -m cards.scheduling.evaluate LOG --json [options]`` on a CSV of the log, as anyone would run it."""
    with tempfile.NamedTemporaryFile("w", suffix=".csv", newline="", encoding="utf-8", delete=False) as handle:
        writer = csv.writer(handle)
        writer.writerow(["card_id", "day", "rating"])
        writer.writerows((r.card_id, r.day, r.rating) for r in reviews)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "cards.scheduling.evaluate", handle.name, "--json", *options],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        Path(handle.name).unlink()
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def with_truth(
    report: calibration.Report, reviews: Sequence[evaluate.Review], truth: Sequence[float], from_day: int | None
) -> dict[str, evaluate.Scores]:
    """The page's scores, and FSRS-6 at the true parameters on the same points (the page's points: the test
    folds, or the reviews from ``from_day`` on)."""
    every = evaluate.test_points(reviews, fsrs6.scheduler(tuple(truth)))
    if from_day is None:
        points = calibration.test_fold_points(every)
    else:
        points = sorted((p for p in every if p.day >= from_day), key=lambda p: p.day)
    assert len(points) == report.test_points, (len(points), report.test_points)
    return {**report.scores, "truth": evaluate.scores(points, [p.p_fsrs for p in points])}


def cell(scores: evaluate.Scores | None) -> str:
    if not scores or scores["log_loss"] is None:
        return f"{'-':>7}{'-':>7}{'-':>7}"
    auc = "-" if scores["auc"] is None else f"{scores['auc']:.3f}"
    return f"{scores['log_loss']:>7.4f}{scores['rmse_bins'] or 0:>7.4f}{auc:>7}"


def day_text(day: int) -> str:
    return (fsrs6.EPOCH + timedelta(days=day)).isoformat()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--days", type=int, default=120, help="days of study before the fit")
    parser.add_argument("--after-days", type=int, default=60, help="days of study after it")
    parser.add_argument("--new-per-day", type=int, default=10)
    parser.add_argument("--truth", choices=("distinct", "defaults", "drawn"), default="distinct")
    args = parser.parse_args()

    truth = truth_of(args.truth, args.seed)
    before_log = synthetic.learner_log(truth, args.seed, args.days, args.new_per_day)
    before_page = calibration.report(before_log)
    before = with_truth(before_page, before_log, truth, None)
    before_command = command_json(before_log)

    started = time.perf_counter()
    outcome = fitting.optimise(before_log, None)
    fit_seconds = time.perf_counter() - started
    if outcome.split is None or outcome.parameters is None:
        raise SystemExit(f"no fit: {outcome.message} (a slower forgetter reviews less: try more --days)")
    fitted, split_day = outcome.parameters, outcome.split.day
    fit_day = before_log[-1].day + 1  # the first day after the log the fit ran on

    after_log = synthetic.learner_log(
        truth,
        args.seed,
        args.days + args.after_days,
        args.new_per_day,
        switch=(args.days, fitted) if outcome.keep else None,
    )
    assert after_log[: len(before_log)] == before_log, "the days before the fit are the same log"
    used = fitted if outcome.keep else None
    after_page = calibration.report(after_log, used, split_day if outcome.keep else None)
    after = with_truth(after_page, after_log, truth, split_day if outcome.keep else None)
    if outcome.keep:  # out of sample: the page scores the kept fit only from its split day (with_truth counts them)
        assert after_page.scope == "held_out" and after_page.held_out_from == fsrs6.EPOCH + timedelta(days=split_day)
    # The fit on reviews it never saw, kept or not: the page's own scoring from the day after the fit.
    unseen_page = calibration.report(after_log, fitted, fit_day)
    unseen = with_truth(unseen_page, after_log, truth, fit_day)
    after_command = command_json(after_log, "--parameters", ",".join(map(repr, fitted)), "--from-day", str(split_day))
    unseen_command = command_json(after_log, "--parameters", ",".join(map(repr, fitted)), "--from-day", str(fit_day))

    scored = len(fitting.scored_days(before_log))
    print(
        f"synthetic learner ({args.truth} truth, seed {args.seed}): {args.days} days at {args.new_per_day} new "
        f"cards a day under FSRS-6 defaults, {len(before_log):,} reviews ({scored:,} scored)"
    )
    verdict = "kept" if outcome.keep else "not kept"
    print(
        f"fit ({fit_seconds:.0f} s): trained on {outcome.split.train_reviews:,} reviews before {day_text(split_day)}; "
        f"held out {outcome.test_points:,}: log loss {outcome.loss_before:.4f} -> {outcome.loss_after:.4f}, gain "
        f"{(outcome.loss_before or 0) - (outcome.loss_after or 0):.4f} against {fitting.MARGIN_SE:g} SE = "
        f"{fitting.MARGIN_SE * (outcome.se or 0):.4f}: {verdict}"
    )
    print(
        f"then {args.after_days} more days under {'the fit' if outcome.keep else 'the defaults'}: "
        f"{len(after_log):,} reviews\n"
    )
    columns = (
        ("A", before_page, before),
        ("B", after_page, after),
        ("C", unseen_page, unseen),
    )
    print("A: before the fit, the page: its five test folds, FSRS-6 at the defaults")
    if outcome.keep:
        print(f"B: after it, the page: held out from the split day {day_text(split_day)}, FSRS-6 with the kept fit")
    else:
        print("B: after it, the page: its five test folds, FSRS-6 at the defaults (the fit was not kept)")
    print(f"C: after it, only the days after the fit ran (from {day_text(fit_day)}; neither its training nor its "
          "keep rule saw them), FSRS-6 with the fit\n")  # fmt: skip
    print(f"{'log loss / RMSE(bins) / AUC':<28}" + "".join(f"{name + f' (n={page.test_points:,})':<23}" for
          name, page, _ in columns))  # fmt: skip
    for key, name in ROWS:
        cells = []
        for index, (_name, _page, scores) in enumerate(columns):
            found = scores.get(key)
            if key == "fsrs_default" and found is None and (index == 0 or not outcome.keep):
                found = scores.get("fsrs")  # the page's FSRS is the defaults here
            cells.append(f"{cell(found):<23}")
        print(f"{name:<28}" + "".join(cells))
    for label, payload in (
        ("evaluate --json before (every scored review)", before_command),
        (f"evaluate --json after, --parameters FIT --from-day {split_day}", after_command),
        (f"evaluate --json after, --parameters FIT --from-day {fit_day}", unseen_command),
    ):
        brief = {k: (round(v["log_loss"], 4) if isinstance(v, dict) else v) for k, v in payload.items()}
        print(f"\n{label}, log loss:\n  {json.dumps(brief)}")
    # The command and the page are one code: on the same points they give the same figures.
    pairs = [(unseen_command, unseen)] + ([(after_command, after)] if outcome.keep else [])
    for command, page in pairs:
        for name in ("fsrs", "fsrs_default", "sm2", "avg", "moving_avg"):
            for metric in ("log_loss", "rmse_bins", "auc"):  # summed in another order: equal to rounding
                assert abs((command[name][metric] or 0) - (page[name][metric] or 0)) < 1e-12, (name, metric)
    print(f"fitted parameters: {json.dumps([round(w, 4) for w in fitted])}")
    print(f"true parameters:   {json.dumps([round(w, 4) for w in truth])}")


if __name__ == "__main__":
    main()
