"""The review pages over HTTP: access, forms, htmx and plain posts, bad input, query budgets."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from celery.signals import after_task_publish
from django.db import connection
from django.test import TestCase, TransactionTestCase
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from cards import review
from cards.models import CardState, Profile, ReviewLog, TouchedDay
from tests.cards.factories import make_card, make_cards, make_note, make_user

HTMX = {"HTTP_HX_REQUEST": "true"}


class ViewCase(TestCase):
    def setUp(self) -> None:
        self.user = make_user("owner")
        self.outsider = make_user("outsider")
        self.client.force_login(self.user)

    def today(self) -> object:
        return review.learner_today(review.get_profile(self.user), timezone.now())

    def rate_url(self, card: object) -> str:
        return reverse("cards:rate", args=[card.uuid])


class AccessTests(ViewCase):
    def test_it_sends_anonymous_users_to_log_in(self) -> None:
        self.client.logout()
        card = make_card()
        urls = [
            ("get", reverse("cards:dashboard")),
            ("get", reverse("cards:review")),
            ("get", reverse("cards:settings")),
            ("get", reverse("cards:card_edit", args=[card.uuid])),
            ("get", reverse("cards:note", args=[card.note.slug])),
            ("post", self.rate_url(card)),
            ("post", reverse("cards:undo")),
            ("post", reverse("cards:suspend", args=[card.uuid])),
            ("post", reverse("cards:bury", args=[card.uuid])),
        ]
        for method, url in urls:
            response = getattr(self.client, method)(url, {"quality": 4, "version": 0})
            self.assertEqual(response.status_code, 302, url)
            self.assertTrue(response["Location"].startswith(reverse("login")), url)
        self.assertFalse(CardState.objects.exists())

    def test_it_says_what_quizsite_is_to_an_anonymous_visitor_of_the_home_page(self) -> None:
        self.client.logout()
        response = self.client.get(reverse("cards:dashboard"), follow=True)
        self.assertContains(response, "quizsite teaches PyTorch with spaced repetition")
        self.assertContains(response, "data-signup-link")

    def test_saving_a_card_note_says_saved_once(self) -> None:
        card = make_card()
        url = reverse("cards:card_edit", args=[card.uuid])
        response = self.client.post(url, {"user_note": "mine", "suspended": ""}, follow=True)
        self.assertEqual(response.content.decode().count("Saved."), 1)

    def test_it_refuses_get_on_actions(self) -> None:
        card = make_card()
        self.assertEqual(self.client.get(self.rate_url(card)).status_code, 405)
        self.assertEqual(self.client.get(reverse("cards:undo")).status_code, 405)

    def test_it_signs_up_and_logs_in(self) -> None:
        self.client.logout()
        password = "zhang-liang 42 shape!"
        data = {"username": "新用户", "password1": password, "password2": password}
        response = self.client.post(reverse("cards:signup"), data)
        self.assertRedirects(response, reverse("cards:dashboard"))
        self.assertEqual(self.client.get(reverse("cards:dashboard")).context["user"].username, "新用户")

    def test_it_keeps_next_through_sign_up_and_refuses_other_sites(self) -> None:
        self.client.logout()
        login_page = self.client.get(reverse("login"), {"next": "/teams/join/abc/"})
        self.assertContains(login_page, f"{reverse('cards:signup')}?next=/teams/join/abc/")
        signup_page = self.client.get(reverse("cards:signup"), {"next": "/teams/join/abc/"})
        self.assertContains(signup_page, 'name="next" value="/teams/join/abc/"')
        password = "zhang-liang 42 shape!"
        data = {"username": "invited", "password1": password, "password2": password, "next": "/teams/join/abc/"}
        self.assertRedirects(
            self.client.post(reverse("cards:signup"), data), "/teams/join/abc/", fetch_redirect_response=False
        )
        self.client.logout()
        data = {**data, "username": "elsewhere", "next": "https://evil.example/"}
        self.assertRedirects(self.client.post(reverse("cards:signup"), data), reverse("cards:dashboard"))

    def test_the_header_sign_up_and_log_in_links_keep_a_pending_invite(self) -> None:
        self.client.logout()
        page = self.client.get(reverse("login"), {"next": "/teams/join/abc/"}).content.decode()
        self.assertIn(f'href="{reverse("cards:signup")}?next=/teams/join/abc/" data-header-signup', page)
        self.assertIn(f'href="{reverse("login")}?next=/teams/join/abc/"', page)
        plain = self.client.get(reverse("login")).content.decode()
        self.assertIn(f'href="{reverse("cards:signup")}" data-header-signup', plain)

    def test_the_footer_and_the_settings_page_link_the_api_docs(self) -> None:
        docs = f'href="{reverse("api:docs")}" data-api-docs'
        self.assertEqual(self.client.get(reverse("cards:settings")).content.decode().count(docs), 2)  # footer + page
        self.client.logout()
        self.assertIn(docs, self.client.get(reverse("login")).content.decode())

    def test_it_creates_the_learners_settings_row_at_sign_up(self) -> None:
        self.client.logout()
        password = "zhang-liang 42 shape!"
        data = {"username": "fresh", "email": "fresh@example.com", "password1": password, "password2": password}
        self.client.post(reverse("cards:signup"), data)
        profile = Profile.objects.get(user__username="fresh")
        self.assertEqual((profile.new_cards_per_day, profile.reviews_per_day, profile.day_start_hour), (20, 200, 4))
        self.assertEqual(profile.user.email, "fresh@example.com")  # the digest can reach them

    def test_it_shows_signup_errors(self) -> None:
        self.client.logout()
        data = {"username": "a", "password1": "x", "password2": "y"}
        response = self.client.post(reverse("cards:signup"), data)
        self.assertEqual(response.status_code, 200)
        self.assertContains(response, "errorlist")


class ReviewPageTests(ViewCase):
    def test_it_shows_the_front_the_answer_the_source_and_four_labelled_buttons(self) -> None:
        note = make_note(slug="tensor-basics")
        card = make_card(note=note, anchor="形状")
        response = self.client.get(reverse("cards:review"))
        self.assertContains(response, card.front_html, html=False)
        self.assertContains(response, card.back_html, html=False)
        self.assertContains(response, f'href="/notes/tensor-basics/#{card.anchor}"')
        for label in ("Again", "Hard", "Good", "Easy"):
            self.assertContains(response, f'<span class="rate-label">{label}</span>')
        self.assertContains(response, 'name="version" value="0"')
        self.assertContains(response, "dist/katex/contrib/auto-render.min.js")
        self.assertContains(response, "dist/htmx/htmx.min.js")

    def test_it_says_done_when_nothing_is_left(self) -> None:
        self.assertContains(self.client.get(reverse("cards:review")), "Done for today")

    def test_it_records_a_plain_post_and_redirects(self) -> None:
        card = make_card()
        response = self.client.post(self.rate_url(card), {"quality": 4, "version": 0, "duration_ms": 4200})
        self.assertRedirects(response, reverse("cards:review"))
        state = CardState.objects.get(user=self.user, card=card)
        self.assertEqual((state.interval, state.repetitions, state.version), (1, 1, 1))
        log = ReviewLog.objects.get()
        self.assertEqual((log.quality, log.duration_ms, log.user), (4, 4200, self.user))

    def test_it_answers_htmx_with_the_next_card(self) -> None:
        first, second = make_cards(2)
        response = self.client.post(self.rate_url(first), {"quality": 5, "version": 0}, **HTMX)
        self.assertEqual(response.status_code, 200)
        self.assertTemplateUsed(response, "cards/snippets/review_panel.html")
        self.assertTemplateNotUsed(response, "base.html")
        self.assertContains(response, second.front_html)

    def test_it_rejects_bad_ratings_and_writes_nothing(self) -> None:
        card = make_card()
        bad = [
            {"quality": 0, "version": 0},
            {"quality": 2, "version": 0},
            {"quality": 6, "version": 0},
            {"quality": "x", "version": 0},
            {"version": 0},
            {"quality": 4},
            {"quality": 4, "version": -1},
            {"quality": 4, "version": "one"},
            {"quality": 4, "version": 0, "duration_ms": -5},
        ]
        for data in bad:
            response = self.client.post(self.rate_url(card), data)
            self.assertEqual(response.status_code, 400, data)
        self.assertFalse(CardState.objects.exists())
        self.assertFalse(ReviewLog.objects.exists())

    def test_it_records_a_double_submitted_rating_once(self) -> None:
        card = make_card()
        for _ in range(2):
            self.client.post(self.rate_url(card), {"quality": 1, "version": 0})
        self.assertEqual(ReviewLog.objects.count(), 1)
        self.assertEqual(CardState.objects.get().version, 1)

    def test_it_refuses_a_card_that_is_not_due(self) -> None:
        card = make_card()
        state = CardState.objects.create(
            user=self.user, card=card, due=self.today() + timedelta(days=5), last_reviewed_at=timezone.now(), version=2
        )
        response = self.client.post(self.rate_url(card), {"quality": 5, "version": 2})
        self.assertEqual(response.status_code, 409)
        state.refresh_from_db()
        self.assertEqual((state.version, state.interval), (2, 0))
        self.assertFalse(ReviewLog.objects.exists())

    def test_it_never_touches_another_learners_state(self) -> None:
        card = make_card()
        theirs = CardState.objects.create(user=self.outsider, card=card, due=self.today(), version=1)
        response = self.client.post(self.rate_url(card), {"quality": 5, "version": 1})
        self.assertEqual(response.status_code, 404)
        theirs.refresh_from_db()
        self.assertEqual(theirs.version, 1)
        self.assertFalse(ReviewLog.objects.exists())

    def test_it_undoes_the_last_rating(self) -> None:
        card = make_card()
        self.client.post(self.rate_url(card), {"quality": 4, "version": 0})
        response = self.client.post(reverse("cards:undo"), **HTMX)
        self.assertContains(response, "Undid the last rating.")
        self.assertContains(response, card.front_html)
        self.assertFalse(CardState.objects.exists())
        self.assertFalse(ReviewLog.objects.exists())

    def test_it_buries_and_suspends_from_the_review_page(self) -> None:
        buried, suspended = make_cards(2)
        self.client.post(reverse("cards:bury", args=[buried.uuid]))
        self.client.post(reverse("cards:suspend", args=[suspended.uuid]))
        states = {s.card_id: s for s in CardState.objects.filter(user=self.user)}
        self.assertEqual(states[buried.pk].buried_until, self.today() + timedelta(days=1))
        self.assertTrue(states[suspended.pk].suspended)
        self.assertContains(self.client.get(reverse("cards:review")), "Done for today")

    def test_it_saves_a_note_on_the_card_and_shows_it_with_the_answer(self) -> None:
        card = make_card()
        url = reverse("cards:card_edit", args=[card.uuid])
        self.assertEqual(self.client.get(url).status_code, 200)
        response = self.client.post(url, {"user_note": "记住: shape 是元组"})
        self.assertRedirects(response, reverse("cards:review"))
        state = CardState.objects.get(user=self.user, card=card)
        self.assertEqual(
            (state.user_note, state.suspended, state.last_reviewed_at), ("记住: shape 是元组", False, None)
        )
        page = self.client.get(reverse("cards:review"))
        self.assertContains(page, "记住: shape 是元组")
        self.assertEqual((page.context["item"].queue, page.context["item"].version), ("new", state.version))
        # A new card with a state row (from the note) is rated through its version like any other.
        self.client.post(self.rate_url(card), {"quality": 4, "version": state.version})
        state.refresh_from_db()
        self.assertEqual(
            (state.repetitions, state.user_note, ReviewLog.objects.get().was_new), (1, "记住: shape 是元组", True)
        )


class QueryBudgetTests(ViewCase):
    """The hot path: show the next card, record a rating and show the next one, in under 10 queries each.

    A TestCase counts the rating's savepoint and its release, which a real request does not run (there the
    transaction is BEGIN ... COMMIT): ``FullRequestQueryTests`` counts what a real request costs."""

    def setUp(self) -> None:
        super().setUp()
        note = make_note()
        self.cards = make_cards(3, note=note)
        today = self.today()
        for card in self.cards[:2]:
            CardState.objects.create(
                user=self.user, card=card, due=today, last_reviewed_at=timezone.now() - timedelta(days=3), version=2
            )
        make_cards(3, note=note)  # new cards too
        review.queue_snapshot(self.user, review.get_profile(self.user), today)  # the deck, as a warm process has it

    def test_it_shows_the_next_card_in_four_queries(self) -> None:
        # session, user + profile, counts + queue heads, the card
        with self.assertNumQueries(4):
            response = self.client.get(reverse("cards:review"))
        self.assertEqual(response.context["item"].queue, "due")

    def test_it_records_a_rating_and_shows_the_next_card_in_ten_queries_with_the_savepoint(self) -> None:
        # session, user + profile, the state, savepoint, update, log, the day's mark, release, counts + heads,
        # next card
        with self.assertNumQueries(10):
            response = self.client.post(self.rate_url(self.cards[0]), {"quality": 4, "version": 2}, **HTMX)
        self.assertEqual(response.status_code, 200)
        self.assertEqual(ReviewLog.objects.count(), 1)

    def test_it_records_a_new_cards_rating_in_twelve_queries_with_the_savepoint(self) -> None:
        # as a seen card's, plus the profile row locked and today's new cards counted again under the lock
        new = self.cards[2]
        with self.assertNumQueries(12):
            self.client.post(self.rate_url(new), {"quality": 4, "version": 0}, **HTMX)
        self.assertTrue(CardState.objects.filter(user=self.user, card=new, version=1).exists())

    def test_it_records_a_plain_rating_in_eight_queries_with_the_savepoint(self) -> None:
        with self.assertNumQueries(8):
            response = self.client.post(self.rate_url(self.cards[0]), {"quality": 3, "version": 2})
        self.assertEqual(response.status_code, 302)

    def test_it_shows_the_dashboard_in_a_few_queries(self) -> None:
        with self.assertNumQueries(5):
            response = self.client.get(reverse("cards:dashboard"))
        self.assertEqual(response.context["summary"].due, 2)


class SettingsTests(ViewCase):
    def test_it_saves_the_email_the_digest_is_sent_to(self) -> None:
        data = {"time_zone": "UTC", "day_start_hour": 4, "new_cards_per_day": 20, "reviews_per_day": 200}
        self.client.post(reverse("cards:settings"), {**data, "email": "me@example.com"})
        self.user.refresh_from_db()
        self.assertEqual(self.user.email, "me@example.com")
        self.assertContains(self.client.get(reverse("cards:settings")), 'value="me@example.com"')
        response = self.client.post(reverse("cards:settings"), {**data, "email": "not an address"})
        self.assertEqual(response.status_code, 200)
        self.user.refresh_from_db()
        self.assertEqual(self.user.email, "me@example.com")

    def test_it_saves_the_time_zone_and_limits(self) -> None:
        data = {"time_zone": "Asia/Shanghai", "day_start_hour": 5, "new_cards_per_day": 5, "reviews_per_day": 50}
        response = self.client.post(reverse("cards:settings"), data)
        self.assertRedirects(response, reverse("cards:settings"))
        profile = Profile.objects.get(user=self.user)
        self.assertEqual(
            (profile.time_zone, profile.day_start_hour, profile.new_cards_per_day), ("Asia/Shanghai", 5, 5)
        )

    def test_it_rejects_an_unknown_zone_and_out_of_range_values(self) -> None:
        before = review.get_profile(self.user)
        data = {"time_zone": "Mars/Olympus", "day_start_hour": 24, "new_cards_per_day": -1, "reviews_per_day": 20000}
        response = self.client.post(reverse("cards:settings"), data)
        self.assertEqual(response.status_code, 200)
        self.assertEqual(set(response.context["form"].errors), set(data))
        profile = Profile.objects.get(user=self.user)
        self.assertEqual((profile.time_zone, profile.day_start_hour), (before.time_zone, 4))


class DashboardTests(ViewCase):
    def test_it_shows_todays_numbers(self) -> None:
        card, _ = make_cards(2)
        self.client.post(self.rate_url(card), {"quality": 5, "version": 0})
        response = self.client.get(reverse("cards:dashboard"))
        self.assertContains(response, '<dd id="stat-reviewed">1</dd>', html=False)
        self.assertContains(response, "Answered today")  # every answer, as /stats/ counts them
        self.assertContains(response, '<dd id="stat-new">1</dd>', html=False)
        self.assertContains(response, '<dd id="stat-streak">1 day</dd>', html=False)


class NotePageTests(ViewCase):
    def test_it_renders_the_note_with_heading_anchors(self) -> None:
        note = make_note(slug="tensors", content="# 张量\n\n## 形状\n\n文本\n")
        response = self.client.get(reverse("cards:note", args=["tensors"]))
        self.assertContains(response, "形状")
        self.assertEqual(response.context["note"], note)

    def test_it_answers_404_for_an_unknown_note(self) -> None:
        self.assertEqual(self.client.get(reverse("cards:note", args=["nope"])).status_code, 404)


class FullRequestQueryTests(TransactionTestCase):
    """The same budget as a real request runs it: committed, with nothing left for after the commit.

    The rating marks its learner day for the teams rollup in its own transaction (one upsert); the
    recompute runs on beat's next tick in a worker, off the learner's clock, and nothing is published.
    """

    def test_it_records_a_new_cards_rating_and_shows_the_next_card_in_twelve_queries_with_begin_and_commit(
        self,
    ) -> None:
        """Nine before the teams' mark was written in the rating's transaction (it used to be a message
        published after the commit, which a dying process lost); two more since a new card's rating locks the
        profile row and counts today's new cards again (two ratings at once never pass the limit). The deck is
        read first, as a warm process has it."""
        user = make_user(time_zone="UTC")  # a returning learner: the first visit also creates the profile
        self.client.force_login(user)
        first, _ = make_cards(2)
        review.queue_snapshot(
            user, review.get_profile(user), review.learner_today(review.get_profile(user), timezone.now())
        )
        published: list[str] = []

        def record(sender: str, **kwargs: Any) -> None:
            published.append(sender)

        after_task_publish.connect(record, weak=False, dispatch_uid="tests.cards.full_request")
        try:
            with CaptureQueriesContext(connection) as queries:
                response = self.client.post(
                    reverse("cards:rate", args=[first.uuid]), {"quality": 4, "version": 0}, **HTMX
                )
        finally:
            after_task_publish.disconnect(dispatch_uid="tests.cards.full_request")
        self.assertEqual(response.status_code, 200)
        self.assertEqual(ReviewLog.objects.count(), 1)
        self.assertEqual(list(TouchedDay.objects.values_list("user_id", flat=True)), [user.pk])
        self.assertEqual(published, [])
        self.assertLessEqual(len(queries), 12, "\n".join(q["sql"][:100] for q in queries.captured_queries))
