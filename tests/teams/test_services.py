"""Team membership rules: invites, joining, leaving, removing, renaming and ownership."""

from __future__ import annotations

import time
from datetime import timedelta
from unittest import mock

from django.core import signing

from teams import services
from teams.models import Membership, Team
from tests.cards.factories import make_user

from .base import TeamTestCase


class InviteTests(TeamTestCase):
    def test_it_resolves_a_fresh_invite_token_to_its_team(self) -> None:
        assert services.team_for_invite(services.invite_token(self.team)) == self.team

    def test_it_rejects_a_token_after_the_link_is_rotated(self) -> None:
        token = services.invite_token(self.team)
        services.rotate_invite(self.team)
        self.team.refresh_from_db()
        with self.assertRaises(services.TeamError):
            services.team_for_invite(token)
        assert services.team_for_invite(services.invite_token(self.team)) == self.team

    def test_it_rejects_an_expired_token(self) -> None:
        token = services.invite_token(self.team)
        later = time.time() + (services.INVITE_MAX_AGE + timedelta(seconds=5)).total_seconds()
        with mock.patch("django.core.signing.time.time", return_value=later), self.assertRaises(services.TeamError):
            services.team_for_invite(token)

    def test_it_rejects_a_forged_token(self) -> None:
        forged = signing.dumps({"t": str(self.team.uuid), "n": self.team.invite_nonce}, salt="another-salt")
        with self.assertRaises(services.TeamError):
            services.team_for_invite(forged)


class MembershipTests(TeamTestCase):
    def test_it_makes_the_creator_the_owner_with_a_slug_that_is_not_the_id(self) -> None:
        team = services.create_team(self.outsider, "Grad Students", "Asia/Shanghai")
        membership = Membership.objects.get(team=team, user=self.outsider)
        assert membership.role == Membership.Role.OWNER
        assert team.slug.startswith("grad-students-") and str(team.pk) not in team.slug.split("-")[-1:]

    def test_it_lets_a_user_join_several_teams_once_each(self) -> None:
        other = services.create_team(self.owner, "Second", "UTC")
        services.join(other, self.member)
        services.join(other, self.member)
        assert Membership.objects.filter(user=self.member).count() == 2

    def test_it_lets_a_member_leave(self) -> None:
        services.leave(self.team, self.member)
        assert not Membership.objects.filter(team=self.team, user=self.member).exists()

    def test_it_keeps_the_last_owner_from_leaving_a_team_with_members(self) -> None:
        with self.assertRaises(services.TeamError):
            services.leave(self.team, self.owner)
        assert Membership.objects.filter(team=self.team, user=self.owner, role="owner").exists()

    def test_it_deletes_the_team_when_its_only_member_leaves(self) -> None:
        team = services.create_team(self.outsider, "Solo", "UTC")
        services.leave(team, self.outsider)
        assert not Team.objects.filter(pk=team.pk).exists()

    def test_it_transfers_ownership_and_then_lets_the_old_owner_leave(self) -> None:
        services.transfer_ownership(self.team, self.owner_membership, self.member_membership)
        self.member_membership.refresh_from_db()
        self.owner_membership.refresh_from_db()
        assert (self.member_membership.role, self.owner_membership.role) == ("owner", "member")
        services.leave(self.team, self.owner)
        assert list(self.team.memberships.values_list("user_id", flat=True)) == [self.member.pk]

    def test_it_refuses_a_transfer_by_a_member(self) -> None:
        with self.assertRaises(services.TeamError):
            services.transfer_ownership(self.team, self.member_membership, self.owner_membership)
        self.owner_membership.refresh_from_db()
        assert self.owner_membership.role == "owner"

    def test_it_lets_an_owner_remove_a_member_but_not_themselves(self) -> None:
        with self.assertRaises(services.TeamError):
            services.remove_member(self.team, self.owner_membership, self.owner_membership)
        services.remove_member(self.team, self.owner_membership, self.member_membership)
        assert list(self.team.memberships.values_list("user_id", flat=True)) == [self.owner.pk]

    def test_it_rotates_the_invite_when_it_removes_a_member(self) -> None:
        """The removed member kept the link they joined with: it must not let them back in."""
        token = services.invite_token(self.team)
        services.remove_member(self.team, self.owner_membership, self.member_membership)
        with self.assertRaises(services.TeamError):
            services.team_for_invite(token)
        self.team.refresh_from_db()
        assert services.team_for_invite(services.invite_token(self.team)) == self.team

    def test_it_refuses_a_removal_by_a_member(self) -> None:
        third = Membership.objects.create(team=self.team, user=make_user())
        with self.assertRaises(services.TeamError):
            services.remove_member(self.team, self.member_membership, third)
        assert Membership.objects.filter(pk=third.pk).exists()

    def test_it_renames_without_changing_the_slug(self) -> None:
        services.rename(self.team, "Autograd Aces")
        self.team.refresh_from_db()
        assert (self.team.name, self.team.slug) == ("Autograd Aces", "tensor-tamers-a1b2c3")
