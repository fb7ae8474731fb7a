"""The remote-image check against a real browser's URL parser: what ``cards.rendering.is_remote_url`` calls
local, chromium resolves to the page's own host, and the other way round; and a rendered note's images make
the browser fetch nothing from another host."""

from __future__ import annotations

from typing import Any

import pytest

from cards.rendering import is_remote_url, render_markdown

pytestmark = [pytest.mark.browser]

PAGE = "https://quiz.example/notes/autograd/"
FORMS = [
    "a.png",
    "/static/a.png",
    "../a.png",
    "/%5Cevil.example/a.png",
    "https://evil.example/a.png",
    "\\\\evil.example/a.png",
    "/\\evil.example/a.png",
    "\\/evil.example/a.png",
    " //evil.example/a.png",
    "\t//evil.example/a.png",
    "\x01\x1f//evil.example/a.png",
    "/\t/evil.example/a.png",
    "/\n/evil.example/a.png",
    "ht\ttps://evil.example/a.png",
    "///evil.example/a.png",
    "//evil.example/a.png ",
]


def test_it_calls_remote_exactly_what_chromium_fetches_from_another_host(browser: Any) -> None:
    page = browser.new_page()
    try:
        hosts = page.evaluate("([forms, base]) => forms.map((u) => new URL(u, base).host)", [FORMS, PAGE])
    finally:
        page.close()
    seen = {form: host != "quiz.example" for form, host in zip(FORMS, hosts, strict=True)}
    assert seen == {form: is_remote_url(form) for form in FORMS}


def test_it_lets_no_rendered_image_reach_another_host(browser: Any) -> None:
    body = "\n\n".join(f'<img src="{form}" alt="x">' for form in FORMS)
    note = f"<!doctype html><html><body>{render_markdown(body)}</body></html>"
    requested: list[str] = []

    def answer(route: Any) -> None:
        requested.append(route.request.url)
        route.fulfill(status=200, content_type="text/html", body=note if route.request.url == PAGE else "")

    page = browser.new_page()
    try:
        page.route("**/*", answer)
        page.goto(PAGE, wait_until="load")
    finally:
        page.close()
    assert requested[0] == PAGE
    assert [url for url in requested if not url.startswith("https://quiz.example/")] == []
    assert any("quiz.example/static/a.png" in url for url in requested)  # local images still load
