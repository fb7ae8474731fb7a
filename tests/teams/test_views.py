"""Team pages for the three personas: members see, owners change, outsiders get 404 everywhere."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.urls import reverse

from teams import services, urls
from teams.models import BoardPreference, Membership, Team
from tests.cards.factories import make_user

from .base import TeamTestCase

# Every URL under /teams/<slug>/: (url name, method, owner only).
TEAM_URLS = [
    ("detail", "get", False),
    ("board", "get", False),
    ("stats", "get", False),
    ("rename", "post", True),
    ("default_scheduler", "post", True),
    ("revlog_export", "get", True),
    ("calibration", "get", False),
    ("learning_order", "post", True),
    ("follow_order", "post", False),
    ("rotate_invite", "post", True),
    ("remove_member", "post", True),
    ("transfer_ownership", "post", True),
    ("set_role", "post", True),
    ("leave", "post", False),
]


def test_it_lists_every_team_url_in_the_privacy_table() -> None:
    team_scoped = {p.name for p in urls.urlpatterns if "<slug:slug>" in str(p.pattern)}
    assert team_scoped == {name for name, _, _ in TEAM_URLS}


@pytest.fixture
def world(db: None) -> dict[str, object]:
    owner, member, outsider = make_user("owner"), make_user("member"), make_user("outsider")
    team = services.create_team(owner, "Private Team", "UTC")
    target = Membership.objects.create(team=team, user=member)
    Membership.objects.create(team=team, user=make_user("third"))
    return {"owner": owner, "member": member, "outsider": outsider, "team": team, "target": target}


def _url(name: str, world: dict[str, object]) -> str:
    team = world["team"]
    assert isinstance(team, Team)
    third = team.memberships.get(user__username="third")
    if name in ("remove_member", "transfer_ownership", "set_role"):
        return reverse(f"teams:{name}", args=[team.slug, third.uuid])
    return reverse(f"teams:{name}", args=[team.slug])


def _call(client: Client, method: str, url: str) -> int:
    data = {"name": "Renamed"} if method == "post" else None
    return (client.post(url, data) if method == "post" else client.get(url)).status_code


@pytest.mark.parametrize(("name", "method", "owner_only"), TEAM_URLS)
def test_it_answers_404_to_an_outsider_on_every_team_url(
    client: Client, world: dict[str, object], name: str, method: str, owner_only: bool
) -> None:
    client.force_login(world["outsider"])
    assert _call(client, method, _url(name, world)) == 404
    assert Membership.objects.filter(team=world["team"]).count() == 3


@pytest.mark.parametrize(("name", "method", "owner_only"), TEAM_URLS)
def test_it_lets_a_member_see_but_only_an_owner_change(
    client: Client, world: dict[str, object], name: str, method: str, owner_only: bool
) -> None:
    client.force_login(world["member"])
    expected = 403 if owner_only else (200 if method == "get" else 302)
    assert _call(client, method, _url(name, world)) == expected


@pytest.mark.parametrize(("name", "method", "owner_only"), TEAM_URLS)
def test_it_lets_the_owner_use_every_team_url(
    client: Client, world: dict[str, object], name: str, method: str, owner_only: bool
) -> None:
    client.force_login(world["owner"])
    assert _call(client, method, _url(name, world)) in (200, 302)


@pytest.mark.parametrize("name", ["detail", "board", "stats"])
def test_it_sends_anonymous_visitors_to_log_in(client: Client, world: dict[str, object], name: str) -> None:
    response = client.get(_url(name, world))
    assert response.status_code == 302 and "/login" in response["Location"]


class ViewTests(TeamTestCase):
    def test_it_creates_a_team_from_the_index_page(self) -> None:
        self.client.force_login(self.outsider)
        response = self.client.post(reverse("teams:index"), {"name": "New Team", "time_zone": "Asia/Shanghai"})
        team = Team.objects.get(name="New Team")
        self.assertRedirects(response, reverse("teams:detail", args=[team.slug]))
        assert team.memberships.get().user_id == self.outsider.pk and team.time_zone == "Asia/Shanghai"

    def test_it_refuses_an_unknown_time_zone(self) -> None:
        self.client.force_login(self.outsider)
        response = self.client.post(reverse("teams:index"), {"name": "Bad", "time_zone": "Mars/Olympus"})
        assert response.status_code == 200 and not Team.objects.filter(name="Bad").exists()

    def test_it_joins_through_the_invite_link_after_confirming(self) -> None:
        self.client.force_login(self.outsider)
        url = reverse("teams:join", args=[services.invite_token(self.team)])
        assert self.client.get(url).status_code == 200
        assert not Membership.objects.filter(team=self.team, user=self.outsider).exists()
        self.assertRedirects(self.client.post(url), reverse("teams:detail", args=[self.team.slug]))
        assert Membership.objects.get(team=self.team, user=self.outsider).role == "member"

    def test_an_invite_opened_while_signed_out_names_the_team_on_the_login_and_sign_up_pages(self) -> None:
        url = reverse("teams:join", args=[services.invite_token(self.team)])
        login = self.client.get(url, follow=True)
        self.assertContains(login, f"Log in or sign up to join the team “{self.team.name}”.")
        signup = self.client.get(reverse("cards:signup"), {"next": url})
        self.assertContains(signup, f"join the team “{self.team.name}”")
        services.rotate_invite(self.team)  # a stale link names nothing (its join page says why)
        self.assertNotContains(self.client.get(url, follow=True), "join the team")
        self.assertNotContains(self.client.get(reverse("login"), {"next": "/stats/"}), "join the team")

    def test_it_answers_404_for_a_rotated_invite_link(self) -> None:
        url = reverse("teams:join", args=[services.invite_token(self.team)])
        services.rotate_invite(self.team)
        self.client.force_login(self.outsider)
        assert self.client.post(url).status_code == 404
        assert not Membership.objects.filter(team=self.team, user=self.outsider).exists()

    def test_it_keeps_a_removed_member_out_of_the_link_they_joined_with(self) -> None:
        join_url = reverse("teams:join", args=[services.invite_token(self.team)])
        self.client.force_login(self.owner)
        remove_url = reverse("teams:remove_member", args=[self.team.slug, self.member_membership.uuid])
        self.assertRedirects(self.client.post(remove_url), reverse("teams:detail", args=[self.team.slug]))
        self.client.force_login(self.member)
        assert self.client.post(join_url).status_code == 404
        assert not Membership.objects.filter(team=self.team, user=self.member).exists()

    def test_it_shows_the_invite_link_to_members_and_the_rotate_button_to_owners_only(self) -> None:
        self.client.force_login(self.member)
        page = self.client.get(reverse("teams:detail", args=[self.team.slug])).content
        assert b"invite-link" in page and b"rotate-invite" not in page
        self.client.force_login(self.owner)
        assert b"rotate-invite" in self.client.get(reverse("teams:detail", args=[self.team.slug])).content

    def test_it_keeps_the_last_owner_in_the_team_when_they_try_to_leave(self) -> None:
        self.client.force_login(self.owner)
        self.client.post(reverse("teams:leave", args=[self.team.slug]))
        assert Membership.objects.filter(team=self.team, user=self.owner, role="owner").exists()

    def test_it_renders_the_board_with_both_periods(self) -> None:
        self.client.force_login(self.member)
        for period in ("week", "all", "bogus"):
            response = self.client.get(reverse("teams:board", args=[self.team.slug]), {"period": period})
            assert response.status_code == 200
            assert b'data-user="olivia"' in response.content and b'data-user="oscar"' not in response.content
            assert b"Reviews (no repeats)" in response.content  # not the dashboard's and stats' answers

    def test_it_renders_svg_charts_on_the_stats_page(self) -> None:
        today = datetime.now(tz=UTC).date() - timedelta(days=1)
        self.review(self.member, self.cards[0], today, 5)
        self.client.force_login(self.member)
        response = self.client.get(reverse("teams:stats", args=[self.team.slug]))
        assert response.content.count(b"<svg") == 3

    def test_it_saves_the_global_board_opt_in(self) -> None:
        self.client.force_login(self.member)
        self.client.post(reverse("teams:preferences"), {"global_board": "on"})
        pref = BoardPreference.objects.get(user=self.member)
        assert pref.global_board and not pref.daily_digest and pref.global_since is not None
        response = self.client.get(reverse("teams:global_board"))
        assert b'data-user="max"' in response.content and b'data-user="olivia"' not in response.content

    def test_it_keeps_team_pages_under_fifteen_queries(self) -> None:
        self.client.force_login(self.member)
        # Session, user + profile, membership, then the page's own (the detail page's learning order: the
        # stages and how many members follow it): all well under the 15 allowed.
        for name, queries in (("detail", 11), ("board", 7), ("stats", 5)):
            with self.subTest(name), self.assertNumQueries(queries):
                self.client.get(reverse(f"teams:{name}", args=[self.team.slug]))
