"""Issue 28, item 2, in the browser at 390 px and 1280 px: a team owner moves a stage up on the team page (plain
form buttons, no script needed), and a member then sees that order on their decks page, with the team it comes
from, and gets their first new card from the stage the owner put first."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from cards.models import LearningStage
from teams import services
from tests.browser.test_pages_on_phone_and_desktop import WIDTHS, no_sideways_scroll, page_at, screenshot
from tests.browser.test_review_flow import sign_up
from tests.cards.factories import make_card, make_note

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STAGES = [("tensors", "Tensors: creating, indexing"), ("autograd", "Autograd: gradients"), ("modules", "nn.Module")]


def build_deck() -> dict[str, str]:
    """Three stages of one note, two cards each; returns each stage's first card front."""
    note = make_note(slug="basics")
    fronts = {}
    for rank, (slug, title) in enumerate(STAGES):
        LearningStage.objects.create(
            slug=slug, title=title, rank=rank, sections=[{"note": "basics", "headings": [slug]}]
        )
        cards = [
            make_card(note=note, heading_path=slug, position=10 * rank + i, front=f"{slug} 问题 {i}") for i in range(2)
        ]
        fronts[slug] = cards[0].front
    return fronts


def shown_order(page: Any, testid: str) -> list[str]:
    return page.locator(f"[data-testid={testid}] li[data-stage]").evaluate_all(
        "items => items.map(item => item.dataset.stage)"
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_an_owner_reorders_and_a_member_gets_the_new_order(browser: Any, live_server: Any, width: int) -> None:
    from playwright.sync_api import expect

    fronts = build_deck()
    owner_page, member_page = page_at(browser, width), page_at(browser, width)
    sign_up(owner_page, live_server.url, f"owner{width}")
    sign_up(member_page, live_server.url, f"member{width}")
    users = get_user_model().objects
    team = services.create_team(users.get(username=f"owner{width}"), "Order study group", "UTC")
    services.join(team, users.get(username=f"member{width}"))

    owner_page.goto(f"{live_server.url}/teams/{team.slug}/")
    assert shown_order(owner_page, "team-learning-order") == ["tensors", "autograd", "modules"]
    owner_page.get_by_role("button", name="Move nn.Module up").click()
    expect(owner_page.get_by_role("status")).to_contain_text("Learning order saved; 2 members")
    owner_page.get_by_role("button", name="Move nn.Module up").click()
    assert shown_order(owner_page, "team-learning-order") == ["modules", "tensors", "autograd"]
    expect(owner_page.get_by_role("button", name="Move nn.Module up")).to_be_disabled()
    no_sideways_scroll(owner_page, "the team page")
    if width == 390:
        owner_page.locator("#learning-order").scroll_into_view_if_needed()
        screenshot(owner_page, "team-learning-order-phone.png")

    member_page.goto(f"{live_server.url}/decks/")
    assert shown_order(member_page, "learning-order") == ["modules", "tensors", "autograd"]
    expect(member_page.get_by_test_id("order-source")).to_contain_text("Order study group")
    no_sideways_scroll(member_page, "/decks/")
    member_page.goto(f"{live_server.url}/review/")
    expect(member_page.locator("#review-panel article.card")).to_contain_text(fronts["modules"])

    member_page.goto(f"{live_server.url}/decks/")
    member_page.get_by_test_id("default-order").click()
    assert shown_order(member_page, "learning-order") == ["tensors", "autograd", "modules"]
    expect(member_page.get_by_test_id("order-source")).to_have_count(0)
    owner_page.context.close()
    member_page.context.close()
