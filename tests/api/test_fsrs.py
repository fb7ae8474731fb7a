"""Under FSRS the API rates and labels exactly as the web does (the same domain function)."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from cards import review
from cards.models import CardState, Profile
from cards.scheduling import fsrs6
from tests.api.base import ApiTestCase


class FSRSThroughTheAPITests(ApiTestCase):
    def setUp(self) -> None:
        super().setUp()
        Profile.objects.filter(user=self.alice).update(scheduler="fsrs")

    def test_it_labels_the_next_card_with_fsrs_intervals(self) -> None:
        body = self.client.get("/api/v1/review/next/").json()
        self.assertEqual([b["hint"] for b in body["buttons"]], ["today · 1d", "1d", "2d", "8d"])

    def test_it_maps_each_quality_to_the_fsrs_rating_the_web_uses(self) -> None:
        today = review.learner_today(Profile.objects.get(user=self.alice), timezone.now())
        for card, quality in zip(self.cards, (5, 3, 1), strict=True):
            response = self.client.post("/api/v1/reviews/", {"card": str(card.uuid), "quality": quality, "version": 0})
            self.assertEqual(response.status_code, 201, response.content)
            state = CardState.objects.get(user=self.alice, card=card)
            memory, days = fsrs6.review(fsrs6.scheduler(), None, quality, today)
            self.assertAlmostEqual(state.stability, memory.stability)
            self.assertEqual(state.due, today + timedelta(days=days))
