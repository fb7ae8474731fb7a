"""Issue 28 item 7: a new learner's first two days, in the browser at 390 px, through a real grading worker.

The learner signs up, reviews day 1 until "Done for today", the day moves on, and they review day 2 the same
way. Before every card the review page's counts, the dashboard's and the stats page's must agree, and the
card that then comes must take exactly one off the count of the queue it came from (a rating below Good adds
one same-day repeat); when the counts reach zero the page says "Done for today". Within the two days the
learner meets every kind of card: a question, a mapping row (one direction a day: the other is its
sibling), an output card (its run checked by the sandbox before it may enter review) and a drill (graded by
the worker from the drill editor).

Moving the day: the worker is another process, so its clock cannot be patched, and a drill graded on day 2 must
be rated on day 2. So the learner's own day moves instead: day 1 in UTC-12, day 2 in UTC+12, the same hour of
the next day at the same instant, with the day's start twelve hours away from it. Every stored review keeps
the day it was made on (``ReviewLog.review_day``), which is all the counts read.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.utils import timezone

from cards import review as reviewing
from cards.importing import NoteSource, import_notes
from cards.models import Card, Note, Profile, ReviewLog
from graders.drills.schema import parse_drill
from graders.management.commands.import_drills import card_fields, card_key, drill_fields
from graders.models import Drill
from tests.browser.test_pages_on_phone_and_desktop import no_sideways_scroll, page_at, screenshot
from tests.browser.test_review_flow import sign_up
from tests.conftest import Workers
from tests.graders.conftest import RIGHT, drill_text

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.sandbox,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

EDITOR_BUNDLE = Path(__file__).resolve().parents[2] / "static" / "dist" / "editor.js"
VERDICT_TIMEOUT_MS = 30_000  # the first verdict waits for the worker's sandbox child to import torch
DAY_ONE_ZONE, DAY_TWO_ZONE = "Etc/GMT+12", "Etc/GMT-12"  # UTC-12 and UTC+12 (POSIX signs are inverted)
NOTE = """\
# 张量入门

## 术语

`x.shape`：返回张量的形状，是一个 torch.Size。

## NumPy 与 PyTorch

| NumPy | PyTorch |
| --- | --- |
| `np.concatenate` | `torch.cat` |
| `np.expand_dims` | `torch.unsqueeze` |

## 运算

```python
import torch
x = torch.tensor([1, 2, 3])
print(x * 2)
```

```
tensor([2, 4, 6])
```
"""


def build_deck() -> None:
    """The note through the importer, its output card through the sandbox check, and one drill on the note."""
    source = NoteSource(path=Path("notes/journey.md"), display_path="notes/journey.md", slug="journey", text=NOTE)
    import_notes([source])
    call_command("check_notes", verbosity=0)  # runs the snippet in this process's sandbox: it enters review
    assert Card.objects.get(kind=Card.Kind.OUTPUT).active, "the output card's run did not qualify"
    text = drill_text()
    spec = parse_drill(text, "notes/drills/add-one.toml")
    card = Card.objects.create(key=card_key(spec.slug), **card_fields(spec, Note.objects.get(slug="journey"), 10_001))
    Drill.objects.create(slug=spec.slug, card=card, **drill_fields(spec, text, spec.path))
    kinds = Counter(Card.objects.active().values_list("kind", flat=True))
    assert kinds == {"qa": 1, "mapping": 4, "output": 1, "drill": 1}, kinds


def number(text: str) -> int:
    found = re.search(r"\d+", text)
    assert found is not None, text
    return int(found.group(0))


def review_counts(page: Any) -> dict[str, int]:
    counts = page.locator("#review-progress .counts")
    return {
        queue: number(counts.locator(f".count-{css}").inner_text())
        for queue, css in (("due", "due"), ("new", "new"), ("repeat", "repeat"))
    }


def check_other_pages(page: Any, base: str, counts: dict[str, int]) -> None:
    """The dashboard and the stats page promise what the review page does: due (with today's repeats) and new."""
    page.goto(f"{base}/")
    assert number(page.locator("#stat-due").inner_text()) == counts["due"] + counts["repeat"]
    assert number(page.locator("#stat-new").inner_text()) == counts["new"]
    page.goto(f"{base}/stats/")
    assert number(page.locator("li", has_text="due today").locator("strong").inner_text()) == (
        counts["due"] + counts["repeat"]
    )


def grade_drill(page: Any) -> None:
    from playwright.sync_api import expect

    page.get_by_role("link", name="Open the drill editor").click()
    expect(page.locator(".cm-editor")).to_be_visible()
    page.evaluate("code => window.quizDrillEditor.setValue(code)", RIGHT)
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#verdict [data-rated]")).to_contain_text("Accepted: rated", timeout=VERDICT_TIMEOUT_MS)


def rate(page: Any, button: str) -> None:
    from playwright.sync_api import expect

    page.locator("#review-panel details[data-answer] > summary").click()
    # Wait for the rating's own response: the panel is visible before and after it, and a navigation that
    # starts first would abort the request (under load the count then read one card behind).
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/rate/")) as answered:
        page.locator(f"#review-panel .rate-{button}").click()
    assert answered.value.ok, answered.value.status
    expect(page.locator("#review-panel")).to_be_visible()


def review_day(page: Any, base: str, again_once: bool) -> list[tuple[str, str]]:
    """Every card of the day, (queue, kind) in order, checking each count before and after each card."""
    from playwright.sync_api import expect

    met: list[tuple[str, str]] = []
    again_left = again_once
    for _ in range(40):
        page.goto(f"{base}/review/")
        counts = review_counts(page)
        no_sideways_scroll(page, "/review/")
        if sum(counts.values()) == 0:
            expect(page.locator("#review-panel h2")).to_have_text("Done for today")
            check_other_pages(page, base, counts)
            return met
        card = page.locator("#review-panel article.card")
        kind, queue = card.get_attribute("data-kind"), page.locator("#review-panel .badge").text_content().strip()
        met.append((queue, kind))
        check_other_pages(page, base, counts)
        page.goto(f"{base}/review/")
        assert review_counts(page) == counts  # reading the other pages changed nothing
        expected = dict(counts)
        expected[queue] -= 1
        if kind == Card.Kind.DRILL:
            grade_drill(page)
        elif again_left and kind == Card.Kind.QA and queue == "new":
            rate(page, "again")
            expected["repeat"] += 1  # a same-day repeat: it comes back today
            again_left = False
        else:
            rate(page, "good")
        page.goto(f"{base}/review/")
        assert review_counts(page) == expected, f"after a {queue} {kind} card: {counts} -> {review_counts(page)}"
    raise AssertionError(f"day never ended: {met}")


def test_a_new_learner_reviews_two_days_and_every_count_keeps_its_promise(
    browser: Any, grading_worker: Workers, live_server: Any
) -> None:
    from playwright.sync_api import expect

    if not EDITOR_BUNDLE.exists():
        pytest.skip("static/dist/editor.js is missing: run `make frontend`")
    build_deck()
    page = page_at(browser, 390)
    sign_up(page, live_server.url, "journey")
    learner = get_user_model().objects.get(username="journey")
    local_hour = (timezone.now().hour - 12) % 24  # the same local hour in both zones
    profile = Profile.objects.filter(user=learner)
    profile.update(time_zone=DAY_ONE_ZONE, new_cards_per_day=4, day_start_hour=(local_hour + 12) % 24)
    day_one = reviewing.learner_today(profile.get(), timezone.now())

    first = review_day(page, live_server.url, again_once=True)
    assert len(first) == 5, first  # 4 new cards (the daily limit), one of them again
    page.goto(f"{live_server.url}/review/")
    screenshot(page, "review-done-phone.png")

    profile.update(time_zone=DAY_TWO_ZONE)
    day_two = reviewing.learner_today(profile.get(), timezone.now())
    assert (day_two - day_one).days == 1
    page.goto(f"{live_server.url}/")
    expect(page.locator("#stat-reviewed")).to_have_text("0")
    second = review_day(page, live_server.url, again_once=False)

    kinds = {kind for _, kind in first + second}
    assert kinds == {"qa", "mapping", "output", "drill"}, (first, second)
    logs = ReviewLog.objects.filter(user=learner)
    assert logs.filter(review_day=day_one).count() == len(first)
    assert logs.filter(review_day=day_two).count() == len(second)
    # Day 2 brings what day 1 made due (each card rated Good in the end: due tomorrow) before any new card.
    seen_day_one = logs.filter(review_day=day_one).values("card").distinct().count()
    assert [queue for queue, _ in second][:seen_day_one] == ["due"] * seen_day_one
