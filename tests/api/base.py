"""Shared base for the API tests: two learners (alice, the requester, and bob, whose objects she
must never see), a deck of cards, and a drill stored as ``import_drills`` would store it."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.response import Response
from rest_framework.test import APIClient, APITestCase

from cards.models import Card, Note
from graders.drills.schema import parse_drill
from graders.management.commands.import_drills import card_fields, card_key, drill_fields
from graders.models import Drill
from tests.cards.factories import make_card, make_note, make_user

REFERENCE = "def solution(x):\n    return x + 1  # the reference, never served\n"
DRILL_TOML = '''\
slug = "add-one"
title = "Add one"
prompt_zh = "给张量的每个元素加一。"
prompt_en = "Add one to every element of a tensor."
entry_point = "solution"
starter = "def solution(x):\\n    pass\\n"
reference = """def solution(x):\\n    return x + 1  # the reference, never served\\n"""

[source]
note = "pytorch-basics.md"
heading = "Tensors"

[[examples]]
name = "small-example"
args = ["torch.tensor([1.0, 2.0])"]

[[hidden]]
name = "secret-random"
args = ["torch.randn(3, 4, generator=g)"]
repeat = 2
'''


def make_drill(note: Note, text: str = DRILL_TOML) -> Drill:
    spec = parse_drill(text, "notes/drills/pytorch-basics/add-one.toml")
    card = Card.objects.create(key=card_key(spec.slug), **card_fields(spec, note, 10_001))
    return Drill.objects.create(slug=spec.slug, card=card, **drill_fields(spec, text, spec.path))


class ApiTestCase(APITestCase):
    """alice is signed in with a token; bob is another learner; cards live in one deck."""

    alice: AbstractBaseUser
    bob: AbstractBaseUser
    note: Note
    cards: list[Card]
    token: Token

    @classmethod
    def setUpTestData(cls) -> None:
        cls.alice = make_user("alice", time_zone="UTC")
        cls.bob = make_user("bob", time_zone="UTC")
        cls.note = make_note(slug="pytorch-basics", title="PyTorch basics")
        cls.cards = [make_card(note=cls.note) for _ in range(3)]
        cls.token = Token.objects.create(user=cls.alice)

    def setUp(self) -> None:
        cache.clear()  # throttle counters live in the cache and must not leak between tests
        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Token {self.token.key}")

    def as_user(self, user: AbstractBaseUser) -> APIClient:
        client = APIClient()
        client.force_authenticate(user)
        return client

    def assert_error(self, response: Response, status: int, code: str) -> dict[str, Any]:
        """The stable error shape: {"error": {"code", "message", "details"}}, as JSON."""
        self.assertEqual(response.status_code, status, response.content)
        self.assertEqual(response["Content-Type"], "application/json")
        body = response.json()
        self.assertEqual(set(body), {"error"})
        self.assertEqual(set(body["error"]), {"code", "message", "details"})
        self.assertEqual(body["error"]["code"], code)
        self.assertTrue(body["error"]["message"])
        return body["error"]
