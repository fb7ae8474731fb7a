"""Issue 28 item 4 in the browser: a passage a card corrects shows the correction beside it on the note page,
at 390 px (a phone) and 1280 px, without sideways scroll."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from tests.browser.test_pages_on_phone_and_desktop import WIDTHS, no_sideways_scroll, page_at, screenshot
from tests.browser.test_review_flow import sign_up

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NOTES = Path(__file__).resolve().parents[2] / "notes"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_note_page_shows_each_correction_after_its_passage(browser: Any, live_server: Any, width: int) -> None:
    from playwright.sync_api import expect

    call_command("import_notes", str(NOTES / "pytorch-basics.md"), verbosity=0)
    page = page_at(browser, width)
    sign_up(page, live_server.url, f"reader{width}")
    page.goto(f"{live_server.url}/notes/pytorch-basics/")
    no_sideways_scroll(page, "/notes/pytorch-basics/")
    callouts = page.locator(".note .correction")
    expect(callouts).to_have_count(18)
    loss = callouts.filter(has_text="total_loss += loss.item()")
    loss.scroll_into_view_if_needed()
    expect(loss).to_be_visible()
    expect(loss).to_contain_text("更正 · Correction")
    # The author's wrong code stays on the page, in the block right before the callout.
    before = loss.evaluate("el => el.previousElementSibling.textContent")
    assert "total_loss += loss" in before and "item()" not in before.split("total_loss")[-1]
    if width == 390:
        page.evaluate("document.querySelectorAll('.note .correction')[0].scrollIntoView({block: 'center'})")
        screenshot(page, "note-correction-phone.png")
    page.context.close()
