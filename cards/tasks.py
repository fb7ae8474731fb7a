"""Card jobs on the scoring worker: fitting a learner's FSRS parameters, beat's daily look for fits due, and a
learner's calibration report.

Thin tasks over ``cards.optimising``; the fit imports torch inside ``cards.scheduling.fitting.fit``,
so only the worker that runs it loads torch. Every task here is routed to ``settings.SCORING_QUEUE``
(``CELERY_TASK_ROUTES``), which only the scoring worker consumes: one process at a time, at a low CPU
priority, never on a grading worker's threads (scripts/supervisord.conf, docker-compose.yml, deploy/k8s).
"""

from __future__ import annotations

import functools
from datetime import datetime

from celery import shared_task
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from cards import calibrating, optimising
from cards.models import Optimisation, Profile


def request_optimisation(user: AbstractBaseUser, now: datetime) -> Optimisation | None:
    """A queued fit for the learner, sent to a worker once the row is committed; None if one is already active."""
    row = optimising.queue(user, now)
    if row is not None:
        transaction.on_commit(functools.partial(optimise_parameters.delay, row.pk))
    return row


def request_fit_now(user: AbstractBaseUser, now: datetime) -> Optimisation | optimising.Refusal:
    """The settings page's "fit now": a queued fit sent after commit, or why not (active, or cooling down)."""
    outcome = optimising.request(user, now)
    if isinstance(outcome, Optimisation):
        transaction.on_commit(functools.partial(optimise_parameters.delay, outcome.pk))
    return outcome


# Under the scoring worker's prefork pool the soft limit raises inside the fit (recorded as failed), and the
# hard one kills a fit stuck where the soft one cannot reach; optimising.expire_lost frees its row then (its
# claimant is dead: on the grading reaper's next run, jobs.tasks.reap).
@shared_task(
    name="cards.tasks.optimise_parameters",
    soft_time_limit=settings.FSRS_FIT_TIME_LIMIT,
    time_limit=settings.FSRS_FIT_TIME_LIMIT + 30,
)
def optimise_parameters(optimisation_id: int) -> str | None:
    row = optimising.run(optimisation_id)
    if row is not None and row.kept:  # new parameters: the learner's calibration is scored with them
        want_learner_calibration(row.user_id)
    return None if row is None else row.status


@shared_task(name="cards.tasks.optimise_due")
def optimise_due() -> int:
    """Daily: a fit for every FSRS learner whose reviews grew by a quarter since the last, or whose last is a month old.

    Fits that can no longer finish are given up first (``optimising.expire_stale``), so a learner whose worker
    was killed mid-fit is fitted again here too, not only when they press "fit now"."""
    now = timezone.now()
    optimising.expire_stale(now)
    sent = 0
    for user_id in optimising.candidates():
        if optimising.is_due(user_id, now):
            sent += request_optimisation(get_user_model().objects.get(pk=user_id), now) is not None
    return sent


@shared_task(name="cards.tasks.expire_lost_fits", ignore_result=True)
def expire_lost_fits() -> int:
    """When a scoring worker starts: give up the fits a killed one held (``optimising.expire_lost``), at once
    when it ran on this host; the grading reaper does the same every ``GRADER_REAP_INTERVAL``."""
    return optimising.expire_lost(timezone.now())


@shared_task(name="cards.tasks.calibrate_learner")
def calibrate_learner(user_id: int) -> int:
    """A learner's calibration report, computed and cached for their page (``cards.calibrating``, step 4)."""
    profile = Profile.objects.filter(user_id=user_id).first()
    if profile is None:
        return 0
    return calibrating.compute(calibrating.learner_subject(profile)).reviews


def want_learner_calibration(user_id: int) -> bool:
    """Their reviews or their parameters changed: a new report, at most once per window (step 3)."""
    return calibrating.want(
        "learner", user_id, lambda countdown: calibrate_learner.apply_async((user_id,), countdown=countdown)
    )


@shared_task(name="cards.tasks.calibrate_learners_due")
def calibrate_learners_due() -> int:
    """Nightly: every report missing from the cache for a learner with reviews (a first one, or one dropped)."""
    computed = 0
    for profile in Profile.objects.filter(user__review_logs__isnull=False).distinct():
        subject = calibrating.learner_subject(profile)
        if not calibrating.is_current(subject):
            calibrating.compute(subject)
            computed += 1
    return computed
