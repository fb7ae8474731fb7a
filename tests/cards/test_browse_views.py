"""Decks, a deck's cards, a card's detail and the stats page, through the test client.

Three personas as in the rest of the suite: the learner, and an outsider whose
states and reviews must never show on the learner's pages.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format

from cards.models import Card, Profile
from cards.review import learner_today, queue_snapshot
from tests.cards.factories import make_card, make_note, make_user
from tests.cards.stats_factories import make_log, make_state

pytestmark = [
    pytest.mark.django_db,
    # WhiteNoise warns when STATIC_ROOT (var/static) has not been collected yet; irrelevant here.
    pytest.mark.filterwarnings("ignore:No directory at:UserWarning"),
]

# Session, user (the profile comes joined), then the page's own queries; the first request of a process also
# builds the deck's order, which reads the stages' concepts and the drills' tracks (one query each).
MAX_QUERIES = 16


LoginAs = Callable[[AbstractBaseUser], Client]


@pytest.fixture
def learner() -> AbstractBaseUser:
    return make_user("learner", time_zone="Asia/Shanghai")


@pytest.fixture
def outsider() -> AbstractBaseUser:
    return make_user("outsider", time_zone="UTC")


@pytest.fixture
def client_for(client: Client) -> LoginAs:
    def login(user: AbstractBaseUser) -> Client:
        client.force_login(user)
        return client

    return login


def test_it_asks_anonymous_visitors_to_log_in() -> None:
    note, card = make_note("basics"), make_card()
    urls = [
        reverse("cards:decks"),
        reverse("cards:deck", args=[note.slug]),
        reverse("cards:card", args=[card.uuid]),
        reverse("cards:stats"),
    ]
    for url in urls:
        response = Client().get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("login"))


def test_it_answers_404_for_an_unknown_deck_or_card(learner: AbstractBaseUser, client_for: LoginAs) -> None:
    client = client_for(learner)
    assert client.get(reverse("cards:deck", args=["no-such-note"])).status_code == 404
    assert client.get(reverse("cards:card", args=[uuid.uuid4()])).status_code == 404


def test_it_lists_decks_with_the_learners_own_due_counts(
    learner: AbstractBaseUser, outsider: AbstractBaseUser, client_for: LoginAs, django_assert_max_num_queries: Any
) -> None:
    note = make_note("basics", title="<script>alert(1)</script>基础")
    cards = [make_card(note) for _ in range(3)]
    make_card(note, kind=Card.Kind.CLOZE)
    today = learner_today(Profile.objects.get(user=learner), timezone.now())
    make_state(learner, cards[0], due=today)
    for card in cards:
        make_state(outsider, card, due=today)
    client = client_for(learner)

    with django_assert_max_num_queries(MAX_QUERIES):
        response = client.get(reverse("cards:decks"))

    assert response.status_code == 200
    row = response.context["rows"][0]
    assert (row["total"], row["due"], row["seen"], row["new"]) == (4, 1, 1, 3)
    assert row["kinds"] == [("Cloze", 1), ("Question", 3)]
    body = response.content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;基础" in body


def test_it_shows_a_decks_cards_with_this_learners_states_only(
    learner: AbstractBaseUser, outsider: AbstractBaseUser, client_for: LoginAs, django_assert_max_num_queries: Any
) -> None:
    note = make_note("basics")
    seen, fresh = make_card(note, front="形状 seen"), make_card(note, front="形状 fresh")
    today = learner_today(Profile.objects.get(user=learner), timezone.now())
    make_state(learner, seen, due=today + timedelta(days=9), interval=9, easiness=Decimal("2.36"))
    make_state(outsider, fresh, due=today + timedelta(days=700), interval=700)
    client = client_for(learner)

    with django_assert_max_num_queries(MAX_QUERIES):
        response = client.get(reverse("cards:deck", args=[note.slug]))

    states = {card.pk: state for card, state in response.context["rows"]}
    assert states[seen.pk].interval == 9
    assert states[fresh.pk] is None
    body = response.content.decode()
    due = date_format(today + timedelta(days=9), "DATE_FORMAT")  # the localized date, as on every page
    assert f"due {due}</span>, every 9 days, ease 2.36" in body
    assert "every 700 days" not in body
    assert body.count('class="state-new"') == 1


def test_it_filters_a_deck_by_kind_and_searches_front_and_back(learner: AbstractBaseUser, client_for: LoginAs) -> None:
    note = make_note("basics")
    make_card(note, front="张量的形状", back="x.shape")
    make_card(note, front="广播规则", back="从右往左对齐 shape", kind=Card.Kind.CLOZE)
    make_card(note, front="梯度", back="backward")
    make_card(note, front="retired shape", active=False)
    client = client_for(learner)

    def fronts(**params: str) -> list[str]:
        response = client.get(reverse("cards:deck", args=[note.slug]), params)
        return [card.front for card, _ in response.context["rows"]]

    assert fronts() == ["张量的形状", "广播规则", "梯度"]
    assert fronts(q="SHAPE") == ["张量的形状", "广播规则"]
    assert fronts(kind="cloze") == ["广播规则"]
    assert fronts(kind="cloze", q="梯度") == []
    assert fronts(kind="bogus") == ["张量的形状", "广播规则", "梯度"]


def test_it_paginates_a_large_deck(learner: AbstractBaseUser, client_for: LoginAs) -> None:
    note = make_note("big")
    Card.objects.bulk_create(
        Card(
            key=f"big-{i}",
            note=note,
            kind=Card.Kind.QA,
            front=f"q{i}",
            back="a",
            front_html="<p>q</p>",
            back_html="<p>a</p>",
            position=i,
            content_hash=str(i),
        )
        for i in range(75)
    )
    client = client_for(learner)

    first = client.get(reverse("cards:deck", args=[note.slug]))
    second = client.get(reverse("cards:deck", args=[note.slug]), {"page": "2"})
    beyond = client.get(reverse("cards:deck", args=[note.slug]), {"page": "99"})

    assert len(first.context["rows"]) == 50
    assert [card.front for card, _ in second.context["rows"]][:2] == ["q50", "q51"]
    assert len(second.context["rows"]) == 25
    assert beyond.context["page"].number == 2
    assert 'rel="next"' in first.content.decode()


def test_it_shows_a_cards_faces_source_link_and_only_the_learners_history(
    learner: AbstractBaseUser, outsider: AbstractBaseUser, client_for: LoginAs, django_assert_max_num_queries: Any
) -> None:
    card = make_card(make_note("basics"), anchor="形状")
    mine = timezone.now() - timedelta(days=3)
    profile = Profile.objects.get(user=learner)
    make_log(learner, card, reviewed_at=mine, review_day=learner_today(profile, mine), quality=3, duration_ms=7000)
    make_log(outsider, card, reviewed_at=mine, review_day=learner_today(profile, mine), quality=0)
    make_state(learner, card, due=learner_today(profile, mine) + timedelta(days=6), interval=6)
    client = client_for(learner)

    with django_assert_max_num_queries(MAX_QUERIES):
        response = client.get(reverse("cards:card", args=[card.uuid]))

    body = response.content.decode()
    assert response.status_code == 200
    assert card.front_html in body
    assert card.back_html in body
    assert f'href="{reverse("cards:note", args=["basics"])}#形状"' in body
    assert [(row["quality"], row["rating"], row["seconds"]) for row in response.context["history"]] == [(3, "Hard", 7)]
    assert "Blackout" not in body
    assert f"{timezone.localtime(mine, profile.zone):%H:%M}" in body


def test_it_shows_a_retired_card_so_its_history_stays_readable(learner: AbstractBaseUser, client_for: LoginAs) -> None:
    card = make_card(make_note("basics"), active=False)
    response = client_for(learner).get(reverse("cards:card", args=[card.uuid]))
    assert response.status_code == 200
    assert "retired" in response.content.decode()
    assert reverse("cards:card_edit", args=[card.uuid]) not in response.content.decode()


def test_it_renders_empty_stats_for_a_newcomer(learner: AbstractBaseUser, client_for: LoginAs) -> None:
    response = client_for(learner).get(reverse("cards:stats"))
    body = response.content.decode()
    assert response.status_code == 200
    assert body.count("chart-empty") == 5  # everything but the heatmap, which shows an empty year
    assert body.count('class="chart chart-heatmap"') == 1
    assert response.context["year_total"] == 0
    # Its numbers count answers (every rating), and say so: the boards' "reviews" leave the repeats out.
    assert "answers in the last year" in body and "Answers per day, last 90 days" in body
    assert "Answers in the last year" in body and "0 answers on 0 of" in body


def test_it_puts_only_the_learners_own_reviews_in_the_stats(
    learner: AbstractBaseUser, outsider: AbstractBaseUser, client_for: LoginAs, django_assert_max_num_queries: Any
) -> None:
    profile = Profile.objects.get(user=learner)
    now = timezone.now()
    cards = [make_card() for _ in range(3)]
    for days_ago, card in [(0, cards[0]), (1, cards[1]), (40, cards[2]), (200, cards[2])]:
        when = now - timedelta(days=days_ago)
        make_log(learner, card, reviewed_at=when, review_day=learner_today(profile, when), interval_before=30)
    for _ in range(5):
        make_log(outsider, cards[0], reviewed_at=now, review_day=learner_today(profile, now), quality=0)
    make_state(learner, cards[0], due=learner_today(profile, now), easiness=Decimal("2.60"), interval=30)
    make_state(outsider, cards[1], due=learner_today(profile, now), easiness=Decimal("1.30"))
    client = client_for(learner)

    queue_snapshot(learner, Profile.objects.get(user=learner), learner_today(profile, now))  # a warm process's deck
    with django_assert_max_num_queries(MAX_QUERIES):
        response = client.get(reverse("cards:stats"))

    context = response.context
    assert context["year_total"] == 4
    assert context["days_studied"] == 4
    assert context["streak"] == 2
    week = context["retention"][0]
    assert (week.mature_passed, week.mature_total) == (2, 2)
    assert context["forecast"][0]["count"] == 1
    assert sum(h["reviews"] for h in context["hours"]) == 3  # the last 90 days only
    assert context["summary"]["seen"] == 1
    assert "2.5 to under 2.7: 1" in context["ease_chart"]
    assert "1.3 to under 1.5: 0" in context["ease_chart"]
    assert context["sections"] == [("graders/snippets/stats_drills.html", {"rows": []})]
    body = response.content.decode()
    assert body.count("<svg") == 6
    assert "<script" not in body.split("<main", 1)[1].split("</main>", 1)[0]


def test_it_runs_as_many_queries_for_a_big_deck_and_history_as_for_a_small_one(
    learner: AbstractBaseUser, client_for: LoginAs
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    small, big = make_note("small"), make_note("big")
    today = learner_today(Profile.objects.get(user=learner), timezone.now())
    for note, count in ((small, 1), (big, 30)):
        for card in [make_card(note) for _ in range(count)]:
            make_state(learner, card, due=today)
            for back in range(count // 10 + 1):
                day = today - timedelta(days=back)
                make_log(learner, card, reviewed_at=timezone.now() - timedelta(days=back), review_day=day)
    client = client_for(learner)
    big_card = big.cards.first()
    small_card = small.cards.first()
    assert big_card is not None and small_card is not None

    def queries(url: str) -> int:
        client.get(url)  # the first request of a session may differ
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url).status_code == 200
        return len(captured)

    assert queries(reverse("cards:deck", args=["big"])) == queries(reverse("cards:deck", args=["small"]))
    assert queries(reverse("cards:card", args=[big_card.uuid])) == queries(
        reverse("cards:card", args=[small_card.uuid])
    )
