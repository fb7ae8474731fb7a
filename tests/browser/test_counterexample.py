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
    set_code(page, HIDDEN_WRONG)
    page.get_by_role("button", name="Submit").click()
    verdict = page.locator("#verdict")
    expect(verdict).to_have_attribute("data-status", "wrong_answer", timeout=VERDICT_TIMEOUT_MS)
    expect(verdict.locator("[data-test='small']")).to_contain_text("passed")

    # 2. The counterexample follows the verdict: the smallest input of new random cases the code gets wrong.
    found = verdict.locator("#counterexample")
    expect(found).to_have_attribute("data-counterexample", "done", timeout=VERDICT_TIMEOUT_MS)
    expect(found).to_contain_text("Your code gets this input wrong")
    expect(found.locator("[data-counterexample-arguments]")).to_have_text(
        "solution(torch.tensor([[0.0]], dtype=torch.float32))"
    )
    expect(found.locator("[data-counterexample-expected]")).to_contain_text("tensor([[1.]])")
    expect(found.locator("[data-counterexample-actual]")).to_contain_text("tensor([[0.]])")
    cex = Counterexample.objects.get()
    assert cex.submission.status == "wrong_answer" and cex.finished_at >= cex.submission.finished_at

    # 3. One click puts it into "Run"; the run shows the same difference.
    found.locator("[data-use-counterexample]").click()
    arguments = page.locator("textarea[data-arguments]")
    expect(arguments).to_have_value("torch.tensor([[0.0]], dtype=torch.float32)")
    page.locator("[data-run-input]").click()
    result = page.locator("#run-result")
    expect(result).to_have_attribute("data-status", "done", timeout=VERDICT_TIMEOUT_MS)
    expect(result.locator("[data-run-differs]")).to_be_visible()
    expect(result.locator("[data-expected]")).to_contain_text("tensor([[1.]])")
    expect(result.locator("[data-actual]")).to_contain_text("tensor([[0.]])")

    # 4. Fixed: accepted, and no counterexample for an accepted attempt.
    set_code(page, RIGHT)
    page.get_by_role("button", name="Submit").click()
    expect(verdict).to_have_attribute("data-status", "accepted", timeout=VERDICT_TIMEOUT_MS)
    expect(verdict.locator("#counterexample")).to_have_count(0)
    assert page.evaluate("window.__samePage") is True
    assert DrillRun.objects.get().arguments == ["torch.tensor([[0.0]], dtype=torch.float32)"]
    assert [s.status for s in Submission.objects.order_by("queued_at")] == ["wrong_answer", "accepted"]
