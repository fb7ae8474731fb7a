"""The GPU sandbox, measured and proved: ``python bench/gpu.py [--proof]``. No Django needed.

Bench (the default): warm p50/p95 of ``SandboxPool.run`` on a GPU runner, sustained cuda verdicts/s with
several callers driving the pool flat out (runners replaced by the creation pipeline meanwhile), how long
a runner takes to get ready, and the cold baseline (a fresh process tree per submission), in one run.
Targets on one H100: warm p50 <= 15 ms, p95 <= 40 ms, >= 20 verdicts/s sustained.

``--proof`` runs first what ``scripts/gpu-proof.sh`` reports: which namespace sets CUDA initialises in
(each in a fresh process), the four cuda drills' references, wrong answers and alternatives graded on the
GPU, the attack suite on GPU runners, and the isolation the runners got; it exits 1 if any check fails.

Without a GPU (no /dev/nvidiactl) it says so and exits 0; ``--cpu-smoke`` then runs the bench on the CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from graders.sandbox import SandboxPool, gpu, jail, run_once  # noqa: E402

MATMUL = "import torch\n\ndef solution(x, y):\n    return x @ y + 1\n"  # the 64x64 drill measured on the H100
CUDA_DRILLS = ("leaf-on-device", "model-to-device", "tensor-device-index", "to-device-and-back")
SOLUTIONS = REPO / "tests" / "graders" / "solutions"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else float("nan")


# -- which namespaces CUDA survives ----------------------------------------------------------------------

NAMESPACE_PROBE = r"""
import ctypes, json, os, sys, time
sys.path.insert(0, sys.argv[1])
from graders.sandbox import jail
flags, remount_proc = int(sys.argv[2]), sys.argv[3] == "1"
if flags and not jail.unshare(flags):
    print(json.dumps({"ok": False, "error": "unshare refused on this host"}))
    sys.exit(0)
if flags & jail.CLONE_NEWPID:  # only the next child is in the new PID namespace (its PID 1)
    pid = os.fork()
    if pid:
        sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
if remount_proc:  # a /proc of the new PID namespace, as a container runtime gives
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount(b"none", b"/", None, 0x4000 | 0x40000, None)  # MS_REC | MS_PRIVATE
    libc.mount(b"proc", b"/proc", b"proc", 0, None)
started = time.perf_counter()
try:
    import torch
    torch.cuda.init()
    a = torch.ones(64, 64, device="cuda")
    value = float((a @ a).sum().item())
    report = {"ok": value == 64.0 ** 3, "error": ""}
except Exception as exc:
    report = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
report["ms"] = round((time.perf_counter() - started) * 1000)
print(json.dumps(report))
"""

VARIANTS: list[tuple[str, int, bool]] = [
    ("host namespaces", 0, False),
    ("net", jail.CLONE_NEWNET, False),
    ("net + ipc", jail.CLONE_NEWNET | jail.CLONE_NEWIPC, False),
    ("net + ipc + uts (the GPU runners' recipe)", jail.CLONE_NEWNET | jail.CLONE_NEWIPC | jail.CLONE_NEWUTS, False),
    ("pid", jail.CLONE_NEWPID, False),
    ("net + pid", jail.CLONE_NEWNET | jail.CLONE_NEWPID, False),
    ("net + pid + mnt, /proc remounted", jail.CLONE_NEWNET | jail.CLONE_NEWPID | jail.CLONE_NEWNS, True),
    ("user", jail.CLONE_NEWUSER, False),
    ("user + net (what an unprivileged worker could have)", jail.CLONE_NEWUSER | jail.CLONE_NEWNET, False),
    ("user + net + pid (the CPU runners' recipe)", jail.CLONE_NEWUSER | jail.CLONE_NEWNET | jail.CLONE_NEWPID, False),
]


def probe_namespaces() -> list[dict[str, Any]]:
    """Each variant in a fresh interpreter (the same clean environment as the fork server), all at once."""
    env = jail.process_env("cuda", gpu.runner_environment(gpu.DEFAULT_MEMORY_MB))
    procs = [
        (
            name,
            subprocess.Popen(
                [sys.executable, "-I", "-c", NAMESPACE_PROBE, str(REPO), str(flags), "1" if remount else "0"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                text=True,
            ),
        )
        for name, flags, remount in VARIANTS
    ]
    rows = []
    for name, proc in procs:
        out, err = proc.communicate(timeout=180)
        lines = out.strip().splitlines()
        try:
            report = json.loads(lines[-1]) if lines else {"ok": False, "error": err.strip()[-300:]}
        except json.JSONDecodeError:
            report = {"ok": False, "error": out.strip()[-300:]}
        rows.append({"variant": name, **report})
    return rows


# -- drills and attacks on GPU runners ----------------------------------------------------------------------


def drill_rows(pool: SandboxPool) -> list[dict[str, Any]]:
    """Every cuda drill's reference and alternatives must be accepted, every wrong answer (the GPU-only
    ones included) refused, each verdict on ``cuda``."""
    from graders.drills import DRILLS_DIR, load_drills
    from graders.drills.grading import ReferenceCache, grade

    drills = load_drills(DRILLS_DIR)
    rows = []
    for slug in CUDA_DRILLS:
        drill, cache = drills[slug], ReferenceCache()
        known = tomllib.loads((SOLUTIONS / f"{slug}.toml").read_text(encoding="utf-8"))
        cases = [("reference", drill.reference, True)]
        cases += [(f"wrong: {w['why']}", w["code"], False) for w in known.get("wrong", [])]
        cases += [(f"wrong on GPU: {w['why']}", w["code"], False) for w in known.get("wrong_on_gpu", [])]
        cases += [("alternative", a["code"], True) for a in known.get("alternative", [])]
        for label, code, accept in cases:
            verdict = grade(drill, code, seed=0, runner=pool, cache=cache)
            ok = (verdict["status"] == "accepted") == accept and verdict["device"] == "cuda"
            ok = ok and (accept or verdict["status"] in ("wrong_answer", "runtime_error"))
            rows.append(
                {
                    "drill": slug,
                    "solution": label[:60],
                    "status": verdict["status"],
                    "device": verdict["device"],
                    "wall_ms": round(float(verdict["wall_ms"]), 1),
                    "ok": ok,
                    "message": verdict["message"][:200],
                }
            )
    return rows


def attack_rows(pool: SandboxPool) -> tuple[dict[str, Counter[str]], list[str]]:
    """The attack suite on GPU runners, one attack at a time, each checked by the suite's own check
    (tests/graders/test_sandbox_attacks.py: contained, nothing leaked or left, the fork server alive, the
    next correct submission graded right), so the GPU is held to exactly the CPU's checks. Raw attacks run
    as there, on runners with layers 1 and 2 off (their own small pool, on the same device)."""
    from tests.graders.attacks import ATTACKS
    from tests.graders.test_sandbox_attacks import check_contained, prepare

    env = prepare()
    counts: dict[str, Counter[str]] = {}
    failures: list[str] = []
    with SandboxPool(size=1, device=pool.device, unguarded=True) as unguarded:
        try:
            for number, attack in enumerate(ATTACKS, 1):
                counts.setdefault(attack.category, Counter())["total"] += 1
                try:
                    check_contained(unguarded if attack.raw else pool, env, attack)
                except Exception as exc:  # an assertion, or anything the check itself tripped on
                    counts[attack.category]["failed"] += 1
                    first = (str(exc).splitlines() or [""])[0][:200]
                    failures.append(f"{attack.category}/{attack.name}: {type(exc).__name__}: {first}")
                    sys.stderr.write(f"FAILED {failures[-1]}\n")
                else:
                    counts[attack.category]["contained"] += 1
                if number % 50 == 0:  # a run cut short by its time limit still says how far it got
                    sys.stderr.write(f"attacks: {number}/{len(ATTACKS)}, {len(failures)} failed\n")
        finally:
            os.unlink(env.canary_file)
            os.environ.pop(env.canary_env, None)
    return counts, failures


# -- the bench -------------------------------------------------------------------------------------------


def bench(pool: SandboxPool, *, warm_runs: int, seconds: float, callers: int, cold: int) -> dict[str, Any]:
    import torch

    cases = [(torch.randn(64, 64), torch.randn(64, 64))]
    device = pool.device
    warm = []
    for _ in range(warm_runs):  # a ready runner every time
        pool.warm()
        started = time.perf_counter()
        result = pool.run(MATMUL, "solution", cases)
        warm.append((time.perf_counter() - started) * 1000)
        assert result.status == "ok" and result.device == device, result
    flat: list[float] = []
    finished: list[float] = []  # when each verdict came back
    done = threading.Event()

    def drive() -> None:
        while not done.is_set():
            started = time.perf_counter()
            result = pool.run(MATMUL, "solution", cases)
            if result.status == "ok" and result.device == device:
                flat.append((time.perf_counter() - started) * 1000)
                finished.append(time.perf_counter())

    threads = [threading.Thread(target=drive) for _ in range(callers)]
    started_all = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    done.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started_all
    # Sustained: the last three quarters, once the stock of warm runners the run started with is spent.
    steady_from = started_all + elapsed / 4
    steady = sum(1 for t in finished if t >= steady_from) / (elapsed * 3 / 4)
    setups = pool.setup_timings()
    cold_ms = []
    for _ in range(cold):
        started = time.perf_counter()
        result = run_once(MATMUL, "solution", cases, device=pool.requested_device)
        cold_ms.append((time.perf_counter() - started) * 1000)
        assert result.status == "ok", result
    return {
        "device": device,
        "size": pool.size,
        "concurrency": pool.concurrency,
        "warm": warm,
        "flat": flat,
        "throughput": len(flat) / elapsed,
        "steady": steady,
        "callers": callers,
        "setup_ms": [s.get("setup_ms", 0.0) for s in setups],
        "total_ms": [s.get("total_ms", 0.0) for s in setups],
        "cold": cold_ms,
    }


def print_bench(figures: dict[str, Any]) -> None:
    out = sys.stdout
    out.write(
        f"\n## Bench on {figures['device']} (pool size {figures['size']}, {figures['concurrency']} created "
        f"at once, {figures['callers']} callers)\n\n"
    )
    out.write("| what | n | p50 ms | p95 ms | target |\n| --- | --- | --- | --- | --- |\n")
    rows = [
        ("pool.run, runner already warm (64x64 matmul)", figures["warm"], "p50 <= 15, p95 <= 40"),
        ("pool.run, sustained (callers flat out)", figures["flat"], ""),
        ("runner set-up: fork to context ready", figures["setup_ms"], "about 1000 (measured)"),
        ("runner creation: request to ready", figures["total_ms"], ""),
        ("cold: fresh process tree per submission", figures["cold"], "2300-3700 (measured)"),
    ]
    for name, values, target in rows:
        if values:
            out.write(
                f"| {name} | {len(values)} | {statistics.median(values):.1f} | "
                f"{percentile(values, 0.95):.1f} | {target} |\n"
            )
    out.write(
        f"\nsustained: {figures['steady']:.1f} verdicts/s over the last three quarters of the run "
        f"({figures['throughput']:.1f} over all of it, the starting stock included); target >= 20 on one H100\n"
    )
    if figures["cold"]:
        ratio = statistics.median(figures["cold"]) / max(statistics.median(figures["warm"]), 0.001)
        out.write(f"cold p50 / warm p50 = {ratio:.0f}x\n")


# -- the proof -------------------------------------------------------------------------------------------


def print_table(title: str, rows: list[dict[str, Any]], columns: list[str]) -> None:
    out = sys.stdout
    out.write(f"\n## {title}\n\n| " + " | ".join(columns) + " |\n|" + " --- |" * len(columns) + "\n")
    for row in rows:
        out.write("| " + " | ".join(str(row.get(c, "")).replace("|", "/") for c in columns) + " |\n")


def proof(pool: SandboxPool) -> bool:
    namespaces = probe_namespaces()
    print_table(
        "CUDA initialisation per namespace set (fresh process each)", namespaces, ["variant", "ok", "ms", "error"]
    )
    pool.warm()
    health = pool.health()
    print_table("What the GPU runners got", [{"key": k, "value": v} for k, v in health.items()], ["key", "value"])
    drills = drill_rows(pool)
    print_table("The cuda drills on the GPU", drills, ["drill", "solution", "status", "device", "wall_ms", "ok"])
    counts, failures = attack_rows(pool)
    rows = [{"category": c, **counts[c]} for c in sorted(counts)]
    rows.append({"category": "all", **sum(counts.values(), Counter())})
    print_table("The attack suite on GPU runners", rows, ["category", "total", "contained", "failed"])
    for failure in failures:
        sys.stdout.write(f"- FAILED {failure}\n")
    ok = health["state"] == "ok" and health["device"] == "cuda" and all(r["ok"] for r in drills) and not failures
    ok = ok and any(r["ok"] for r in namespaces if "GPU runners" in r["variant"])
    for row in drills:
        if not row["ok"]:
            sys.stdout.write(f"- FAILED {row['drill']} {row['solution']}: {row['status']} {row['message']}\n")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--proof", action="store_true", help="namespaces, drills, attacks, isolation, then bench")
    parser.add_argument("--cpu-smoke", action="store_true", help="without a GPU: run the bench on the CPU")
    parser.add_argument("--warm-runs", type=int, default=40)
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the callers drive the pool")
    parser.add_argument("--callers", type=int, default=8, help="threads calling pool.run back to back")
    parser.add_argument("--cold", type=int, default=3, help="cold process trees (a few seconds each)")
    parser.add_argument("--size", type=int, default=None, help="runners kept (default: graders.sandbox.gpu.plan)")
    args = parser.parse_args(argv)
    device = "cuda" if gpu.host_has_gpu() else "cpu"
    if device == "cpu":
        sys.stdout.write("no NVIDIA GPU on this host (no /dev/nvidiactl): nothing to measure on a GPU\n")
        if not args.cpu_smoke:
            return 0
        args.size, args.seconds, args.proof = args.size or 2, min(args.seconds, 5.0), False
    sys.stdout.write(f"python {sys.version.split()[0]}, nodes {' '.join(gpu.device_nodes()) or 'none'}\n")
    ok = True
    with SandboxPool(size=args.size, device=device) as pool:
        if args.proof:
            ok = proof(pool)
        figures = bench(pool, warm_runs=args.warm_runs, seconds=args.seconds, callers=args.callers, cold=args.cold)
    print_bench(figures)
    if args.proof:
        sys.stdout.write(f"\nPROOF: {'PASS' if ok else 'FAIL'}\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
