"""Playwright in Debian's chromium against pytest-django's live server (``browser`` is in tests/conftest.py).

Playwright's own browser download cannot work here, so the tests use /usr/bin/chromium
(`make browser` installs it) and skip with that reason when it is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 900, "height": 900}, locale="zh-CN")
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()
