"""The drill hub, a wrong answer's verdict and an invite opened while signed out, in a real browser.

No grading worker is needed: the wrong answer is graded in this process by the trusted local runner
and stored the way a worker stores it, so the page shows exactly what a learner would see.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from graders.drills.grading import ReferenceCache, grade
from graders.drills.local import LocalRunner
from graders.models import Drill, Submission
from teams import services
from teams.models import Membership, Team
from tests.browser.test_drill_flow import logged_in_page, make_drill, save_docs_screenshot
from tests.cards.factories import make_user
from tests.graders.conftest import WRONG

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def more_drills(first: Drill) -> list[Drill]:
    """Copies of the add-one drill under other slugs, titles in markdown, with topics and levels."""
    drills = [first]
    for n, (title, tags, level) in enumerate(
        [("**Broadcast** a row", ["broadcasting"], "easy"), ("Gather with `index`", ["indexing"], "hard")]
    ):
        drill = Drill.objects.get(pk=first.pk)
        drill.pk, drill.slug, drill.title, drill.tags, drill.difficulty = None, f"copy-{n}", title, tags, level
        drill.card = first.card.__class__.objects.create(
            key=f"drill:copy-{n}", note=first.card.note, kind="drill", front=title, back="", front_html=title,
            back_html="", content_hash="0", position=n,
        )  # fmt: skip
        drill.save()
        drills.append(drill)
    return drills


def test_the_hub_lists_filters_and_opens_drills_by_keyboard(browser: Any, live_server: Any) -> None:
    learner = make_user("hub-learner")
    drills = more_drills(make_drill())
    verdict = grade(drills[0].spec, WRONG, seed=3, runner=LocalRunner(), cache=ReferenceCache())
    Submission.objects.create(
        user=learner, drill=drills[0], code=WRONG, seed=3, drill_version=drills[0].version, status=verdict["status"],
        verdict=verdict, finished_at=timezone.now(),
    )  # fmt: skip
    page = logged_in_page(browser, live_server.url, learner)
    page.goto(f"{live_server.url}/")
    page.get_by_role("link", name="Drills").first.click()
    page.wait_for_url("**/drills/")
    assert page.locator("[data-drill-row]").count() == 3
    assert page.locator("[data-drill-row='add-one'] [data-drill-status]").text_content() == "Attempted"
    assert page.locator("[data-drill-row='copy-0'] .drill-title strong").inner_text() == "Broadcast"
    save_docs_screenshot(page, "drill-hub.png")
    page.select_option("select[name=difficulty]", "hard")
    page.get_by_role("button", name="Filter").click()
    assert page.locator("[data-drill-row]").count() == 1
    page.goto(f"{live_server.url}/drills/")
    second = page.locator("[data-drill-row]").nth(1).get_attribute("data-drill-row")
    page.keyboard.press("j")
    page.keyboard.press("j")
    page.keyboard.press("k")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/drills/{second}/")
    # The drill page's own requests (its examples, its status) finish before the test's database is flushed: one
    # still in a transaction deadlocked the flush's TRUNCATE once.
    page.wait_for_load_state("networkidle")


def test_a_wrong_answer_shows_the_output_beside_the_expected_one(browser: Any, live_server: Any) -> None:
    learner = make_user("wrong-learner")
    drill = make_drill()
    verdict = grade(drill.spec, WRONG, seed=3, runner=LocalRunner(), cache=ReferenceCache())
    sub = Submission.objects.create(
        user=learner, drill=drill, code=WRONG, seed=3, drill_version=drill.version, status=verdict["status"],
        verdict=verdict, finished_at=timezone.now(),
    )  # fmt: skip
    page = logged_in_page(browser, live_server.url, learner)
    page.goto(f"{live_server.url}/drills/{drill.slug}/")
    assert "x + 2" in page.locator("textarea[data-code]").input_value()  # the editor keeps the last code
    page.locator(".cm-content").click()
    page.keyboard.press("End")
    page.keyboard.type("  # my draft")
    page.wait_for_timeout(500)  # the draft is stored 300 ms after the last key
    page.reload()
    assert page.locator("[data-draft-note]").is_visible()
    assert "# my draft" in page.locator("textarea[data-code]").input_value()
    page.goto(f"{live_server.url}/drills/submissions/{sub.uuid}/")
    mismatch = page.locator("[data-mismatch]")
    assert mismatch.count() == 1
    assert mismatch.locator("tr.differs").count() >= 2
    assert "Your output" in mismatch.inner_text() and "torch.float32" in mismatch.inner_text()
    assert page.get_by_text("wrong value").count() == 1  # said once, not three times
    assert page.locator("tr[data-test] .badge:text('hidden')").count() == 3
    save_docs_screenshot(page, "drill-wrong-answer-verdict.png")


def test_an_invite_opened_while_signed_out_survives_sign_up(browser: Any, live_server: Any) -> None:
    owner = make_user("team-owner")
    team = services.create_team(owner, "T" * 100, "UTC")
    invite = f"{live_server.url}/teams/join/{services.invite_token(team)}/"
    context = browser.new_context(viewport={"width": 900, "height": 900})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()
    page.goto(invite)
    page.wait_for_url("**/login/**")
    page.locator("[data-signup-link]").click()
    page.fill("input[name=username]", "newcomer")
    page.fill("input[name=password1]", "a-long-passphrase-9")
    page.fill("input[name=password2]", "a-long-passphrase-9")
    page.get_by_role("button", name="Create account").click()
    page.get_by_role("button", name="Join team").click()
    page.wait_for_url(f"**/teams/{team.slug}/")
    assert Membership.objects.filter(team=team, user=User.objects.get(username="newcomer")).exists()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 900, f"a 100-character team name widened the page to {width}px"
    page.get_by_test_id("copy-invite").click()
    assert page.evaluate("navigator.clipboard.readText()") == page.get_by_test_id("invite-link").input_value()
    assert Team.objects.filter(pk=team.pk).exists()
    context.close()
