"""Every main page at 390 px (a phone) and 1280 px (a laptop), issue 38 item 6: the page never scrolls
sideways (document.documentElement.scrollWidth <= innerWidth), no table hides columns in a box that scrolls
by itself, and each page's key elements are on screen.

With UPDATE_SCREENSHOTS=1 (or when a picture is missing) the 390 px pass writes docs/phone/<page>.png,
the pictures docs/pages.md shows.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from cards import review as reviewing
from graders.drills.grading import ReferenceCache, grade
from graders.drills.local import LocalRunner
from graders.models import Drill, Submission
from teams import services
from teams.models import DailyActivity
from tests.cards.factories import make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE_DOCS = Path(__file__).resolve().parents[2] / "docs" / "phone"
WIDTHS = (390, 1280)
MAX_PICTURE_HEIGHT = 2400  # a long page's top: what a learner meets first
TEAM_NAME = "Shapes and strides study group 张量形状与步幅学习小组"


def context_at(browser: Any, base: str, width: int, user: Any = None) -> Any:
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme="light", locale="en-US")
    context.set_default_timeout(10_000)
    if user is not None:
        client = Client()
        client.force_login(user)
        context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": base}])
    return context


def fits(page: Any, what: str) -> None:
    """No sideways scroll for the page, and no table wider than its own box (columns scrolled out of sight)."""
    scrolled, shown = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert scrolled <= shown, f"{what} scrolls sideways: {scrolled} > {shown}"
    hidden = page.evaluate(
        """() => [...document.querySelectorAll('main table')].filter(t => t.scrollWidth > t.clientWidth + 1)
            .map(t => `${t.className || t.tagName} ${t.scrollWidth} > ${t.clientWidth}`)"""
    )
    assert hidden == [], f"{what}: a table scrolls inside its box, hiding columns: {hidden}"


def on_screen(page: Any, selector: str, what: str) -> None:
    """The first element matching is visible and lies within the viewport's width."""
    from playwright.sync_api import expect

    element = page.locator(selector).first
    expect(element).to_be_visible()
    left, right = element.evaluate("e => { const r = e.getBoundingClientRect(); return [r.left, r.right]; }")
    inside = 0 <= left and right <= page.viewport_size["width"] + 0.5
    assert inside, f"{what}: {selector} is off screen ({left}, {right})"


def charts_readable(page: Any, width: int) -> None:
    """A chart is never shrunk below its own size (its 11 px text); on a phone it scrolls sideways in its box,
    opened at the right end (the latest days), and the page says so."""
    from playwright.sync_api import expect

    shrunk = page.evaluate(
        """() => [...document.querySelectorAll('main svg.chart')]
            .filter(svg => svg.getBoundingClientRect().width < svg.width.baseVal.value - 1).map(svg => svg.id)"""
    )
    assert shrunk == [], f"charts shrunk below their size at {width} px: {shrunk}"
    if width == 390:
        expect(page.locator("[data-chart-cue]")).to_be_visible()
        at_end = page.evaluate(
            """() => [...document.querySelectorAll('main .chart-box')].filter(box => box.scrollWidth > box.clientWidth)
                .every(box => Math.abs(box.scrollLeft) < 1 && box.querySelector('svg').getBoundingClientRect().right
                    <= box.getBoundingClientRect().right + 1)"""
        )
        assert at_end, "a chart does not open at its latest days"
    else:
        expect(page.locator("[data-chart-cue]")).to_be_hidden()


def picture(page: Any, width: int, name: str) -> None:
    if width != 390 or not name:
        return
    shot = PHONE_DOCS / f"{name}.png"
    if not shot.exists() or os.environ.get("UPDATE_SCREENSHOTS") == "1":
        PHONE_DOCS.mkdir(exist_ok=True)
        height = min(page.evaluate("document.documentElement.scrollHeight"), MAX_PICTURE_HEIGHT)
        page.screenshot(path=str(shot), full_page=True, clip={"x": 0, "y": 0, "width": 390, "height": height})


def visit(page: Any, base: str, path: str, width: int, name: str, *selectors: str) -> None:
    page.goto(base + path)
    picture(page, width, name)
    fits(page, f"{path} at {width} px")
    for selector in selectors:
        on_screen(page, selector, f"{path} at {width} px")


def a_week(learner: Any, xp: int, streak: int) -> None:
    """Today's numbers for the board and the team's charts, as teams.activity would store them."""
    today = reviewing.learner_today(reviewing.get_profile(learner), timezone.now())
    DailyActivity.objects.create(
        user=learner, day=today, xp=xp, review_xp=xp - 300, drill_xp=300, reviewed=True, reviews=268,
        mature_reviews=40, mature_passed=36, drills_solved=12, drills_first_try=7, streak_before=streak,
    )  # fmt: skip


def a_verdict(learner: Any) -> Submission:
    """A wrong answer to the first bundled drill (its starter code), graded in this process as a worker would."""
    drill = Drill.objects.order_by("card__position").first()
    assert drill is not None
    code = drill.spec.starter
    verdict = grade(drill.spec, code, seed=3, runner=LocalRunner(), cache=ReferenceCache())
    return Submission.objects.create(
        user=learner, drill=drill, code=code, seed=3, drill_version=drill.version, status=verdict["status"],
        verdict=verdict, finished_at=timezone.now(),
    )  # fmt: skip


@pytest.mark.parametrize("width", WIDTHS)
def test_every_main_page_fits_and_shows_its_key_elements(browser: Any, live_server: Any, width: int) -> None:
    from playwright.sync_api import expect

    call_command("import_notes", "notes", verbosity=0)
    call_command("import_drills", verbosity=0)
    learner = make_user(f"learner-with-a-long-name-{width}")
    team = services.create_team(learner, TEAM_NAME, "UTC")
    teammate = make_user(f"teammate{width}")
    services.join(team, teammate)
    a_week(learner, 1542, 11)
    a_week(teammate, 1210, 4)
    submission = a_verdict(learner)
    base = live_server.url

    # Signed out: the landing page says what quizsite is; an invite's login page names the team.
    anonymous = context_at(browser, base, width).new_page()
    visit(anonymous, base, "/", width, "landing", "[data-intro]", "#id_username")
    visit(anonymous, base, "/accounts/login/", width, "", "#id_username", "[data-signup-link]")
    visit(anonymous, base, f"/teams/join/{services.invite_token(team)}/", width, "invite", "[data-login-note]")
    expect(anonymous.locator("[data-login-note]")).to_contain_text(TEAM_NAME)
    anonymous.context.close()

    page = context_at(browser, base, width, learner).new_page()
    visit(page, base, "/review/", width, "review", "#review-panel")
    keys = page.locator("main kbd:visible, main details.keys:visible").count()
    assert (keys == 0) if width == 390 else (keys > 0), f"{keys} keyboard hints shown at {width} px"
    visit(page, base, "/drills/", width, "drill-hub", "[data-hub-filters] button[type=submit]", "[data-drill-status]")
    keys = page.locator("main kbd:visible, main [data-keys-hint]:visible").count()
    assert (keys == 0) if width == 390 else (keys > 0), f"the hub shows {keys} keyboard hints at {width} px"
    # A short block per drill on a phone (not one labelled line per column); no badge or note title broken
    # inside a word on a laptop ("TENSOR- / PUZZLES", "Pytorch / 小点").
    heights = page.evaluate("[...document.querySelectorAll('[data-drill-row]')].map(r => r.offsetHeight)")
    assert sum(heights) / len(heights) <= 120, f"a drill takes {sum(heights) / len(heights):.0f} px at {width} px"
    broken = page.evaluate(
        """() => [...document.querySelectorAll('.drill-rows .badge, .drill-rows .drill-source > a')]
            .filter(e => new Set([...e.getClientRects()].map(r => Math.round(r.top))).size > 1)
            .map(e => e.textContent.trim())"""
    )
    assert broken == [], f"broken inside a word at {width} px: {broken[:5]}"
    visit(page, base, f"/drills/{submission.drill.slug}/", width, "drill", "h1")
    visit(page, base, f"/drills/submissions/{submission.uuid}/", width, "drill-verdict", "[data-verdict]")
    visit(page, base, "/stats/", width, "stats", "h1")
    charts_readable(page, width)
    visit(page, base, "/settings/", width, "settings", "[data-token-link]")
    page.locator("[data-token-link]").click()
    page.locator("[data-token-create]").click()
    expect(page.locator("[data-token-key]")).to_be_visible()
    fits(page, f"a new token at {width} px")
    on_screen(page, "[data-token-key]", f"a new token at {width} px")
    picture(page, width, "token-new")
    visit(page, base, "/settings/token/", width, "token", "[data-token-revoke]")
    board = f"/teams/{team.slug}/board/"
    visit(page, base, board, width, "team-board", ".board")
    for label in ("XP", "Reviews (no repeats)", "True retention", "Drills solved", "Drills first try", "Streak"):
        on_screen(page, f".board-row.you [data-label='{label}']", f"{board}'s {label} at {width} px")
    expect(page.locator(".board-row.you [data-label='XP']")).to_have_text("1,542")
    visit(page, base, f"/teams/{team.slug}/stats/", width, "team-stats", "h1")
    charts_readable(page, width)
    visit(page, base, "/api/", width, "api-index", "body")
    assert '"name": "quizsite API"' in page.locator("body").inner_text().replace("\n", " ") or "quizsite API" in (
        page.locator("body").inner_text()
    )
    page.context.close()
