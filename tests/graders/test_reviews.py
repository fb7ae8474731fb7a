"""Drill reviews: a fresh seed each time the drill comes due, reproducible verdicts, and leech -> drill."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import torch
from django.contrib.auth.models import User
from django.utils import timezone

from cards import review as reviewing
from cards.models import Card, CardState
from graders.drills.cases import generate_cases
from graders.drills.grading import ReferenceCache, grade
from graders.drills.local import LocalRunner
from graders.drills.schema import load_drill
from graders.models import Drill, DrillReview
from graders.rating import reviews
from tests.cards.factories import make_card

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]
HALF_RIGHT = "def solution(x):\n    return x + 1 if x.numel() < 4 else x + 2\n"
TIMINGS = ("cpu_ms", "wall_ms")


def spec_of(drill: Drill) -> Any:
    return drill.spec


def untimed(verdict: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in verdict.items() if key not in TIMINGS}


def test_it_reproduces_a_verdict_exactly_from_the_submissions_seed(learner: User, drill: Drill) -> None:
    seed = reviews.current_review(learner, drill).review.seed
    first = grade(spec_of(drill), HALF_RIGHT, seed=seed, runner=LocalRunner(), cache=ReferenceCache())
    again = grade(spec_of(drill), HALF_RIGHT, seed=seed, runner=LocalRunner(), cache=ReferenceCache())
    assert first["status"] == "wrong_answer" and first["passed"] == 1  # the example passes, hidden cases fail
    assert untimed(dict(first)) == untimed(dict(again))


def test_it_draws_new_hidden_cases_when_the_drill_comes_due_again(learner: User, drill: Drill) -> None:
    first = reviews.current_review(learner, drill).review
    assert reviews.current_review(learner, drill).review == first  # same review while it is open
    reviews.give_up(first, drill.card, timezone.now())  # rated 0: back later today, a new review
    second = reviews.current_review(learner, drill).review
    assert second != first and second.seed != first.seed
    spec = load_drill(REPO / "notes" / "drills" / "pytorch-basics" / "softmax-dim.toml")
    old, new = (generate_cases(spec, review.seed, runner=LocalRunner()) for review in (first, second))
    hidden_old = [case.args[0] for case in old if case.hidden]
    hidden_new = [case.args[0] for case in new if case.hidden]
    assert [case.args[0].tolist() for case in old if not case.hidden] == [
        case.args[0].tolist() for case in new if not case.hidden
    ]  # the examples never change
    assert [t.shape for t in hidden_old] != [t.shape for t in hidden_new]
    assert not any(a.shape == b.shape and torch.equal(a, b) for a, b in zip(hidden_old, hidden_new, strict=True))


def test_it_starts_a_new_review_when_an_old_one_predates_the_due_day(learner: User, drill: Drill) -> None:
    now = timezone.now()
    old = DrillReview.objects.create(user=learner, drill=drill, seed=7, started_at=now - timedelta(days=3))
    profile = reviewing.get_profile(learner)
    CardState.objects.create(
        user=learner, card=drill.card, due=reviewing.learner_today(profile, now), interval=2, repetitions=2,
        last_reviewed_at=now - timedelta(days=2), version=3,
    )  # fmt: skip
    current = reviews.current_review(learner, drill, now).review
    old.refresh_from_db()
    assert current != old and current.is_open
    assert (old.outcome, old.finished_at) == ("expired", now)


def test_it_keeps_a_review_for_practice_while_the_drill_is_not_due(learner: User, drill: Drill) -> None:
    now = timezone.now()
    profile = reviewing.get_profile(learner)
    done = DrillReview.objects.create(
        user=learner, drill=drill, seed=7, started_at=now - timedelta(hours=1), finished_at=now, outcome="accepted"
    )
    CardState.objects.create(
        user=learner, card=drill.card, due=reviewing.learner_today(profile, now) + timedelta(days=6),
        last_reviewed_at=now, repetitions=2, interval=6, version=2,
    )  # fmt: skip
    assert reviews.current_review(learner, drill, now).review == done


# ------------------------------------------------------------------------------ leech -> drill


def lapse(user: User, card: Card, lapses_before: int) -> reviewing.Outcome:
    """Rate a seen card Again when it already lapsed ``lapses_before`` times."""
    profile = reviewing.get_profile(user)
    now = timezone.now()
    state = CardState.objects.create(
        user=user, card=card, due=reviewing.learner_today(profile, now), repetitions=3, interval=10,
        lapses=lapses_before, last_reviewed_at=now - timedelta(days=10), version=5,
    )  # fmt: skip
    return reviewing.rate(user, profile, reviewing.RatingRequest(card.uuid, 1, state.version), now)


def test_it_brings_the_sections_drill_into_todays_queue_on_the_fourth_lapse(learner: User, drill: Drill) -> None:
    question = make_card(note=drill.card.note, heading_path="Tensors / Shapes", anchor="shapes")
    assert lapse(learner, question, 3) is reviewing.Outcome.RECORDED
    state = CardState.objects.get(user=learner, card=drill.card)
    profile = reviewing.get_profile(learner)
    assert state.due == reviewing.learner_today(profile, timezone.now()) and state.last_reviewed_at is not None
    item, _ = reviewing.next_card(learner, profile, timezone.now())
    assert item is not None and item.card == drill.card and item.queue == "due"


def test_the_leechs_drill_comes_the_same_day_even_on_the_questions_own_heading(learner: User, drill: Drill) -> None:
    """A question answered today buries only its siblings (the other direction of a mapping row), never the
    drill of its section: the drill it brought in is the next card, not tomorrow's."""
    question = make_card(note=drill.card.note, heading_path=drill.card.heading_path, anchor=drill.card.anchor)
    assert lapse(learner, question, 3) is reviewing.Outcome.RECORDED
    profile = reviewing.get_profile(learner)
    item, snap = reviewing.next_card(learner, profile, timezone.now())
    assert item is not None and item.card == drill.card and (snap.due, snap.repeats) == (1, 1)


def test_it_leaves_the_drills_alone_before_the_fourth_lapse(learner: User, drill: Drill) -> None:
    question = make_card(note=drill.card.note)
    lapse(learner, question, 2)
    assert not CardState.objects.filter(card=drill.card).exists()


def test_it_moves_a_scheduled_drill_up_to_today(learner: User, drill: Drill) -> None:
    later = timezone.now().date() + timedelta(days=20)
    CardState.objects.create(user=learner, card=drill.card, due=later, last_reviewed_at=timezone.now(), version=4)
    lapse(learner, make_card(note=drill.card.note, kind=Card.Kind.MAPPING), 5)
    state = CardState.objects.get(user=learner, card=drill.card)
    assert state.due < later and state.version == 5


def test_it_prefers_the_drill_on_the_same_heading(make_drill: Callable[..., Drill], drill: Drill) -> None:
    from tests.graders.conftest import drill_text

    text = drill_text().replace('slug = "add-one"', 'slug = "add-two"').replace('"Tensors"', '"Shapes"')
    other = make_drill(text)
    Card.objects.filter(pk=other.card_id).update(position=1)  # first in the note, but on another heading
    same_anchor = make_card(note=drill.card.note, anchor=drill.card.anchor, heading_path="x")
    on_path = make_card(note=drill.card.note, anchor="none", heading_path="Shapes / Views")
    elsewhere = make_card(note=drill.card.note, anchor="none", heading_path="Nothing")
    assert reviewing.leech_drill(same_anchor) == drill.card
    assert reviewing.leech_drill(on_path) == other.card
    assert reviewing.leech_drill(elsewhere) == other.card  # fall back to the note's first drill


def test_it_never_turns_a_cloze_leech_into_a_drill(learner: User, drill: Drill) -> None:
    lapse(learner, make_card(note=drill.card.note, kind=Card.Kind.CLOZE), 3)
    assert not CardState.objects.filter(card=drill.card).exists()
