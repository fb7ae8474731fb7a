"""The owner names editors of the team's course (teams.services.set_role and the team page's buttons); an
editor may then upload notes, and only an owner may change who is one."""

from __future__ import annotations

from django.urls import reverse

from teams import services
from teams.models import Membership
from tests.courses.base import CourseTestCase


class RoleTests(CourseTestCase):
    def membership(self, user: object) -> Membership:
        return Membership.objects.get(team=self.team, user=user)

    def test_it_lets_the_owner_name_an_editor_and_undo_it(self) -> None:
        owner, member = self.membership(self.owner), self.membership(self.member)
        services.set_role(self.team, owner, member, Membership.Role.EDITOR)
        self.assertTrue(self.membership(self.member).can_edit_course)
        services.set_role(self.team, owner, member, Membership.Role.MEMBER)
        self.assertFalse(self.membership(self.member).can_edit_course)

    def test_it_refuses_anyone_but_an_owner(self) -> None:
        editor, member = self.membership(self.editor), self.membership(self.member)
        with self.assertRaisesMessage(services.TeamError, "Only an owner can name editors."):
            services.set_role(self.team, editor, member, Membership.Role.EDITOR)
        self.assertEqual(self.membership(self.member).role, Membership.Role.MEMBER)

    def test_it_never_changes_an_owner_nor_makes_one(self) -> None:
        owner = self.membership(self.owner)
        with self.assertRaises(services.TeamError):
            services.set_role(self.team, owner, owner, Membership.Role.MEMBER)
        with self.assertRaises(services.TeamError):
            services.set_role(self.team, owner, self.membership(self.member), Membership.Role.OWNER)
        self.assertEqual(self.membership(self.owner).role, Membership.Role.OWNER)
        self.assertEqual(self.membership(self.member).role, Membership.Role.MEMBER)

    def test_it_refuses_a_membership_of_another_team(self) -> None:
        stranger = Membership.objects.get(team=self.other_team, user=self.outsider)
        with self.assertRaises(services.TeamError):
            services.set_role(self.team, self.membership(self.owner), stranger, Membership.Role.EDITOR)
        self.assertEqual(Membership.objects.get(pk=stranger.pk).role, Membership.Role.OWNER)

    def test_the_team_page_offers_it_to_owners_and_answers_others_as_for_other_owner_actions(self) -> None:
        member = self.membership(self.member)
        url = reverse("teams:set_role", args=[self.team.slug, member.uuid])
        detail = reverse("teams:detail", args=[self.team.slug])
        self.client.force_login(self.owner)
        self.assertContains(self.client.get(detail), 'data-testid="make-editor"')
        page = self.client.post(url, {"role": "editor"}, follow=True)
        self.assertContains(page, "max is now an editor of the team&#x27;s course.")
        self.assertContains(page, 'data-testid="make-member"')
        self.client.force_login(self.editor)
        self.assertEqual(self.client.post(url, {"role": "member"}).status_code, 403)
        self.client.force_login(self.outsider)
        self.assertEqual(self.client.post(url, {"role": "member"}).status_code, 404)
        self.assertEqual(self.membership(self.member).role, Membership.Role.EDITOR)
