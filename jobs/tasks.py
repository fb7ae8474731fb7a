"""Celery tasks: one task runs every kind of sandbox job; one reaper re-sends what was lost.

Delivery guarantees come from the broker settings (acks_late, prefetch 1): a
message is acknowledged only after the task returns, so a worker killed mid-job leaves its message to be
delivered again. Exactly-once *results* come from the database claim in ``jobs.lifecycle``, not from the
broker. Work is sent with ``enqueue_on_commit``: after the row is committed, and never as a server
error when the broker is away (the row stays queued and the reaper sends it again).

The tasks are named for this module (until issue 40 they were ``graders.tasks.run_job`` and
``graders.tasks.reap``). A message sent under an old name before an upgrade is refused by a new worker
("unregistered task") and lost, but never its job: the row stays ``queued``, and the reaper every new
worker runs at start (``startup``: every queued row, whatever its age) sends it again under the new name.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import Any, TypeVar

from celery import Task, shared_task
from django.conf import settings
from django.db import DatabaseError, IntegrityError, InterfaceError, OperationalError, transaction
from django.utils import timezone

from jobs import lifecycle as jobs
from jobs import routing
from jobs.heartbeat import offline_queues
from jobs.models import Job
from jobs.pools import get_pool
from jobs.status import Status

logger = logging.getLogger(__name__)
J = TypeVar("J", bound=Job)

# Ours and transient: the database or broker went away. Anything else is a bug or a verdict.
INFRASTRUCTURE_ERRORS = (OperationalError, InterfaceError, ConnectionError, TimeoutError)
# A blip in the broker is retried at once; a longer outage is left to the reaper.
PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.1, "interval_max": 0.1}
# How long a GPU job taken by a worker whose GPU stopped working waits before it goes back to its queue:
# until that worker's next heartbeat cancels its consumer, the job would otherwise bounce between the two.
RETURN_DELAY = 0.5


def enqueue(job: Job) -> None:
    """Send a committed job to its queue; a broker failure is logged, never raised."""
    kind = jobs.kind_of(job)
    try:
        run_job.apply_async(args=[kind.name, job.pk], queue=kind.queue(job), retry=True, retry_policy=PUBLISH_RETRY)
    except Exception:
        logger.exception("could not queue %s %s; the reaper will send it again", kind.name, job.pk)


def enqueue_on_commit(job: Job) -> None:
    """Call inside the transaction that stores ``job``: it is sent once that transaction commits."""
    transaction.on_commit(functools.partial(enqueue, job))


def request(model: type[J], **lookup: Any) -> J:
    """The job row for ``lookup`` (unique), or a new ``queued`` one sent after commit; one wins a race."""
    row = model.objects.filter(**lookup).first()
    if row is not None:
        return row
    try:
        with transaction.atomic():
            row = model.objects.create(**lookup)
            enqueue_on_commit(row)
    except IntegrityError:  # a concurrent request created it first
        return model.objects.get(**lookup)
    return row


class JobTask(Task):
    def on_failure(self, exc: BaseException, task_id: str, args: tuple, kwargs: dict, einfo: object) -> None:
        """The task failed for good: the job still gets its one final result."""
        if len(args) == 2:
            try:
                jobs.fail(jobs.kind_named(args[0]), int(args[1]), f"the task failed: {type(exc).__name__}: {exc}")
            except DatabaseError:
                logger.exception("could not record the failure of %s %s; the reaper will resend it", *args)


@shared_task(
    bind=True,
    base=JobTask,
    name="jobs.tasks.run_job",
    acks_late=True,
    autoretry_for=INFRASTRUCTURE_ERRORS,
    retry_backoff=True,
    retry_backoff_max=30,
    max_retries=5,
    ignore_result=True,
)
def run_job(self: Task, kind_name: str, pk: int) -> str:
    """Run one job of the named kind. Returns what happened (for the worker log)."""
    kind = jobs.kind_named(kind_name)
    pool = get_pool()
    if not takes_from(pool, (self.request.delivery_info or {}).get("routing_key")):
        # Never graded on a device it did not ask for: back to its queue, unclaimed, for a GPU worker.
        time.sleep(RETURN_DELAY)
        run_job.apply_async(
            args=[kind_name, pk], queue=settings.GRADER_QUEUE_GPU, retry=True, retry_policy=PUBLISH_RETRY
        )
        return "returned"
    # The pool forks its replacement child after the result is stored, not during it.
    with pool.busy():
        outcome = jobs.process(kind, pk, pool, worker=self.request.hostname or "")
    if outcome.retry_in is not None:
        # Another worker holds it (or ours failed): look again later; the claim decides.
        raise self.retry(countdown=outcome.retry_in, max_retries=None)
    return outcome.status


def takes_from(pool: Any, queue: str | None) -> bool:
    """May this worker run a job that came from ``queue``? Not a GPU job without a working GPU (the
    consumer rules in ``graders.worker`` keep such jobs away; this holds even if one slips through)."""
    if queue != settings.GRADER_QUEUE_GPU or settings.GRADER_CPU_FALLBACK:
        return True
    return routing.gpu_works(pool.health())


@shared_task(name="jobs.tasks.reap", ignore_result=True)
def reap(startup: bool = False) -> int:
    """Re-send every job whose message may be lost: on a schedule, and when a worker starts (``startup``:
    every queued row, whatever its age, so a killed worker's jobs are graded at once).

    On the schedule, a queued GPU job is left alone while no GPU grader is online: its message is waiting
    in that queue, and re-sending it every run would pile up copies over hours without a GPU worker; the
    first GPU worker to start re-sends every queued row anyway. (The CPU queue always has a grader when
    this runs: the reaper itself runs on one.)

    Work that is given up rather than sent again when lost (an FSRS fit: ``cards`` registers
    ``cards.optimising.expire_lost``, ``jobs.lifecycle.register_sweep``) is swept here too, so a fit whose
    worker was killed no longer holds its learner's one active fit.
    """
    now = timezone.now()
    offline = set() if startup else offline_queues([settings.GRADER_QUEUE_GPU], now)
    count = 0
    for kind in jobs.kinds():
        for job in jobs.lost(kind, now, queued_for=0 if startup else None):
            if job.status == Status.QUEUED and kind.queue(job) in offline:
                continue
            enqueue(job)
            count += 1
    if count:
        logger.warning("re-sent %d stuck jobs", count)
    jobs.sweep_lost(now)
    return count
