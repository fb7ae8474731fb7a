"""Card jobs on the worker: fitting a learner's FSRS parameters, and beat's daily look for fits due.

Thin tasks over ``cards.optimising``; the fit imports torch inside ``cards.scheduling.fitting.fit``,
so only the worker that runs it loads torch. They go to the default ``celery`` queue, which the CPU
worker consumes (docker-compose.yml).
"""

from __future__ import annotations

import functools
from datetime import datetime

from celery import shared_task
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from cards import optimising
from cards.models import Optimisation


def request_optimisation(user: AbstractBaseUser, now: datetime) -> Optimisation | None:
    """A queued fit for the learner, sent to a worker once the row is committed; None if one is already active."""
    row = optimising.queue(user, now)
    if row is not None:
        transaction.on_commit(functools.partial(optimise_parameters.delay, row.pk))
    return row


@shared_task(name="cards.tasks.optimise_parameters")
def optimise_parameters(optimisation_id: int) -> str | None:
    row = optimising.run(optimisation_id)
    return None if row is None else row.status


@shared_task(name="cards.tasks.optimise_due")
def optimise_due() -> int:
    """Daily: a fit for every FSRS learner whose reviews doubled since the last one, or whose last is a month old."""
    now = timezone.now()
    sent = 0
    for user_id in optimising.candidates():
        if optimising.is_due(user_id, now):
            sent += request_optimisation(get_user_model().objects.get(pk=user_id), now) is not None
    return sent
