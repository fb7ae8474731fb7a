"""The drill hub: every drill with the learner's status, filters without JavaScript, constant queries."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from graders.models import Drill, Submission
from graders.web.hub import title_html
from jobs.status import Status
from tests.graders.conftest import drill_text, graded_submission

pytestmark = pytest.mark.django_db


def many_drills(make_drill: Callable[..., Drill], count: int) -> list[Drill]:
    drills = []
    for i in range(count):
        text = drill_text().replace('slug = "add-one"', f'slug = "add-{i}"')
        text = text.replace('title = "Add one"', f'title = "**Add** `{i}`"')
        drill = make_drill(text)
        drill.tags = ["broadcasting"] if i % 2 else ["indexing"]
        drill.difficulty = "easy" if i < 2 else "hard"
        drill.track = "tensor-puzzles" if i < 3 else ""
        drill.position = 10 - i
        drill.save(update_fields=["tags", "difficulty", "track", "position"])
        drills.append(drill)
    return drills


def attempt(user: User, drill: Drill, status: str) -> Submission:
    return graded_submission(user, drill, status, timezone.now() - timedelta(minutes=60 - Submission.objects.count()))


def test_it_renders_a_markdown_title_as_inline_html() -> None:
    assert title_html("**Cross-entropy** from `logits`") == "<strong>Cross-entropy</strong> from <code>logits</code>"
    assert "<script" not in title_html("<script>alert(1)</script> x")


def test_it_lists_every_drill_with_the_learners_status(
    client_for: Client, learner: User, make_drill: Callable[..., Drill]
) -> None:
    drills = many_drills(make_drill, 4)
    attempt(learner, drills[0], Status.ACCEPTED)
    attempt(learner, drills[1], Status.WRONG_ANSWER)
    page = client_for.get(reverse("graders:hub")).content.decode()
    assert page.count("data-drill-row=") == 4
    assert "**" not in page and "<strong>Add</strong>" in page
    assert 'data-drill-row="add-0" data-status="solved_first_try"' in page
    assert 'data-drill-row="add-1" data-status="attempted"' in page
    assert 'data-drill-row="add-2" data-status="new"' in page
    assert 'href="/drills/add-3/"' in page and "PyTorch basics" in page and "Tensors" in page


def test_its_query_count_does_not_grow_with_drills_or_submissions(
    client_for: Client, learner: User, make_drill: Callable[..., Drill], django_assert_max_num_queries: Callable
) -> None:
    drills = many_drills(make_drill, 3)
    with django_assert_max_num_queries(10) as few:
        client_for.get(reverse("graders:hub"))
    drills += many_drills(make_drill, 0)
    for i in range(3, 12):
        text = drill_text().replace('slug = "add-one"', f'slug = "more-{i}"')
        drills.append(make_drill(text))
    for drill in drills:
        attempt(learner, drill, Status.WRONG_ANSWER)
        attempt(learner, drill, Status.ACCEPTED)
    with django_assert_max_num_queries(len(few.captured_queries)):
        page = client_for.get(reverse("graders:hub")).content.decode()
    assert page.count("data-drill-row=") == len(drills)


def test_it_filters_by_status_topic_difficulty_note_and_search(
    client_for: Client, learner: User, make_drill: Callable[..., Drill]
) -> None:
    drills = many_drills(make_drill, 4)
    attempt(learner, drills[0], Status.ACCEPTED)
    url = reverse("graders:hub")

    def rows(**params: str) -> int:
        return client_for.get(url, params).content.decode().count("data-drill-row=")

    assert rows(status="solved_first_try") == 1
    assert rows(status="new") == 3
    assert rows(tag="broadcasting") == 2
    assert rows(difficulty="easy") == 2
    assert rows(note="pytorch-basics") == 4 and rows(note="elsewhere") == 0
    assert rows(q="add 3") == 1
    assert rows(status="nonsense", difficulty="impossible") == 4  # ignored, not an error


def test_it_searches_the_chinese_prompt_and_counts_what_the_filter_keeps(
    client_for: Client, make_drill: Callable[..., Drill]
) -> None:
    drills = many_drills(make_drill, 3)
    Drill.objects.filter(pk=drills[1].pk).update(prompt_zh="把矩阵的每个元素加一。")
    url = reverse("graders:hub")
    page = client_for.get(url, {"q": "矩阵"}).content.decode()
    assert page.count("data-drill-row=") == 1 and 'href="/drills/add-1/"' in page
    assert "1 of 3 drills match." in page
    assert "3 drills." in client_for.get(url).content.decode()


def test_its_track_view_orders_by_position(client_for: Client, make_drill: Callable[..., Drill]) -> None:
    many_drills(make_drill, 4)
    page = client_for.get(reverse("graders:hub"), {"track": "tensor-puzzles"}).content.decode()
    order = [slug for slug in ("add-0", "add-1", "add-2", "add-3") if f'data-drill-row="{slug}"' in page]
    assert order == ["add-0", "add-1", "add-2"]
    assert page.index('"add-2"') < page.index('"add-1"') < page.index('"add-0"')


def test_it_is_in_the_navigation_and_needs_a_login(client_for: Client) -> None:
    assert 'href="/drills/"' in client_for.get(reverse("cards:dashboard")).content.decode()
    assert Client().get(reverse("graders:hub")).status_code == 302


def test_a_decks_drill_filter_lists_the_notes_drills_in_the_hub(
    client_for: Client, learner: User, make_drill: Callable[..., Drill]
) -> None:
    drills = many_drills(make_drill, 2)
    attempt(learner, drills[1], Status.ACCEPTED)
    deck = reverse("cards:deck", args=[drills[0].card.note.slug])
    response = client_for.get(deck, {"kind": "drill"}, follow=True)
    assert response.redirect_chain[0][0] == f"{reverse('graders:hub')}?note=pytorch-basics"
    page = response.content.decode()
    assert page.count("data-drill-row=") == 2 and 'data-status="solved_first_try"' in page and "**" not in page


def test_a_deck_numbers_its_rows_from_one_and_renders_fronts(
    client_for: Client, make_drill: Callable[..., Drill]
) -> None:
    drill = many_drills(make_drill, 1)[0]
    page = client_for.get(reverse("cards:deck", args=[drill.card.note.slug])).content.decode()
    assert '<td class="num">1</td>' in page and "10001" not in page and "**Add**" not in page
