"""Authentication (token and session), the token endpoint, and the 401 shape."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.api.base import ApiTestCase

ENDPOINTS = (
    "/api/v1/decks/",
    "/api/v1/decks/pytorch-basics/",
    "/api/v1/decks/pytorch-basics/cards/",
    "/api/v1/cards/",
    "/api/v1/cards/00000000-0000-4000-8000-000000000000/",
    "/api/v1/review/next/",
    "/api/v1/reviews/",
    "/api/v1/stats/",
    "/api/v1/drills/",
    "/api/v1/drills/add-one/",
    "/api/v1/submissions/",
    "/api/v1/submissions/00000000-0000-4000-8000-000000000000/",
    "/api/v1/teams/",
    "/api/v1/teams/any/",
    "/api/v1/teams/any/leaderboard/",
)


class AuthTests(ApiTestCase):
    def test_it_requires_authentication_everywhere_with_a_json_401(self) -> None:
        anonymous = APIClient()
        for url in ENDPOINTS:
            with self.subTest(url=url):
                response = anonymous.get(url)
                self.assert_error(response, 401, "not_authenticated")
                self.assertEqual(response["WWW-Authenticate"], "Token")
        for url in ("/api/v1/reviews/", "/api/v1/submissions/", "/api/v1/drills/add-one/hints/"):
            self.assert_error(anonymous.post(url, {}), 401, "not_authenticated")

    def test_it_refuses_a_wrong_token(self) -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
        self.assert_error(client.get("/api/v1/decks/"), 401, "authentication_failed")

    def test_it_trades_a_password_for_a_token(self) -> None:
        user = get_user_model().objects.create_user("dora", password="correct horse battery")
        client = APIClient()
        response = client.post("/api/v1/auth/token/", {"username": "dora", "password": "correct horse battery"})
        self.assertEqual(response.status_code, 200)
        token = response.json()["token"]
        self.assertEqual(Token.objects.get(user=user).key, token)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        self.assertEqual(client.get("/api/v1/decks/").status_code, 200)
        # Asking again returns the same token.
        again = APIClient().post("/api/v1/auth/token/", {"username": "dora", "password": "correct horse battery"})
        self.assertEqual(again.json()["token"], token)

    def test_it_refuses_a_wrong_password_without_making_a_token(self) -> None:
        get_user_model().objects.create_user("dora", password="correct horse battery")
        response = APIClient().post("/api/v1/auth/token/", {"username": "dora", "password": "wrong"})
        self.assert_error(response, 401, "authentication_failed")
        self.assertFalse(Token.objects.filter(user__username="dora").exists())
        error = self.assert_error(APIClient().post("/api/v1/auth/token/", {}), 400, "invalid")
        self.assertEqual(set(error["details"]), {"username", "password"})

    def test_it_revokes_the_token(self) -> None:
        self.assertEqual(self.client.delete("/api/v1/auth/token/").status_code, 204)
        self.assertFalse(Token.objects.filter(user=self.alice).exists())
        self.assert_error(self.client.get("/api/v1/decks/"), 401, "authentication_failed")

    def test_it_accepts_a_session_and_requires_csrf_for_writes(self) -> None:
        client = APIClient(enforce_csrf_checks=True)
        client.force_login(self.alice)
        self.assertEqual(client.get("/api/v1/decks/").status_code, 200)
        card = self.cards[0]
        response = client.post("/api/v1/reviews/", {"card": str(card.uuid), "quality": 4, "version": 0})
        self.assert_error(response, 403, "permission_denied")
