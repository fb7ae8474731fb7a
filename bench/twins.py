"""What the twin cases cost a grade (issue 36 item 6): the drills' references graded through a warm
``SandboxPool``, twins on and off alternated grade by grade so a loaded host moves both alike.

    .venv/bin/python bench/twins.py            # 30 rounds of eight drills, about a minute

References are made and cached first (their cost is off the learner's clock); the figure is the paired
difference, on minus off, per grade.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graders.drills import DRILLS_DIR, cases, load_drills  # noqa: E402
from graders.drills.grading import ReferenceCache, grade  # noqa: E402
from graders.sandbox.pool import SandboxPool  # noqa: E402

MIX = (
    "cross-entropy-from-logits,index-assign-rows,softmax-dim,stack-scalars,masked-softmax,narrow-slice,reverse-1d,"
    "masked-nll-by-hand"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30, help="each drill graded this many times per mode")
    parser.add_argument("--drills", default=MIX, help="comma-separated drill slugs")
    options = parser.parse_args()
    drills = load_drills(DRILLS_DIR)
    mix = [drills[slug] for slug in options.drills.split(",")]
    with SandboxPool(size=2, device="cpu") as pool:
        pool.warm()
        caches: dict[str, ReferenceCache] = {}
        for mode, candidates in (("off", 0), ("on", cases.TWIN_CANDIDATES)):
            cases.TWIN_CANDIDATES, caches[mode] = candidates, ReferenceCache()
            for drill in mix:  # the references, made once: a cache hit from here on
                grade(drill, drill.reference, seed=1, runner=pool, cache=caches[mode])
        times: dict[str, list[float]] = {"off": [], "on": []}
        for i in range(options.rounds):
            for drill in mix:
                for mode in ("off", "on") if i % 2 else ("on", "off"):
                    started = time.perf_counter()
                    verdict = grade(drill, drill.reference, seed=1, runner=pool, cache=caches[mode])
                    times[mode].append((time.perf_counter() - started) * 1000)
                    assert verdict["status"] == "accepted", (drill.slug, verdict["message"])
    diffs = [on - off for on, off in zip(times["on"], times["off"], strict=True)]
    for mode, spent in times.items():
        print(f"twins {mode}: {len(spent)} grades, p50 {statistics.median(spent):.2f} ms")
    print(f"on - off, paired: median {statistics.median(diffs):.2f} ms, mean {statistics.mean(diffs):.2f} ms")


if __name__ == "__main__":
    main()
