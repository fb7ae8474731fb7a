"""How a pool is, in one report: what the worker's heartbeat carries, and so what ``/healthz`` and the
pages say about the grader (``SandboxPool.health`` gathers the facts, ``report`` judges them)."""

from __future__ import annotations

from typing import Any

ISOLATION_KEYS = (
    "device",
    "userns",
    "netns",
    "pidns",
    "ipcns",
    "chroot",
    "uid",
    "uid_dropped",
    "uid_reserved",
    "seccomp",
    "signals_confined",
)


def report(
    *,
    device: str,
    requested: str,
    host_gpu: bool,
    unguarded: bool,
    ready: dict[str, Any],
    failure: str | None,
    failed: bool,
    huge_pages_mb: object,
) -> dict[str, Any]:
    """``state``: ``starting`` (no runner ready yet), ``ok``, ``degraded`` (runners lack something the pool
    promises: CUDA on a GPU host, seccomp) or ``failed`` (the fork server cannot start, or no child does),
    with the reason in ``error``. ``ready`` is what the newest runner said; ``huge_pages_mb``, once the fork
    server said hello, how much of its memory the kernel gave it in 2 MiB pages."""
    result: dict[str, Any] = {"state": "starting", "device": device, "requested": requested}
    if isinstance(huge_pages_mb, int):  # 0: every fork and exit costs several times the CPU (bench/fork_floor.py)
        result["huge_pages_mb"] = huge_pages_mb
    if requested == "cuda" and not host_gpu:
        result["note"] = "no GPU on this host: cuda drills run on the CPU"
    if ready:
        result["isolation"] = {k: ready.get(k) for k in ISOLATION_KEYS if k in ready}
        if "gpu" in ready:
            result["gpu"] = ready["gpu"]
    if failed:
        result.update(state="failed", error=failure or "the sandbox cannot start a child")
    elif ready:
        problems = runner_problems(device, ready)
        if unguarded:
            problems.append("layers 1 and 2 are off in this pool (the attack suite's unguarded mode)")
        result["state"] = "degraded" if problems else "ok"
        if problems:
            result["error"] = "; ".join(problems)
    return result


def runner_problems(device: str, ready: dict[str, Any]) -> list[str]:
    """What a ready runner lacks that the pool promises."""
    problems = []
    if device == "cuda" and ready.get("device") != "cuda":
        problems.append(f"CUDA is not available in the sandbox runners: {ready.get('cuda_error') or 'no reason given'}")
    if ready.get("seccomp") is False:
        problems.append(f"seccomp is not available in the sandbox runners ({ready.get('seccomp_error') or 'off'})")
    if ready.get("rehearsal_error"):
        problems.append(f"the sandbox runners' rehearsal job failed: {ready['rehearsal_error']}")
    return problems
