"""The drills' section of the stats page (graders.rating.stats), and how the stats page gets it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import Client
from django.urls import reverse

from cards.models import Card
from graders.models import Drill, Submission
from graders.rating.stats import drill_pass_rates
from tests.cards.factories import make_card, make_note, make_user

pytestmark = pytest.mark.django_db


def test_it_rates_drill_submissions_per_note_counting_only_graded_attempts() -> None:
    learner, other = make_user("learner"), make_user("other")
    basics = make_note("basics", title="基础")

    def drill(slug: str) -> Drill:
        card = make_card(basics, kind=Card.Kind.DRILL)
        return Drill.objects.create(
            card=card, slug=slug, title=slug, entry_point="solution", reference_code="def solution(x):\n    return x\n"
        )

    first, second = drill("first"), drill("second")
    finished = datetime(2026, 3, 20, tzinfo=UTC)

    def submit(user: object, target: Drill, status: str, kind: str = "submit") -> None:
        final = status not in ("queued", "running")
        Submission.objects.create(
            user=user,
            drill=target,
            code="def solution(x): return x",
            kind=kind,
            seed=1,
            drill_version="v1",
            status=status,
            verdict={"status": status} if final else None,
            finished_at=finished if final else None,
            claimed_at=finished if status == "running" else None,
            claim_token="host:1:1" if status == "running" else "",
        )

    submit(learner, first, "wrong_answer")
    submit(learner, first, "accepted")
    submit(learner, first, "accepted")
    submit(learner, second, "runtime_error")
    submit(learner, second, "accepted", kind="examples")  # a run of the visible examples is no attempt
    submit(learner, second, "internal_error")  # our fault, not the learner's
    submit(learner, second, "queued")
    submit(other, second, "accepted")

    assert drill_pass_rates(learner) == [
        {"slug": "basics", "title": "基础", "submissions": 4, "accepted": 2, "drills": 2, "solved": 1}
    ]
    assert drill_pass_rates(make_user("newcomer")) == []


def test_it_shows_the_drills_section_on_the_cards_stats_page() -> None:
    learner = make_user("learner")
    client = Client()
    client.force_login(learner)
    page = client.get(reverse("cards:stats")).content.decode()
    assert "Coding drills by note" in page and "No graded drill submissions yet." in page
