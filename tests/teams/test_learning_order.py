"""A team's learning order (issue 28, item 2): owners reorder the stages on the team page, the members who
follow the team get new cards in that order, and a learner in two teams follows one of them (the first
joined, unless they chose); the cards app only ever reads the learner's own copy."""

from __future__ import annotations

from datetime import UTC, datetime

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.test import TestCase
from django.urls import reverse

from cards import learning, review
from cards.models import Card, LearningStage, Profile
from cards.review import RatingRequest
from teams import learning_orders, services
from teams.models import Membership, Team
from tests.cards.factories import make_card, make_note, make_user

NOW = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)
DEFAULT = ["tensors", "autograd", "modules"]


def order_of(user: AbstractBaseUser) -> tuple[list[str], str]:
    profile = Profile.objects.get(user=user)
    return profile.learning_order, profile.learning_order_source


class TeamOrderTestCase(TestCase):
    """Three stages, one note with two cards in each; an owner and a member joined through the services."""

    def setUp(self) -> None:
        note = make_note(slug="basics")
        self.cards: dict[str, list[Card]] = {}
        for rank, slug in enumerate(DEFAULT):
            LearningStage.objects.create(
                slug=slug, title=slug.title(), rank=rank, sections=[{"note": "basics", "headings": [slug]}]
            )
        for position, slug in enumerate(reversed(DEFAULT)):  # note order is the reverse of the default order
            self.cards[slug] = [make_card(note=note, heading_path=slug, position=10 * position + i) for i in range(2)]
        self.owner = make_user("olivia", time_zone="UTC")
        self.member = make_user("max", time_zone="UTC")
        self.outsider = make_user("oscar", time_zone="UTC")
        self.team = services.create_team(self.owner, "Tensor Tamers", "UTC")
        services.join(self.team, self.member)
        self.url = reverse("teams:learning_order", args=[self.team.slug])

    def first_new(self, user: AbstractBaseUser) -> Card:
        item = review.next_card(user, review.get_profile(user), NOW)[0]
        assert item is not None and item.queue == "new"
        return item.card


class OwnerReordersTests(TeamOrderTestCase):
    def test_it_moves_a_stage_and_copies_the_order_to_every_follower(self) -> None:
        self.client.force_login(self.owner)
        response = self.client.post(self.url, {"stage": DEFAULT, "move": "modules:up"})
        self.assertRedirects(response, reverse("teams:detail", args=[self.team.slug]) + "#learning-order")
        self.team.refresh_from_db()
        expected = ["tensors", "modules", "autograd"]
        self.assertEqual(self.team.learning_order, expected)
        self.assertEqual(order_of(self.member), (expected, self.team.order_source))
        self.assertEqual(order_of(self.owner), (expected, self.team.order_source))

    def test_it_serves_a_members_new_cards_in_the_teams_order_and_others_in_the_default_order(self) -> None:
        learning_orders.save_order(self.team, ["modules", "tensors"])
        self.assertEqual(self.first_new(self.member), self.cards["modules"][0])
        self.assertEqual(self.first_new(self.outsider), self.cards["tensors"][0])
        met = []
        profile = review.get_profile(self.member)
        while (item := review.next_card(self.member, profile, NOW)[0]) is not None:
            met.append(item.card)
            review.rate(self.member, profile, RatingRequest(item.card.uuid, 4, item.version), NOW)
        by_stage = [*self.cards["modules"], *self.cards["tensors"], *self.cards["autograd"]]  # autograd: left out
        self.assertEqual(met, by_stage)

    def test_it_goes_back_to_the_default_order(self) -> None:
        learning_orders.save_order(self.team, ["modules", "tensors", "autograd"])
        self.client.force_login(self.owner)
        self.client.post(self.url, {"stage": ["modules", "tensors", "autograd"], "reset": "1"})
        self.team.refresh_from_db()
        self.assertEqual((self.team.learning_order, order_of(self.member)[0]), ([], []))
        self.assertEqual(self.first_new(self.member), self.cards["tensors"][0])

    def test_it_shows_the_order_with_buttons_to_the_owner_only(self) -> None:
        learning_orders.save_order(self.team, ["autograd"])
        detail = reverse("teams:detail", args=[self.team.slug])
        self.client.force_login(self.member)
        page = self.client.get(detail)
        self.assertEqual([s.slug for s in page.context["order_stages"]], ["autograd", "tensors", "modules"])
        self.assertNotContains(page, 'name="move"')
        self.assertContains(page, "2 of 2 members follow this team's order, you among them")
        self.client.force_login(self.owner)
        self.assertContains(self.client.get(detail), 'value="autograd:down"')

    def test_it_lets_no_member_reorder_and_sends_anonymous_visitors_to_log_in(self) -> None:
        data = {"stage": DEFAULT, "move": "modules:up"}
        self.client.force_login(self.member)
        self.assertEqual(self.client.post(self.url, data).status_code, 403)
        self.client.force_login(self.outsider)
        self.assertEqual(self.client.post(self.url, data).status_code, 404)
        self.client.logout()
        response = self.client.post(self.url, data)
        self.assertEqual(response.status_code, 302)
        self.assertIn("/login", response["Location"])
        self.team.refresh_from_db()
        self.assertEqual((self.team.learning_order, order_of(self.member)[0]), ([], []))

    def test_it_refuses_bad_input_with_a_clear_error_and_changes_nothing(self) -> None:
        learning_orders.save_order(self.team, ["autograd", "tensors", "modules"])
        bad = [
            ({}, "The form sent no stages"),
            ({"stage": ["tensors", "nonsense"]}, "No such stage: nonsense."),
            ({"stage": ["tensors", "tensors", "autograd"]}, "Each stage comes once; repeated: tensors."),
            ({"stage": DEFAULT, "move": "modules:sideways"}, "A stage moves up or down."),
            ({"stage": ["tensors", "autograd"], "move": "modules:up"}, "No such stage in this order: modules."),
        ]
        self.client.force_login(self.owner)
        for data, message in bad:
            with self.subTest(data=data):
                response = self.client.post(self.url, data, follow=True)
                self.assertContains(response, "Learning order not changed.")
                self.assertContains(response, message)
                self.team.refresh_from_db()
                self.assertEqual(self.team.learning_order, ["autograd", "tensors", "modules"])
                self.assertEqual(order_of(self.member)[0], ["autograd", "tensors", "modules"])

    def test_the_team_refuses_an_order_of_unknown_or_repeated_stages(self) -> None:
        for order in (["gone"], ["tensors", "tensors"], "tensors", [3]):
            with self.subTest(order=order), self.assertRaises(ValidationError):
                Team(name="T", slug="t-1", learning_order=order).full_clean()
            with self.subTest(order=order), self.assertRaises(ValidationError):
                learning_orders.save_order(self.team, order)  # type: ignore[arg-type]
        self.assertEqual(Team.objects.get(pk=self.team.pk).learning_order, [])


class TwoTeamsTests(TeamOrderTestCase):
    """A learner follows one team's order: the first joined, unless they chose; leaving hands them on."""

    def setUp(self) -> None:
        super().setUp()
        self.other_owner = make_user("petra", time_zone="UTC")
        self.other = services.create_team(self.other_owner, "Grad Gang", "UTC")
        learning_orders.save_order(self.team, ["modules"])
        learning_orders.save_order(self.other, ["autograd"])

    def test_a_newcomer_follows_the_team_they_join(self) -> None:
        newcomer = make_user(time_zone="UTC")
        services.join(self.other, newcomer)
        self.assertEqual(order_of(newcomer), (["autograd"], self.other.order_source))
        self.assertEqual(self.first_new(newcomer), self.cards["autograd"][0])

    def test_a_newcomer_gets_the_order_less_a_stage_a_later_import_removed(self) -> None:
        learning_orders.save_order(self.other, ["modules", "autograd"])
        LearningStage.objects.filter(slug="modules").delete()
        newcomer = make_user(time_zone="UTC")
        services.join(self.other, newcomer)
        self.assertEqual(order_of(newcomer), (["autograd"], self.other.order_source))

    def test_joining_a_second_team_keeps_the_first_teams_order(self) -> None:
        services.join(self.other, self.member)
        self.assertEqual(order_of(self.member), (["modules"], self.team.order_source))
        learning_orders.save_order(self.other, ["tensors", "autograd"])  # not the team they follow
        self.assertEqual(order_of(self.member), (["modules"], self.team.order_source))

    def test_a_learner_who_chose_the_default_keeps_it(self) -> None:
        learning.use_default_order(self.member)
        learning_orders.save_order(self.team, ["autograd", "modules"])
        services.join(self.other, self.member)
        self.assertEqual(order_of(self.member), ([], Profile.OWN_ORDER))
        self.assertEqual(self.first_new(self.member), self.cards["tensors"][0])

    def test_leaving_the_followed_team_hands_the_learner_to_their_first_other_team(self) -> None:
        services.join(self.other, self.member)
        services.leave(self.team, self.member)
        self.assertEqual(order_of(self.member), (["autograd"], self.other.order_source))
        services.leave(self.other, self.member)
        self.assertEqual(order_of(self.member), ([], ""))
        self.assertEqual(self.first_new(self.member), self.cards["tensors"][0])

    def test_a_removed_member_loses_the_teams_order(self) -> None:
        owner = Membership.objects.get(team=self.team, user=self.owner)
        services.remove_member(self.team, owner, Membership.objects.get(team=self.team, user=self.member))
        self.assertEqual(order_of(self.member), ([], ""))
        learning_orders.save_order(self.team, ["autograd"])
        self.assertEqual(order_of(self.member), ([], ""))

    def test_leaving_a_team_one_does_not_follow_changes_nothing(self) -> None:
        services.join(self.other, self.member)
        services.leave(self.other, self.member)
        self.assertEqual(order_of(self.member), (["modules"], self.team.order_source))


class DecksPageTests(TeamOrderTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.other = services.create_team(make_user(time_zone="UTC"), "Grad Gang", "UTC")
        services.join(self.other, self.member)
        learning_orders.save_order(self.team, ["modules", "autograd"])

    def test_it_shows_the_order_the_learner_gets_and_the_team_it_comes_from(self) -> None:
        self.client.force_login(self.member)
        page = self.client.get(reverse("cards:decks"))
        self.assertEqual([s.slug for s in page.context["order"].stages], ["modules", "autograd", "tensors"])
        self.assertContains(page, "This is the learning order of your team")
        self.assertContains(page, "Tensor Tamers</a>, set by its owners")
        self.assertContains(page, "Follow the order of Grad Gang")
        self.assertContains(page, "Use the default order")

    def test_a_learner_follows_another_of_their_teams_or_goes_back_to_the_default(self) -> None:
        self.client.force_login(self.member)
        response = self.client.post(reverse("teams:follow_order", args=[self.other.slug]))
        self.assertRedirects(response, reverse("cards:decks") + "#learning-order")
        self.assertEqual(order_of(self.member), ([], self.other.order_source))
        self.client.post(reverse("cards:default_order"))
        self.assertEqual(order_of(self.member), ([], Profile.OWN_ORDER))
        page = self.client.get(reverse("cards:decks"))
        self.assertContains(page, "basics first (the default order)")
        self.assertNotContains(page, "This is the learning order of your team")
        self.assertNotContains(page, "Use the default order")

    def test_an_outsider_cannot_follow_a_team_they_are_not_in(self) -> None:
        self.client.force_login(self.outsider)
        self.assertEqual(self.client.post(reverse("teams:follow_order", args=[self.team.slug])).status_code, 404)
        self.assertEqual(Profile.objects.get(user=self.outsider).learning_order_source, "")
