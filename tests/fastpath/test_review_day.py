"""``fastpath.review_day``: one statement says what the queue needs of a learner's day, as the ORM would."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from django.db import router

from cards.models import Card
from fastpath import deck, review_day
from tests.cards.factories import make_card, make_user
from tests.cards.stats_factories import make_log, make_state

TODAY = date(2026, 12, 7)

pytestmark = pytest.mark.django_db


def test_it_reads_the_stamp_counts_queues_and_blocked_cards_of_one_learner() -> None:
    learner, other = make_user(learning_order=["b", "a"]), make_user()
    due, overdue, later, suspended, repeat, answered = (make_card() for _ in range(6))
    make_state(learner, due, due=TODAY)
    make_state(learner, overdue, due=TODAY - timedelta(days=3))
    make_state(learner, later, due=TODAY + timedelta(days=2))
    make_state(learner, suspended, due=TODAY, suspended=True)
    repeat_state = make_state(learner, repeat, due=TODAY + timedelta(days=1), needs_repeat=True, last_review_day=TODAY)
    make_state(other, answered, due=TODAY)  # another learner's: none of this one's
    at = datetime(2026, 12, 7, 9, tzinfo=UTC)
    make_log(learner, answered, reviewed_at=at, review_day=TODAY, was_new=True)
    make_log(learner, due, reviewed_at=at - timedelta(days=1), review_day=TODAY - timedelta(days=1))

    alias = router.db_for_read(Card)
    rows = review_day.read(alias, learner.pk, TODAY)

    assert rows.stamp == deck.read_stamp(alias)
    assert rows.learning_order is not None and rows.learning_order.replace(" ", "") == '["b","a"]'
    assert (rows.reviewed_today, rows.new_done, rows.reviews_done) == (1, 1, 0)
    assert rows.answered == {answered.pk}
    queued = {card: (is_due, is_repeat) for _, card, is_due, is_repeat, _, _ in rows.queued}
    assert queued == {due.pk: (1, 0), overdue.pk: (1, 0), repeat.pk: (0, 1)}
    by_card = {card: row for row in rows.queued for card in [row[1]]}
    assert by_card[overdue.pk][4] < by_card[due.pk][4]  # most overdue first
    assert by_card[repeat.pk][0] == repeat_state.pk
    assert rows.blocked == {due.pk, overdue.pk, later.pk, suspended.pk, repeat.pk}


def test_a_learner_with_nothing_reads_as_a_beginner() -> None:
    learner = make_user()  # no profile
    rows = review_day.read(router.db_for_read(Card), learner.pk, TODAY)
    assert rows.learning_order is None
    assert (rows.reviewed_today, rows.new_done, rows.reviews_done) == (0, 0, 0)
    assert (rows.answered, rows.queued, rows.blocked) == (set(), [], set())
