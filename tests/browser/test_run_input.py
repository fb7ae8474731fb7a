""" "Run on your own input" in the browser, through a real worker: arguments refused before anything is queued,
then both outputs and the diff in place, without a reload, and nothing graded."""

from __future__ import annotations

from typing import Any

import pytest

from graders.models import DrillRun, Submission
from tests.browser.test_drill_flow import EDITOR_BUNDLE, VERDICT_TIMEOUT_MS, logged_in_page, make_drill, set_code
from tests.cards.factories import make_user
from tests.conftest import Workers
from tests.graders.conftest import WRONG

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]


def test_it_runs_the_learners_input_beside_the_reference(
    browser: Any, grading_worker: Workers, live_server: Any
) -> None:
    from playwright.sync_api import expect

    if not EDITOR_BUNDLE.exists():
        pytest.skip("static/dist/editor.js is missing: run `make frontend`")
    drill = make_drill()
    page = logged_in_page(browser, live_server.url, make_user("run-learner"))
    page.goto(f"{live_server.url}/drills/{drill.slug}/")
    expect(page.locator(".cm-editor")).to_be_visible()
    page.evaluate("window.__samePage = true")
    set_code(page, WRONG)
    page.get_by_text("Run on your own input").click()
    arguments = page.locator("[data-arguments]")
    run = page.locator("[data-run-input]")

    # 1. Outside the case language: a clear message in the run's slot, nothing stored.
    arguments.fill("open('/etc/passwd')")
    run.click()
    expect(page.locator("#run-slot [data-refused]")).to_contain_text("uses the unknown name 'open'")
    assert not DrillRun.objects.exists()

    # 2. Real arguments: the reference's output beside the learner's, and the verdicts' diff.
    arguments.fill("torch.tensor([1.0, 5.0])")
    run.click()
    result = page.locator("#run-result")
    expect(result).to_have_attribute("data-status", "done", timeout=VERDICT_TIMEOUT_MS)
    expect(result.locator("[data-actual]")).to_contain_text("tensor([3., 7.])")
    expect(result.locator("[data-expected]")).to_contain_text("tensor([2., 6.])")
    expect(result.locator("[data-mismatch] [data-index]")).to_have_text("[0]")
    assert page.evaluate("window.__samePage") is True
    assert DrillRun.objects.get().code == WRONG and not Submission.objects.exists()
