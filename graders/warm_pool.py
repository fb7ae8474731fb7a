"""This process's warm sandbox pool: one per process that runs sandbox jobs (a worker, the notes check).

The one place a pool for jobs is built, and ``GRADER_POOL_SIZE`` the one setting that sizes a CPU pool (the
sandbox is pure Python and reads no Django settings).

Why per process and built once: starting sandbox children (each imports torch) takes seconds, so it
happens when a worker process starts (``graders.worker``), never on a learner's clock; a pool built
in a parent would share its pipes with every forked child, so a forked process builds its own.
"""

from __future__ import annotations

import atexit
import functools
import logging
import os
import threading
from typing import TYPE_CHECKING

from django.conf import settings

if TYPE_CHECKING:
    from graders.sandbox import SandboxPool

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_pool: SandboxPool | None = None
_pool_pid = 0


@functools.cache
def worker_device() -> str:
    """The device this process grades on: a GPU when the host has one, else the CPU.

    A worker without a GPU may consume ``grade_gpu`` too; GPU drills then run on the CPU and the
    verdict records ``cpu`` as the device that ran them. On a host with a GPU the pool is a GPU pool
    even when CUDA fails to start here: its health then says why, instead of a silent CPU fallback.
    Decided from the driver's device node, not by asking CUDA, so this process holds no CUDA context.
    """
    forced = os.getenv("GRADER_DEVICE", "")
    if forced:
        return forced
    from graders.sandbox.gpu import host_has_gpu

    return "cuda" if host_has_gpu() else "cpu"


def get_pool(device: str | None = None) -> SandboxPool:
    """This process's warm pool, built on first use (and rebuilt after a fork) on ``device``, by default
    ``worker_device()``; the notes check asks for a CPU pool. A process uses one device: asking for another
    once the pool is built is an error, not a pool on the wrong device."""
    global _pool, _pool_pid
    with _lock:
        if _pool is None or _pool_pid != os.getpid():
            from graders.sandbox import SandboxPool

            device = device or worker_device()
            # A GPU pool sizes itself from the cores and the GPU's memory (SANDBOX_GPU_POOL_SIZE overrides).
            _pool = SandboxPool(size=settings.GRADER_POOL_SIZE if device == "cpu" else None, device=device)
            _pool_pid = os.getpid()
            logger.info("sandbox pool of %d started on %s in pid %d", _pool.size, _pool.device, _pool_pid)
        elif device is not None and device != _pool.requested_device:
            raise ValueError(f"this process's sandbox pool is a {_pool.requested_device} pool, not a {device} one")
        return _pool


def current_pool() -> SandboxPool | None:
    """The pool if this process has built one (the heartbeat reports its health), else None."""
    with _lock:
        return _pool if _pool is not None and _pool_pid == os.getpid() else None


@atexit.register  # a process that is not a worker (the notes check) closes its pool when it exits
def close_pool() -> None:
    global _pool
    with _lock:
        if _pool is not None and _pool_pid == os.getpid():
            _pool.close()
        _pool = None
