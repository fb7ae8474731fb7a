""" "What does this print?" cards in the daily review, graded through a real Celery worker.

The cards come from a note through the importer, as the bundled notes do (a code block followed by
the block it printed). The answer box asks for the snippet's run when it loads; the worker
(``celery -A quizsite worker -Q grade_cpu,celery``, sharing the test database and a real Redis) runs
the snippet in its warm sandbox pool, and the typed answer is compared with what it really printed,
not with the note's text, tolerating spacing but not values.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client

from cards.importing import NoteSource, import_notes
from cards.models import Card, CardState, ReviewLog
from outputs.models import SnippetRun
from tests.cards.factories import make_user
from tests.conftest import Workers

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

VERDICT_TIMEOUT_MS = 30_000  # the first run waits for the worker's sandbox child to import torch
NOTE = """\
# 张量运算

## 乘法

```python
import torch
x = torch.tensor([1, 2, 3])
print(x * 2)
```

```
tensor([2, 4, 6])
```

## 加法

```python
import torch
y = torch.tensor([[1, 2], [3, 4]])
print(y + 10)
```

```
tensor([[11, 12],
        [13, 14]])
```
"""
# heading -> (a wrong answer: the input, not the output; the right one, typed with other spacing).
ANSWERS = {
    "乘法": ("tensor([1, 2, 3])", "tensor([2,4,6])"),
    "加法": ("tensor([[1, 2], [3, 4]])", "tensor([[11,12],[13,14]])"),
}
REAL_OUTPUT = {"乘法": "tensor([2, 4, 6])", "加法": "tensor([[11, 12],\n        [13, 14]])"}


def import_output_cards() -> dict[str, Card]:
    """The note's two output cards by heading, once the worker has run their code (an output card enters
    review only then); its section cards are retired so only those are due."""
    import_notes([NoteSource(path=Path("notes/ops.md"), display_path="notes/ops.md", slug="ops", text=NOTE)])
    Card.objects.exclude(kind=Card.Kind.OUTPUT).update(active=False)
    deadline = time.monotonic() + VERDICT_TIMEOUT_MS / 1000
    while Card.objects.filter(kind=Card.Kind.OUTPUT, active=True).count() < len(ANSWERS):
        assert time.monotonic() < deadline, "the worker never brought the output cards into review"
        time.sleep(0.1)
    cards = {card.heading_path: card for card in Card.objects.filter(active=True)}
    assert sorted(cards) == sorted(ANSWERS) and all(c.kind == Card.Kind.OUTPUT for c in cards.values())
    return cards


def logged_in_page(browser: Any, base: str, user: AbstractBaseUser) -> Any:
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport={"width": 1100, "height": 1200}, color_scheme="light")
    context.set_default_timeout(10_000)
    context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": base}])
    return context.new_page()


def answer_shown_card(page: Any, cards: dict[str, Card], pick: int) -> tuple[str, Any]:
    """Type answer ``pick`` (0 wrong, 1 right) for the card on screen, key by key; returns its heading and box."""
    shown = page.locator("#review-panel article.card")
    uuid = shown.get_attribute("data-card")
    heading = next(name for name, card in cards.items() if str(card.uuid) == uuid)
    box = page.locator(f"#output-answer-{uuid}")
    # Real keystrokes: digits typed in the box must not trigger the review's rating shortcuts.
    box.get_by_label("What does it print?").press_sequentially(ANSWERS[heading][pick])
    box.get_by_role("button", name="Check my answer").click()
    return heading, box


def test_it_grades_typed_output_answers_wrong_then_right(
    browser: Any, grading_worker: Workers, live_server: Any
) -> None:
    from playwright.sync_api import expect

    cards = import_output_cards()
    learner = make_user("output-learner")
    page = logged_in_page(browser, live_server.url, learner)

    # 1. The first output card shows an answer box as wide as the card and several lines tall; a wrong answer
    # is rated Again, with the real output, and the card's own "Show answer" and rating buttons go.
    page.goto(f"{live_server.url}/review/")
    expect(page.locator("#review-panel article.card")).to_have_attribute("data-kind", "output")
    typed, card_box = page.locator(".output-answer textarea"), page.locator("#review-panel article.card")
    assert typed.bounding_box()["height"] >= 120, "the answer box should fit a printed tensor"
    assert typed.bounding_box()["width"] >= card_box.bounding_box()["width"] * 0.8, "the answer box is inline"
    expect(page.get_by_text("Show answer")).to_be_visible()
    first, box = answer_shown_card(page, cards, pick=0)
    verdict = box.locator(".verdict")
    expect(verdict).to_have_class("verdict wrong", timeout=VERDICT_TIMEOUT_MS)
    expect(page.locator("#review-panel [data-answer]")).to_have_count(0)
    expect(page.get_by_text("Show answer")).to_have_count(0)
    expect(verdict).to_contain_text("Not quite. Rated Again for you.")
    expect(box.locator("pre.real")).to_have_text(REAL_OUTPUT[first])
    expect(box.locator("pre.typed")).to_have_text(ANSWERS[first][0])
    # Issue 38: the question does not repeat the source line's headings, and "It prints" is whole at 1280 px.
    page.set_viewport_size({"width": 1280, "height": 800})
    shown = page.locator("#review-panel article.card")
    expect(shown.locator(".face.front")).not_to_contain_text(f"{first}：")
    heading, card_box = box.locator("h3").first.bounding_box(), shown.bounding_box()
    assert heading["height"] > 0 and heading["x"] + heading["width"] <= card_box["x"] + card_box["width"]

    # 2. Next card: the other one (new cards come before today's repeat of the first).
    box.get_by_role("link", name="Next card").click()
    expect(page.locator("#review-panel article.card")).not_to_have_attribute("data-card", str(cards[first].uuid))
    second, box = answer_shown_card(page, cards, pick=1)
    assert second != first
    verdict = box.locator(".verdict")
    expect(verdict).to_have_class("verdict right", timeout=VERDICT_TIMEOUT_MS)
    expect(verdict).to_contain_text("Right! Rated Good for you.")
    expect(box.locator("pre.real")).to_have_text(REAL_OUTPUT[second])
    expect(box.locator("pre.typed")).to_have_count(0)
    page.context.close()

    # 3. Stored state: one grader log per card, and the runs that graded them.
    logs = ReviewLog.objects.filter(user=learner).order_by("pk")
    assert [(log.card_id, log.quality, log.source) for log in logs] == [
        (cards[first].pk, 1, "output"),
        (cards[second].pk, 4, "output"),
    ]
    for heading, repetitions, needs_repeat in ((first, 0, True), (second, 1, False)):
        state = CardState.objects.get(user=learner, card=cards[heading])
        state.refresh_from_db()
        assert (state.repetitions, state.needs_repeat) == (repetitions, needs_repeat)
        run = SnippetRun.objects.get(card=cards[heading])
        assert (run.status, run.outcome, run.output) == ("done", "ok", REAL_OUTPUT[heading])
