"""The hub's fitted difficulty at 390 px (a phone) and 1280 px: beside the label, on screen, no sideways scroll,
the words for staff where the label disagrees, and the quiet marker for a learner."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from graders.models import Drill, DrillDifficulty
from tests.browser.test_pages_on_phone_and_desktop import WIDTHS, no_sideways_scroll, page_at
from tests.browser.test_review_flow import sign_up

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def on_screen(page: Any, selector: str) -> bool:
    box = page.locator(selector).first
    return bool(
        box.evaluate("e => { const r = e.getBoundingClientRect(); return r.left >= 0 && r.right <= innerWidth }")
    )


@pytest.mark.parametrize("width", WIDTHS)
def test_the_fitted_difficulty_fits_beside_the_label(browser: Any, live_server: Any, width: int) -> None:
    call_command("import_notes", "notes", verbosity=0)
    call_command("import_drills", verbosity=0)
    for drill, disagreement in zip(Drill.objects.order_by("pk")[:2], (1, 0), strict=True):
        DrillDifficulty.objects.create(
            drill=drill,
            difficulty=2.0,
            standard_error=0.3,
            attempts=80,
            passed=9,
            quantile=0.95,
            band="hard",
            disagreement=disagreement,
            fitted_at=timezone.now(),
        )
    page = page_at(browser, width)
    sign_up(page, live_server.url, f"fit{width}")
    page.goto(f"{live_server.url}/drills/")
    no_sideways_scroll(page, "/drills/")
    assert page.locator("[data-fitted-difficulty]").count() == 2
    assert on_screen(page, "[data-fitted-difficulty]") and on_screen(page, ".label-disagrees-mark")
    get_user_model().objects.filter(username=f"fit{width}").update(is_staff=True)
    page.goto(f"{live_server.url}/drills/")
    no_sideways_scroll(page, "/drills/ (staff)")
    assert (
        on_screen(page, ".label-disagrees")
        and "harder than its label" in page.locator(".label-disagrees").inner_text().lower()
    )
    page.context.close()
