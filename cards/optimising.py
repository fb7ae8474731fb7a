"""Per-learner FSRS optimisation: asking for a fit, deciding when one is due, and running it.

``request`` and ``queue`` run in the web process (the settings page's button) and in beat's job; ``run``
runs on the scoring worker (``cards.tasks.optimise_parameters``, on ``settings.SCORING_QUEUE``, which no
grading worker consumes), the only place torch is imported, through ``cards.scheduling.fitting.fit``.

1. A fit is due when the learner has never had one and has enough reviews, when their scored
   reviews have grown by ``REFIT_GROWTH`` (a quarter) since the last, or when the last is a month old.
   The keep rule turns down gains within its noise, so a fit it rejects is tried again soon, on more
   held-out reviews.
2. ``queue`` writes a queued row (one active per learner, a named constraint);
   ``cards.tasks.request_optimisation`` enqueues the task after commit. A learner's own "fit now"
   (``request``) also waits out ``FSRS_FIT_COOLDOWN`` after their last fit was asked for: a fit costs
   the scoring worker up to minutes, and a learner pressing the button again gains nothing.
3. ``run`` claims the row (queued -> running must change one row, writing a claim token that names
   its process, ``quizsite.claims``), fits on the reviews before the time split, keeps the parameters
   only if the held-out log loss improves beyond noise (``cards.scheduling.fitting``'s keep rule),
   records the split day (the calibration page scores the kept parameters only on reviews from that
   day on), and records a final status only while its claim still holds.
4. A fit that can no longer finish (its worker was killed, or it ran past the task's time limit) would
   hold the one-active constraint for good. ``expire_lost`` marks a running fit failed by the job
   lifecycle's own judgment of a lost row (``jobs.lifecycle.is_lost``): at once when its
   claimant is provably dead (same host, process gone), else once it has run longer than
   ``FSRS_FIT_STALE_AFTER``; on the job reaper's schedule (``jobs.tasks.reap``: ``CardsConfig.ready``
   registers it with ``jobs.lifecycle.register_sweep``) and when a scoring
   worker starts. ``expire_stale`` adds fits queued longer than that (a lost message), before a new fit
   is queued and in beat's daily job. A lost fit is given up, not retried: the learner's next fit
   (theirs, or beat's daily one) runs on the reviews they have then.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _
from fsrs.scheduler import DEFAULT_PARAMETERS

from cards.calibrating import reviews_of
from cards.models import Optimisation, Profile, ReviewLog
from cards.review import get_profile
from cards.scheduling import evaluate, fitting
from cards.scheduling.fsrs6 import EPOCH
from jobs import lifecycle
from quizsite.claims import new_claim_token, release_claim

logger = logging.getLogger(__name__)
REFIT_AFTER = timedelta(days=30)
REFIT_GROWTH = 1.25
ACTIVE = (Optimisation.Status.QUEUED, Optimisation.Status.RUNNING)
FAILED_MESSAGE = "The fit failed; the parameters were left as they were."
STALE_MESSAGE = (
    "The fit did not finish (its worker stopped, or it ran past its time limit); the parameters were left "
    "as they were, and the next fit may run."
)


def learner_reviews(user_id: int) -> list[evaluate.Review]:
    """The learner's log as the scoring reads it: the learner's days, FSRS ratings."""
    return reviews_of([user_id])


def scored_count(user_id: int) -> int:
    """``len(fitting.scored_days(learner_reviews(user_id)))`` in two queries: a card's scored reviews are its
    review days after the first, so the count is the (card, day) pairs less the cards. The settings page
    shows it on every load, and counting in SQL spares it building every scored day of a long log in Python."""
    logs = ReviewLog.objects.filter(user_id=user_id)
    return logs.values("card_id", "review_day").distinct().count() - logs.values("card_id").distinct().count()


def is_due(user_id: int, now: datetime) -> bool:
    """Step 1."""
    last = Optimisation.objects.filter(user_id=user_id).order_by("-created_at").first()
    if last is not None and last.status in ACTIVE:
        return False
    count = scored_count(user_id)
    if last is None:
        return count >= fitting.MIN_REVIEWS
    grown = count >= max(REFIT_GROWTH * last.reviews, fitting.MIN_REVIEWS)
    return grown or now - last.created_at >= REFIT_AFTER


def expire_lost(now: datetime, user_id: int | None = None) -> int:
    """Step 4 for running fits, on the reaper's schedule: mark failed every one whose claimant is provably dead,
    or that was claimed before ``now - FSRS_FIT_STALE_AFTER`` (past any time limit: its worker is gone).

    Conditional updates: a fit that finishes meanwhile is left alone, and one that finishes after it
    was given up changes nothing (``run``'s finish is conditional on its claim). Returns the rows marked.
    """
    bound = now - timedelta(seconds=settings.FSRS_FIT_STALE_AFTER)
    running = _active(user_id).filter(status=Optimisation.Status.RUNNING)
    expired = 0
    for pk, token, started in running.values_list("pk", "claim_token", "started_at"):
        if lifecycle.is_lost(token, started, bound):  # the job reaper's judgment of a lost row
            expired += _give_up(running.filter(pk=pk, claim_token=token), now)
    if expired:
        logger.warning("gave up %s FSRS fit(s) whose worker died or that ran since before %s", expired, bound)
    return expired


def expire_stale(now: datetime, user_id: int | None = None) -> int:
    """Step 4 where a new fit may be asked for (``queue``, ``request``, beat's daily job): ``expire_lost``,
    and every fit queued since before ``now - FSRS_FIT_STALE_AFTER`` (its message was lost). Not on the
    reaper's schedule: beat's daily job queues many fits at once, and one waiting its turn is not lost."""
    bound = now - timedelta(seconds=settings.FSRS_FIT_STALE_AFTER)
    waited = _give_up(_active(user_id).filter(status=Optimisation.Status.QUEUED, created_at__lt=bound), now)
    if waited:
        logger.warning("gave up %s FSRS fit(s) queued since before %s", waited, bound)
    return waited + expire_lost(now, user_id)


def _active(user_id: int | None) -> QuerySet[Optimisation]:
    active = Optimisation.objects.filter(status__in=ACTIVE)
    return active if user_id is None else active.filter(user_id=user_id)


def _give_up(rows: QuerySet[Optimisation], now: datetime) -> int:
    return rows.update(status=Optimisation.Status.FAILED, finished_at=now, message=STALE_MESSAGE)


def queue(user: AbstractBaseUser, now: datetime) -> Optimisation | None:
    """Step 2's row (``cards.tasks.request_optimisation`` enqueues it after commit); None when a fit
    is already waiting or running for this learner."""
    expire_stale(now, user.pk)
    try:
        with transaction.atomic():
            return Optimisation.objects.create(user=user, created_at=now)
    except IntegrityError:
        return None


@dataclass(frozen=True)
class Refusal:
    """Why a learner's "fit now" queued nothing, and from when a fit may run (None: once the active one ends)."""

    active: bool
    next_at: datetime | None

    def message(self, zone: Any) -> str:
        if self.next_at is None:
            return _("A fit of your parameters is already waiting or running; its outcome shows here when it ends.")
        local = timezone.localtime(self.next_at, zone)
        return _(
            "Your parameters were fitted recently: one fit every %(minutes)d minutes. "
            "The next may run from %(time)s (%(zone)s)."
        ) % {"minutes": max(1, settings.FSRS_FIT_COOLDOWN // 60), "time": f"{local:%Y-%m-%d %H:%M}", "zone": str(zone)}


def cooldown_ends(user_id: int, now: datetime) -> datetime | None:
    """When this learner may ask for a fit again: ``FSRS_FIT_COOLDOWN`` after they last asked (any
    outcome, so a fit that keeps failing is not retried in a loop); None when they may now."""
    last = Optimisation.objects.filter(user_id=user_id).order_by("-created_at").values_list("created_at", flat=True)
    asked = last.first()
    if asked is None:
        return None
    ends = asked + timedelta(seconds=settings.FSRS_FIT_COOLDOWN)
    return ends if ends > now else None


def request(user: AbstractBaseUser, now: datetime) -> Optimisation | Refusal:
    """The learner's own "fit now": step 2 after the cooldown. The caller enqueues the row after commit."""
    expire_stale(now, user.pk)
    if Optimisation.objects.filter(user_id=user.pk, status__in=ACTIVE).exists():
        return Refusal(active=True, next_at=None)
    next_at = cooldown_ends(user.pk, now)
    if next_at is not None:
        return Refusal(active=False, next_at=next_at)
    row = queue(user, now)
    return row if row is not None else Refusal(active=True, next_at=None)


def run(optimisation_id: int, now: datetime | None = None) -> Optimisation | None:
    """Step 3. Returns the finished row, or None when another worker claimed it first or it was given up
    (step 4) before it finished."""
    now = now or timezone.now()
    token = new_claim_token()
    try:
        claimed = Optimisation.objects.filter(pk=optimisation_id, status=Optimisation.Status.QUEUED).update(
            status=Optimisation.Status.RUNNING, started_at=now, claim_token=token
        )
        if claimed != 1:
            return None
        row = Optimisation.objects.select_related("user").get(pk=optimisation_id)
        profile = get_profile(row.user)
        try:
            outcome = _fit(row, profile)
        except Exception:  # SoftTimeLimitExceeded too: the fit ran past the task's soft time limit
            logger.exception("FSRS optimisation %s failed", optimisation_id)
            row.status, row.message = Optimisation.Status.FAILED, FAILED_MESSAGE
            outcome = None
        row.finished_at = timezone.now()
        if not _finish(row, token, profile, outcome):
            logger.warning("FSRS optimisation %s was given up before it finished; its outcome is dropped", row.pk)
            return None
        return row
    finally:
        release_claim(token)


def _fit(row: Optimisation, profile: Profile) -> fitting.Outcome:
    reviews = learner_reviews(row.user_id)
    outcome = fitting.optimise(reviews, profile.fsrs_parameters)
    row.parameters_before = list(profile.fsrs_parameters or DEFAULT_PARAMETERS)
    row.reviews = len(fitting.scored_days(reviews))
    row.test_points = outcome.test_points
    row.log_loss_before, row.log_loss_after = outcome.loss_before, outcome.loss_after
    row.parameters, row.kept, row.message = outcome.parameters, outcome.keep, outcome.message
    row.split_day = None if outcome.split is None else EPOCH + timedelta(days=outcome.split.day)
    row.status = Optimisation.Status.DONE
    return outcome


FINISHED_FIELDS = (
    "status", "finished_at", "reviews", "test_points", "log_loss_before", "log_loss_after", "parameters", "kept",
    "message", "split_day", "parameters_before",
)  # fmt: skip


def _finish(row: Optimisation, token: str, profile: Profile, outcome: fitting.Outcome | None) -> bool:
    """Record the final status, and the kept parameters, only while this run's claim still holds."""
    with transaction.atomic():
        mine = Optimisation.objects.filter(pk=row.pk, status=Optimisation.Status.RUNNING, claim_token=token)
        if mine.update(**{name: getattr(row, name) for name in FINISHED_FIELDS}) != 1:
            return False
        if outcome is not None and outcome.keep:
            Profile.objects.filter(pk=profile.pk).update(
                fsrs_parameters=outcome.parameters, fsrs_parameters_version=F("fsrs_parameters_version") + 1
            )
    return True


def candidates() -> list[int]:
    """Learners on FSRS with at least enough reviews logged to be worth a look (scored ones are fewer)."""
    return list(
        Profile.objects.filter(scheduler="fsrs")
        .filter(user__review_logs__isnull=False)
        .values_list("user_id", flat=True)
        .distinct()
    )
