"""A Chinese learner's browser (locale zh-CN): sign-up, a review, a drill, stats and settings speak Chinese,
and no English chrome is left on any of them (docs/i18n.md)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from cards.models import Card, Note
from graders.drills.schema import parse_drill
from graders.management.commands.import_drills import card_fields, card_key, drill_fields
from graders.models import Drill
from tests.cards.factories import make_cards
from tests.graders.conftest import drill_text

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "zhangliang-shape-2026!"
DOCS = Path(__file__).resolve().parents[2] / "docs"
# The interface's own English words: none may be read on a page a Chinese browser opens. Card and drill
# content (code, the English statement the toggle hides) is not chrome and is not looked at.
ENGLISH_CHROME = [
    "Dashboard", "Review", "Decks", "Drills", "Stats", "Teams", "Settings", "Log out", "Log in", "Sign up",
    "API docs", "Skip to content", "Today", "Due today", "Start reviewing", "Next 7 days", "Show answer",
    "Again", "Hard", "Good", "Easy", "Undo", "Bury", "Suspend", "Edit note", "Keyboard shortcuts", "done",
    "Examples", "Called as", "Limits and constraints", "Run examples", "Submit", "Attempts this review",
    "Give up", "My submissions", "hidden case", "Statistics", "Your statistics", "True retention", "Reviews",
    "Save", "Scheduler", "Time zone", "New cards per day", "Fit my parameters now", "The API", "Interface language",
    "Expected output", "Waiting for a grader", "Copy", "Dark / light",
]  # fmt: skip


def save_docs_screenshot(page: Any, name: str) -> None:
    """docs/i18n.md's pictures; refreshed only on request (UPDATE_SCREENSHOTS=1) or when missing."""
    path = DOCS / name
    if not path.exists() or os.environ.get("UPDATE_SCREENSHOTS") == "1":
        page.screenshot(path=str(path), full_page=True)


def english_left(text: str) -> list[str]:
    return [word for word in ENGLISH_CHROME if re.search(rf"(?<![A-Za-z]){re.escape(word)}(?![A-Za-z])", text)]


def make_drill() -> Drill:
    note = Note.objects.create(
        slug="tensor-basics", path="notes/tensor-basics.md", title="张量基础", content="# 张量\n", content_hash="0"
    )
    spec = parse_drill(drill_text(), "notes/drills/add-one.toml")
    card = Card.objects.create(key=card_key(spec.slug), **card_fields(spec, note, 10_001))
    return Drill.objects.create(slug=spec.slug, card=card, **drill_fields(spec, drill_text(), spec.path))


def test_it_shows_a_chinese_browser_no_english_chrome(browser: Any, live_server: Any) -> None:
    from playwright.sync_api import expect

    make_cards(3)
    drill = make_drill()
    context = browser.new_context(viewport={"width": 390, "height": 844}, locale="zh-CN")
    context.set_default_timeout(15_000)
    page = context.new_page()
    base = live_server.url
    seen: dict[str, list[str]] = {}

    def check(name: str) -> None:
        expect(page.locator("html")).to_have_attribute("lang", "zh-Hans")
        seen[name] = english_left(page.locator("body").inner_text())

    page.goto(f"{base}/accounts/signup/")
    expect(page.locator("h1")).to_have_text("注册")
    check("sign-up")
    page.fill("#id_username", "中文学员")
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.get_by_role("button", name="创建账号").click()
    expect(page.locator("h1")).to_have_text("今天", timeout=20_000)  # a password hash on a loaded machine
    check("dashboard")

    page.get_by_role("link", name="复习", exact=True).first.click()
    page.locator("#review-panel summary", has_text="显示答案").click()
    expect(page.locator(".rate-good .rate-label")).to_have_text("良好")
    check("review")
    save_docs_screenshot(page, "zh-review-phone.png")
    page.locator(".rate-good").click()
    expect(page.locator("#count-reviewed")).to_have_text("1")
    check("review after a rating")

    page.goto(f"{base}/drills/{drill.slug}/")
    expect(page.locator(".prompt-zh")).to_be_visible()
    expect(page.locator(".prompt-en")).to_be_hidden()
    expect(page.get_by_role("button", name="运行示例")).to_be_visible()
    check("drill")
    save_docs_screenshot(page, "zh-drill-phone.png")

    page.get_by_role("link", name="统计", exact=True).first.click()
    expect(page.locator("h1")).to_have_text("你的统计")
    check("stats")
    save_docs_screenshot(page, "zh-stats-phone.png")

    page.get_by_role("link", name="设置", exact=True).first.click()
    expect(page.locator("h1")).to_have_text("设置")
    check("settings")
    save_docs_screenshot(page, "zh-settings-phone.png")

    assert all(not words for words in seen.values()), {name: words for name, words in seen.items() if words}

    # The header's switch: English from the next page on, and back.
    page.get_by_role("button", name="English").click()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("h1")).to_have_text("Settings")
    page.get_by_role("button", name="中文").click()
    expect(page.locator("h1")).to_have_text("设置")
    context.close()
