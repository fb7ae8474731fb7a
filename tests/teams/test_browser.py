"""Two learners join a team through its invite link, review on the review page, and the board ranks them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client

from teams import services
from teams.models import DailyActivity, Membership
from tests.cards.factories import make_cards, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser(django_db_setup: None) -> Iterator[Any]:
    """One chromium for the module; Django's async guard is lifted while Playwright's loop runs."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: run `make browser` (apt-get install chromium) to run browser tests")
    from playwright.sync_api import sync_playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            yield launched
            launched.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def logged_in_page(browser: Any, base: str, user: AbstractBaseUser) -> Any:
    """A browser tab with the user's session cookie (no password hashing, no login page)."""
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    context.set_default_timeout(10_000)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": base}])
    return context.new_page()


def join_and_review(browser: Any, base: str, user: AbstractBaseUser, invite: str, goods: int) -> None:
    from playwright.sync_api import expect

    page = logged_in_page(browser, base, user)
    page.goto(invite)
    page.get_by_role("button", name="Join team").click()
    expect(page.locator("h1")).to_have_text("Lab Rats")
    page.goto(f"{base}/review/")
    for done in range(1, goods + 1):
        page.keyboard.press("Space")
        page.keyboard.press("3")  # Good: SM-2 quality 4, one XP
        expect(page.locator("#count-reviewed")).to_have_text(str(done))
    page.context.close()


def test_it_ranks_two_learners_who_joined_by_invite_and_reviewed(browser: Any, live_server: Any) -> None:
    from playwright.sync_api import expect

    make_cards(5)
    owner, ada, bo = (
        make_user("owner", time_zone="UTC"),
        make_user("ada", time_zone="UTC"),
        make_user("bo", time_zone="UTC"),
    )
    team = services.create_team(owner, "Lab Rats", "UTC")
    invite = live_server.url + f"/teams/join/{services.invite_token(team)}/"

    join_and_review(browser, live_server.url, ada, invite, goods=1)
    join_and_review(browser, live_server.url, bo, invite, goods=3)
    assert set(Membership.objects.filter(team=team).values_list("user__username", flat=True)) == {"owner", "ada", "bo"}
    assert dict(DailyActivity.objects.values_list("user__username", "xp")) == {"ada": 1, "bo": 3}

    page = logged_in_page(browser, live_server.url, ada)
    page.goto(f"{live_server.url}/teams/{team.slug}/board/?period=week")
    rows = page.locator("tr.board-row")
    expect(rows).to_have_count(3)
    assert [rows.nth(i).get_attribute("data-user") for i in range(3)] == ["bo", "ada", "owner"]
    expect(rows.nth(0).locator("td").nth(1)).to_have_text("3")
    expect(page.locator("tr.you")).to_contain_text("ada (you)")
    page.context.close()
