"""A team's default scheduler: members who never chose one follow their first team; a choice sticks."""

from __future__ import annotations

from django.urls import reverse
from django.utils import timezone

from cards import review, switching
from cards.models import Profile
from teams import services
from teams.models import Membership, Team
from tests.cards.factories import make_user
from tests.teams.base import TeamTestCase


class DefaultSchedulerTests(TeamTestCase):
    def scheduler_of(self, user: object) -> str:
        return Profile.objects.get(user=user).scheduler

    def test_it_switches_members_who_never_chose_and_leaves_a_choice_alone(self) -> None:
        chooser = review.get_profile(self.member)
        switching.switch_scheduler(self.member, chooser, "sm2", timezone.now())  # an explicit choice
        self.assertEqual(services.set_default_scheduler(self.team, "fsrs"), 1)
        self.assertEqual(self.scheduler_of(self.owner), "fsrs")
        self.assertEqual(self.scheduler_of(self.member), "sm2")
        self.assertFalse(Profile.objects.get(user=self.owner).scheduler_chosen)

    def test_it_follows_only_the_team_a_learner_joined_first(self) -> None:
        other = Team.objects.create(name="Later", slug="later-x1y2z3", time_zone="UTC")
        Membership.objects.create(team=other, user=self.owner)
        self.assertEqual(services.set_default_scheduler(other, "fsrs"), 0)
        self.assertEqual(self.scheduler_of(self.owner), "sm2")

    def test_it_applies_the_default_to_a_learner_joining_a_first_team(self) -> None:
        services.set_default_scheduler(self.team, "fsrs")
        newcomer = make_user(time_zone="UTC")
        services.join(self.team, newcomer)
        self.assertEqual(self.scheduler_of(newcomer), "fsrs")

    def test_it_lets_only_an_owner_set_the_default(self) -> None:
        url = reverse("teams:default_scheduler", args=[self.team.slug])
        self.client.force_login(self.member)
        self.assertEqual(self.client.post(url, {"scheduler": "fsrs"}).status_code, 403)
        self.client.force_login(self.outsider)
        self.assertEqual(self.client.post(url, {"scheduler": "fsrs"}).status_code, 404)
        self.client.force_login(self.owner)
        self.assertRedirects(
            self.client.post(url, {"scheduler": "fsrs"}), reverse("teams:detail", args=[self.team.slug])
        )
        self.team.refresh_from_db()
        self.assertEqual(self.team.default_scheduler, "fsrs")
        self.assertEqual(self.scheduler_of(self.member), "fsrs")
