"""The review, stats and team pages on a 390 px phone: no sideways scroll, code scrolls in its own
block and is highlighted, and the rating buttons stay in reach below a long answer."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cards.rendering import render_markdown
from teams import services
from tests.browser.test_review_flow import sign_up
from tests.cards.factories import make_card

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCS = Path(__file__).resolve().parents[2] / "docs"
LONG_LINE = (
    "logits = model(torch.randn(batch_size, sequence_length, hidden_size, dtype=torch.float32, device=device))"
    ".softmax(dim=-1)"
)
LONG_ANSWER = "\n\n".join(f"第 {i} 段: `torch.cat` 沿已有维拼接, `torch.stack` 新建一维。" for i in range(30))


def page_width(page: Any) -> tuple[int, int]:
    return page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")


def test_a_long_card_on_a_phone(browser: Any, live_server: Any) -> None:
    from playwright.sync_api import expect

    front = f"这行代码输出的形状?\n\n```python\n{LONG_LINE}\n```"
    back = LONG_ANSWER
    make_card(front=front, back=back, front_html=render_markdown(front), back_html=render_markdown(back))
    context = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2)
    page = context.new_page()
    sign_up(page, live_server.url, "phone")
    page.goto(f"{live_server.url}/review/")

    scrolled, shown = page_width(page)
    assert scrolled <= shown, f"the review page scrolls sideways: {scrolled} > {shown}"
    code = page.locator(".face .highlight pre").first
    assert code.evaluate("e => e.scrollWidth > e.clientWidth"), "the long line should scroll inside its block"
    operator = page.locator(".face .highlight .o").first  # code.css colours Pygments' operators #666
    assert operator.evaluate("e => getComputedStyle(e).color") == "rgb(102, 102, 102)"

    page.get_by_text("Show answer").click()
    good = page.get_by_role("button", name="Good")
    expect(good).to_be_visible()
    assert good.evaluate(
        "e => { const r = e.getBoundingClientRect(); return r.bottom <= window.innerHeight && r.top >= 0; }"
    ), "the rating buttons must stay on screen below a long answer"
    shot = DOCS / "review-phone.png"  # refreshed on request only, so a test run rewrites no tracked file
    if not shot.exists() or os.environ.get("UPDATE_SCREENSHOTS") == "1":
        page.screenshot(path=str(shot))

    page.goto(f"{live_server.url}/stats/")
    scrolled, shown = page_width(page)
    assert scrolled <= shown, f"the stats page scrolls sideways: {scrolled} > {shown}"


def test_the_team_page_on_a_phone(browser: Any, live_server: Any) -> None:
    from django.contrib.auth import get_user_model

    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    sign_up(page, live_server.url, "teamphone")
    team = services.create_team(get_user_model().objects.get(username="teamphone"), "L" + "x" * 90, "UTC")
    for path in (f"/teams/{team.slug}/", f"/teams/{team.slug}/board/", "/teams/"):
        page.goto(live_server.url + path)
        scrolled, shown = page_width(page)
        assert scrolled <= shown, f"{path} scrolls sideways: {scrolled} > {shown}"
