"""Keep the rollup and the live boards current on each review and each verdict.

Receivers, so the review flow and the grader need not know about teams. The work runs after the
commit (never inside the review's transaction, so it adds nothing to the review's own queries and
a rolled-back review leaves no trace); if it fails, ``rebuild_boards`` repairs everything.

``Submission`` verdicts are recorded with a conditional ``update()``, which sends no signal: the
grader's follow-up ``ReviewLog`` (source ``grader``) triggers the refresh, and
``teams.services.record_verdict`` is there for callers that want to be explicit.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from cards.models import ReviewLog
from graders.models import Submission

from . import activity, services


def _loaded_clock(log: ReviewLog) -> activity.Clock | None:
    """The learner's clock when the review flow already loaded their profile (one query saved per rating)."""
    if not ReviewLog.user.is_cached(log):
        return None
    user = log.user
    if not get_user_model().profile.is_cached(user):  # type: ignore[attr-defined]
        return None
    return activity.clock_of(user.profile)  # type: ignore[attr-defined]


@receiver(post_save, sender=ReviewLog, dispatch_uid="teams.review_saved")
@receiver(post_delete, sender=ReviewLog, dispatch_uid="teams.review_deleted")
def review_changed(sender: type[ReviewLog], instance: ReviewLog, **kwargs: Any) -> None:
    user_id, day, clock = instance.user_id, instance.review_day, _loaded_clock(instance)
    transaction.on_commit(lambda: services.refresh_learner_day(user_id, day, clock))


@receiver(post_save, sender=Submission, dispatch_uid="teams.submission_saved")
def submission_saved(sender: type[Submission], instance: Submission, **kwargs: Any) -> None:
    if instance.status != "accepted" or instance.kind != Submission.Kind.SUBMIT:
        return
    submission_id = instance.pk
    transaction.on_commit(lambda: services.record_verdict(submission_id))
