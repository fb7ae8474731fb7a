"""Celery tasks: thin wrappers that take ids and call ``graders.services``.

Delivery guarantees come from the broker settings (acks_late, reject on worker lost,
prefetch 1): a message is acknowledged only after the task returns, so a worker killed
mid-grade leaves its message to be delivered again. Exactly-once *verdicts* come from
the database claim in ``services.claim_submission``, not from the broker.
"""

from __future__ import annotations

import contextlib
import logging

from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError

from graders import services
from graders.worker import get_pool, worker_device

logger = logging.getLogger(__name__)

# Ours and transient: the database or broker went away. Anything else is a bug or a verdict.
INFRASTRUCTURE_ERRORS = (OperationalError, InterfaceError, ConnectionError, TimeoutError)


class GradeTask(Task):
    def on_failure(self, exc: BaseException, task_id: str, args: tuple, kwargs: dict, einfo: object) -> None:
        """The task failed for good: the submission still gets its one final verdict."""
        if args:
            try:
                services.record_task_failure(int(args[0]), f"grading task failed: {type(exc).__name__}: {exc}")
            except DatabaseError:
                logger.exception("could not record the failure of submission %s; the reaper will resend it", args[0])


@shared_task(
    bind=True,
    base=GradeTask,
    name="graders.tasks.grade_submission",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=INFRASTRUCTURE_ERRORS,
    retry_backoff=True,
    retry_backoff_max=30,
    max_retries=5,
    soft_time_limit=settings.GRADER_SOFT_TIME_LIMIT,
    time_limit=settings.GRADER_TIME_LIMIT,
    ignore_result=True,
)
def grade_submission(self: Task, submission_id: int) -> str:
    """Grade one submission. Returns what happened (for the worker log)."""
    pool = get_pool()
    # A sandbox pool forks the replacement child after the verdict is stored, not during it.
    hold_refill = getattr(pool, "busy", contextlib.nullcontext)
    try:
        with hold_refill():
            outcome = services.process_submission(
                submission_id, pool, worker=self.request.hostname or "", device=worker_device()
            )
    except SoftTimeLimitExceeded:
        services.record_task_failure(submission_id, "the grader ran past its time limit")
        return "time_limit"
    if outcome.retry_in is not None:
        # Another grader holds it (or ours failed): look again later; the claim decides.
        raise self.retry(countdown=outcome.retry_in, max_retries=None)
    return outcome.status


@shared_task(name="graders.tasks.reap_submissions", ignore_result=True)
def reap_submissions() -> int:
    """Re-send submissions whose messages were lost (run at worker start and on a schedule)."""
    return services.reap_submissions()
