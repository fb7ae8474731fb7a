"""Solutions after solving (issue 41 item 3), through a real worker: a learner is accepted, the verdict brings a link to
the solutions without a reload, and the solutions page shows their group with the comment their team's teacher left
on it before they solved (the comment names a normalised-code group, so it reaches later learners too); at a phone's
width and a desktop's."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from graders.drills.solution_key import solution_key
from graders.models import Drill, DrillReview, Submission
from teams import services, solutions
from tests.browser.test_drill_flow import (
    EDITOR_BUNDLE,
    VERDICT_TIMEOUT_MS,
    logged_in_page,
    make_drill,
    save_docs_screenshot,
    set_code,
)
from tests.cards.factories import make_user
from tests.conftest import Workers
from tests.graders.conftest import RIGHT

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

# The learner's spelling: other names, a comment, another layout; the same group as RIGHT and the reference.
LEARNER_CODE = "def solution(values):\n    # shift every element\n    return values+1\n"
TEACHER_SAYS = "Broadcasting adds the scalar everywhere: no loop needed."


def a_team_whose_teacher_commented(drill: Drill, learner: AbstractBaseUser) -> AbstractBaseUser:
    """The learner's team, before they solve: a classmate solved the drill (RIGHT, the reference's group) and the
    team's teacher, who looked at the reference, commented on that group through the solutions service (which
    checks the group is one of the team's). Returns the teacher."""
    teacher, classmate = make_user("teacher"), make_user("classmate")
    team = services.create_team(teacher, "Tensor Tamers", "UTC")
    services.join(team, classmate)
    services.join(team, learner)
    Submission.objects.create(
        user=classmate, drill=drill, code=RIGHT, kind="submit", seed=1, drill_version=drill.version,
        status="accepted", verdict={"status": "accepted"}, solution_key=solution_key(RIGHT), finished_at=timezone.now(),
    )  # fmt: skip
    DrillReview.objects.create(user=teacher, drill=drill, seed=1, reference_viewed_at=timezone.now())  # opens them
    solutions.add_comment(teacher, drill, solution_key(RIGHT), team.slug, TEACHER_SAYS)
    return teacher


def open_the_solutions_and_read_the_teachers_comment(page: Any) -> Any:
    """After an accept of LEARNER_CODE on the drill page: the verdict brought the link to the solutions, with the
    comment waiting on the learner's group, without a reload; the solutions show the learner's group (the learner
    and the classmate), in the learner's own spelling, the reference marked, and the teacher's comment on it.
    Returns the group's element."""
    from playwright.sync_api import expect

    link = page.locator("#drill-parts [data-solutions-link]")
    expect(link.locator("[data-solutions-comments]")).to_contain_text("A teacher commented on your solution")
    assert page.evaluate("window.__samePage") is True
    link.get_by_role("link").click()
    group = page.locator("[data-group][data-mine]")
    expect(group).to_have_count(1)
    expect(group.locator("h2")).to_contain_text("2 learners")
    expect(group.locator("[data-reference-badge]")).to_be_visible()
    expect(group.locator("pre")).to_contain_text("return values+1")
    expect(group.locator("[data-comment]")).to_have_count(1)
    expect(group.locator("[data-comment]")).to_contain_text(TEACHER_SAYS)
    expect(group.locator("[data-comment]")).to_contain_text("teacher, teacher of Tensor Tamers")
    return group


def test_an_accepted_learner_opens_the_solutions_and_reads_the_teachers_comment(
    browser: Any, grading_worker: Workers, live_server: Any
) -> None:
    from playwright.sync_api import expect

    if not EDITOR_BUNDLE.exists():
        pytest.skip("static/dist/editor.js is missing: run `make frontend`")
    drill = make_drill()
    learner = make_user("solver")
    teacher = a_team_whose_teacher_commented(drill, learner)
    page = logged_in_page(browser, live_server.url, learner)

    # 1. Before solving, the solutions stay closed.
    page.goto(f"{live_server.url}/teams/solutions/{drill.slug}/")
    expect(page.locator("[data-solutions-closed]")).to_be_visible()
    expect(page.locator("[data-group]")).to_have_count(0)

    # 2. Accepted by the real worker: the verdict brings the link (and the waiting comment) in, no reload.
    page.goto(f"{live_server.url}/drills/{drill.slug}/")
    expect(page.locator(".cm-editor")).to_be_visible()
    expect(page.locator("[data-solutions-link]")).to_have_count(0)
    page.evaluate("window.__samePage = true")
    set_code(page, LEARNER_CODE)
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#verdict")).to_have_attribute("data-status", "accepted", timeout=VERDICT_TIMEOUT_MS)
    assert Submission.objects.get(user=learner).solution_key == solution_key(RIGHT)  # keyed by the worker

    # 3. The solutions: one group of two learners, the learner's own spelling, the reference marked, the comment.
    group = open_the_solutions_and_read_the_teachers_comment(page)

    # 4. Readable at a phone's width and a desktop's: nothing wider than the screen.
    for width in (390, 1280):
        page.set_viewport_size({"width": width, "height": 900})
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, (width, overflow)
        box = group.locator("[data-comment]").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, (width, box)

    # 5. The teacher, on a phone, comments on the group through the page; the learner reads both comments.
    teacher_page = logged_in_page(browser, live_server.url, teacher)
    teacher_page.set_viewport_size({"width": 390, "height": 900})
    teacher_page.goto(f"{live_server.url}/teams/solutions/{drill.slug}/")
    teachers_group = teacher_page.locator(f"[data-group='{solution_key(RIGHT)}']")
    teachers_group.get_by_text("Comment on this group").click()
    teachers_group.locator("[data-new-comment] textarea[name='text']").fill("Also try torch.add(x, 1).")
    overflow = teacher_page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, overflow
    save_docs_screenshot(teacher_page, "drill-solutions-phone.png")
    teachers_group.get_by_role("button", name="Add the comment").click()
    expect(teachers_group.locator("[data-comment]")).to_have_count(2)
    page.reload()
    expect(group.locator("[data-comment]").nth(1)).to_contain_text("Also try torch.add(x, 1).")

    # 6. The teacher changes their first comment from the form under it; the learner reads the new text, marked edited.
    first = teachers_group.locator("[data-comment]").first
    first.get_by_text("Edit or delete your comment").click()
    first.locator("textarea[name='text']").fill("Broadcasting adds the scalar to every element.")
    first.get_by_role("button", name="Save the comment").click()
    expect(teachers_group.locator("[data-comment]").first).to_contain_text("to every element")
    page.reload()
    expect(group.locator("[data-comment]").first).to_contain_text("Broadcasting adds the scalar to every element.")
    expect(group.locator("[data-comment]").first.locator("[data-comment-edited]")).to_be_visible()
