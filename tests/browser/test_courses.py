"""A team's course in a real browser (Playwright, chromium) at 390 px and 1280 px: the owner names an editor, the
editor uploads two notes, reads the import report and confirms, and a member meets a card of it in review; the
course page, the report, the team page's course section, the decks page and the hub (both filtered by course)
never scroll sideways."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client

from cards.models import Card, Note
from courses import services
from teams import services as team_services
from teams.models import Membership, Team
from tests.browser.test_pages_on_phone_and_desktop import no_sideways_scroll
from tests.cards.factories import make_user
from tests.courses.base import AUTOGRAD, SHAPES

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (390, 1280)
# Two notes that give only cards the importer makes live at once (no output card: no worker needed here).
GRADIENTS = AUTOGRAD.split("## 输出")[0]


def signed_in(browser: Any, base: str, user: AbstractBaseUser, width: int) -> Any:
    """A page of a fresh context at ``width`` px, signed in as ``user`` (the session of a forced login)."""
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.set_default_timeout(15_000)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": base}])
    return context.new_page()


def team_of_three() -> tuple[Team, AbstractBaseUser, AbstractBaseUser, AbstractBaseUser]:
    owner, editor, member = (make_user(name, time_zone="UTC") for name in ("olivia", "edith", "max"))
    team = team_services.create_team(owner, "Tensor Tamers", "UTC")
    team_services.join(team, editor)
    team_services.join(team, member)
    return team, owner, editor, member


@pytest.mark.parametrize("width", WIDTHS)
def test_an_editor_brings_two_notes_and_a_member_reviews_a_card_of_them(
    browser: Any, live_server: Any, width: int
) -> None:
    from playwright.sync_api import expect

    base = live_server.url
    team, owner, editor, member = team_of_three()
    # The owner names the editor on the team page.
    page = signed_in(browser, base, owner, width)
    page.goto(f"{base}/teams/{team.slug}/")
    page.locator("ul.members li", has_text="edith").locator('[data-testid="make-editor"]').click()
    expect(page.locator("ul.members li", has_text="edith")).to_contain_text("Editor")
    assert Membership.objects.get(user=editor).can_edit_course
    page.context.close()
    # The editor uploads two notes, reads the report, confirms.
    page = signed_in(browser, base, editor, width)
    page.goto(f"{base}/teams/{team.slug}/")
    page.locator('[data-testid="course-upload-link"]').click()
    no_sideways_scroll(page, "the course page (editor, empty)")
    page.set_input_files(
        "#id_files",
        [
            {"name": "gradients.md", "mimeType": "text/markdown", "buffer": GRADIENTS.encode()},
            {"name": "shapes.md", "mimeType": "text/markdown", "buffer": SHAPES.encode()},
        ],
    )
    page.locator('[data-testid="upload-submit"]').click()
    expect(page.locator('[data-testid="report-totals"]')).to_contain_text("2 notes: 8 cards to create")
    expect(page.locator("section[data-note]")).to_have_count(2)
    expect(
        page.locator('section[data-note="gradients"] [data-testid="preview-card"][data-kind="mapping"]')
    ).to_have_count(2)
    no_sideways_scroll(page, "the import report")
    assert not Note.objects.exists()  # nothing written before the confirmation
    page.locator('[data-testid="confirm-upload"]').click()
    imported = "Imported 2 notes into the course: 8 new cards, 0 changed, 0 retired."
    expect(page.locator("ul.messages")).to_contain_text(imported)
    expect(page.locator('[data-testid="course-notes"] tr[data-note]')).to_have_count(2)
    no_sideways_scroll(page, "the course page (editor)")
    page.context.close()
    # A member meets one of its cards in review, and sees the course on the team page.
    course = Team.objects.get(pk=team.pk).course
    page = signed_in(browser, base, member, width)
    page.goto(f"{base}/review/")
    card = page.locator("article.card")
    expect(card).to_be_visible()
    uuid = card.get_attribute("data-card")
    assert Card.objects.get(uuid=uuid).note.course == course
    page.goto(f"{base}/teams/{team.slug}/")
    expect(page.locator('[data-testid="course-kinds"]')).to_contain_text("8 cards")
    assert page.locator('[data-testid="course-export"]').count() == 0  # not an editor
    no_sideways_scroll(page, "the team page with its course")
    page.context.close()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_course_pages_and_filters_fit_and_hide_the_course_from_outsiders(
    browser: Any, live_server: Any, width: int
) -> None:
    from playwright.sync_api import expect

    base = live_server.url
    team, owner, editor, member = team_of_three()
    Membership.objects.filter(user=editor).update(role=Membership.Role.EDITOR)
    upload = services.preview(
        team, editor, services.gather([("gradients.md", GRADIENTS.encode())], services.Caps.from_settings())
    )
    services.confirm(upload, editor)
    pending = services.preview(
        Team.objects.get(pk=team.pk),
        editor,
        services.gather([("shapes.md", SHAPES.encode())], services.Caps.from_settings()),
    )
    course = Team.objects.get(pk=team.pk).course
    page = signed_in(browser, base, editor, width)
    page.goto(f"{base}/courses/{team.slug}/uploads/{pending.uuid}/")
    no_sideways_scroll(page, "a pending import report")
    page.goto(f"{base}/courses/{team.slug}/")
    expect(page.locator('[data-testid="recent-uploads"]')).to_be_visible()
    no_sideways_scroll(page, "the course page")
    page.context.close()
    page = signed_in(browser, base, member, width)
    page.goto(f"{base}/decks/?course={course.slug}")
    expect(page.locator("[data-course-filter] select")).to_have_value(course.slug)
    expect(page.locator(".browse-table tbody tr")).to_have_count(1)
    no_sideways_scroll(page, "the decks page filtered by course")
    page.goto(f"{base}/courses/{team.slug}/")
    assert page.locator('[data-testid="upload-form"]').count() == 0
    no_sideways_scroll(page, "the course page (member)")
    page.goto(f"{base}/drills/?course={course.slug}")
    no_sideways_scroll(page, "the hub filtered by course")
    page.context.close()
    page = signed_in(browser, base, make_user("oscar"), width)
    for path in (f"/courses/{team.slug}/", f"/courses/{team.slug}/uploads/{pending.uuid}/", f"/teams/{team.slug}/"):
        assert page.goto(base + path).status == 404, path
    page.goto(f"{base}/decks/?course={course.slug}")
    expect(page.locator("main")).not_to_contain_text(GRADIENTS.splitlines()[0].lstrip("# "))
    page.context.close()
