"""The floor under every verdict's sandbox CPU: fork a child and let it exit at once, from processes
that hold more and more of what the fork server holds, each in a fresh interpreter.

    .venv/bin/python bench/fork_floor.py            # 300 forks per row
    .venv/bin/python bench/fork_floor.py --forks 1000

Rows: a bare interpreter (the baseline), one that imported torch and numpy, the prepared fork server
(``graders.sandbox.zygote.prepare``: imports, warm-up, frozen objects) with its memory left in 4 KiB
pages, and the same in 2 MiB pages (``jail.share_in_huge_pages``, what the sandbox runs). A runner costs
this much before it does anything: the kernel copies the parent's page-table entries at fork and drops
them at exit, one per 4 KiB page. The last two rows show what transparent huge pages are worth on this
host (``/sys/kernel/mm/transparent_hugepage/enabled``: ``madvise`` or ``always``; see docs/deploy.md).
Forks go through libc (no Python at-fork handlers), as the fork server's do.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VARIANTS = {
    "bare": "bare interpreter (baseline)",
    "torch": "torch and numpy imported",
    "prepared-4k": "prepared fork server, 4 KiB pages",
    "prepared": "prepared fork server, 2 MiB pages (the sandbox)",
}


def measure(variant: str, forks: int) -> dict[str, float]:
    """Run in the child interpreter: set up ``variant``, then time ``forks`` fork + immediate exit."""
    import ctypes
    import resource
    import time

    huge_mb = 0.0
    if variant != "bare":
        import numpy  # noqa: F401
        import torch  # noqa: F401
    if variant.startswith("prepared"):
        sys.path.insert(0, str(REPO))
        from graders.sandbox import jail, zygote

        if variant == "prepared-4k":
            jail._prctl(jail.PR_SET_THP_DISABLE, 1)  # as on a host without transparent huge pages
        zygote.prepare("cpu")
        rollup = Path("/proc/self/smaps_rollup").read_text().splitlines()
        huge_mb = next(int(line.split()[1]) for line in rollup if line.startswith("AnonHugePages:")) / 1024
    fork = ctypes.PyDLL(None, use_errno=True).fork

    def run(n: int) -> tuple[float, float, float]:
        children0, self0 = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        for _ in range(n):
            pid = fork()
            if pid == 0:
                os._exit(0)
            if pid < 0:
                raise OSError(ctypes.get_errno(), "fork failed")
            os.waitpid(pid, 0)
        wall = (time.perf_counter() - started) / n
        children1, self1 = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
        parent = (self1.ru_utime + self1.ru_stime - self0.ru_utime - self0.ru_stime) / n
        child = (children1.ru_utime + children1.ru_stime - children0.ru_utime - children0.ru_stime) / n
        return parent * 1000, child * 1000, wall * 1000

    run(20)  # the first forks fault in what the loop itself touches
    parent_ms, child_ms, wall_ms = run(forks)
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return {
        "parent_ms": parent_ms,
        "child_ms": child_ms,
        "wall_ms": wall_ms,
        "anon_mb": int(status["RssAnon"].split()[0]) / 1024,
        "huge_mb": huge_mb,
        "mappings": len(Path("/proc/self/maps").read_text().splitlines()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--forks", type=int, default=300, help="forks timed per row")
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)  # one row, in a fresh interpreter
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(measure(args.variant, args.forks)))
        return
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    modes = thp.read_text().strip() if thp.exists() else "not available"
    print(f"transparent huge pages: {modes}; {os.cpu_count()} cores")
    print(f"fork + immediate exit, {args.forks} times per row, CPU per fork (ms)\n")
    print("| process forked | parent (fork) | child (exit) | wall | x baseline | anon MiB | in 2 MiB | mappings |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    baseline = None
    for variant, label in VARIANTS.items():
        command = [sys.executable, __file__, "--variant", variant, "--forks", str(args.forks)]
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPO)
        if done.returncode != 0:
            raise SystemExit(f"{variant} failed:\n{done.stderr[-3000:]}")
        row = json.loads(done.stdout.strip().splitlines()[-1])
        total = row["parent_ms"] + row["child_ms"]
        baseline = baseline or total
        print(
            f"| {label} | {row['parent_ms']:.2f} | {row['child_ms']:.2f} | {row['wall_ms']:.2f} "
            f"| {total / baseline:.1f}x | {row['anon_mb']:.0f} | {row['huge_mb']:.0f} | {row['mappings']} |"
        )


if __name__ == "__main__":
    main()
