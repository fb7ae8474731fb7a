"""Layer 2's cost on the grading hot path: this checkout against a baseline revision, in one run.

    .venv/bin/python bench/layer2.py                     # baseline: HEAD's parent of the layer-2 rework
    .venv/bin/python bench/layer2.py --baseline fe03393 --rounds 5 --repeat 2

The baseline's ``graders/sandbox`` is taken from git (``git archive``) into a temporary copy of this
checkout, so everything else (drills, pool, jail) is the same. Each tree is measured in a fresh process,
alternating (baseline, current, baseline, current ...), because the machine may be shared:

- every CPU drill's reference through ``SandboxPool.run`` (pool wall p50/p95, the runner's own CPU p50,
  verdicts per second back to back);
- ``child.run_job`` in process (compile excluded), and ``policy.compile_submission``, per reference;
- three loops that isolate the guard's per-operation cost: 20,000 calls of a builtin, 20,000 calls of the
  submission's own function, 20,000 attribute reads.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_BASELINE = "905c363~1"  # the commit before "Layer 2 closed under calling and subscripting"

MEASURE = r"""
import json, os, sys, time
tree, rounds = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, tree)
import torch
from graders.drills import load_drills
from graders.drills.cases import generate_cases
from graders.drills.grading import sandbox_limits
from graders.sandbox import SandboxPool, child, policy, proxies

def pct(xs, p):
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(p * len(xs)))], 3)

drills = [d for d in load_drills(os.path.join(tree, "notes", "drills")).values() if d.device == "cpu"]
# Since case expressions run in a runner, generate_cases takes one (trusted drills: the in-process one).
from inspect import signature
from graders.drills.local import LocalRunner
made_by = {"runner": LocalRunner()} if "runner" in signature(generate_cases).parameters else {}
jobs = [(d, [c.args for c in generate_cases(d, 0, False, device="cpu", **made_by)]) for d in drills]
mods = proxies.build_modules()
compile_ms, run_ms = [], []
for _ in range(rounds):
    for d, args in jobs:
        t = time.perf_counter()
        code = policy.compile_submission(d.reference, 20000)
        compile_ms.append((time.perf_counter() - t) * 1000)
        job = {"code": d.reference, "entry_point": d.entry_point, "grad": d.grad, "max_source_bytes": 20000}
        t = time.perf_counter()
        result, _ = child.run_job(job, [tuple(a) for a in args], mods, policy.PrintSink(64000), "cpu", code)
        run_ms.append((time.perf_counter() - t) * 1000)
        assert result["status"] == "ok", (d.slug, result)
LOOP = "def solution(x):\n    s = 0\n    for i in range(20000):\n        s {step}\n    return x * s\n"
loops = {
    "builtin_calls": LOOP.format(step="+= abs(i)"),
    "own_calls": "def f(a):\n    return a + 1\n" + LOOP.format(step="= f(s)"),
    "attribute_reads": LOOP.format(step="+= x.shape[0]"),
}
loop_ms = {}
for name, src in loops.items():
    code = policy.compile_submission(src, 20000)
    best = 1e9
    for _ in range(5):
        t = time.perf_counter()
        job = {"code": src, "entry_point": "solution", "grad": False, "max_source_bytes": 20000}
        child.run_job(job, [(torch.ones(3),)], mods, policy.PrintSink(1000), "cpu", code)
        best = min(best, time.perf_counter() - t)
    loop_ms[name] = round(best * 1000, 2)
walls, cpus = [], []
with SandboxPool(size=2) as pool:
    pool.warm()
    for d, args in jobs[:5]:
        pool.run(d.reference, d.entry_point, args, limits=sandbox_limits(d.limits), grad=d.grad)
    started = time.perf_counter()
    for _ in range(rounds):
        for d, args in jobs:
            r = pool.run(d.reference, d.entry_point, args, limits=sandbox_limits(d.limits), grad=d.grad)
            assert r.status == "ok", (d.slug, r.status, r.message)
            walls.append(r.wall_ms)
            cpus.append(r.cpu_ms)
    elapsed = time.perf_counter() - started
print(json.dumps({
    "compile_ms_p50": pct(compile_ms, 0.5), "run_job_ms_p50": pct(run_ms, 0.5), "run_job_ms_p95": pct(run_ms, 0.95),
    "pool_wall_ms_p50": pct(walls, 0.5), "pool_wall_ms_p95": pct(walls, 0.95), "runner_cpu_ms_p50": pct(cpus, 0.5),
    "verdicts_per_s": round(len(walls) / elapsed, 1), **loop_ms,
}))
"""


def baseline_tree(rev: str, into: Path) -> Path:
    """A copy of this checkout whose graders/sandbox is ``rev``'s (nothing else differs)."""
    tree = into / "baseline"
    shutil.copytree(REPO / "graders", tree / "graders", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "jobs", tree / "jobs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "notes", tree / "notes")
    shutil.rmtree(tree / "graders" / "sandbox")
    archive = subprocess.run(["git", "archive", rev, "graders/sandbox"], cwd=REPO, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    results = (tree / "graders" / "sandbox" / "results.py").read_text()
    if "graders.status" in results:
        # A sandbox from before graders/ was split by role reads the statuses from their old module.
        (tree / "graders" / "status.py").write_text("from jobs.status import *  # noqa: F403\n")
    elif "graders.jobs.status" in results:
        # One from before the jobs app (issue 40) reads them from graders/jobs/.
        (tree / "graders" / "jobs").mkdir()
        (tree / "graders" / "jobs" / "__init__.py").write_text("")
        (tree / "graders" / "jobs" / "status.py").write_text("from jobs.status import *  # noqa: F403\n")
    return tree


def measure(tree: Path, rounds: int) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", MEASURE, str(tree), str(rounds)], capture_output=True, text=True, check=False
    )
    if proc.returncode:
        raise SystemExit(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline", default=DEFAULT_BASELINE, help="git revision whose graders/sandbox is the baseline"
    )
    parser.add_argument("--rounds", type=int, default=5, help="passes over every CPU drill's reference")
    parser.add_argument("--repeat", type=int, default=2, help="measurements of each tree, alternating")
    args = parser.parse_args()
    rows: list[tuple[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="bench-layer2-") as tmp:
        base = baseline_tree(args.baseline, Path(tmp))
        for _ in range(args.repeat):
            for label, tree in ((f"baseline {args.baseline}", base), ("current", REPO)):
                started = time.monotonic()
                rows.append((label, measure(tree, args.rounds)))
                print(f"measured {label} in {time.monotonic() - started:.0f} s", file=sys.stderr)
    keys = list(rows[0][1])
    print(f"{'tree':22} " + " ".join(f"{k:>17}" for k in keys))
    for label, row in rows:
        print(f"{label:22} " + " ".join(f"{row[k]:>17}" for k in keys))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
