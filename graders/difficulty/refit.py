"""The difficulty refit, run by the scoring worker (``graders.tasks.refit_difficulty``, beat nightly) or by
``manage.py refit_difficulty``: every learner's first attempt on every drill, one Rasch fit, one
``DrillDifficulty`` row per attempted drill and one ``LearnerSkill`` row per learner who made a first attempt.

A **first attempt** is a learner's earliest ``submit`` submission on a drill (by ``queued_at``, then id) that is
not an internal error: exactly the attempt the hub's "Solved on first try" reads (``graders.rating.progress``).
It passes when its verdict is ``accepted``; every other verdict fails, ``rejected`` included (a construct the
sandbox forbids is the learner's code, and SM-2 rates it 0). "Run examples" is practice and never counts; an
internal error is ours and is skipped, so the learner's next submission is their first. A first attempt still
pending is left out of this fit (the learner's later ones are not their first) and counts in the next.
All of a drill's versions count together: a drill edited to be harder shows it as attempts accumulate.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction

from graders.difficulty import rasch
from graders.models import Difficulty, Drill, DrillDifficulty, LearnerSkill, Submission
from jobs.status import PENDING, Status

LABEL_BANDS = {Difficulty.EASY: 0, Difficulty.MEDIUM: 1, Difficulty.HARD: 2}
BAND_LABELS = {band: label for label, band in LABEL_BANDS.items()}


@dataclass(frozen=True)
class Refit:
    drills: int  # rows written
    shown: int  # of those, with enough attempts for the hub
    flagged: int  # of those, whose label disagrees
    learners: int
    attempts: int


def first_attempts() -> Iterator[rasch.Attempt[int, int]]:
    """Every learner's first attempt on every drill, streamed in (learner, drill) order (see the module's words)."""
    rows = (
        Submission.objects.filter(kind=Submission.Kind.SUBMIT)
        .exclude(status=Status.INTERNAL_ERROR)
        .order_by("user_id", "drill_id", "queued_at", "pk")
        .values_list("user_id", "drill_id", "status")
    )
    last: tuple[int, int] | None = None
    for user_id, drill_id, status in rows.iterator(chunk_size=5000):
        if (user_id, drill_id) == last:
            continue
        last = (user_id, drill_id)
        if status not in PENDING:
            yield rasch.Attempt(user_id, drill_id, status == Status.ACCEPTED)


def refit(now: datetime, *, dry_run: bool = False) -> Refit:
    """Fit every drill and learner from the first attempts, and store each attempted drill's row.

    1. Fit all first attempts at once (drills below the minimum still inform the learners' skills).
    2. Band the drills with at least ``DIFFICULTY_MIN_ATTEMPTS`` attempts by their fitted tertiles, and flag each
       whose authored label is surely another band (``rasch.disagreement``).
    3. Each learner's skill, with the counts it rests on, stamped with the same ``fitted_at`` as the drills.
    4. Replace the stored rows in one transaction, so the hub never shows half a fit (nor a skill from one fit
       beside difficulties from another).
    """
    attempts = list(first_attempts())
    fit = rasch.fit(attempts)
    minimum = settings.DIFFICULTY_MIN_ATTEMPTS
    enough = {pk: e for pk, e in fit.drills.items() if e.attempts >= minimum}
    cuts = rasch.band_cuts([e.difficulty for e in enough.values()])
    places = rasch.quantiles({pk: e.difficulty for pk, e in enough.items()})
    labels = dict(Drill.objects.filter(pk__in=enough).values_list("pk", "difficulty"))
    rows = []
    for pk, estimate in fit.drills.items():
        row = DrillDifficulty(
            drill_id=pk,
            difficulty=estimate.difficulty,
            standard_error=estimate.standard_error,
            attempts=estimate.attempts,
            passed=estimate.passed,
            fitted_at=now,
        )
        if pk in enough:
            row.quantile = places[pk]
            row.band = BAND_LABELS[rasch.quantile_band(places[pk])]
            label = LABEL_BANDS.get(Difficulty(labels[pk]), 1)
            row.disagreement = rasch.disagreement(estimate.difficulty, estimate.standard_error, label, cuts)
        rows.append(row)
    skills = _skills(attempts, fit.skills, now)
    if not dry_run:
        with transaction.atomic():
            DrillDifficulty.objects.exclude(drill_id__in=fit.drills).delete()
            DrillDifficulty.objects.bulk_create(
                rows,
                update_conflicts=True,
                unique_fields=["drill"],
                update_fields=[
                    "difficulty",
                    "standard_error",
                    "attempts",
                    "passed",
                    "quantile",
                    "band",
                    "disagreement",
                    "fitted_at",
                ],
            )
            LearnerSkill.objects.exclude(user_id__in=fit.skills).delete()
            LearnerSkill.objects.bulk_create(
                skills,
                update_conflicts=True,
                unique_fields=["user"],
                update_fields=["skill", "attempts", "passed", "fitted_at"],
            )
    return Refit(
        drills=len(rows),
        shown=len(enough),
        flagged=sum(row.disagreement != 0 for row in rows),
        learners=len(fit.skills),
        attempts=len(attempts),
    )


def _skills(attempts: list[rasch.Attempt[int, int]], fitted: dict[int, float], now: datetime) -> list[LearnerSkill]:
    """One row per learner in the fit: the skill and the first attempts (and passes) it was fitted from."""
    counts: dict[int, list[int]] = {}
    for attempt in attempts:
        seen = counts.setdefault(attempt.learner, [0, 0])
        seen[0] += 1
        seen[1] += attempt.passed
    return [
        LearnerSkill(user_id=pk, skill=skill, attempts=counts[pk][0], passed=counts[pk][1], fitted_at=now)
        for pk, skill in fitted.items()
    ]
