"""Celery task: run one output card's snippet in this worker's warm sandbox pool (``graders.output_runs``).

Found by ``app.autodiscover_tasks(related_name="output_tasks")`` in quizsite/celery.py, and sent to the
CPU grading queue: snippets are small CPU programs, and a GPU worker consumes that queue too.
"""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from graders import output_runs
from graders.worker import get_pool


@shared_task(
    name="graders.output_tasks.run_snippet",
    queue=settings.GRADER_QUEUE_CPU,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, InterfaceError, ConnectionError),
    retry_backoff=True,
    max_retries=5,
    soft_time_limit=settings.GRADER_SOFT_TIME_LIMIT,
    time_limit=settings.GRADER_TIME_LIMIT,
    ignore_result=True,
)
def run_snippet(run_id: int) -> str:
    """Run one pending ``SnippetRun``; a second delivery finds it claimed and does nothing."""
    return output_runs.execute_run(run_id, get_pool(), with_context=True) or "not claimed"
