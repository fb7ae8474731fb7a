"""The error shape for unknown URLs and methods, pagination, and per-user throttling."""

from __future__ import annotations

import os
from unittest import mock

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import SimpleTestCase, override_settings
from rest_framework.settings import api_settings
from rest_framework.test import APIClient

from cards.models import CardState
from graders.models import Submission
from quizsite.settings import envrate
from tests.api.base import ApiTestCase, make_drill
from tests.cards.factories import make_cards


def rates(**overrides: str) -> dict[str, object]:
    """The REST_FRAMEWORK setting with some throttle rates replaced (our throttles read it per request)."""
    config = dict(settings.REST_FRAMEWORK)
    config["DEFAULT_THROTTLE_RATES"] = {**config["DEFAULT_THROTTLE_RATES"], **overrides}
    return config


class IndexTests(ApiTestCase):
    def test_it_answers_the_api_root_with_a_json_index(self) -> None:
        response = APIClient().get("/api/")
        assert response.status_code == 200 and response["Content-Type"] == "application/json"
        index = response.json()
        assert index["docs"] == "http://testserver/api/docs/" and index["schema"].endswith("/api/schema/")
        assert index["endpoints"]["drills"] == "http://testserver/api/v1/drills/"


class ErrorShapeTests(ApiTestCase):
    def test_it_answers_unknown_endpoints_in_json(self) -> None:
        self.assert_error(self.client.get("/api/v1/nothing-here/"), 404, "not_found")

    def test_it_answers_a_wrong_method_in_json(self) -> None:
        self.assert_error(self.client.delete("/api/v1/decks/"), 405, "method_not_allowed")

    def test_it_refuses_a_non_json_body(self) -> None:
        response = self.client.post("/api/v1/reviews/", "quality=4", content_type="application/x-www-form-urlencoded")
        self.assert_error(response, 415, "unsupported_media_type")


class NestedJsonTests(ApiTestCase):
    """Deeply nested bodies were 500s (``RecursionError``); now a 400 saying why (issue 36, item 7)."""

    def post(self, url: str, body: str) -> object:
        return self.client.post(url, body, content_type="application/json")

    def test_it_answers_400_for_a_body_nested_past_what_the_parser_follows(self) -> None:
        for url in ("/api/v1/reviews/", "/api/v1/submissions/"):
            error = self.assert_error(self.post(url, "[" * 100_000 + "]" * 100_000), 400, "parse_error")
            assert "deeper than 32 levels" in error["message"]
        deep_object = '{"a":' * 50_000 + "1" + "}" * 50_000
        self.assert_error(self.post("/api/v1/reviews/", deep_object), 400, "parse_error")

    def test_it_answers_400_for_a_collection_nested_deeper_than_the_bound(self) -> None:
        nested = "[" * 40 + "]" * 40
        body = f'{{"card": {nested}, "quality": 4, "version": 0}}'
        self.assert_error(self.post("/api/v1/reviews/", body), 400, "parse_error")
        shallow = '{"card": [[1]], "quality": 4, "version": 0}'
        self.assert_error(self.post("/api/v1/reviews/", shallow), 400, "invalid")


class PaginationTests(ApiTestCase):
    def test_it_pages_through_cards(self) -> None:
        make_cards(4, note=self.note)  # 7 cards in all
        first = self.client.get("/api/v1/cards/", {"page_size": 3}).json()
        self.assertEqual((first["count"], len(first["results"])), (7, 3))
        self.assertIsNone(first["previous"])
        third = self.client.get(first["next"].replace("page=2", "page=3")).json()
        self.assertEqual(len(third["results"]), 1)
        self.assertIsNone(third["next"])
        seen = {
            c["uuid"]
            for page in (1, 2, 3)
            for c in self.client.get("/api/v1/cards/", {"page_size": 3, "page": page}).json()["results"]
        }
        self.assertEqual(len(seen), 7)

    def test_it_refuses_a_page_or_page_size_that_is_not_a_positive_integer(self) -> None:
        for name, value in (("page_size", "0"), ("page_size", "-1"), ("page_size", "ten"), ("page", ""), ("page", "x")):
            with self.subTest(name=name, value=value):
                error = self.assert_error(self.client.get("/api/v1/cards/", {name: value}), 400, "invalid")
                self.assertIn(name, error["details"])

    def test_it_caps_the_page_size(self) -> None:
        make_cards(198, note=self.note)  # 201 cards in all: one page of 10,000 asked, the cap of 200 given
        body = self.client.get("/api/v1/cards/", {"page_size": 10_000}).json()
        self.assertEqual((body["count"], len(body["results"])), (201, 200))
        self.assertEqual(self.client.get("/api/v1/cards/", {"page_size": 2}).json()["next"].count("page_size=2"), 1)

    def test_it_answers_404_for_a_page_past_the_end(self) -> None:
        self.assert_error(self.client.get("/api/v1/cards/", {"page": 99}), 404, "not_found")


class ThrottleTests(ApiTestCase):
    def test_it_throttles_each_user_separately(self) -> None:
        with override_settings(REST_FRAMEWORK=rates(user="3/minute")):
            self.assertEqual(api_settings.DEFAULT_THROTTLE_RATES["user"], "3/minute")
            for _ in range(3):
                self.assertEqual(self.client.get("/api/v1/decks/").status_code, 200)
            response = self.client.get("/api/v1/decks/")
            error = self.assert_error(response, 429, "throttled")
            self.assertGreater(error["details"]["retry_after_seconds"], 0)
            self.assertIn("Retry-After", response)
            # Another learner has a budget of their own.
            self.assertEqual(self.as_user(self.bob).get("/api/v1/decks/").status_code, 200)

    def test_it_throttles_submissions_without_writing_the_extra_one(self) -> None:
        make_drill(self.note)
        body = {"drill": "add-one", "code": "def solution(x):\n    return x + 1\n"}
        with override_settings(GRADER_RATE_LIMIT=2):  # the drill page's own limit (graders.attempts.submissions)
            for _ in range(2):
                self.assertEqual(self.client.post("/api/v1/submissions/", body).status_code, 201)
            self.assert_error(self.client.post("/api/v1/submissions/", body), 429, "throttled")
            self.assertEqual(self.client.get("/api/v1/submissions/").status_code, 200)  # reads are not limited
        self.assertEqual(Submission.objects.filter(user=self.alice).count(), 2)

    def test_it_throttles_the_token_endpoint_per_address(self) -> None:
        with override_settings(REST_FRAMEWORK=rates(anon="2/minute")):
            client = APIClient()
            for _ in range(2):
                self.assertEqual(
                    client.post("/api/v1/auth/token/", {"username": "x", "password": "y"}).status_code, 401
                )
            self.assert_error(client.post("/api/v1/auth/token/", {"username": "x", "password": "y"}), 429, "throttled")

    def test_it_keeps_the_state_untouched_when_throttled(self) -> None:
        card = self.cards[0]
        with override_settings(REST_FRAMEWORK=rates(user="1/minute")):
            self.client.get("/api/v1/decks/")
            response = self.client.post("/api/v1/reviews/", {"card": str(card.uuid), "quality": 4, "version": 0})
            self.assert_error(response, 429, "throttled")
        self.assertFalse(CardState.objects.filter(user=self.alice).exists())


class RateSettingTests(SimpleTestCase):
    def test_it_refuses_a_malformed_rate_at_start(self) -> None:
        with mock.patch.dict(os.environ, {"API_RATE_TEST": "lots"}):
            with self.assertRaisesMessage(ImproperlyConfigured, "API_RATE_TEST"):
                envrate("API_RATE_TEST", "60/minute")
        with mock.patch.dict(os.environ, {"API_RATE_TEST": "5/hour"}):
            self.assertEqual(envrate("API_RATE_TEST", "60/minute"), "5/hour")
