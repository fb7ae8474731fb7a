"""The API token page in settings: a learner creates a token, sees its key once, finds it listed and revokes
it, with CSRF-protected posts; nobody else's token is touched and a signed-out visitor is sent to log in."""

from __future__ import annotations

from django.test import Client, TestCase
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.cards.factories import make_user


class TokenPageTests(TestCase):
    def setUp(self) -> None:
        self.alice = make_user("alice")
        self.bob = make_user("bob")
        self.client.force_login(self.alice)

    def test_it_creates_a_token_and_shows_its_key_once(self) -> None:
        response = self.client.post("/settings/token/new/")
        self.assertEqual(response.status_code, 200)
        key = Token.objects.get(user=self.alice).key
        self.assertContains(response, f'value="{key}"')
        self.assertIn("no-store", response["Cache-Control"])
        page = self.client.get("/settings/token/")
        self.assertNotContains(page, key)
        self.assertContains(page, "data-token-row")
        self.assertContains(page, "data-token-revoke")
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        self.assertEqual(api.get("/api/v1/decks/").status_code, 200)

    def test_it_replaces_the_old_token_when_a_new_one_is_made(self) -> None:
        old = Token.objects.create(user=self.alice).key
        self.client.post("/settings/token/new/")
        self.assertNotEqual(Token.objects.get(user=self.alice).key, old)
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {old}")
        self.assertEqual(api.get("/api/v1/decks/").status_code, 401)

    def test_it_revokes_only_the_learners_own_token(self) -> None:
        Token.objects.create(user=self.alice)
        bobs = Token.objects.create(user=self.bob)
        response = self.client.post("/settings/token/revoke/", follow=True)
        self.assertRedirects(response, "/settings/token/")
        self.assertFalse(Token.objects.filter(user=self.alice).exists())
        self.assertTrue(Token.objects.filter(pk=bobs.pk).exists())
        self.assertContains(response, "data-token-none")

    def test_it_lists_no_token_before_one_is_made(self) -> None:
        response = self.client.get("/settings/token/")
        self.assertContains(response, "data-token-none")
        self.assertNotContains(response, "data-token-row")

    def test_it_refuses_a_post_without_the_csrf_token(self) -> None:
        strict = Client(enforce_csrf_checks=True)
        strict.force_login(self.alice)
        self.assertEqual(strict.post("/settings/token/new/").status_code, 403)
        Token.objects.create(user=self.alice)
        self.assertEqual(strict.post("/settings/token/revoke/").status_code, 403)
        self.assertTrue(Token.objects.filter(user=self.alice).exists())

    def test_it_never_makes_a_token_on_get(self) -> None:
        self.assertEqual(self.client.get("/settings/token/new/").status_code, 405)
        self.assertFalse(Token.objects.exists())

    def test_it_sends_a_signed_out_visitor_to_log_in(self) -> None:
        response = Client().get("/settings/token/")
        self.assertEqual(response.status_code, 302)
        self.assertIn("/accounts/login/", response["Location"])
        self.assertEqual(Client().post("/settings/token/new/").status_code, 302)
        self.assertFalse(Token.objects.exists())

    def test_the_settings_page_links_to_it(self) -> None:
        self.assertContains(self.client.get("/settings/"), 'href="/settings/token/"')
