"""Hints on the drill page in a real browser: closed at first, opened one at a time by htmx without a reload,
shown in the statement's language (the English / 中文 toggle switches them too), recorded on the review."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from cards.models import Card, Note
from graders.drills.schema import parse_drill
from graders.management.commands.import_drills import card_fields, card_key, drill_fields
from graders.models import Drill, DrillReview
from tests.cards.factories import make_user
from tests.graders.conftest import drill_text
from tests.graders.test_hints import HINTS, hints_toml

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def make_drill() -> Drill:
    note = Note.objects.create(
        slug="pytorch-basics", path="notes/pytorch-basics.md", title="PyTorch basics", content="# Tensors\n",
        content_hash="0",
    )  # fmt: skip
    text = drill_text() + hints_toml(HINTS[:2])
    spec = parse_drill(text, "notes/drills/add-one.toml")
    card = Card.objects.create(key=card_key(spec.slug), **card_fields(spec, note, 10_001))
    return Drill.objects.create(slug=spec.slug, card=card, **drill_fields(spec, text, spec.path))


def test_a_learner_opens_the_hints_one_at_a_time_in_the_statements_language(browser: Any, live_server: Any) -> None:
    from playwright.sync_api import expect

    drill = make_drill()
    client = Client()
    client.force_login(make_user("hinted"))
    context = browser.new_context(viewport={"width": 1100, "height": 1200}, locale="en-US")
    context.set_default_timeout(10_000)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}])
    page = context.new_page()
    page.goto(f"{live_server.url}/drills/{drill.slug}/")

    expect(page.get_by_text(HINTS[0][0])).to_have_count(0)
    page.get_by_role("button", name="Show hint 1 of 2").click()
    expect(page.get_by_text(HINTS[0][0])).to_be_visible()
    expect(page.get_by_text(HINTS[0][1])).to_be_hidden()  # the statement's other language waits for the toggle
    expect(page.get_by_role("button", name="Show hint 2 of 2")).to_be_visible()
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1  # no reload: htmx swapped it
    assert DrillReview.objects.get().hints_opened == 1

    page.locator("[data-lang-toggle]").click()
    expect(page.get_by_text(HINTS[0][1])).to_be_visible()
    expect(page.get_by_text(HINTS[0][0])).to_be_hidden()
    page.get_by_role("button", name="Show hint 2 of 2").click()
    expect(page.get_by_text(HINTS[1][1])).to_be_visible()  # a hint opened after the toggle follows it
    expect(page.get_by_role("button", name="Show hint")).to_have_count(0)
    assert DrillReview.objects.get().hints_opened == 2
    context.close()
