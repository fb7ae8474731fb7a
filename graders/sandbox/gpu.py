"""What the parent knows about the GPU without touching CUDA, and how many GPU runners to keep.

The parent never asks torch about CUDA (a CUDA call there costs a driver context in every Celery process
and registers torch's fork handler): a GPU host is one with the NVIDIA driver's control device, and the
runners report the rest (device name, memory) once they have a context of their own.

Why the pool is sized as it is: a runner is used once, and each one pays for its own CUDA context (far
longer than a job: docs/performance.md, "GPU drills"). Sustained throughput is therefore runners created
at once / creation time, not the job's few milliseconds, so the pool keeps ``size`` runners ready or in
creation and creates up to ``concurrency`` of them in parallel; each idle runner holds a context
(``CONTEXT_MB``) and may allocate up to its cap (``memory_mb``), so the GPU's memory bounds ``size``.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping
from dataclasses import dataclass

GPU_NODES = ("/dev/nvidiactl",)  # the NVIDIA driver's control device (also under gVisor's nvproxy and in
# containers started with the NVIDIA runtime, which bind-mounts it with /dev/nvidia0.. and /dev/nvidia-uvm)
CONTEXT_MB = 600  # device memory one idle runner holds: its CUDA context, cuBLAS handle and workspace
DEFAULT_MEMORY_MB = 1024  # each runner's cap on what its caching allocator reserves
MEMORY_SHARE = 0.8  # of the GPU's memory for runners; the rest for other processes and fragmentation
MAX_SIZE = 64
# Passed from the parent to a GPU fork server and its runners (nothing secret): which GPU, where the driver's
# libraries are (read by the dynamic loader at start, so it must be in the fork server's own environment),
# and the MPS daemon's pipes where the host runs one.
PASSTHROUGH = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "LD_LIBRARY_PATH",
    "CUDA_MPS_PIPE_DIRECTORY",
    "CUDA_MPS_LOG_DIRECTORY",
)


def host_has_gpu() -> bool:
    """Whether this host exposes an NVIDIA GPU to us (device node present); asks no driver anything."""
    return any(os.path.exists(path) for path in GPU_NODES)


def device_nodes() -> list[str]:
    """The NVIDIA device nodes visible here (for reports): nvidiactl, nvidia0.., nvidia-uvm(-tools)."""
    return sorted(glob.glob("/dev/nvidia*"))


@dataclass(frozen=True)
class GpuPlan:
    size: int  # runners kept ready or in creation
    concurrency: int  # runners created at the same time
    memory_mb: int  # each runner's GPU memory cap


def _env_int(env: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    raw = env.get(name, "")
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, not {raw!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, not {value}")
    return value


def plan(cores: int, gpu_total_mb: int | None = None, env: Mapping[str, str] = os.environ) -> GpuPlan:
    """Two runners per core, all created in parallel, as many as the GPU's memory holds.

    Context creation is the driver's CPU work plus waits on the device: two creations per core keep the
    cores busy while each one waits. ``SANDBOX_GPU_POOL_SIZE``,
    ``SANDBOX_GPU_SPAWN_CONCURRENCY`` and ``SANDBOX_GPU_MEMORY_MB`` override each figure (a malformed
    value is an error, never a silent default); the memory bound applies once a runner reported the
    GPU's size.
    """
    memory_mb = _env_int(env, "SANDBOX_GPU_MEMORY_MB", DEFAULT_MEMORY_MB, 64)
    explicit = env.get("SANDBOX_GPU_POOL_SIZE", "")
    size = _env_int(env, "SANDBOX_GPU_POOL_SIZE", min(2 * max(cores, 1), MAX_SIZE), 1)
    if gpu_total_mb and not explicit:
        size = min(size, max(1, int(gpu_total_mb * MEMORY_SHARE // (memory_mb + CONTEXT_MB))))
    concurrency = _env_int(env, "SANDBOX_GPU_SPAWN_CONCURRENCY", size, 1)
    return GpuPlan(size=size, concurrency=min(concurrency, size), memory_mb=memory_mb)


def runner_environment(memory_mb: int, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """What a GPU fork server and its runners get beyond ``jail.CLEAN_ENV``: the parent's GPU selection and
    driver paths, and MPS's per-client memory limit (a hard cap, enforced by the MPS server, wherever the
    host runs an MPS control daemon; without one the variable is ignored)."""
    env = {name: environ[name] for name in PASSTHROUGH if name in environ}
    env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = f"0={memory_mb}M"
    return env
