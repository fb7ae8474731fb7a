"""Celery tasks: one task runs every kind of sandbox job; one reaper re-sends what was lost.

Delivery guarantees come from the broker settings (acks_late, prefetch 1): a
message is acknowledged only after the task returns, so a worker killed mid-job leaves its message to be
delivered again. Exactly-once *results* come from the database claim in ``graders.jobs``, not from the
broker. Work is sent with ``enqueue_on_commit``: after the row is committed, and never as a server
error when the broker is away (the row stays queued and the reaper sends it again).
"""

from __future__ import annotations

import functools
import logging
from typing import Any, TypeVar

from celery import Task, shared_task
from django.db import DatabaseError, IntegrityError, InterfaceError, OperationalError, transaction
from django.utils import timezone

from graders import jobs
from graders.models import Job
from graders.pool import get_pool

logger = logging.getLogger(__name__)
J = TypeVar("J", bound=Job)

# Ours and transient: the database or broker went away. Anything else is a bug or a verdict.
INFRASTRUCTURE_ERRORS = (OperationalError, InterfaceError, ConnectionError, TimeoutError)
# A blip in the broker is retried at once; a longer outage is left to the reaper.
PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.1, "interval_max": 0.1}


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
    name="graders.tasks.run_job",
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
    # The pool forks its replacement child after the result is stored, not during it.
    with pool.busy():
        outcome = jobs.process(kind, pk, pool, worker=self.request.hostname or "")
    if outcome.retry_in is not None:
        # Another worker holds it (or ours failed): look again later; the claim decides.
        raise self.retry(countdown=outcome.retry_in, max_retries=None)
    return outcome.status


@shared_task(name="graders.tasks.reap", ignore_result=True)
def reap(startup: bool = False) -> int:
    """Re-send every job whose message may be lost: on a schedule, and when a worker starts (``startup``:
    every queued row, whatever its age, so a killed worker's jobs are graded at once)."""
    now = timezone.now()
    count = 0
    for kind in jobs.kinds():
        for job in jobs.lost(kind, now, queued_for=0 if startup else None):
            enqueue(job)
            count += 1
    if count:
        logger.warning("re-sent %d stuck jobs", count)
    return count
