"""Issue 28's pages at 390 px (a phone) and 1280 px (a laptop): no sideways scroll on the team stats and board
pages, board numbers and headings never broken inside a word, the drills table's status always on screen, Chinese
search in the drill hub with a heading that counts what the filter keeps, API docs in the footer and on the
settings page, the header's "Sign up" keeping a pending invite, and dark mode for the whole page."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from teams import services
from tests.browser.test_review_flow import sign_up

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCS = Path(__file__).resolve().parents[2] / "docs"
WIDTHS = (390, 1280)


def page_at(browser: Any, width: int, scheme: str = "light") -> Any:
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    context.set_default_timeout(10_000)
    return context.new_page()


def no_sideways_scroll(page: Any, what: str) -> None:
    scrolled, shown = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert scrolled <= shown, f"{what} scrolls sideways: {scrolled} > {shown}"


def screenshot(page: Any, name: str) -> None:
    """The docs' pictures of the fixed pages at 390 px; refreshed on request (UPDATE_SCREENSHOTS=1) or when missing."""
    shot = DOCS / name
    if not shot.exists() or os.environ.get("UPDATE_SCREENSHOTS") == "1":
        page.screenshot(path=str(shot))


@pytest.mark.parametrize("width", WIDTHS)
def test_the_team_stats_and_board_fit_and_never_break_a_word(browser: Any, live_server: Any, width: int) -> None:
    page = page_at(browser, width)
    sign_up(page, live_server.url, f"board{width}")
    owner = get_user_model().objects.get(username=f"board{width}")
    team = services.create_team(owner, "Shapes and strides study group " + "长" * 30, "UTC")
    for path in (f"/teams/{team.slug}/stats/", f"/teams/{team.slug}/board/"):
        page.goto(live_server.url + path)
        no_sideways_scroll(page, path)
    # Each heading and number of the board is one line: "XP" is never "X/P", "1,542" never "1/5/4".
    broken = page.evaluate(
        """() => [...document.querySelectorAll('.board thead th, .board td')].filter(cell => {
            const range = document.createRange(); range.selectNodeContents(cell);
            const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
            return lines.size > 1; }).map(cell => cell.textContent.trim())"""
    )
    assert broken == [], f"board cells broken across lines at {width} px: {broken}"
    if width == 390:
        screenshot(page, "team-board-phone.png")
        page.goto(f"{live_server.url}/teams/{team.slug}/stats/")
        screenshot(page, "team-stats-phone.png")
    page.context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_drill_hub_shows_each_status_and_searches_chinese(browser: Any, live_server: Any, width: int) -> None:
    from playwright.sync_api import expect

    call_command("import_notes", "notes", verbosity=0)
    call_command("import_drills", verbosity=0)
    page = page_at(browser, width)
    sign_up(page, live_server.url, f"hub{width}")
    page.goto(f"{live_server.url}/drills/")
    no_sideways_scroll(page, "/drills/")
    status = page.locator("[data-drill-status]").first
    assert status.evaluate("e => e.getBoundingClientRect().right <= window.innerWidth"), "the status is off screen"
    expect(page.locator("[data-hub-count]")).to_contain_text(" drills.")
    total = page.locator("[data-drill-row]").count()
    page.goto(f"{live_server.url}/drills/?q=张量")
    kept = page.locator("[data-drill-row]").count()
    assert 0 < kept < total, f"?q=张量 kept {kept} of {total} drills"
    expect(page.locator("[data-hub-count]")).to_contain_text(f"{kept} of {total} drills match.")
    no_sideways_scroll(page, "/drills/?q=张量")
    if width == 390:
        screenshot(page, "drill-hub-phone.png")
    page.context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_footer_settings_and_header_links(browser: Any, live_server: Any, width: int) -> None:
    from playwright.sync_api import expect

    page = page_at(browser, width)
    page.goto(f"{live_server.url}/accounts/login/?next=/teams/join/abc/")
    expect(page.locator("[data-header-signup]")).to_have_attribute("href", "/accounts/signup/?next=/teams/join/abc/")
    page.locator("[data-header-signup]").click()
    expect(page.locator('input[name="next"]')).to_have_value("/teams/join/abc/")
    sign_up(page, live_server.url, f"links{width}")
    page.goto(f"{live_server.url}/settings/")
    no_sideways_scroll(page, "/settings/")
    expect(page.locator("main [data-api-docs]")).to_be_visible()
    page.locator("footer [data-api-docs]").click()
    expect(page).to_have_url(f"{live_server.url}/api/docs/")
    page.context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_dark_mode_darkens_the_whole_page(browser: Any, live_server: Any, width: int) -> None:
    page = page_at(browser, width, scheme="dark")
    sign_up(page, live_server.url, f"dark{width}")
    for path in ("/", "/stats/", "/settings/"):
        page.goto(live_server.url + path)
        body, header = page.evaluate(
            "[getComputedStyle(document.body).backgroundColor,"
            " getComputedStyle(document.querySelector('.site-header')).backgroundColor]"
        )
        assert (body, header) == ("rgb(22, 23, 27)", "rgb(30, 31, 36)"), f"{path} is not dark: {body}, {header}"
    if width == 390:
        screenshot(page, "settings-dark-phone.png")
    page.context.close()
