"""Counterexamples for the known-wrong solutions that fail only hidden cases (issue 41 item 2).

For every bundled drill (notes/drills) and each of its known-wrong solutions (tests/graders/solutions and the
drill file's own ``[[wrong]]``): grade it on a fresh hidden seed; keep those whose examples all pass and whose
hidden cases do not (the only verdicts that queue a counterexample); then run the counterexample search
(``graders.drills.counterexample.find``) as the worker's job does, on the same runner, and record whether an
input was found and how long it took (the job's own wall time: search, shrink and the confirming "Run").

Prints a markdown table: the found rate (target >= 80 %), time to a counterexample p50/p95/max, and the ones
not found with the reason. ``--runner sandbox`` (default) uses a real ``SandboxPool`` (2 runners), the worker's;
``--runner local`` the in-process runner (trusted code: the bundled solutions only).

Usage: .venv/bin/python bench/counterexample.py [--runner sandbox|local] [--seconds 2.0] [--slug SLUG ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SOLUTIONS = Path(__file__).resolve().parents[1] / "tests" / "graders" / "solutions"


def known_wrong(slug: str, drill: Any) -> list[tuple[str, str]]:
    """(why, code) of each known-wrong solution of a drill."""
    found: list[tuple[str, str]] = [(w.why, w.code) for w in drill.wrong]
    path = SOLUTIONS / f"{slug}.toml"
    if path.exists():
        found += [(w["why"], w["code"]) for w in tomllib.loads(path.read_text(encoding="utf-8")).get("wrong", [])]
    return found


def hidden_only(verdict: Any) -> bool:
    """Every example passed and some hidden case failed: the verdicts that queue a counterexample."""
    tests = verdict["tests"]
    return (
        verdict["status"] != "accepted"
        and all(t["passed"] for t in tests if not t["hidden"])
        and any(not t["passed"] for t in tests if t["hidden"])
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runner", choices=("sandbox", "local"), default="sandbox")
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--slug", action="append", default=[])
    options = parser.parse_args()

    from graders.drills import DRILLS_DIR, load_drills
    from graders.drills.counterexample import find
    from graders.drills.grading import ReferenceCache, grade
    from graders.drills.local import LocalRunner

    drills = load_drills(DRILLS_DIR)
    if options.runner == "sandbox":
        from graders.sandbox import SandboxPool

        pool: Any = SandboxPool(size=2)
        pool.__enter__()
        pool.warm()
    else:
        pool = LocalRunner()
    cache = ReferenceCache()
    rows: list[tuple[str, str, dict[str, Any], float]] = []
    total_wrong = 0
    try:
        for slug in sorted(options.slug or drills):
            drill = drills[slug]
            for why, code in known_wrong(slug, drill):
                total_wrong += 1
                verdict = grade(drill, code, seed=None, runner=pool, cache=cache)
                if not hidden_only(verdict):
                    continue
                started = time.monotonic()
                report = find(drill, code, pool, repr, hidden_seed=verdict["seed"], seconds=options.seconds)
                rows.append((slug, why, dict(report), (time.monotonic() - started) * 1000))
    finally:
        if options.runner == "sandbox":
            pool.__exit__(None, None, None)
    found = [row for row in rows if row[2]["found"]]
    times = [row[3] for row in found]
    print(f"runner: {options.runner}, budget {options.seconds} s; known-wrong solutions: {total_wrong}, "
          f"failing only hidden cases: {len(rows)}\n")  # fmt: skip
    print("| found | rate | time to counterexample p50 | p95 | max | shrink steps p50 |")
    print("| --- | --- | --- | --- | --- | --- |")
    rate = 100 * len(found) / len(rows) if rows else float("nan")
    shrinks = statistics.median([row[2]["shrinks"] for row in found]) if found else float("nan")
    print(
        f"| {len(found)}/{len(rows)} | {rate:.0f} % | {percentile(times, 0.5):.0f} ms "
        f"| {percentile(times, 0.95):.0f} ms | {max(times, default=float('nan')):.0f} ms | {shrinks:g} |"
    )
    print("\n| drill | known-wrong | found | arguments / reason | ms |")
    print("| --- | --- | --- | --- | --- |")
    for slug, why, report, ms in rows:
        shown = report["arguments"][:70] if report["found"] else report["reason"]
        print(f"| {slug} | {why[:50]} | {'yes' if report['found'] else 'no'} | `{shown}` | {ms:.0f} |")
    return 0 if rows and len(found) / len(rows) >= 0.8 else 1


if __name__ == "__main__":
    sys.exit(main())
