"""Measure the pool alone: ``python -m graders.sandbox.benchmark [--runs N] [--cold N]``.

Prints p50/p95 latency of ``SandboxPool.run`` for a trivial correct submission with a warm child,
sustained throughput (children replaced in the background while the pool is driven flat out), and
``run_once`` (a cold process tree per submission) for comparison.  The Celery benchmark in bench/
measures submit-to-verdict end to end; this isolates the sandbox's share.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

DRILL = "import torch\n\ndef solution(x, y):\n    return x @ y + 1\n"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _tree_cpu_seconds(pool: object) -> float:
    """CPU of this process plus the zygote and every reaped child (immune to other load on the host)."""
    import os

    ticks = os.sysconf("SC_CLK_TCK")
    total = sum(os.times()[:2])
    zygote = getattr(getattr(pool, "fork_server", None), "process", None)
    if zygote is not None:
        for pid in (zygote.pid, *_children(zygote.pid)):
            try:
                fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += sum(int(x) for x in fields[11:15]) / ticks  # utime stime cutime cstime
    return total


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(x) for x in fh.read().split()]
    except OSError:
        return []


def main(argv: list[str] | None = None) -> None:
    import torch

    from graders.sandbox import SandboxPool, run_once

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--cold", type=int, default=3)
    parser.add_argument("--size", type=int, default=2)
    args = parser.parse_args(argv)
    cases = [(torch.randn(8, 8), torch.randn(8, 8))]
    with SandboxPool(size=args.size) as pool:
        pool.warm()
        time.sleep(1.0)
        warm = []
        for _ in range(min(args.runs, 30)):  # a warm child every time: wait for the refill between runs
            pool.warm()
            time.sleep(0.15)
            started = time.perf_counter()
            result = pool.run(DRILL, "solution", cases)
            warm.append((time.perf_counter() - started) * 1000)
            assert result.status == "ok", result
        flat = []
        cpu_before = _tree_cpu_seconds(pool)
        started_all = time.perf_counter()
        for _ in range(args.runs):
            started = time.perf_counter()
            result = pool.run(DRILL, "solution", cases)
            flat.append((time.perf_counter() - started) * 1000)
            assert result.status == "ok", result
        throughput = args.runs / (time.perf_counter() - started_all)
        time.sleep(0.5)  # let the last children be reaped into the zygote's counters
        cpu_per_run = (_tree_cpu_seconds(pool) - cpu_before) / (args.runs + pool.size) * 1000
    cold = []
    for _ in range(args.cold):
        started = time.perf_counter()
        result = run_once(DRILL, "solution", cases)
        cold.append((time.perf_counter() - started) * 1000)
        assert result.status == "ok", result
    out = sys.stdout
    out.write(f"{'what':44} {'p50 ms':>9} {'p95 ms':>9}\n")
    out.write(f"{'pool.run, child already warm':44} {statistics.median(warm):9.1f} {_percentile(warm, 0.95):9.1f}\n")
    out.write(
        f"{'pool.run, back to back (refill in parallel)':44} {statistics.median(flat):9.1f} "
        f"{_percentile(flat, 0.95):9.1f}\n"
    )
    if cold:  # --cold 0 leaves the baseline out
        out.write(
            f"{'run_once (cold process tree)':44} {statistics.median(cold):9.1f} {_percentile(cold, 0.95):9.1f}\n"
        )
    out.write(f"throughput back to back: {throughput:.1f} runs/s (pool size {args.size})\n")
    out.write(f"CPU per verdict (parent + zygote + children, all cores): {cpu_per_run:.1f} ms\n")


if __name__ == "__main__":
    main()
