"""Hints: the drill file's ``[[hints]]`` (at most three, each in English and Chinese), every bundled drill's,
and the drill page's hints: closed until a POST opens the next one, recorded on the review, listed on the
verdict, and capping the rating of an acceptance (1 hint: 4, 2 or more: 3; graders/rating/quality.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from cards.models import ReviewLog
from graders.drills import DRILLS_DIR, DrillError, load_drills, parse_drill
from graders.drills.schema import MAX_HINTS
from graders.models import Drill, DrillReview
from jobs.status import Status
from tests.graders.conftest import RIGHT, WRONG, drill_text
from tests.graders.test_views import HTMX, submit_and_settle

BUNDLED = load_drills(DRILLS_DIR)
HINTS = [
    ("Which operator adds a number to every element?", "哪个运算符能给每个元素加上同一个数？"),
    ("Broadcasting: a Python number stretches over the whole tensor.", "广播：一个 Python 数会扩展到整个张量。"),
    ("Watch the dtype: adding 1 to a float tensor keeps it float.", "注意 dtype：浮点张量加 1 仍是浮点。"),
]


def hints_toml(pairs: list[tuple[str, str]]) -> str:
    return "".join(f'\n[[hints]]\nen = "{en}"\nzh = "{zh}"\n' for en, zh in pairs)


def with_hints(pairs: list[tuple[str, str]]) -> str:
    return drill_text() + hints_toml(pairs)


# ------------------------------------------------------------------------------------------ the drill file


def test_it_reads_up_to_three_hints_in_both_languages_in_order() -> None:
    drill = parse_drill(with_hints(HINTS))
    assert [(hint.en, hint.zh) for hint in drill.hints] == HINTS
    assert parse_drill(drill_text()).hints == ()


def test_it_refuses_more_than_three_hints() -> None:
    with pytest.raises(DrillError, match=f"field 'hints': at most {MAX_HINTS} hints, not 4"):
        parse_drill(with_hints([*HINTS, ("one more", "再一个")]))


@pytest.mark.parametrize(
    ("table", "field"),
    [
        ('en = "Look at the dims."', "hints[0].zh': is required"),
        ('zh = "看看维度。"', "hints[0].en': is required"),
        ('en = "Look at the dims."\nzh = "  "', "hints[0].zh': must not be empty"),
        ('en = "a"\nzh = "b"\nlevel = 1', "hints[0].level': is not a known field"),
    ],
)
def test_it_refuses_a_hint_without_both_languages(table: str, field: str) -> None:
    with pytest.raises(DrillError, match=re.escape(field)):
        parse_drill(drill_text() + f"\n[[hints]]\n{table}\n")


@pytest.mark.parametrize("slug", sorted(BUNDLED))
def test_every_bundled_drill_has_a_hint_in_both_languages_that_never_quotes_the_reference(slug: str) -> None:
    drill = BUNDLED[slug]
    assert 1 <= len(drill.hints) <= MAX_HINTS
    # The answer's code is the one thing a hint must not give: no line of the reference appears in it.
    lines = [line.strip() for line in drill.reference.splitlines() if len(line.strip()) >= 20]
    for hint in drill.hints:
        assert hint.en.strip() and hint.zh.strip()
        assert any("\u4e00" <= char <= "\u9fff" for char in hint.zh), hint.zh  # Chinese, not a copy of the English
        assert not [line for line in lines if line in hint.en or line in hint.zh], hint


# ------------------------------------------------------------------------------------------ the drill page


@pytest.fixture
def hinted(make_drill: Callable[..., Drill]) -> Drill:
    return make_drill(with_hints(HINTS[:2]))


def open_hint(client: Client, drill: Drill, **extra: Any) -> Any:
    return client.post(reverse("graders:hint", args=[drill.slug]), **extra)


def test_the_page_keeps_the_hints_closed_and_a_get_opens_none(client_for: Client, hinted: Drill) -> None:
    page = client_for.get(reverse("graders:drill", args=[hinted.slug])).content.decode()
    assert "Show hint 1 of 2" in page and HINTS[0][0] not in page and HINTS[0][1] not in page
    assert client_for.get(reverse("graders:hint", args=[hinted.slug])).status_code == 405
    assert not DrillReview.objects.exists()


def test_it_opens_the_hints_one_at_a_time_and_records_them_on_the_review(client_for: Client, hinted: Drill) -> None:
    fragment = open_hint(client_for, hinted, **HTMX).content.decode()
    assert DrillReview.objects.get().hints_opened == 1
    assert HINTS[0][0] in fragment and HINTS[0][1] in fragment and HINTS[1][0] not in fragment
    assert "Show hint 2 of 2" in fragment and 'id="hints"' in fragment
    response = open_hint(client_for, hinted)
    assert response.status_code == 302 and response["Location"].endswith("#hints")
    assert open_hint(client_for, hinted).status_code == 302  # no third hint: nothing more to open
    assert DrillReview.objects.get().hints_opened == 2
    page = client_for.get(reverse("graders:drill", args=[hinted.slug])).content.decode()
    assert HINTS[1][1] in page and "Show hint" not in page


def test_a_drill_without_hints_shows_no_hint_button(client_for: Client, drill: Drill) -> None:
    assert "Show hint" not in client_for.get(reverse("graders:drill", args=[drill.slug])).content.decode()
    open_hint(client_for, drill)
    assert DrillReview.objects.get().hints_opened == 0


@pytest.mark.parametrize(("hints", "quality"), [(0, 5), (1, 4), (2, 3)])
def test_each_hint_opened_caps_the_rating_of_an_acceptance(
    client_for: Client, hinted: Drill, hints: int, quality: int
) -> None:
    for _ in range(hints):
        open_hint(client_for, hinted)
    sub = submit_and_settle(client_for, hinted, RIGHT, Status.ACCEPTED)  # accepted on the first attempt
    assert ReviewLog.objects.get().quality == quality
    assert DrillReview.objects.get().quality == quality
    verdict = client_for.get(reverse("graders:submission_status", args=[sub.uuid])).content.decode()
    assert f"Accepted: rated {quality}" in verdict
    assert ("data-verdict-hints" in verdict) == (hints > 0)
    assert (HINTS[0][0] in verdict) == (hints > 0)  # the opened hints are shown on the verdict


def test_a_rated_review_shows_every_hint_and_records_no_more(client_for: Client, hinted: Drill) -> None:
    sub = submit_and_settle(client_for, hinted, RIGHT, Status.ACCEPTED)
    page = client_for.get(reverse("graders:drill", args=[hinted.slug])).content.decode()
    assert HINTS[0][0] in page and HINTS[1][0] in page and "Show hint" not in page
    open_hint(client_for, hinted)
    assert DrillReview.objects.get().hints_opened == 0 and ReviewLog.objects.get().quality == 5
    verdict = client_for.get(reverse("graders:submission_status", args=[sub.uuid])).content.decode()
    assert "data-verdict-hints" not in verdict  # rated without hints: the verdict lists none


def test_a_failing_review_keeps_its_rating_below_every_cap(client_for: Client, hinted: Drill) -> None:
    open_hint(client_for, hinted)
    submit_and_settle(client_for, hinted, WRONG, Status.WRONG_ANSWER, hidden_passed=1)
    client_for.post(reverse("graders:move_on", args=[hinted.slug]))
    assert ReviewLog.objects.get().quality == 2


def test_the_api_gives_the_hint_count_never_the_hints(client_for: Client, hinted: Drill) -> None:
    body = client_for.get(f"/api/v1/drills/{hinted.slug}/").json()
    assert body["hint_count"] == 2
    assert HINTS[0][0] not in str(body)


def test_the_api_opens_the_next_hint_as_the_page_does(client_for: Client, hinted: Drill) -> None:
    url = f"/api/v1/drills/{hinted.slug}/hints/"
    assert client_for.get(url).status_code == 405
    first = client_for.post(url).json()
    assert first == {"hint_count": 2, "opened": [{"en": HINTS[0][0], "zh": HINTS[0][1]}], "rating_cap": 4}
    client_for.post(url)
    last = client_for.post(url).json()  # nothing left to open
    assert (len(last["opened"]), last["rating_cap"], DrillReview.objects.get().hints_opened) == (2, 3, 2)
    assert client_for.post("/api/v1/drills/no-such-drill/hints/").status_code == 404
