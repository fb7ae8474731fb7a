"""``Prepared``: a query compiled once answers exactly what its queryset answers, for every call's values."""

from __future__ import annotations

import threading
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

from django.db import connection
from django.db.models import Count
from django.test import TestCase, TransactionTestCase
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase as HypothesisTestCase

from cards.models import CardState
from fastpath.prepared import Prepared, returns_from_update, update_returning, update_where
from tests.cards.factories import make_card, make_user
from tests.cards.stats_factories import make_state

STATE = Prepared(lambda user_id, card_id: CardState.objects.filter(user_id=user_id, card_id=card_id))
DUE_BY = Prepared(
    lambda user_id, day: (
        CardState.objects.filter(user_id=user_id, due__lte=day)
        .order_by("due", "card_id")
        .values_list("card_id", "due", "easiness")
    )
)
SEEN_SINCE = Prepared(
    lambda user_id, since: (
        CardState.objects.filter(user_id=user_id, last_reviewed_at__gt=since)
        .order_by("-last_reviewed_at")
        .values_list("last_reviewed_at", flat=True)
    )
)
DAY = date(2026, 11, 25)
EARLIEST, LATEST = datetime(2000, 1, 1), datetime(2100, 1, 1)  # noqa: DTZ001 (hypothesis wants naive bounds)


def fields(state: CardState) -> dict[str, object]:
    return {key: value for key, value in vars(state).items() if key != "_state"}


class PreparedTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.ada, cls.bob = make_user(), make_user()
        cls.cards = [make_card() for _ in range(3)]
        for offset, card in enumerate(cls.cards):
            make_state(cls.ada, card, due=DAY + timedelta(days=offset), easiness=Decimal("2.36"), needs_repeat=True)
        make_state(cls.bob, cls.cards[0], due=DAY - timedelta(days=9), seen=False)

    def test_it_returns_the_instance_the_queryset_returns_field_for_field(self) -> None:
        for user, card in [(self.ada, self.cards[1]), (self.bob, self.cards[0])]:
            with self.assertNumQueries(1):
                prepared = STATE.first(user_id=user.pk, card_id=card.pk)
            expected = CardState.objects.get(user=user, card=card)
            assert prepared is not None and fields(prepared) == fields(expected)
            assert isinstance(prepared.easiness, Decimal) and isinstance(prepared.due, date)
            assert not prepared._state.adding and prepared._state.db == "default"
        prepared.save(update_fields=["user_note"])  # a loaded row, not a new one: no second insert

    def test_each_call_binds_its_own_values(self) -> None:
        assert STATE.first(user_id=self.bob.pk, card_id=self.cards[2].pk) is None
        assert STATE.first(user_id=self.ada.pk, card_id=self.cards[2].pk) is not None
        assert STATE.all(user_id=self.bob.pk, card_id=self.cards[0].pk)[0].last_reviewed_at is None

    def test_values_list_rows_and_dates_as_the_queryset_gives_them(self) -> None:
        for day in (DAY - timedelta(days=20), DAY, DAY + timedelta(days=1), DAY + timedelta(days=5)):
            expected = list(
                CardState.objects.filter(user_id=self.ada.pk, due__lte=day)
                .order_by("due", "card_id")
                .values_list("card_id", "due", "easiness")
            )
            assert DUE_BY.all(user_id=self.ada.pk, day=day) == expected

    def test_a_value_that_would_change_the_statement_is_refused_before_any_query(self) -> None:
        for bad in (None, True, [1, 2], 2.5):
            query = Prepared(lambda user_id: CardState.objects.filter(user_id=user_id))
            with self.assertNumQueries(0), self.assertRaisesMessage(TypeError, "Prepared binds"):
                query.all(user_id=bad)

    def test_a_value_the_query_does_not_use_is_an_error_not_ignored(self) -> None:
        query = Prepared(lambda user_id, card_id: CardState.objects.filter(user_id=user_id))
        with self.assertRaisesMessage(ValueError, "['card_id'] did not become parameters"):
            query.all(user_id=self.ada.pk, card_id=self.cards[0].pk)

    def test_other_names_on_a_later_call_are_an_error(self) -> None:
        STATE.all(user_id=self.ada.pk, card_id=self.cards[0].pk)
        with self.assertRaisesMessage(TypeError, "binds ['card_id', 'user_id'], not ['user_id']"):
            STATE.all(user_id=self.ada.pk)

    def test_related_rows_and_dicts_are_refused(self) -> None:
        joined = Prepared(lambda user_id: CardState.objects.filter(user_id=user_id).select_related("card"))
        with self.assertRaisesMessage(TypeError, "no select_related"):
            joined.all(user_id=self.ada.pk)
        dicts = Prepared(lambda user_id: CardState.objects.filter(user_id=user_id).values("due"))
        with self.assertRaisesMessage(TypeError, "model instances or values_list"):
            dicts.all(user_id=self.ada.pk)

    def test_annotated_and_extra_columns_are_refused_for_models_too(self) -> None:
        """They come first in the SELECT: taken as the model's fields, they would shift every value."""
        annotated = Prepared(lambda user_id: CardState.objects.filter(user_id=user_id).annotate(n=Count("id")))
        extra = Prepared(lambda user_id: CardState.objects.filter(user_id=user_id).extra(select={"one": "1"}))
        for query in (annotated, extra):
            with self.assertNumQueries(0), self.assertRaisesMessage(TypeError, "no annotate() or extra()"):
                query.all(user_id=self.ada.pk)


class PreparedThreadTests(TransactionTestCase):
    """Celery's threads pool: compiled in one thread, run in another with that thread's own connection."""

    def test_a_statement_compiled_in_one_thread_answers_in_another(self) -> None:
        user, card = make_user(), make_card()
        make_state(user, card, due=DAY, easiness=Decimal("2.36"))
        here = STATE.first(user_id=user.pk, card_id=card.pk)
        answers: list[object] = []

        def elsewhere() -> None:
            try:
                answers.append(STATE.first(user_id=user.pk, card_id=card.pk))
            finally:
                connection.close()

        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join(30)
        assert here is not None and len(answers) == 1
        assert fields(answers[0]) == fields(here)


class PreparedDatetimeTests(HypothesisTestCase):
    """Datetimes go through the backend's own adaptation: any instant (microseconds, any time zone)
    selects exactly the rows the queryset selects, and comes back as the same aware datetime."""

    @settings(max_examples=40, deadline=None)
    @given(
        seen=st.lists(st.datetimes(min_value=EARLIEST, max_value=LATEST), max_size=4),
        since=st.datetimes(min_value=EARLIEST, max_value=LATEST, timezones=st.timezones()),
    )
    def test_it_selects_what_the_queryset_selects(self, seen: list[datetime], since: datetime) -> None:
        user = make_user()
        for when in seen:
            make_state(user, make_card(), due=DAY, last_reviewed_at=when.replace(tzinfo=UTC))
        expected = list(
            CardState.objects.filter(user_id=user.pk, last_reviewed_at__gt=since)
            .order_by("-last_reviewed_at")
            .values_list("last_reviewed_at", flat=True)
        )
        assert SEEN_SINCE.all(user_id=user.pk, since=since) == expected
        assert all(value.tzinfo is not None for value in expected)


class PreparedConstantTests(TestCase):
    def test_a_constant_of_the_query_equal_to_a_stand_in_stays_a_constant(self) -> None:
        """The first stand-in for an int is 20011: the query's own 20011 must not be bound to ``user_id``."""
        user = make_user()
        make_state(user, make_card(), due=DAY, interval=20011)
        make_state(user, make_card(), due=DAY, interval=5)
        query = Prepared(
            lambda user_id: CardState.objects.filter(user_id=user_id, interval=20011).values_list("interval", flat=True)
        )
        assert query.all(user_id=user.pk) == [20011]

    def test_small_positive_fields_take_any_value_in_their_range(self) -> None:
        """Django answers "no rows" without SQL for an out-of-range lookup: the stand-ins must be in range."""
        user = make_user()
        state = make_state(user, make_card(), due=DAY, repetitions=7)
        query = Prepared(lambda user_id, n: CardState.objects.filter(user_id=user_id, repetitions=n))
        assert [row.pk for row in query.all(user_id=user.pk, n=7)] == [state.pk]
        assert query.all(user_id=user.pk, n=8) == []


class PreparedUpdateTests(TestCase):
    """The job lifecycle's two writes (``update_where``: finish; ``update_returning``: claim)."""

    @classmethod
    def setUpTestData(cls) -> None:
        cls.ada, cls.bob = make_user(), make_user()
        cls.card = make_card()

    def setUp(self) -> None:
        self.state = make_state(self.ada, self.card, due=DAY, easiness=Decimal("2.36"), lapses=0)

    def test_it_changes_the_row_only_when_every_condition_holds(self) -> None:
        seen = datetime(2026, 11, 27, 8, 30, tzinfo=UTC)
        changes = {"easiness": Decimal("1.30"), "last_reviewed_at": seen, "buried_until": None}
        assert update_where(CardState, self.state.pk, changes, {"user_id": self.bob.pk}) == 0
        assert CardState.objects.get(pk=self.state.pk).easiness == Decimal("2.36")
        with self.assertNumQueries(1):
            assert update_where(CardState, self.state.pk, changes, {"user_id": self.ada.pk, "due": DAY}) == 1
        after = CardState.objects.get(pk=self.state.pk)
        assert (after.easiness, after.last_reviewed_at, after.buried_until) == (Decimal("1.30"), seen, None)

    def test_it_stores_what_queryset_update_stores(self) -> None:
        other = make_state(self.bob, self.card, due=DAY)
        changes = {"easiness": Decimal("2.71"), "due": DAY + timedelta(days=3), "stability": 4.5}
        update_where(CardState, self.state.pk, changes, {})
        CardState.objects.filter(pk=other.pk).update(**changes)
        mine, theirs = CardState.objects.get(pk=self.state.pk), CardState.objects.get(pk=other.pk)
        assert {k: getattr(mine, k) for k in changes} == {k: getattr(theirs, k) for k in changes}

    def test_update_returning_gives_the_row_as_stored_in_one_query(self) -> None:
        if not returns_from_update(connection.vendor):
            return  # SQLite before 3.35: None, and the lifecycle reads the row itself
        with self.assertNumQueries(1):
            row = update_returning(
                CardState,
                self.state.pk,
                {"easiness": Decimal("2.10")},
                {"user_id": self.ada.pk},
                increment="lapses",
                below=("lapses", 2),
            )
        assert row is not None and fields(row) == fields(CardState.objects.get(pk=self.state.pk))
        assert (row.easiness, row.lapses) == (Decimal("2.10"), 1) and not row._state.adding

    def test_update_returning_changes_nothing_at_the_bound_or_for_another_row(self) -> None:
        if not returns_from_update(connection.vendor):
            return
        args = ({"easiness": Decimal("2.10")}, {"user_id": self.ada.pk})
        assert update_returning(CardState, self.state.pk, *args, increment="lapses", below=("lapses", 2)) is not None
        assert update_returning(CardState, self.state.pk, *args, increment="lapses", below=("lapses", 2)) is not None
        assert update_returning(CardState, self.state.pk, *args, increment="lapses", below=("lapses", 2)) is None
        wrong = ({"easiness": Decimal("1.5")}, {"user_id": self.bob.pk})
        assert update_returning(CardState, self.state.pk, *wrong, increment="lapses", below=("lapses", 9)) is None
        after = CardState.objects.get(pk=self.state.pk)
        assert (after.lapses, after.easiness) == (2, Decimal("2.10"))
