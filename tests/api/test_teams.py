"""Teams and leaderboards through /api/v1/: members only; an outsider gets 404, never 403."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from teams.models import DailyActivity, Membership, Team
from tests.api.base import ApiTestCase
from tests.cards.factories import make_user


class TeamTests(ApiTestCase):
    team: Team
    carol: AbstractBaseUser

    @classmethod
    def setUpTestData(cls) -> None:
        super().setUpTestData()
        cls.carol = make_user("carol", time_zone="UTC")
        cls.team = Team.objects.create(name="Tensor Tamers", slug="tensor-tamers", time_zone="UTC")
        Membership.objects.create(team=cls.team, user=cls.alice, role=Membership.Role.OWNER)
        Membership.objects.create(team=cls.team, user=cls.carol)
        other = Team.objects.create(name="Bob's band", slug="bobs-band", time_zone="UTC")
        Membership.objects.create(team=other, user=cls.bob, role=Membership.Role.OWNER)

    def test_it_lists_only_the_requesters_teams(self) -> None:
        body = self.client.get("/api/v1/teams/").json()
        self.assertEqual(body["count"], 1)
        self.assertEqual(
            body["results"][0],
            {"slug": "tensor-tamers", "name": "Tensor Tamers", "time_zone": "UTC", "role": "owner", "members": 2},
        )

    def test_it_shows_a_team_with_its_members(self) -> None:
        body = self.client.get("/api/v1/teams/tensor-tamers/").json()
        self.assertEqual([m["username"] for m in body["member_list"]], ["alice", "carol"])
        self.assertEqual((body["role"], body["members"]), ("owner", 2))
        self.assertNotIn("invite_nonce", body)

    def test_it_ranks_the_leaderboard_from_the_database(self) -> None:
        today = self.team.created_at.date()
        DailyActivity.objects.create(user=self.carol, day=today, xp=50, review_xp=50, reviewed=True, reviews=5)
        DailyActivity.objects.create(user=self.alice, day=today, xp=20, review_xp=20, reviewed=True, reviews=2)
        body = self.client.get("/api/v1/teams/tensor-tamers/leaderboard/", {"period": "all"}).json()
        self.assertEqual(body["period"], "all")
        rows = [(e["rank"], e["username"], e["xp"], e["is_you"]) for e in body["entries"]]
        self.assertEqual(rows, [(1, "carol", 50, False), (2, "alice", 20, True)])
        self.assertEqual(self.client.get("/api/v1/teams/tensor-tamers/leaderboard/").json()["period"], "week")

    def test_it_answers_404_to_outsiders(self) -> None:
        for url in ("/api/v1/teams/bobs-band/", "/api/v1/teams/bobs-band/leaderboard/"):
            with self.subTest(url=url):
                response = self.client.get(url)
                self.assert_error(response, 404, "not_found")
                self.assertNotIn("bob", response.content.decode().lower())

    def test_it_refuses_an_unknown_period(self) -> None:
        response = self.client.get("/api/v1/teams/tensor-tamers/leaderboard/", {"period": "year"})
        self.assertIn("period", self.assert_error(response, 400, "invalid")["details"])
