"""An editor writes a drill in the browser, with a known-wrong solution, checks it on the real worker, publishes
it; a member of the team solves it; at 390 px (a phone) and 1280 px (a laptop), never scrolling sideways.

The worker (``celery -A quizsite worker -Q grade_cpu,celery``, on the test database and a real Redis) runs the
check in its sandbox pool and grades the member's submission; the pages learn both by htmx polling.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client

from cards.models import CardState
from courses.drill_views import team_course
from graders.models import Drill, DrillDraft, DrillRevision
from teams import services
from teams.models import Membership
from tests.cards.factories import make_note, make_user
from tests.conftest import Workers

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

DOCS = Path(__file__).resolve().parents[2] / "docs"
EDITOR_BUNDLE = Path(__file__).resolve().parents[2] / "static" / "dist" / "editor.js"
WORKER_TIMEOUT_MS = 60_000  # the first check waits for the worker's sandbox child to import torch
REFERENCE = "import torch\n\n\ndef solution(x):\n    return x * 2\n"
WRONG = "def solution(x):\n    return x + 2\n"
RIGHT = "def solution(x):\n    return 2 * x\n"


def page_for(browser: Any, base: str, user: AbstractBaseUser, width: int) -> Any:
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme="light")
    context.set_default_timeout(10_000)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": base}])
    return context.new_page()


def no_sideways_scroll(page: Any, what: str) -> None:
    scrolled, shown = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert scrolled <= shown, f"{what} scrolls sideways: {scrolled} > {shown}"


def set_code(page: Any, field: str, code: str) -> None:
    """Type into a code field's editor (CodeMirror keeps its textarea, the form field, in step)."""
    page.evaluate(
        "([name, code]) => document.querySelector(`textarea[name='${name}']`).quizEditor.setValue(code)", [field, code]
    )


@pytest.mark.parametrize("width", [390, 1280])
def test_an_editor_writes_checks_and_publishes_a_drill_that_a_member_solves(
    browser: Any, grading_worker: Workers, live_server: Any, width: int
) -> None:
    from playwright.sync_api import expect

    if not EDITOR_BUNDLE.exists():
        pytest.skip("static/dist/editor.js is missing: run `make frontend`")
    owner, editor, member = make_user(f"owner{width}"), make_user(f"editor{width}"), make_user(f"member{width}")
    team = services.create_team(owner, "Tensor Tamers", "UTC")
    for user in (editor, member):
        services.join(team, user)
    Membership.objects.filter(team=team, user=editor).update(role=Membership.Role.EDITOR)
    course = team_course(team)
    make_note(slug=course.qualified("basics"), course=course, path="basics.md", content="# Basics\n\n## Tensors\n")
    page = page_for(browser, live_server.url, editor, width)

    # 1. A new drill through the form: the starter fills it; code fields are the site's code editor.
    page.goto(f"{live_server.url}/courses/{team.slug}/drills/")
    no_sideways_scroll(page, "the course's drills")
    page.locator("[data-new-drill]").click()
    expect(page.locator(".cm-editor").first).to_be_visible()
    page.fill("input[name=slug]", "double")
    page.fill("input[name=title]", "Double it")
    page.fill("textarea[name=prompt_en]", "Write `solution(x)`: return `2 * x` as a new tensor.")
    page.fill("input[name=source_note]", "basics.md")
    page.fill("input[name=source_heading]", "Tensors")
    set_code(page, "reference", REFERENCE)
    page.fill("input[name='wrong-0-why']", "adds two instead of doubling")
    page.select_option("select[name='wrong-0-expect']", "wrong_answer")
    set_code(page, "wrong-0-code", WRONG)
    no_sideways_scroll(page, "the new drill's form")
    page.locator("[data-save]").click()
    draft = DrillDraft.objects.get()
    expect(page).to_have_url(f"{live_server.url}/courses/{team.slug}/drills/{draft.uuid}/")

    # 2. Save and check: the real worker runs the reference on every case, the wrong solution is refused.
    page.locator("[data-save-check]").click()
    report = page.locator("#check")
    expect(report.locator("[data-check-result]")).to_have_attribute(
        "data-check-result", "passed", timeout=WORKER_TIMEOUT_MS
    )
    expect(report.locator("[data-item='wrong']")).to_contain_text("adds two instead of doubling")
    expect(report.locator("[data-item='wrong']")).to_have_attribute("data-passed", "true")
    # The contract sentence and what a learner sees, the reference's output beside the example.
    expect(page.locator("[data-contract][lang='en']")).to_contain_text("returns a new result that shares no memory")
    expect(page.locator("[data-example='small'] [data-expected]")).to_contain_text("tensor([2., 4., 6.])")
    no_sideways_scroll(page, "the checked drill")
    shot = DOCS / f"drill-authoring-check{'-phone' if width == 390 else ''}.png"
    if not shot.exists() or os.environ.get("UPDATE_SCREENSHOTS") == "1":  # the docs' picture of a check's report
        report.screenshot(path=str(shot))

    # 3. The TOML view holds what the form wrote; publish.
    page.locator("[data-toml-link]").click()
    expect(page.locator(".cm-content")).to_contain_text('slug = "double"')
    page.go_back()
    page.locator("[data-publish]").click()
    expect(page.locator(".messages")).to_contain_text("Published version 1.")
    drill = Drill.objects.get()
    assert drill.slug == course.qualified("double") and DrillRevision.objects.get().number == 1
    page.context.close()

    # 4. A member opens the drill and solves it; the card is scheduled.
    learner = page_for(browser, live_server.url, member, width)
    learner.goto(f"{live_server.url}/drills/{drill.slug}/")
    expect(learner.locator("h1")).to_have_text("Double it")
    learner.evaluate("code => window.quizDrillEditor.setValue(code)", RIGHT)
    learner.get_by_role("button", name="Submit").click()
    verdict = learner.locator("#verdict")
    expect(verdict).to_have_attribute("data-status", "accepted", timeout=WORKER_TIMEOUT_MS)
    no_sideways_scroll(learner, "the published drill")
    assert CardState.objects.filter(user=member, card=drill.card).exists()
    learner.context.close()
