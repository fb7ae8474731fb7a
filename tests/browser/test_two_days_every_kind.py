"""Issue 39, "done means": a fresh learner on the bundled course, two learner days of review in the browser at
the default new-card limit, meets every kind of card, and never a card before its prerequisites.

The course comes in as ``make run`` brings it: ``import_course notes/`` with a real worker running, which
verifies the output cards in its sandbox (only those it vouches for enter review). The learner signs up and
answers each card the way its kind asks: a question, a cloze or a mapping row is revealed and rated Good; an
output card gets the printed output typed into its box and is graded against the sandbox's run; a drill is
opened in the editor and its reference solution submitted, graded by the worker, whose verdict rates it.

The day moves as in ``test_learner_journey``: the worker is another process, so its clock cannot be patched,
and the learner's own day moves instead (day 1 in UTC-12, day 2 in UTC+12: the same instant, the next day).
The clock itself has not moved, though, so day 1's drill reviews would look as if they had started after
day 2 began, and a drill due again on day 2 would count as already reviewed (``graders.rating.reviews``
opens a new review only for a card that came due after the last one started). So the learner's timestamps
are moved a day back before day 2, as a real night would leave them; the days they were made on stay.
Which card is which comes from the page: ``data-card`` (the card's uuid) and ``data-kind`` on the review card.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.management import call_command
from django.db.models import F
from django.utils import timezone

from cards import queueing
from cards import review as reviewing
from cards.models import Card, CardState, Profile, ReviewLog
from graders.models import Drill, DrillReview, Submission
from outputs import verify
from outputs.models import OutputCheck
from tests.browser.test_pages_on_phone_and_desktop import page_at
from tests.browser.test_review_flow import sign_up
from tests.conftest import Workers

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

NOTES = Path(__file__).resolve().parents[2] / "notes"
EDITOR_BUNDLE = Path(__file__).resolve().parents[2] / "static" / "dist" / "editor.js"
VERDICT_TIMEOUT_MS = 30_000  # the first verdict waits for the worker's sandbox child to import torch
VERIFY_TIMEOUT_S = 90  # the worker runs every output card of the bundled notes (twice, two seeds)
DAY_ONE_ZONE, DAY_TWO_ZONE = "Etc/GMT+12", "Etc/GMT-12"  # UTC-12 and UTC+12 (POSIX signs are inverted)
KINDS = set(Card.Kind.values)
# What the learner met, at INFO: `pytest -o log_cli=true --log-cli-level=INFO` shows it.
log = logging.getLogger(__name__)


def import_bundled_course() -> None:
    """``import_course notes/``, then wait for the worker to verify every output card (the import asks it)."""
    call_command("import_course", str(NOTES), verbosity=0)
    deadline = time.monotonic() + VERIFY_TIMEOUT_S
    while OutputCheck.objects.filter(state=OutputCheck.State.PENDING).exists():
        assert time.monotonic() < deadline, "the worker never verified the bundled output cards"
        time.sleep(0.2)
    assert Card.objects.filter(kind=Card.Kind.OUTPUT, active=True).exists(), "no output card entered review"


def rate_good(page: Any) -> None:
    from playwright.sync_api import expect

    page.locator("#review-panel details[data-answer] > summary").click()
    expect(page.locator("#review-panel .face.back")).to_be_visible()
    # Wait for the rating's own response: a navigation that starts first would abort the request.
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/rate/")) as answered:
        page.locator("#review-panel .rate-good").click()
    assert answered.value.ok, answered.value.status


def type_output(page: Any, card: Card) -> None:
    """Type what the snippet prints (the sandbox's run of it, which the answer is graded against)."""
    from playwright.sync_api import expect

    snippet = verify.snippet_for(card)
    assert snippet is not None
    run = verify.current_run(card, snippet)
    assert run is not None and run.is_gradable, f"output card {card.key} reached review without a gradable run"
    box = page.locator(f"#output-answer-{card.uuid}")
    box.get_by_label("What does it print?").fill(run.graded_output)
    box.get_by_role("button", name="Check my answer").click()
    expect(box.locator(".verdict")).to_contain_text("Right! Rated Good for you.", timeout=VERDICT_TIMEOUT_MS)


def solve_drill(page: Any, card: Card) -> None:
    """Open the drill from the review, submit its reference solution, and wait for the worker's rating."""
    from playwright.sync_api import expect

    page.get_by_role("link", name="Open the drill editor").click()
    expect(page.locator(".cm-editor")).to_be_visible()
    page.evaluate("code => window.quizDrillEditor.setValue(code)", Drill.objects.get(card=card).reference_code)
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#verdict [data-rated]")).to_contain_text("Accepted: rated", timeout=VERDICT_TIMEOUT_MS)


def review_day(page: Any, base: str) -> list[tuple[str, Card]]:
    """Every card of the day, (queue, card) in the order the review page showed them, until "Done for today"."""
    from playwright.sync_api import expect

    met: list[tuple[str, Card]] = []
    for _ in range(120):
        page.goto(f"{base}/review/")
        shown = page.locator("#review-panel article.card")
        if shown.count() == 0:
            expect(page.locator("#review-panel h2")).to_have_text("Done for today")
            return met
        card = Card.objects.get(uuid=shown.get_attribute("data-card"))
        assert shown.get_attribute("data-kind") == card.kind
        queue = page.locator("#review-panel .badge").get_attribute("class").removeprefix("badge badge-")
        assert queue != "new" or (queue, card) not in met, f"new card {card.key} shown as new twice"
        met.append((queue, card))
        if card.kind == Card.Kind.DRILL:
            solve_drill(page, card)
        elif card.kind == Card.Kind.OUTPUT:
            type_output(page, card)
        else:
            rate_good(page)
    raise AssertionError(f"the day never ended: {[(q, c.kind) for q, c in met]}")


def a_night_passes(learner: AbstractBaseUser) -> None:
    """Every moment the learner's reviews and drill attempts recorded, a day earlier (their days stay)."""
    day = timedelta(days=1)

    def back(*fields: str) -> dict[str, Any]:
        return {name: F(name) - day for name in fields}

    CardState.objects.filter(user=learner).update(**back("last_reviewed_at"))
    ReviewLog.objects.filter(user=learner).update(**back("reviewed_at"))
    DrillReview.objects.filter(user=learner).update(**back("started_at", "reference_viewed_at", "finished_at"))
    Submission.objects.filter(user=learner).update(**back("queued_at", "claimed_at", "finished_at"))


def prerequisites_missed(shown: list[Card]) -> list[tuple[str, str]]:
    """(card key, concept) for each card shown before any card teaching a concept it needs (one that some card
    of the deck teaches), by the concepts ``cards.queueing`` tags the cards with."""
    tags = queueing.current_deck().tags
    taught_somewhere = {teaches for _, teaches, _ in tags.values() if teaches}
    taught: set[str] = set()
    missed = []
    for card in shown:
        kind, teaches, needs = tags[card.pk]
        missed += [(card.key, need) for need in sorted(needs & taught_somewhere - taught)]
        if teaches:
            taught.add(teaches)
    return missed


def test_two_days_of_review_in_the_browser_meet_every_kind_of_card(
    browser: Any, grading_worker: Workers, live_server: Any
) -> None:
    from playwright.sync_api import expect

    if not EDITOR_BUNDLE.exists():
        pytest.skip("static/dist/editor.js is missing: run `make frontend`")
    started = time.monotonic()
    import_bundled_course()
    outputs = Counter(OutputCheck.objects.values_list("state", flat=True))
    log.info("import and output verification: %.0f s, output checks %s", time.monotonic() - started, dict(outputs))
    assert set(Card.objects.active().values_list("kind", flat=True)) == KINDS

    page = page_at(browser, 1100)
    sign_up(page, live_server.url, "two-days")
    learner = get_user_model().objects.get(username="two-days")
    profile = Profile.objects.filter(user=learner)
    limit = profile.get().new_cards_per_day
    assert limit == Profile._meta.get_field("new_cards_per_day").default  # the default limit, untouched
    local_hour = (timezone.now().hour - 12) % 24  # the same local hour in both zones
    profile.update(time_zone=DAY_ONE_ZONE, day_start_hour=(local_hour + 12) % 24)
    day_one = reviewing.learner_today(profile.get(), timezone.now())

    started = time.monotonic()
    days = [review_day(page, live_server.url)]
    log.info("day 1: %.0f s", time.monotonic() - started)
    a_night_passes(learner)
    profile.update(time_zone=DAY_TWO_ZONE)
    assert (reviewing.learner_today(profile.get(), timezone.now()) - day_one).days == 1
    page.goto(f"{live_server.url}/")
    expect(page.locator("#stat-reviewed")).to_have_text("0")  # a new day: nothing reviewed yet
    started = time.monotonic()
    days.append(review_day(page, live_server.url))
    log.info("day 2: %.0f s", time.monotonic() - started)
    page.context.close()

    # What the learner met, for the log: each day's kinds by queue, the drills offered, and
    # the position among the new cards where each kind first came.
    new = [card for day in days for queue, card in day if queue == "new"]
    for number, day in enumerate(days, start=1):
        kinds = Counter(f"{queue} {card.kind}" for queue, card in day)
        drills = [card.key.removeprefix("drill:") for _, card in day if card.kind == Card.Kind.DRILL]
        log.info("day %d: %d cards: %s; drills: %s", number, len(day), dict(sorted(kinds.items())), ", ".join(drills))
    first: dict[str, int] = {}
    for position, card in enumerate(new, start=1):
        first.setdefault(card.kind, position)
    log.info("first new card of each kind: %s", ", ".join(f"{kind} #{position}" for kind, position in first.items()))

    assert [sum(queue == "new" for queue, _ in day) for day in days] == [limit, limit]
    assert set(first) == KINDS, first  # every kind among the new cards of the two days
    assert prerequisites_missed(new) == []
