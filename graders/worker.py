"""Celery worker-process hooks: one warm sandbox pool per process that runs tasks.

Why here and not in the task: starting sandbox children (each imports torch) takes
seconds, so it happens once when a worker process starts, never on a learner's clock.

- prefork: every pool child builds its own ``SandboxPool`` in ``worker_process_init``
  (a pool built in the parent would share its pipes with every forked child);
- solo / threads: tasks run in the main process, so ``worker_ready`` builds it there.

The pool is closed when the process shuts down, which stops its sandbox children.
"""

from __future__ import annotations

import functools
import gc
import logging
import os
import threading
from typing import TYPE_CHECKING, Any

from celery.signals import worker_process_init, worker_process_shutdown, worker_ready, worker_shutdown
from django.conf import settings

if TYPE_CHECKING:
    from graders.sandbox import SandboxPool

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_pool: SandboxPool | None = None
_pool_pid = 0


@functools.cache
def worker_device() -> str:
    """The device this process grades on: a GPU when there is one, else the CPU.

    A worker without a GPU may consume ``grade_gpu`` too; GPU drills then run on the CPU
    and the verdict records ``cpu`` as the device that ran them.
    """
    forced = os.getenv("GRADER_DEVICE", "")
    if forced:
        return forced
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def get_pool() -> SandboxPool:
    """This process's warm pool, built on first use (and rebuilt after a fork)."""
    global _pool, _pool_pid
    with _lock:
        if _pool is None or _pool_pid != os.getpid():
            from graders.sandbox import SandboxPool

            _pool = SandboxPool(size=settings.GRADER_POOL_SIZE, device=worker_device())
            _pool_pid = os.getpid()
            logger.info(
                "sandbox pool of %d started on %s in pid %d", settings.GRADER_POOL_SIZE, _pool.device, _pool_pid
            )
        return _pool


def close_pool() -> None:
    global _pool
    with _lock:
        if _pool is not None and _pool_pid == os.getpid():
            _pool.close()
        _pool = None


def _is_prefork(worker: Any) -> bool:
    pool_cls = getattr(worker, "pool_cls", None)
    return "prefork" in str(getattr(pool_cls, "__module__", pool_cls))


def import_grading_modules() -> None:
    """Import torch and the grading code before the first task, not inside its time limit.

    On a loaded machine importing torch takes seconds; done in a task, the soft time limit could
    interrupt it half-way and leave torch's operator registry broken for every later grade.
    """
    import graders.drills.cases
    import graders.drills.compare
    import graders.grading  # noqa: F401

    # torch and Django are about half a million objects that live as long as the process: the
    # collector's full passes need not walk them between two verdicts.
    gc.freeze()


@worker_process_init.connect
def _start_in_child(**kwargs: Any) -> None:
    import_grading_modules()
    get_pool()


@worker_process_shutdown.connect
def _stop_in_child(**kwargs: Any) -> None:
    close_pool()


@worker_ready.connect
def _start_in_main(sender: Any = None, **kwargs: Any) -> None:
    consumer_worker = getattr(sender, "controller", None)
    if consumer_worker is not None and not _is_prefork(consumer_worker):
        import_grading_modules()
        get_pool()
    from graders.tasks import reap_submissions

    reap_submissions.apply_async(queue=settings.GRADER_QUEUE_CPU)


@worker_shutdown.connect
def _stop_in_main(**kwargs: Any) -> None:
    close_pool()
