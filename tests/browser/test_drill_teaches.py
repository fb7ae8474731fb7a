"""A drill that keeps teaching after the verdict, end to end through a real worker (issue 41's "Done means"): in one
session a learner fails a hidden case, gets a counterexample (and the verdict fits a 390 px phone), runs it with
"Run", fixes the code, is accepted, opens the solutions and reads the comment their team's teacher left on that
group before they solved.

The steps are the two halves' own helpers (tests/browser/test_counterexample.py, test_drill_solutions.py), walked
in one page: what each half asserts, this journey asserts too."""

from __future__ import annotations

from typing import Any

import pytest

from graders.drills.solution_key import solution_key
from graders.models import Counterexample, DrillRun, Submission
from teams.models import SolutionComment
from tests.browser.test_counterexample import (
    COUNTEREXAMPLE_ARGUMENTS,
    fail_a_hidden_case_and_see_the_counterexample,
    run_the_counterexample,
    submit_the_fix,
)
from tests.browser.test_drill_flow import EDITOR_BUNDLE, VERDICT_TIMEOUT_MS, logged_in_page, make_drill
from tests.browser.test_drill_solutions import (
    LEARNER_CODE,
    TEACHER_SAYS,
    a_team_whose_teacher_commented,
    open_the_solutions_and_read_the_teachers_comment,
)
from tests.cards.factories import make_user
from tests.conftest import Workers
from tests.graders.conftest import HIDDEN_WRONG, RIGHT

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1100, "height": 1400}  # logged_in_page's


def assert_fits(page: Any, element: Any, width: int) -> None:
    """Nothing wider than the screen, and the element inside it (a long tensor scrolls inside its own box)."""
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, overflow
    box = element.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box


def test_a_learner_fails_a_hidden_case_runs_the_counterexample_fixes_it_and_reads_the_teachers_comment(
    browser: Any, grading_worker: Workers, live_server: Any
) -> None:
    from playwright.sync_api import expect

    if not EDITOR_BUNDLE.exists():
        pytest.skip("static/dist/editor.js is missing: run `make frontend`")
    drill = make_drill()
    learner = make_user("journey-learner")
    # Beforehand: the teacher commented on the group of a classmate's RIGHT, the group the learner's fix falls in.
    a_team_whose_teacher_commented(drill, learner)
    comment = SolutionComment.objects.get()
    assert comment.solution_key == solution_key(LEARNER_CODE) == solution_key(RIGHT)

    page = logged_in_page(browser, live_server.url, learner)
    page.goto(f"{live_server.url}/drills/{drill.slug}/", timeout=VERDICT_TIMEOUT_MS)  # a shared machine: slow loads
    expect(page.locator(".cm-editor")).to_be_visible()
    expect(page.locator("[data-solutions-link]")).to_have_count(0)  # closed before solving
    page.evaluate("window.__samePage = true")

    # 1. Right on the example, wrong on a hidden case: the verdict, then a counterexample of new random cases.
    found = fail_a_hidden_case_and_see_the_counterexample(page)
    expect(page.locator("[data-solutions-link]")).to_have_count(0)  # a wrong answer opens nothing

    # 2. The verdict in its counterexample state fits a phone.
    page.set_viewport_size(PHONE)
    assert_fits(page, page.locator("#verdict"), PHONE["width"])
    for part in ("[data-counterexample-arguments]", "[data-counterexample-expected]", "[data-counterexample-actual]"):
        assert_fits(page, found.locator(part), PHONE["width"])
    assert_fits(page, found.locator("[data-use-counterexample]"), PHONE["width"])
    page.set_viewport_size(DESKTOP)

    # 3. "Put it in Run": the run shows the same difference.
    run_the_counterexample(page, found)

    # 4. Fixed in the learner's own spelling: accepted, in the commented group.
    submit_the_fix(page, LEARNER_CODE)

    # 5. The verdict brings the solutions link with the comment waiting, no reload; the solutions show it on their
    # group.
    open_the_solutions_and_read_the_teachers_comment(page)
    expect(page.locator("[data-group][data-mine] [data-comment]")).to_contain_text(TEACHER_SAYS)

    attempts = list(Submission.objects.filter(user=learner).order_by("queued_at"))
    assert [(s.status, s.code) for s in attempts] == [("wrong_answer", HIDDEN_WRONG), ("accepted", LEARNER_CODE)]
    assert attempts[1].solution_key == comment.solution_key  # keyed by the worker
    assert comment.created_at < attempts[1].finished_at  # the comment came first
    assert Counterexample.objects.get().submission == attempts[0]
    assert DrillRun.objects.get().arguments == [COUNTEREXAMPLE_ARGUMENTS]
