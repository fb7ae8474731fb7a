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
