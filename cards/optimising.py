"""Per-learner FSRS optimisation: asking for a fit, deciding when one is due, and running it.

``queue`` runs in the web process (the settings page's button) and in beat's job; ``run`` runs on
the worker (``cards.tasks.optimise_parameters``), the only place torch is imported, through
``cards.scheduling.fitting.fit``.

1. A fit is due when the learner has never had one and has enough reviews, when their scored
   reviews have doubled since the last, or when the last is a month old.
2. ``queue`` writes a queued row (one active per learner, a named constraint);
   ``cards.tasks.request_optimisation`` enqueues the task after commit.
3. ``run`` claims the row (queued -> running must change one row), fits on the reviews before the
   time split, keeps the parameters only if the held-out log loss improves, and always records a
   final status.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from cards.calibrating import reviews_of
from cards.models import Optimisation, Profile
from cards.review import get_profile
from cards.scheduling import evaluate, fitting

logger = logging.getLogger(__name__)
REFIT_AFTER = timedelta(days=30)


def learner_reviews(user_id: int) -> list[evaluate.Review]:
    """The learner's log as the scoring reads it: the learner's days, FSRS ratings."""
    return reviews_of([user_id])


def scored_count(user_id: int) -> int:
    return len(fitting.scored_days(learner_reviews(user_id)))


def is_due(user_id: int, now: datetime) -> bool:
    """Step 1."""
    last = Optimisation.objects.filter(user_id=user_id).order_by("-created_at").first()
    if last is not None and last.status in (Optimisation.Status.QUEUED, Optimisation.Status.RUNNING):
        return False
    count = scored_count(user_id)
    if last is None:
        return count >= fitting.MIN_REVIEWS
    return count >= max(2 * last.reviews, fitting.MIN_REVIEWS) or now - last.created_at >= REFIT_AFTER


def queue(user: AbstractBaseUser, now: datetime) -> Optimisation | None:
    """Step 2's row (``cards.tasks.request_optimisation`` enqueues it after commit); None when a fit
    is already waiting or running for this learner."""
    try:
        with transaction.atomic():
            return Optimisation.objects.create(user=user, created_at=now)
    except IntegrityError:
        return None


def run(optimisation_id: int, now: datetime | None = None) -> Optimisation | None:
    """Step 3. Returns the finished row, or None when another worker claimed it first."""
    now = now or timezone.now()
    claimed = Optimisation.objects.filter(pk=optimisation_id, status=Optimisation.Status.QUEUED).update(
        status=Optimisation.Status.RUNNING, started_at=now
    )
    if claimed != 1:
        return None
    row = Optimisation.objects.select_related("user").get(pk=optimisation_id)
    try:
        _fit(row, get_profile(row.user))
    except Exception:
        logger.exception("FSRS optimisation %s failed", optimisation_id)
        row.status, row.message = Optimisation.Status.FAILED, "The fit failed; the parameters were left as they were."
    row.finished_at = timezone.now()
    row.save()
    return row


def _fit(row: Optimisation, profile: Profile) -> None:
    reviews = learner_reviews(row.user_id)
    outcome = fitting.optimise(reviews, profile.fsrs_parameters)
    row.reviews = len(fitting.scored_days(reviews))
    row.test_points = outcome.test_points
    row.log_loss_before, row.log_loss_after = outcome.loss_before, outcome.loss_after
    row.parameters, row.kept, row.message = outcome.parameters, outcome.keep, outcome.message
    row.status = Optimisation.Status.DONE
    if outcome.keep:
        Profile.objects.filter(pk=profile.pk).update(
            fsrs_parameters=outcome.parameters, fsrs_parameters_version=F("fsrs_parameters_version") + 1
        )


def candidates() -> list[int]:
    """Learners on FSRS with at least enough reviews logged to be worth a look (scored ones are fewer)."""
    return list(
        Profile.objects.filter(scheduler="fsrs")
        .filter(user__review_logs__isnull=False)
        .values_list("user_id", flat=True)
        .distinct()
    )
