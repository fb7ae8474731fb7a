"""Which grading queues a worker process may consume: routing by device, on the worker's side.

Submissions go to ``grade_gpu`` when their drill asks for CUDA and to ``grade_cpu`` otherwise (the web
side: ``Drill.queue``). Whether a worker takes from ``grade_gpu`` is decided here, in the worker, because
only the worker knows its device: a worker whose sandbox pool has no working GPU never consumes it, so a
cuda submission waits (the pages and ``/healthz`` say "no GPU grader online") until a GPU worker takes it.

The one exception is ``GRADER_CPU_FALLBACK``: on one host (``make run``, the default docker compose) the
only worker also grades cuda drills, on its CPU, and the verdict records ``cpu`` as the device. It is an
explicit setting, off by default, so a multi-host deployment never grades a cuda drill on a CPU silently.

Pure functions: no Django, no Celery (``graders.worker`` applies them to the running worker).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

NO_GPU_GRADER = "no GPU grader online"


def takes_gpu_queue(device: str, cpu_fallback: bool) -> bool:
    """May a worker whose pool runs on ``device`` consume the GPU queue at start?"""
    return device == "cuda" or cpu_fallback


def allowed_queues(requested: Sequence[str], gpu_queue: str, device: str, cpu_fallback: bool) -> list[str]:
    """The queues of ``requested`` this worker may consume (``-Q`` minus the GPU queue when it has no GPU)."""
    if takes_gpu_queue(device, cpu_fallback):
        return list(requested)
    return [queue for queue in requested if queue != gpu_queue]


def gpu_works(health: Mapping[str, Any]) -> bool:
    """Does a pool's health report (``SandboxPool.health``) say its runners can grade on a GPU?

    ``starting`` counts as working (jobs wait for the first runner), ``failed`` does not, and neither does
    a pool that came up without CUDA in its runners (``degraded`` for that reason); a pool degraded for
    another reason (no seccomp, say) still has its GPU.
    """
    if health.get("device") != "cuda":
        return False
    state = health.get("state")
    if state in ("starting", "ok"):
        return True
    return state == "degraded" and "CUDA is not available" not in str(health.get("error", ""))


def gpu_consumer_change(requested: bool, consuming: bool, health: Mapping[str, Any], cpu_fallback: bool) -> bool | None:
    """What a running worker should do with its GPU queue consumer after a heartbeat: ``False`` stop
    consuming, ``True`` consume again, ``None`` nothing. Only a GPU worker started for the GPU queue
    (``requested``: it was in ``-Q``) moves; a CPU worker without the fallback never consumed it, and
    one with the fallback always does."""
    if not requested or cpu_fallback or health.get("device") != "cuda":
        return None
    works = gpu_works(health)
    if consuming and not works:
        return False
    if not consuming and works:
        return True
    return None
