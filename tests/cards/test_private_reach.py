"""A card of another learner's private deck is reachable by its uuid through no path (issue 36, item 7).

The uuid leaks (a team's review-log export named it); what matters is that knowing it gets nothing:
rating it on the site or the API, the queues, the exports, the API's card pages.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

from django.test import TestCase
from django.urls import reverse
from rest_framework.test import APIClient

from cards import review
from cards.models import CardState, Profile, ReviewLog
from cards.review import Outcome, RatingRequest
from teams.models import Membership, Team
from tests.cards.factories import make_card, make_note, make_user

NOW = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)


class PrivateCardReachTests(TestCase):
    def setUp(self) -> None:
        self.owner = make_user(time_zone="UTC")
        self.outsider = make_user(time_zone="UTC")
        self.private = make_card(note=make_note(owner=self.owner), front="my secret front", back="my secret back")

    def assert_nothing_stored(self) -> None:
        assert not CardState.objects.filter(user=self.outsider).exists()
        assert not ReviewLog.objects.filter(user=self.outsider).exists()

    def test_rating_another_learners_private_card_by_uuid_finds_no_card(self) -> None:
        profile = Profile.objects.get(user=self.outsider)
        outcome = review.rate(self.outsider, profile, RatingRequest(self.private.uuid, 1, 0), NOW)
        assert outcome is Outcome.NOT_FOUND
        self.assert_nothing_stored()
        assert review.next_card(self.outsider, profile, NOW)[0] is None

    def test_the_rating_page_and_the_api_answer_404_for_it(self) -> None:
        self.client.force_login(self.outsider)
        url = reverse("cards:rate", args=[self.private.uuid])
        assert self.client.post(url, {"quality": 1, "version": 0, "duration_ms": 0}).status_code == 404
        api = APIClient()
        api.force_authenticate(self.outsider)
        body = {"card": str(self.private.uuid), "quality": 1, "version": 0}
        assert api.post("/api/v1/reviews/", body).status_code == 404
        assert api.get(f"/api/v1/cards/{self.private.uuid}/").status_code == 404
        self.assert_nothing_stored()

    def test_a_state_left_from_before_the_fix_gives_no_rating_either(self) -> None:
        CardState.objects.create(user=self.outsider, card=self.private, due=NOW.date(), version=1)
        outcome = review.rate(
            self.outsider, Profile.objects.get(user=self.outsider), RatingRequest(self.private.uuid, 4, 1), NOW
        )
        assert outcome is Outcome.NOT_FOUND
        assert not ReviewLog.objects.filter(user=self.outsider).exists()

    def test_the_team_revlog_export_names_no_members_private_card(self) -> None:
        team = Team.objects.create(name="T", slug="t-abc123", time_zone="UTC")
        Membership.objects.create(team=team, user=self.outsider, role=Membership.Role.OWNER)
        Membership.objects.create(team=team, user=self.owner)
        shared = make_card()
        profile = Profile.objects.get(user=self.owner)
        for card in (self.private, shared):  # the owner of the private deck rates their own card: allowed
            assert review.rate(self.owner, profile, RatingRequest(card.uuid, 4, 0), NOW) is Outcome.RECORDED
        self.client.force_login(self.outsider)
        response = self.client.get(reverse("teams:revlog_export", args=[team.slug]))
        rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
        assert [r["card_id"] for r in rows] == [f"L2/{shared.uuid}"]
