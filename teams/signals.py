"""Keep the rollup and the live boards current on each review and each verdict.

Receivers, so the review flow and the grader need not know about teams.

* A review (or its undo) queues ``teams.tasks.refresh_learner_day`` once the review commits. The
  refresh costs 8 queries or more, which the rating request must not pay (the review flow's budget is
  under 10 queries for the whole request); publishing the task costs none. A rolled-back review
  queues nothing. If the broker is down the review still records and ``rebuild_boards`` repairs.
* A verdict arrives through ``graders.signals.verdict_recorded``, sent once per final verdict after
  it is committed (verdicts are written with a conditional ``update()``, which sends no
  ``post_save``). It is sent inside the grading worker, so the drill XP is recorded right there.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from cards.models import ReviewLog
from graders.models import Submission
from graders.signals import verdict_recorded
from graders.status import Status

from . import tasks


@receiver(post_save, sender=ReviewLog, dispatch_uid="teams.review_saved")
@receiver(post_delete, sender=ReviewLog, dispatch_uid="teams.review_deleted")
def review_changed(sender: type[ReviewLog], instance: ReviewLog, **kwargs: Any) -> None:
    user_id, day = instance.user_id, instance.review_day
    transaction.on_commit(lambda: tasks.enqueue_refresh(user_id, day))


@receiver(verdict_recorded, dispatch_uid="teams.verdict_recorded")
def verdict_changed(sender: type[Submission], submission_id: int, kind: str, status: str, **kwargs: Any) -> None:
    """Only an accepted real submission moves drill XP (first-try bonus included).

    Sent in the grading worker after the verdict is committed; the XP and board update is queued
    rather than run here, because it cost as much as the grading itself and held up the next verdict.
    """
    if status == Status.ACCEPTED and kind == Submission.Kind.SUBMIT:
        tasks.enqueue_verdict(submission_id)
