"""FSRS as a learner meets it: switch with the backlog preview, review with FSRS's labels, ask for a
fit of their parameters, and read the calibration page. Screenshots in docs/ (UPDATE_SCREENSHOTS=1
refreshes them)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from cards import optimising, review, tasks
from cards.models import Optimisation, Profile, ReviewLog
from cards.scheduling import evaluate
from cards.scheduling.fsrs6 import EPOCH
from tests.browser.test_review_flow import sign_up
from tests.cards.factories import make_card, make_cards

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DOCS = Path(__file__).resolve().parents[2] / "docs"
FIXTURE = Path(__file__).resolve().parents[1] / "cards" / "fixtures" / "revlog" / "revlog.csv"
QUALITY = {1: 1, 2: 3, 3: 4, 4: 5}


def screenshot(page: Any, name: str) -> None:
    path = DOCS / name
    if not path.exists() or os.environ.get("UPDATE_SCREENSHOTS") == "1":
        page.screenshot(path=str(path), full_page=True)


def seen_under_sm2(user: Any, cards: int) -> None:
    """Cards learned a week ago and reviewed once since, through the real review flow."""
    profile = review.get_profile(user)
    profile.new_cards_per_day = cards
    profile.save(update_fields=["new_cards_per_day"])
    make_cards(cards + 2)
    start = timezone.now() - timedelta(days=8)
    for day, quality in ((0, 4), (1, 5)):
        for _ in range(cards):
            item = review.next_card(user, profile, start + timedelta(days=day))[0]
            assert item is not None
            request = review.RatingRequest(item.card.uuid, quality, item.version)
            review.rate(user, profile, request, start + timedelta(days=day))


def test_it_switches_to_fsrs_reviews_with_its_labels_and_asks_for_a_fit(page: Any, live_server: Any) -> None:
    from playwright.sync_api import expect

    sign_up(page, live_server.url, "fsrs-learner")
    learner = get_user_model().objects.get(username="fsrs-learner")
    seen_under_sm2(learner, 12)

    page.goto(f"{live_server.url}/settings/")
    expect(page.locator("[data-scheduler]")).to_have_text("SM-2")
    page.get_by_role("link", name="Switch to FSRS-6…").click()
    expect(page.locator("h1")).to_have_text("Switch to FSRS-6")
    expect(page.locator("main, body").first).to_contain_text("12 seen cards: 12 from their full review history")
    expect(page.locator("table.switch-preview tbody tr")).to_have_count(7)
    screenshot(page, "fsrs-switch-preview.png")
    page.get_by_role("button", name="Switch to FSRS-6").click()
    expect(page.locator(".messages")).to_contain_text("Switched to FSRS-6.")
    expect(page.locator("[data-scheduler]")).to_have_text("FSRS-6")
    assert Profile.objects.get(user=learner).scheduler == "fsrs"

    page.goto(f"{live_server.url}/review/")
    page.keyboard.press("Space")
    # A new card under FSRS-6's default parameters: 1, 1, 2 and 8 days, Again back today first.
    expect(page.locator(".rate-hint")).to_have_text(["today · 1d", "1d", "2d", "8d"])
    screenshot(page, "fsrs-review.png")
    page.keyboard.press("3")
    expect(page.locator("#count-reviewed")).to_have_text("1")
    assert ReviewLog.objects.filter(user=learner).latest("reviewed_at").scheduler == "fsrs"

    page.goto(f"{live_server.url}/settings/")
    expect(page.locator("[data-optimisation]")).to_have_attribute("data-optimisation", "none")
    page.get_by_role("button", name="Fit my parameters now").click()
    expect(page.locator(".messages")).to_contain_text("Fitting your parameters on the worker")
    row = Optimisation.objects.get(user=learner)
    optimising.run(row.pk)  # what the worker does with the task the button sent
    page.reload()
    expect(page.locator("[data-optimisation]")).to_contain_text("Default parameters until 5000 reviews (12 so far)")
    screenshot(page, "fsrs-settings.png")


def test_it_shows_the_calibration_of_a_learners_own_log(page: Any, live_server: Any) -> None:
    from playwright.sync_api import expect

    sign_up(page, live_server.url, "calibrated")
    learner = get_user_model().objects.get(username="calibrated")
    with open(FIXTURE, encoding="utf-8", newline="") as handle:
        reviews = evaluate.read_revlog(handle)
    cards: dict[str, Any] = {}
    rows = []
    for n, r in enumerate(reviews):
        card = cards.get(r.card_id) or cards.setdefault(r.card_id, make_card())
        day = EPOCH + timedelta(days=r.day)
        rows.append(
            ReviewLog(
                user=learner, card=card, quality=QUALITY[r.rating], review_day=day,
                reviewed_at=datetime(day.year, day.month, day.day, 12, tzinfo=UTC) + timedelta(seconds=n),
                easiness_before=2.5, interval_before=0, repetitions_before=0, easiness_after=2.5,
                interval_after=1, repetitions_after=1, due_after=day,
            )
        )  # fmt: skip
    ReviewLog.objects.bulk_create(rows)
    tasks.calibrate_learner(learner.pk)  # what the scoring worker does when the page first asks for the report

    page.goto(f"{live_server.url}/stats/")
    page.get_by_role("link", name="How well the schedulers predict you").click()
    expect(page.locator("table.calibration tbody tr")).to_have_count(4)  # FSRS-6, SM-2, AVG, MOVING-AVG
    expect(page.locator("[data-beats-moving-avg]")).to_contain_text("FSRS does not beat the moving average here.")
    expect(page.locator("#reliability circle").first).to_be_visible()
    expect(page.locator("#true-retention")).to_be_visible()
    screenshot(page, "calibration.png")
