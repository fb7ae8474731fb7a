"""bench/scheduler.py runs the project's schedulers on synthetic learners, and FSRS aims where it is told."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from cards.scheduling.schedulers import FSRSScheduler, SM2Scheduler

BENCH = Path(__file__).resolve().parents[2] / "bench" / "scheduler.py"


def load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_scheduler", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_scheduler"] = module
    spec.loader.exec_module(module)
    return module


def test_it_simulates_both_schedulers_from_the_same_learner() -> None:
    bench = load_bench()
    sm2 = bench.simulate(SM2Scheduler(), seed=1, days=40, new_per_day=10)
    low = bench.simulate(FSRSScheduler(desired_retention=0.80), seed=1, days=40, new_per_day=10)
    high = bench.simulate(FSRSScheduler(desired_retention=0.95), seed=1, days=40, new_per_day=10)
    assert sm2.reviews >= 400  # every new card at least once
    # A higher target costs more reviews and reaches higher retention.
    assert high.reviews > low.reviews
    assert high.recalled / high.recall_reviews > low.recalled / low.recall_reviews


def test_the_fit_bench_counts_both_errors_against_the_truth_with_intervals() -> None:
    from cards.scheduling import fitting

    bench = load_bench()
    low, high = bench.wilson(0, 97)
    assert low == 0 and 0.03 < high < 0.04  # 0 of 97: the rate may still be up to 3.8 %
    low, high = bench.wilson(2, 97)
    assert 0.005 < low < 0.006 and 0.07 < high < 0.073

    def case(gain: float, se: float, true_gain: float) -> object:
        return bench.FitCase(
            "unlike", 1, 1500, fitting.Comparison(fitting.MIN_TEST_REVIEWS, 200, 0.35, 0.35 - gain, se), true_gain
        )

    cases = [
        case(0.02, 0.005, 0.012),  # better, kept
        case(0.004, 0.005, 0.003),  # better, rejected
        case(0.02, 0.005, -0.001),  # worse, kept
        case(-0.01, 0.005, -0.004),  # worse, rejected
    ]
    assert bench.rates(cases, lambda found: found.significant) == (1, 2, 1, 2)
    assert bench.rates(cases, lambda found: found.significant, zone=0.005) == (1, 2, 0, 1)


def test_one_simulation_serves_the_fire_bench_through_its_credit_hook() -> None:
    """``--fire`` runs the same simulation as the scheduler table, with the ``DrillCredit`` hook: the figures
    are those of the separate FIRe loop it replaced (pinned from it, seed 3, 30 days, 10 new cards a day)."""
    bench = load_bench()
    fsrs = FSRSScheduler(desired_retention=0.90)
    credited = bench.simulate(fsrs, 3, 30, 10, bench.DrillCredit(0.25, 0.5))
    assert (credited.reviews, credited.recall_reviews, credited.recalled, credited.credits) == (946, 548, 496, 227)
    assert abs(credited.predicted - 484.98990187084235) < 1e-9
    assert abs(credited.expected_known - 288.87016926381716) < 1e-9
    # No credit and no transfer: the hook only draws which cards the drills build on, and changes nothing.
    plain = bench.simulate(fsrs, 3, 30, 10)
    idle = bench.simulate(fsrs, 3, 30, 10, bench.DrillCredit(0.0, 0.0))
    assert idle == plain and plain.credits == 0
    assert credited.reviews < plain.reviews


def test_the_keep_rule_meets_both_targets_on_the_committed_synthetic_learners() -> None:
    """bench/widened.jsonl: each synthetic learner's fit judged on held-out windows of growing size, with the
    true gain. The production rule (fitting's minimum, margin and Comparison.significant) must keep under 5 %
    of worse fits and reject under 5 % of fits better by WORTH_KEEPING, each learner judged at the minimum;
    a smaller minimum or a wider margin fails here (the old 200 rejected about half the better fits)."""
    import json

    from cards.scheduling import fitting

    bench = load_bench()
    rows = [json.loads(line) for line in (BENCH.parent / "widened.jsonl").read_text().splitlines() if line.strip()]
    cases = bench.cut_cases(rows, fitting.MIN_TEST_REVIEWS, {})
    assert len(cases) >= 140
    kept_worse, worse, rejected_better, better = bench.rates(
        cases, lambda found: found.significant, fitting.WORTH_KEEPING
    )
    assert worse >= 90 and better >= 20
    assert kept_worse / worse < 0.05 and rejected_better / better < 0.05
    old = bench.cut_cases(rows, 200, {})
    _, _, rejected_better, better = bench.rates(old, bench.rule(200, fitting.MARGIN_SE), fitting.WORTH_KEEPING)
    assert rejected_better / better > 0.3
