"""Drill statistics for the learner's stats page (a section registered with ``cards.extensions``)."""

from __future__ import annotations

from typing import Any, TypedDict

from django.db.models import Count, F, Q

from graders.models import Submission
from jobs.status import PENDING, Status


class NotePassRate(TypedDict):
    slug: str
    title: str
    submissions: int
    accepted: int
    drills: int
    solved: int


def drill_pass_rates(user: Any) -> list[NotePassRate]:
    """Per note: graded drill submissions, how many were accepted, and drills solved at least once.

    One grouped query. "Run examples" runs and pending or internally failed submissions are not
    attempts and are left out.
    """
    graded = Submission.objects.filter(user=user, kind=Submission.Kind.SUBMIT).exclude(
        status__in=[*PENDING, Status.INTERNAL_ERROR]
    )
    accepted = Q(status=Status.ACCEPTED)
    rows = (
        graded.values(slug=F("drill__card__note__slug"), title=F("drill__card__note__title"))
        .annotate(
            submissions=Count("id"),
            accepted=Count("id", filter=accepted),
            drills=Count("drill", distinct=True),
            solved=Count("drill", filter=accepted, distinct=True),
        )
        .order_by("slug")
    )
    return [NotePassRate(**row) for row in rows]


def drill_section(user: Any) -> dict[str, Any]:
    return {"rows": drill_pass_rates(user)}
