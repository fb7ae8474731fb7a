"""Playwright in Debian's chromium against pytest-django's live server.

Playwright's own browser download cannot work here, so the tests use /usr/bin/chromium
(`make browser` installs it) and skip with that reason when it is missing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

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
    """One chromium per module, started after the test database exists.

    Playwright's sync API keeps an event loop running in this thread while it is open, which
    Django's ORM guard takes for async code; the guard is lifted for exactly that span, and
    the loop ends with the module so later tests in the same worker are unaffected.
    """
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


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 900, "height": 900}, locale="zh-CN")
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()
