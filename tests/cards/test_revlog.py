"""The review log export: the evaluate command's CSV, for a learner and (owner only) for a team."""

from __future__ import annotations

import csv
import io
from datetime import UTC, date, datetime, timedelta

from django.test import TestCase
from django.urls import reverse

from cards import review
from cards.models import Profile
from cards.review import RatingRequest
from cards.scheduling import evaluate
from teams.models import Membership, Team
from tests.cards.factories import make_card, make_user

NOW = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)
DAY = (date(2026, 3, 10) - date(1970, 1, 1)).days


class RevlogExportTests(TestCase):
    def setUp(self) -> None:
        self.user = make_user(time_zone="UTC")
        self.profile = Profile.objects.get(user=self.user)
        self.card = make_card()

    def rate(self, user: object, profile: Profile, quality: int, now: datetime) -> None:
        item = review.next_card(user, profile, now)[0]
        assert item is not None
        review.rate(user, profile, RatingRequest(item.card.uuid, quality, item.version), now)

    def download(self, url: str) -> list[dict[str, str]]:
        response = self.client.get(url)
        self.assertEqual(response.status_code, 200)
        self.assertEqual(response["Content-Type"], "text/csv")
        return list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))

    def test_it_exports_a_learners_log_that_the_evaluate_command_scores(self) -> None:
        self.rate(self.user, self.profile, 4, NOW)
        self.rate(self.user, self.profile, 1, NOW + timedelta(days=1))
        self.rate(self.user, self.profile, 4, NOW + timedelta(days=1, minutes=5))
        self.client.force_login(self.user)
        rows = self.download(reverse("cards:revlog_export"))
        self.assertEqual(
            [(r["card_id"], r["day"], r["rating"], r["elapsed_days"], r["scheduled_days"]) for r in rows],
            [
                (str(self.card.uuid), str(DAY), "3", "", ""),
                (str(self.card.uuid), str(DAY + 1), "1", "1", "1"),
                (str(self.card.uuid), str(DAY + 1), "3", "0", "1"),
            ],
        )
        self.assertEqual({r["scheduler"] for r in rows}, {"sm2"})
        text = "\n".join(",".join(r[c] for c in ("card_id", "day", "rating")) for r in rows)
        result = evaluate.evaluate(evaluate.read_revlog(["card_id,day,rating", *text.splitlines()]))
        self.assertEqual(result["n"], 1)

    def test_it_exports_only_the_learners_own_reviews(self) -> None:
        other = make_user(time_zone="UTC")
        self.rate(other, Profile.objects.get(user=other), 4, NOW)
        self.client.force_login(self.user)
        self.assertEqual(self.download(reverse("cards:revlog_export")), [])

    def test_it_exports_a_team_log_to_the_owner_under_pseudonyms(self) -> None:
        member = make_user(time_zone="UTC")
        team = Team.objects.create(name="T", slug="t-abc123", time_zone="UTC")
        Membership.objects.create(team=team, user=self.user, role=Membership.Role.OWNER)
        Membership.objects.create(team=team, user=member)
        self.rate(self.user, self.profile, 4, NOW)
        self.rate(member, Profile.objects.get(user=member), 5, NOW)
        self.client.force_login(self.user)
        rows = self.download(reverse("teams:revlog_export", args=[team.slug]))
        self.assertEqual(sorted(r["card_id"] for r in rows), [f"L1/{self.card.uuid}", f"L2/{self.card.uuid}"])
        self.assertNotIn(member.get_username(), str(rows))
        self.client.force_login(member)
        self.assertEqual(self.client.get(reverse("teams:revlog_export", args=[team.slug])).status_code, 403)
