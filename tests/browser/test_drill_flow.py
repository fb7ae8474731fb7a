"""A drill in the daily review, through a real Celery worker: wrong, fixed, accepted, rated, next card.

The worker (``celery -A quizsite worker -Q grade_cpu,celery``, sharing the test database and a
real Redis) grades in its warm sandbox pool and, in the accepted verdict's transaction,
rates the drill card; the page learns all of it by htmx polling, without a reload.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client
from django.utils import timezone

from cards import review as reviewing
from cards.models import Card, CardState, Note, ReviewLog
from graders.drills.schema import parse_drill
from graders.management.commands.import_drills import card_fields, card_key, drill_fields
from graders.models import Drill, DrillReview, Submission
from tests.cards.factories import make_user
from tests.conftest import Workers
from tests.graders.conftest import RIGHT, WRONG, drill_text

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

DOCS = Path(__file__).resolve().parents[2] / "docs"


def save_docs_screenshot(page: Any, name: str) -> None:
    """The docs' pictures of the drill page; refreshed only on request (UPDATE_SCREENSHOTS=1) or when missing."""
    path = DOCS / name
    if not path.exists() or os.environ.get("UPDATE_SCREENSHOTS") == "1":
        page.screenshot(path=str(path), full_page=True)


EDITOR_BUNDLE = Path(__file__).resolve().parents[2] / "static" / "dist" / "editor.js"
VERDICT_TIMEOUT_MS = 30_000  # the first verdict waits for the worker's sandbox child to import torch


def make_drill() -> Drill:
    note = Note.objects.create(
        slug="pytorch-basics", path="notes/pytorch-basics.md", title="PyTorch basics", content="# Tensors\n",
        content_hash="0",
    )  # fmt: skip
    text = drill_text()
    spec = parse_drill(text, "notes/drills/add-one.toml")
    card = Card.objects.create(key=card_key(spec.slug), **card_fields(spec, note, 10_001))
    return Drill.objects.create(slug=spec.slug, card=card, **drill_fields(spec, text, spec.path))


def logged_in_page(browser: Any, base: str, user: AbstractBaseUser) -> Any:
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": 1100, "height": 1400}, color_scheme="light")
    context.set_default_timeout(10_000)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": base}])
    return context.new_page()


def set_code(page: Any, code: str) -> None:
    page.evaluate("code => window.quizDrillEditor.setValue(code)", code)


def test_it_grades_a_drill_from_the_review_queue_until_accepted(
    browser: Any, grading_worker: Workers, live_server: Any, settings: Any
) -> None:
    from playwright.sync_api import expect

    if not EDITOR_BUNDLE.exists():
        pytest.skip("static/dist/editor.js is missing: run `make frontend`")
    settings.GRADER_RATE_LIMIT = 3
    drill = make_drill()
    learner = make_user("drill-learner")
    page = logged_in_page(browser, live_server.url, learner)

    # 1. The drill is the review's next card: no rating buttons, a way into the editor.
    page.goto(f"{live_server.url}/review/")
    expect(page.locator("#review-panel [data-rating-form]")).to_have_count(0)
    page.get_by_role("link", name="Open the drill editor").click()
    expect(page.locator("h1")).to_have_text("Add one")
    expect(page.locator(".cm-editor")).to_be_visible()  # CodeMirror replaced the textarea
    expect(page.locator(".cm-content")).to_contain_text("def solution(x):")
    # The worker ran the reference on the examples; the page polled the outputs in.
    expect(page.locator("[data-example='small'] [data-expected]")).to_contain_text(
        "tensor([2., 3.])", timeout=VERDICT_TIMEOUT_MS
    )
    page.evaluate("window.__samePage = true")

    # 2. Run examples: graded, not an attempt.
    set_code(page, WRONG)
    page.get_by_role("button", name="Run examples").click()
    verdict = page.locator("#verdict")
    expect(verdict).to_have_attribute("data-status", "wrong_answer", timeout=VERDICT_TIMEOUT_MS)
    expect(verdict.locator("[data-examples-only]")).to_be_visible()
    review = DrillReview.objects.get(user=learner)
    assert reviewing_attempts(review) == 0

    # 3. Submit the wrong answer with Ctrl+Enter: the failing case and its first differing index.
    page.locator(".cm-content").click()
    page.keyboard.press("Control+Enter")
    expect(verdict).to_have_attribute("data-kind", "submit")
    expect(verdict).to_have_attribute("data-status", "wrong_answer", timeout=VERDICT_TIMEOUT_MS)
    expect(verdict.locator("[data-index]")).to_have_text("[0]")
    expect(verdict.locator("[data-test='small']")).to_contain_text("failed")
    expect(verdict.locator("[data-move-on]")).to_have_text("Next card (rated 1)")
    expect(page.locator("#attempts-count")).to_have_text("1")  # swapped in out of band with the verdict
    save_docs_screenshot(page, "drill-wrong.png")
    assert ReviewLog.objects.count() == 0

    # 4. Fix it and submit: accepted, rated 4 (second attempt), and the next due day appears.
    set_code(page, RIGHT)
    page.get_by_role("button", name="Submit").click()
    expect(verdict.locator("[data-rated]")).to_contain_text("Accepted: rated 4", timeout=VERDICT_TIMEOUT_MS)
    state = CardState.objects.get(user=learner, card=drill.card)
    today = reviewing.learner_today(reviewing.get_profile(learner), timezone.now())
    assert state.due == today + timedelta(days=1)
    # The page shows the site's date format; the machine-readable day is the <time> element's datetime.
    expect(verdict.locator("[data-next-due]")).to_have_attribute("datetime", state.due.isoformat())
    expect(page.locator("#drill-meta [data-due]")).to_have_attribute("datetime", state.due.isoformat())
    expect(page.locator("#drill-actions [data-give-up]")).to_have_count(0)
    expect(page.locator("#drill-actions")).to_contain_text("This review is finished: rated 4")
    save_docs_screenshot(page, "drill-accepted.png")
    assert page.evaluate("window.__samePage") is True  # every verdict arrived without a reload
    log = ReviewLog.objects.get()
    assert (log.quality, log.source, reviewing_attempts(review)) == (4, "grader", 2)

    # The toggles: the prompt's language, and the dark theme (CodeMirror's one-dark background).
    expect(page.locator(".prompt-zh")).to_be_hidden()
    page.locator("[data-lang-toggle]").click()
    expect(page.locator(".prompt-zh")).to_contain_text("给张量的每个元素加一")
    expect(page.locator(".prompt-en")).to_be_hidden()
    page.locator("[data-theme-toggle]").click()
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    expect(page.locator(".cm-editor")).to_have_css("background-color", "rgb(40, 44, 52)")

    # 5. The rate limit (3 a minute here) explains itself; nothing is queued.
    page.get_by_role("button", name="Run examples").click()
    expect(page.locator("[data-refused]")).to_contain_text("Too many submissions: at most 3 every 60 seconds.")
    assert Submission.objects.filter(user=learner).count() == 3

    # 6. Next card: the rated drill has left today's queue.
    page.goto(f"{live_server.url}/drills/{drill.slug}/")
    page.get_by_role("link", name="Next card").first.click()
    expect(page.locator("#review-panel")).to_contain_text("Done for today")
    page.context.close()


def reviewing_attempts(review: DrillReview) -> int:
    from graders.rating.reviews import review_attempts

    return review_attempts(review).count()


def test_it_grades_a_drill_without_javascript(browser: Any, grading_worker: Workers, live_server: Any) -> None:
    """The textarea posts the code; the submission page refreshes itself until the verdict is final."""
    from playwright.sync_api import expect

    drill = make_drill()
    client = Client()
    client.force_login(make_user("no-js"))
    context = browser.new_context(java_script_enabled=False)
    context.set_default_timeout(VERDICT_TIMEOUT_MS)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}])
    page = context.new_page()
    page.goto(f"{live_server.url}/drills/{drill.slug}/")
    page.fill("textarea[name=code]", RIGHT)
    page.get_by_role("button", name="Submit").click()
    expect(page).to_have_url(f"{live_server.url}/drills/submissions/{Submission.objects.get().uuid}/")
    expect(page.locator("#verdict")).to_have_attribute("data-status", "accepted", timeout=VERDICT_TIMEOUT_MS)
    expect(page.locator("[data-rated]")).to_contain_text("Accepted: rated 5")
    context.close()


@pytest.mark.parametrize("width", [390, 1280])
def test_a_solution_that_changes_its_argument_is_told_so_and_the_fix_gets_advice(
    browser: Any, grading_worker: Workers, live_server: Any, width: int
) -> None:
    """Through the real worker and sandbox: the contract under the prompt, the teacher's message with the line,
    then an accepted loop with advice and the run's facts, at phone and desktop widths."""
    from playwright.sync_api import expect

    if not EDITOR_BUNDLE.exists():
        pytest.skip("static/dist/editor.js is missing: run `make frontend`")
    drill = make_drill()
    context = browser.new_context(viewport={"width": width, "height": 1400}, color_scheme="light")
    context.set_default_timeout(10_000)
    client = Client()
    client.force_login(make_user(f"contract-{width}"))
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}])
    page = context.new_page()
    page.goto(f"{live_server.url}/drills/{drill.slug}/")
    expect(page.locator("[data-contract][data-lang='en']")).to_contain_text("leaves every argument untouched")
    set_code(page, "def solution(x):\n    x += 1\n    return x\n")
    page.get_by_role("button", name="Submit").click()
    verdict = page.locator("#verdict")
    expect(verdict).to_have_attribute("data-status", "wrong_answer", timeout=VERDICT_TIMEOUT_MS)
    expect(verdict).to_contain_text("your function changed its argument x (line 2: x += 1)")
    expect(verdict.locator("code", has_text="x += 1")).to_have_count(1)  # code, not raw backticks (issue 38)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    if width == 390:
        save_docs_screenshot(page, "drill-contract-verdict-phone.png")
    set_code(
        page,
        "def solution(x):\n    out = x.clone()\n    for i in range(len(x)):\n        out[i] += 1\n    return out\n",
    )
    page.get_by_role("button", name="Submit").click()
    expect(verdict).to_have_attribute("data-status", "accepted", timeout=VERDICT_TIMEOUT_MS)
    expect(verdict.locator("[data-advice]")).to_contain_text("a Python loop over the elements of x")
    expect(verdict.locator("[data-advice]")).not_to_contain_text("`")
    expect(verdict.locator("[data-run-facts]")).to_contain_text("peak memory")
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    if width == 1280:
        save_docs_screenshot(page, "drill-contract-advice.png")
    context.close()
