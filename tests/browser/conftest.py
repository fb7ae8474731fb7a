"""Playwright in Debian's chromium against pytest-django's live server (``browser`` is in tests/conftest.py).

Playwright's own browser download cannot work here, so the tests use /usr/bin/chromium
(`make browser` installs it) and skip with that reason when it is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import Workers


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    # The English interface (the pages follow Accept-Language): tests/browser/test_chinese_learner.py walks the
    # Chinese one with locale="zh-CN".
    context = browser.new_context(viewport={"width": 900, "height": 900}, locale="en-US")
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()


@pytest.fixture(scope="module")
def grading_worker(
    shared_database: str, celery_on_redis: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Workers]:
    """One real worker for a module's tests: grading drills and running snippets (grade_cpu) and the review's
    side jobs (celery), on the test database and a real Redis."""
    pool = Workers(
        shared_database, celery_on_redis, tmp_path_factory.mktemp("worker"), queues="grade_cpu,celery,counterexample"
    )
    try:
        pool.start(concurrency=1)
        yield pool
    finally:
        pool.stop_all()
