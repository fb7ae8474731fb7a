"""The review as a learner does it: sign up, review with the keyboard only, undo, see the numbers move."""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from cards import review
from cards.models import Card, CardState, ReviewLog
from tests.cards.factories import make_cards

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "zhangliang-shape-2026!"
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "review.png"


def sign_up(page: Any, base: str, username: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{base}/accounts/signup/")
    page.fill("#id_username", username)
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.keyboard.press("Enter")
    expect(page.locator("h1")).to_have_text("Today", timeout=15_000)  # a password hash on a loaded machine


def test_it_reviews_five_cards_with_the_keyboard_and_undoes_one(page: Any, live_server: Any) -> None:
    from playwright.sync_api import expect

    make_cards(6)
    sign_up(page, live_server.url, "键盘用户")
    expect(page.locator("#stat-new")).to_have_text("6")
    expect(page.locator("#stat-reviewed")).to_have_text("0")

    page.goto(f"{live_server.url}/review/")
    page.evaluate("window.__samePage = true")  # survives only if no card reloads the page
    reviewed = page.locator("#count-reviewed")
    for done, key in enumerate(["3", "4", "3", "1", "2"], start=1):
        back = page.locator("#review-panel .face.back")
        expect(back).to_be_hidden()
        page.keyboard.press("Space")
        expect(back).to_be_visible()
        page.keyboard.press(key)
        expect(reviewed).to_have_text(str(done))
    assert page.evaluate("window.__samePage") is True

    page.keyboard.press("Control+z")
    expect(page.locator(".messages")).to_contain_text("Undid the last rating.")
    expect(reviewed).to_have_text("4")
    assert ReviewLog.objects.count() == 4

    page.goto(f"{live_server.url}/")
    expect(page.locator("#stat-reviewed")).to_have_text("4")
    expect(page.locator("#stat-new")).to_have_text("2")
    expect(page.locator("#stat-streak")).to_have_text("1 day")


def test_it_reviews_without_javascript(browser: Any, live_server: Any) -> None:
    from playwright.sync_api import expect

    make_cards(2)
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    sign_up(page, live_server.url, "nojs")
    page.goto(f"{live_server.url}/review/")
    page.get_by_text("Show answer").click()
    page.get_by_role("button", name=re.compile("^Good")).click()
    expect(page).to_have_url(f"{live_server.url}/review/")
    expect(page.locator("#count-reviewed")).to_have_text("1")
    page.get_by_role("button", name=re.compile("^Undo")).click()
    expect(page.locator("#count-reviewed")).to_have_text("0")
    context.close()
    assert not ReviewLog.objects.exists()


def test_it_shows_an_imported_card_with_rendered_math(page: Any, live_server: Any) -> None:
    """Also the README's picture of the review page: docs/review.png (UPDATE_SCREENSHOTS=1 refreshes it)."""
    from playwright.sync_api import expect

    call_command("import_notes", "notes/pytorch-basics.md", verbosity=0)
    card = Card.objects.filter(front_html__contains='class="math inline"', kind="cloze").order_by("pk").first()
    assert card is not None, "the bundled notes should contain a card with inline math"
    sign_up(page, live_server.url, "math")
    learner = get_user_model().objects.get(username="math")
    # Make it a due card (due cards come first) with some history, so its buttons show real intervals.
    today = review.learner_today(review.get_profile(learner), timezone.now())
    last = timezone.now() - timedelta(days=6)
    CardState.objects.create(
        user=learner, card=card, due=today, interval=6, repetitions=2, version=1, last_reviewed_at=last
    )
    page.goto(f"{live_server.url}/review/")
    page.keyboard.press("Space")
    expect(page.locator("#review-panel .face .katex").first).to_be_visible()
    expect(page.locator("#review-panel .source")).to_have_attribute("href", f"/notes/{card.note.slug}/#{card.anchor}")
    expect(page.locator(".rate-good .rate-hint")).to_have_text("15d")
    # Refreshed on request only, so a test run does not rewrite a tracked file.
    if not SCREENSHOT.exists() or os.environ.get("UPDATE_SCREENSHOTS") == "1":
        SCREENSHOT.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)
