"""Celery worker hooks: a warm sandbox pool and a heartbeat in the worker process, which runs jobs in its
threads (``CELERY_WORKER_POOL``), started once the worker is ready.

The heartbeat (a ``GraderHeartbeat`` row written every ``GRADER_HEARTBEAT_SECONDS``) is what lets the
pages and ``/healthz`` say "the grader is offline" instead of waiting forever (``jobs.heartbeat``
reads it). It carries the sandbox pool's own health (``SandboxPool.health``), so a GPU queue whose runners
cannot get CUDA, or a fork server that cannot start, shows as degraded; the heartbeat also logs each
change of that state, so the worker's log says at start what its pool got. On start the worker also asks
the reaper to re-send jobs whose messages were lost.

Routing by device (``jobs.routing``): once ``-Q`` is applied, a worker whose pool has no GPU drops the
GPU queue (unless ``GRADER_CPU_FALLBACK``), so it never takes a cuda job; a GPU worker whose runners lose
CUDA stops consuming it at the next heartbeat and starts again once they have it back.
"""

from __future__ import annotations

import gc
import logging
import os
import socket
import threading
from datetime import timedelta
from typing import Any

from celery import current_app
from celery.signals import celeryd_after_setup, worker_ready, worker_shutdown
from django.conf import settings
from django.db import DatabaseError, close_old_connections
from django.utils import timezone

from cards.tasks import expire_lost_fits
from graders.sandbox.gpu import host_has_gpu
from graders.warm_pool import close_pool, current_pool, get_pool, worker_device
from jobs import routing, tasks
from jobs.models import GraderHeartbeat

logger = logging.getLogger(__name__)
FORGET_AFTER = timedelta(days=1)  # heartbeat rows of processes gone this long are deleted
NO_HUGE_PAGES = (
    "the sandbox fork server got no 2 MiB pages (transparent huge pages off, or Linux before 6.1): "
    "each verdict's fork and exit cost five to seven times the CPU; see docs/deploy.md, 'Transparent huge pages'"
)


def import_grading_modules() -> None:
    """Import torch and the grading code before the first task, not inside its time limit.

    On a loaded machine importing torch takes seconds; done in a task, the soft time limit could
    interrupt it half-way and leave torch's operator registry broken for every later grade.
    """
    import graders.drills.cases
    import graders.drills.compare
    import graders.drills.grading  # noqa: F401

    # torch and Django are about half a million objects that live as long as the process: the
    # collector's full passes need not walk them between two verdicts.
    gc.freeze()


def pool_health() -> dict[str, Any]:
    """The pool's own report (state, requested and actual device, isolation, error), or "starting"."""
    pool = current_pool()
    if pool is None:
        return {"state": "starting", "device": worker_device()}
    return pool.health()


def log_health_change(before: str | None, health: dict[str, Any]) -> str | None:
    """Log the pool's state once it is known and whenever it changes (degraded or failed as an error);
    returns the state to compare the next report with."""
    state = str(health.get("state"))
    if state in (before, "starting"):
        return before
    if state == "ok":
        logger.info("sandbox pool ready on %s, isolation %s", health.get("device"), health.get("isolation", {}))
        if health.get("huge_pages_mb") == 0:
            logger.warning(NO_HUGE_PAGES)
    else:
        logger.error("sandbox pool for %s is %s: %s", health.get("device"), state, health.get("error", ""))
    return state


def consumed_queues() -> list[str]:
    queues = current_app.amqp.queues
    return sorted(queues.consume_from or queues)


def pool_device() -> str:
    """The device this process's pool will grade on (``SandboxPool``'s rule), known before the pool starts."""
    return "cuda" if worker_device() == "cuda" and host_has_gpu() else "cpu"


def route_by_device(app: Any) -> list[str]:
    """Drop the GPU queue from what this worker consumes when its pool has no GPU; returns the queues kept.

    A worker left with no queue at all (``-Q grade_gpu`` on a host without a GPU) exits: it could never
    grade anything, and an idle worker would look like a GPU grader to anyone counting processes.
    """
    queues = app.amqp.queues
    requested = sorted(queues.consume_from or queues)
    gpu = settings.GRADER_QUEUE_GPU
    kept = routing.allowed_queues(requested, gpu, pool_device(), settings.GRADER_CPU_FALLBACK)
    if kept == requested:
        return kept
    if not kept:
        raise SystemExit(
            f"this worker was asked to consume only {gpu}, but its sandbox has no GPU "
            "(GRADER_CPU_FALLBACK is off): it would never grade anything"
        )
    queues.deselect([gpu])
    logger.warning("no GPU here: not consuming %s (cuda drills wait for a GPU worker; see GRADER_CPU_FALLBACK)", gpu)
    return kept


class Heartbeat(threading.Thread):
    """Writes this process's row now and every ``interval`` seconds until stopped."""

    def __init__(self, interval: float, node: str = "") -> None:
        super().__init__(name="grader-heartbeat", daemon=True)
        self.interval = interval
        self.node = node  # the Celery node name (cpu@host): where to send our own consumer changes
        self.name_key = f"{socket.gethostname()}:{os.getpid()}"
        self.stopped = threading.Event()
        self.state: str | None = None  # the pool's last logged state
        self.gpu_requested = settings.GRADER_QUEUE_GPU in consumed_queues()

    def follow_gpu(self, health: dict[str, Any], queues: list[str]) -> None:
        """Stop consuming the GPU queue while this GPU worker's runners cannot use the GPU, and resume
        once they can (through the worker's own control channel, which changes consumers safely)."""
        gpu = settings.GRADER_QUEUE_GPU
        change = routing.gpu_consumer_change(self.gpu_requested, gpu in queues, health, settings.GRADER_CPU_FALLBACK)
        if change is None or not self.node:
            return
        control = current_app.control
        try:
            if change:
                logger.warning("the sandbox's GPU works again: consuming %s", gpu)
                control.add_consumer(gpu, destination=[self.node], reply=False)
            else:
                logger.error("the sandbox's GPU does not work: not consuming %s until it does", gpu)
                control.cancel_consumer(gpu, destination=[self.node], reply=False)
        except Exception:  # the broker is away: the next heartbeat asks again, and must still be written
            logger.warning("could not change the %s consumer; trying again at the next heartbeat", gpu, exc_info=True)

    def beat(self) -> None:
        close_old_connections()  # a database restart must not silence the heartbeat for good
        now = timezone.now()
        health = pool_health()
        self.state = log_health_change(self.state, health)
        device = str(health.get("device") or pool_device())  # the pool's: cpu on a host without a GPU
        queues = consumed_queues()
        self.follow_gpu(health, queues)
        values = {"queues": queues, "device": device, "health": health, "seen_at": now}
        if not GraderHeartbeat.objects.filter(name=self.name_key).update(**values):
            GraderHeartbeat.objects.filter(seen_at__lt=now - FORGET_AFTER).delete()
            GraderHeartbeat.objects.create(name=self.name_key, started_at=now, **values)

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                self.beat()
            except DatabaseError:
                logger.warning("heartbeat not written (database unavailable)", exc_info=True)
            self.stopped.wait(self.interval)
        close_old_connections()


_heartbeat: Heartbeat | None = None


def start_grading(node: str = "") -> None:
    """In the process that will run jobs: the heartbeat (first: "starting" is alive), the warm pool, imports.

    The pool starts its fork server in the background before this process imports torch, so the two
    start-ups overlap and a restarted worker has its first runner ready sooner (docs/performance.md, "Soak").
    """
    global _heartbeat
    _heartbeat = Heartbeat(settings.GRADER_HEARTBEAT_SECONDS, node)
    _heartbeat.start()
    get_pool()  # starts in the background; the heartbeat logs its state once it is known
    import_grading_modules()


def stop_grading() -> None:
    if _heartbeat is not None:
        _heartbeat.stopped.set()
    close_pool()


@celeryd_after_setup.connect
def _route(sender: str, instance: Any, **kwargs: Any) -> None:
    route_by_device(instance.app)


def scoring_only(queues: list[str]) -> bool:
    """The scoring worker (FSRS fits and calibration reports, ``SCORING_QUEUE`` alone) grades nothing: it gets
    no sandbox pool and no grader heartbeat, and sends no grading reap (only its own: the fits a killed one held)."""
    return set(queues) == {settings.SCORING_QUEUE}


@worker_ready.connect
def _start(sender: Any = None, **kwargs: Any) -> None:
    if scoring_only(consumed_queues()):
        expire_lost_fits.apply_async(queue=settings.SCORING_QUEUE)  # what a killed scoring worker held
        return
    start_grading(getattr(sender, "hostname", "") or "")
    tasks.reap.apply_async(kwargs={"startup": True}, queue=settings.GRADER_QUEUE_CPU)


@worker_shutdown.connect
def _stop(**kwargs: Any) -> None:
    stop_grading()
