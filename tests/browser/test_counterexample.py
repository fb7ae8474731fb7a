"""A counterexample in the browser, through a real worker (issue 41 item 2): a learner whose code passes the example
and fails a hidden case sees the verdict, then an input of new random cases their code gets wrong (never a hidden
one), puts it into "Run" with one click, sees the same difference there, fixes the code and is accepted."""

from __future__ import annotations

from typing import Any

import pytest

from graders.models import Counterexample, DrillRun, Submission
from tests.browser.test_drill_flow import EDITOR_BUNDLE, VERDICT_TIMEOUT_MS, logged_in_page, make_drill, set_code
from tests.cards.factories import make_user
from tests.conftest import Workers
from tests.graders.conftest import HIDDEN_WRONG, RIGHT

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]


# The smallest input of new random cases that HIDDEN_WRONG gets wrong (a 2-D tensor: the example is 1-D).
COUNTEREXAMPLE_ARGUMENTS = "torch.tensor([[0.0]], dtype=torch.float32)"


def fail_a_hidden_case_and_see_the_counterexample(page: Any) -> Any:
    """Submits HIDDEN_WRONG on the open drill page; waits for the wrong-answer verdict and then the counterexample
    that follows it. Returns the counterexample's element."""
    from playwright.sync_api import expect

    set_code(page, HIDDEN_WRONG)
    page.get_by_role("button", name="Submit").click()
    verdict = page.locator("#verdict")
    expect(verdict).to_have_attribute("data-status", "wrong_answer", timeout=VERDICT_TIMEOUT_MS)
    expect(verdict.locator("[data-test='small']")).to_contain_text("passed")
    found = verdict.locator("#counterexample")
    expect(found).to_have_attribute("data-counterexample", "done", timeout=VERDICT_TIMEOUT_MS)
    expect(found).to_contain_text("Your code gets this input wrong")
    expect(found.locator("[data-counterexample-arguments]")).to_have_text(f"solution({COUNTEREXAMPLE_ARGUMENTS})")
    expect(found.locator("[data-counterexample-expected]")).to_contain_text("tensor([[1.]])")
    expect(found.locator("[data-counterexample-actual]")).to_contain_text("tensor([[0.]])")
    return found


def run_the_counterexample(page: Any, found: Any) -> None:
    """One click puts the counterexample into "Run"; the run shows the same difference."""
    from playwright.sync_api import expect

    found.locator("[data-use-counterexample]").click()
    expect(page.locator("textarea[data-arguments]")).to_have_value(COUNTEREXAMPLE_ARGUMENTS)
    page.locator("[data-run-input]").click()
    result = page.locator("#run-result")
    expect(result).to_have_attribute("data-status", "done", timeout=VERDICT_TIMEOUT_MS)
    expect(result.locator("[data-run-differs]")).to_be_visible()
    expect(result.locator("[data-expected]")).to_contain_text("tensor([[1.]])")
    expect(result.locator("[data-actual]")).to_contain_text("tensor([[0.]])")


def submit_the_fix(page: Any, code: str) -> None:
    """Accepted by the worker, and no counterexample for an accepted attempt."""
    from playwright.sync_api import expect

    set_code(page, code)
    page.get_by_role("button", name="Submit").click()
    verdict = page.locator("#verdict")
    expect(verdict).to_have_attribute("data-status", "accepted", timeout=VERDICT_TIMEOUT_MS)
    expect(verdict.locator("#counterexample")).to_have_count(0)


def test_a_hidden_failure_gets_a_counterexample_that_run_reproduces_and_the_fix_is_accepted(
    browser: Any, grading_worker: Workers, live_server: Any
) -> None:
    from playwright.sync_api import expect

    if not EDITOR_BUNDLE.exists():
        pytest.skip("static/dist/editor.js is missing: run `make frontend`")
    drill = make_drill()
    page = logged_in_page(browser, live_server.url, make_user("cex-learner"))
    page.goto(f"{live_server.url}/drills/{drill.slug}/", timeout=VERDICT_TIMEOUT_MS)  # a shared machine: slow loads
    expect(page.locator(".cm-editor")).to_be_visible()
    page.evaluate("window.__samePage = true")

    # 1. Right on the example, wrong on the hidden cases: the verdict says only that a hidden case failed.
    # 2. The counterexample follows the verdict: the smallest input of new random cases the code gets wrong.
    found = fail_a_hidden_case_and_see_the_counterexample(page)
    cex = Counterexample.objects.get()
    assert cex.submission.status == "wrong_answer" and cex.finished_at >= cex.submission.finished_at

    # 3. One click puts it into "Run"; the run shows the same difference.
    run_the_counterexample(page, found)

    # 4. Fixed: accepted, and no counterexample for an accepted attempt.
    submit_the_fix(page, RIGHT)
    assert page.evaluate("window.__samePage") is True
    assert DrillRun.objects.get().arguments == [COUNTEREXAMPLE_ARGUMENTS]
    assert [s.status for s in Submission.objects.order_by("queued_at")] == ["wrong_answer", "accepted"]
