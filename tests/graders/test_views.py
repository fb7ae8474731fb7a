"""The drill pages: access, submit and run examples, size cap, rate limit, reference, give up, move on, history.

Verdicts are recorded here through the job lifecycle as a worker would (claim, then finish with the
verdict, which rates the card in the same transaction), so these tests need no worker;
tests/browser/test_drill_flow.py runs the same flow through a real one.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format

from cards.models import CardState, ReviewLog
from graders.kinds.verdicts import SUBMISSIONS
from graders.models import Drill, DrillReview, Submission
from jobs import lifecycle as jobs
from jobs.models import GraderHeartbeat
from jobs.status import Status
from tests.graders.conftest import RIGHT, WRONG

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def post_code(client: Client, drill: Drill, code: str, kind: str = "submit", **extra: Any) -> Any:
    return client.post(reverse("graders:submit", args=[drill.slug]), {"code": code, "kind": kind}, **extra)


def settle(sub: Submission, status: str, *, hidden_passed: int = 0, message: str = "") -> None:
    """Record a final verdict the way a worker does: claim the row, then finish it with the verdict."""
    verdict = {
        "status": status,
        "message": message or status,
        "tests": [
            {"name": "small", "hidden": False, "passed": status == "accepted", "message": message or "passed"},
            {"name": "random-1", "hidden": True, "passed": hidden_passed > 0, "message": "wrong value (hidden)"},
        ],
        "passed": int(status == "accepted") + min(hidden_passed, 1),
        "total": 2,
        "hidden_passed": hidden_passed,
        "hidden_total": 1,
    }
    claim = jobs.claim(SUBMISSIONS, sub.pk, timezone.now())
    assert claim.job is not None
    assert jobs.finish(SUBMISSIONS, claim.job, claim.token, jobs.Finished(Status(status), {"verdict": verdict}))
    sub.refresh_from_db()


def submit_and_settle(client: Client, drill: Drill, code: str, status: str, **kwargs: Any) -> Submission:
    post_code(client, drill, code)
    sub = Submission.objects.latest("queued_at")
    settle(sub, status, **kwargs)
    return sub


def test_it_sends_a_visitor_to_the_login_page(drill: Drill) -> None:
    response = Client().get(reverse("graders:drill", args=[drill.slug]))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_it_shows_the_prompt_examples_limits_editor_and_note_link(client_for: Client, drill: Drill) -> None:
    response = client_for.get(reverse("graders:drill", args=[drill.slug]))
    assert response.status_code == 200
    page = response.content.decode()
    for text in (
        "给张量的每个元素加一",
        "Add one to every element",
        "solution(torch.tensor([1.0, 2.0]))",
        "10.0 s CPU",
        "def solution(x):",
        "/notes/pytorch-basics/#tensors",
        "Run examples",
        "Names may not start with <code>_</code>",
    ):
        assert text in page, text
    assert 'name="code"' in page and "dist/editor.js" in page


def test_it_finds_the_drill_page_from_its_card(client_for: Client, drill: Drill) -> None:
    response = client_for.get(reverse("graders:for_card", args=[drill.card.uuid]))
    assert response.status_code == 302 and response["Location"] == reverse("graders:drill", args=[drill.slug])


def test_it_queues_a_submission_with_the_reviews_seed_after_commit(
    client_for: Client, drill: Drill, learner: User, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = post_code(client_for, drill, RIGHT)
    sub = Submission.objects.get()
    review = DrillReview.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("graders:submission", args=[sub.uuid])
    assert (sub.user, sub.kind, sub.status, sub.seed) == (learner, "submit", "queued", review.seed)
    assert len(callbacks) == 1


def test_it_answers_htmx_with_a_fragment_that_polls_until_final(
    client_for: Client, drill: Drill, grader_online: Any
) -> None:
    response = post_code(client_for, drill, WRONG, **HTMX)
    sub = Submission.objects.get()
    assert 'hx-trigger="load delay:300ms"' in response.content.decode()
    assert "Waiting for a grader" in response.content.decode()
    settle(sub, Status.WRONG_ANSWER, message="small: wrong value at index [0]: expected 2.0, got 3.0")
    final = client_for.get(reverse("graders:submission_status", args=[sub.uuid]), **HTMX).content.decode()
    assert "hx-trigger" not in final
    assert "expected 2.0, got 3.0" in final and "Wrong answer" in final
    assert "wrong value (hidden)" not in final  # hidden cases: passed/failed only


def test_it_says_the_grader_is_offline_and_since_when(client_for: Client, drill: Drill, grader_online: Any) -> None:
    GraderHeartbeat.objects.update(seen_at=timezone.now() - timedelta(minutes=3))
    post_code(client_for, drill, WRONG, **HTMX)
    sub = Submission.objects.get()
    page = client_for.get(reverse("graders:submission_status", args=[sub.uuid]), **HTMX).content.decode()
    assert "The grader is offline" in page and "(for 3 minutes)" in page
    assert "will be graded as soon as it is back" in page
    assert 'hx-trigger="load delay:3000ms"' in page  # still polling, slowly
    GraderHeartbeat.objects.update(seen_at=timezone.now())
    page = client_for.get(reverse("graders:submission_status", args=[sub.uuid]), **HTMX).content.decode()
    assert "offline" not in page and "Waiting for a grader" in page


def test_it_says_no_grader_has_started_when_none_ever_beat(client_for: Client, drill: Drill) -> None:
    post_code(client_for, drill, WRONG, **HTMX)
    sub = Submission.objects.get()
    page = client_for.get(reverse("graders:submission_status", args=[sub.uuid]), **HTMX).content.decode()
    assert "The grader is offline" in page and "no grader has started yet" in page


def test_it_does_not_count_a_gpu_only_grader_for_the_cpu_queue(client_for: Client, drill: Drill) -> None:
    GraderHeartbeat.objects.create(name="gpu-host:1", queues=["grade_gpu"], device="cuda")
    post_code(client_for, drill, WRONG, **HTMX)
    page = client_for.get(reverse("graders:submission_status", args=[Submission.objects.get().uuid]), **HTMX)
    assert "The grader is offline" in page.content.decode()


def test_it_shows_a_learner_only_their_own_submissions(client_for: Client, drill: Drill) -> None:
    post_code(client_for, drill, RIGHT)
    sub = Submission.objects.get()
    outsider = Client()
    outsider.force_login(User.objects.create_user("outsider", password="x"))
    for name in ("graders:submission", "graders:submission_status"):
        assert outsider.get(reverse(name, args=[sub.uuid])).status_code == 404
        assert client_for.get(reverse(name, args=[sub.uuid])).status_code == 200
    history = outsider.get(reverse("graders:history", args=[drill.slug])).content.decode()
    assert str(sub.uuid) not in history and "No submissions yet" in history


def test_it_does_not_count_run_examples_as_an_attempt(client_for: Client, drill: Drill, learner: User) -> None:
    post_code(client_for, drill, RIGHT, kind="examples")
    sub = Submission.objects.get()
    settle(sub, Status.ACCEPTED)
    review = DrillReview.objects.get()
    assert (sub.kind, review.finished_at, ReviewLog.objects.count()) == ("examples", None, 0)
    page = client_for.get(reverse("graders:drill", args=[drill.slug]))
    assert page.context["progress"].attempts == 0
    # The first real submission is then the first attempt: accepted on it rates 5.
    submit_and_settle(client_for, drill, RIGHT, Status.ACCEPTED)
    review.refresh_from_db()
    assert (review.outcome, review.quality) == ("accepted", 5)
    assert ReviewLog.objects.get().quality == 5


@pytest.mark.parametrize(("wrong_before", "quality"), [(0, 5), (1, 4), (2, 4), (3, 3), (5, 3)])
def test_it_rates_an_acceptance_by_its_attempt_number(
    client_for: Client, drill: Drill, learner: User, wrong_before: int, quality: int
) -> None:
    for _ in range(wrong_before):
        submit_and_settle(client_for, drill, WRONG, Status.WRONG_ANSWER)
    assert ReviewLog.objects.count() == 0  # wrong answers alone never rate the card
    sub = submit_and_settle(client_for, drill, RIGHT, Status.ACCEPTED)
    log = ReviewLog.objects.get()
    state = CardState.objects.get(user=learner, card=drill.card)
    # Below 4 the drill comes back later today (SM-2 step 7), as a new review.
    assert (log.quality, log.source, state.needs_repeat) == (quality, "grader", quality < 4)
    fragment = client_for.get(reverse("graders:submission_status", args=[sub.uuid])).content.decode()
    assert f"Accepted: rated {quality}" in fragment and "Next card" in fragment
    shown = date_format(state.due, "DATE_FORMAT")  # the localized date, as on every page (issue 38)
    assert f'datetime="{state.due.isoformat()}" data-next-due>{shown}</time>' in fragment
    # "Next due" is when the card comes back: below 4 that is later today, and the page says so.
    assert ("data-comes-back>later today</span>" in fragment) == (quality < 4)
    swapped = client_for.get(reverse("graders:submission_status", args=[sub.uuid]), HTTP_HX_REQUEST="true")
    assert ("again later today, then next due" in swapped.content.decode()) == (quality < 4)


def test_it_ignores_an_internal_error_when_counting_attempts(client_for: Client, drill: Drill) -> None:
    submit_and_settle(client_for, drill, RIGHT, Status.INTERNAL_ERROR)
    submit_and_settle(client_for, drill, RIGHT, Status.ACCEPTED)
    assert ReviewLog.objects.get().quality == 5


def test_it_refuses_code_over_the_size_cap_and_writes_nothing(client_for: Client, drill: Drill, settings: Any) -> None:
    settings.GRADER_MAX_CODE_BYTES = 100
    response = post_code(client_for, drill, "def solution(x):\n    return x + 1\n" + "# 长" * 40)
    assert response.status_code == 400
    assert "the limit for this drill is 100 bytes" in response.content.decode()
    assert Submission.objects.count() == 0


def test_it_rate_limits_with_a_clear_message(client_for: Client, drill: Drill, settings: Any) -> None:
    settings.GRADER_RATE_LIMIT = 2
    for kind in ("submit", "examples"):
        assert post_code(client_for, drill, RIGHT, kind=kind).status_code == 302
    refused = post_code(client_for, drill, RIGHT)
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert "Too many submissions: at most 2 every 60 seconds." in refused.content.decode()
    live = post_code(client_for, drill, RIGHT, **HTMX)
    assert live.status_code == 200 and "Too many submissions" in live.content.decode()
    assert Submission.objects.count() == 2


def test_it_unlocks_the_reference_after_three_failed_submissions(client_for: Client, drill: Drill) -> None:
    url = reverse("graders:reference", args=[drill.slug])
    for failures in range(3):
        page = client_for.get(reverse("graders:drill", args=[drill.slug]))
        assert not page.context["reference_available"], failures
        assert client_for.post(url).status_code == 302
        assert DrillReview.objects.get().reference_viewed_at is None
        submit_and_settle(client_for, drill, WRONG, Status.WRONG_ANSWER)
    response = client_for.post(url, follow=True)
    assert "Reference solution" in response.content.decode() and "return x + 1" in response.content.decode()
    assert DrillReview.objects.get().reference_viewed_at is not None
    # Accepted after seeing the answer: a failed recall (2, Again to FSRS), not Hard (issue 39).
    submit_and_settle(client_for, drill, RIGHT, Status.ACCEPTED)
    assert ReviewLog.objects.get().quality == 2


def test_it_unlocks_the_reference_after_an_acceptance(client_for: Client, drill: Drill) -> None:
    submit_and_settle(client_for, drill, RIGHT, Status.ACCEPTED)
    page = client_for.post(reverse("graders:reference", args=[drill.slug]), follow=True).content.decode()
    assert "Reference solution" in page
    assert ReviewLog.objects.get().quality == 5  # looking after the rating changes nothing


def test_it_rates_a_give_up_0_and_goes_to_the_next_card(client_for: Client, drill: Drill, learner: User) -> None:
    submit_and_settle(client_for, drill, WRONG, Status.WRONG_ANSWER, hidden_passed=1)
    response = client_for.post(reverse("graders:give_up", args=[drill.slug]))
    assert response.status_code == 302 and response["Location"] == reverse("cards:review")
    log = ReviewLog.objects.get()
    review = DrillReview.objects.get()
    assert (log.quality, log.source, review.outcome, review.quality) == (0, "grader", "gave_up", 0)
    # Rated below 4: it comes back today (SM-2 step 7), as a new review with a fresh seed.
    state = CardState.objects.get(user=learner, card=drill.card)
    assert state.needs_repeat
    client_for.get(reverse("graders:drill", args=[drill.slug]))
    assert DrillReview.objects.count() == 1  # the page opens nothing: the next POST does
    assert client_for.post(reverse("graders:give_up", args=[drill.slug])).status_code == 302
    assert DrillReview.objects.count() == 2
    assert len(set(DrillReview.objects.values_list("seed", flat=True))) == 2
    assert ReviewLog.objects.count() == 2


@pytest.mark.parametrize(("hidden_passed", "quality"), [(0, 1), (1, 2)])
def test_it_rates_moving_on_by_the_last_verdict(
    client_for: Client, drill: Drill, hidden_passed: int, quality: int
) -> None:
    url = reverse("graders:move_on", args=[drill.slug])
    client_for.post(url)
    assert ReviewLog.objects.count() == 0  # nothing to rate before a final attempt
    sub = submit_and_settle(client_for, drill, WRONG, Status.WRONG_ANSWER, hidden_passed=hidden_passed)
    fragment = client_for.get(reverse("graders:submission_status", args=[sub.uuid])).content.decode()
    assert f"Next card (rated {quality})" in fragment
    assert client_for.post(url)["Location"] == reverse("cards:review")
    assert ReviewLog.objects.get().quality == quality


def test_it_shows_history_with_an_escaped_diff_against_the_previous_attempt(client_for: Client, drill: Drill) -> None:
    post_code(client_for, drill, "def solution(x):\n    return x + 2\n")
    post_code(client_for, drill, "def solution(x):\n    return x + 1  # <script>alert(1)</script>\n")
    page = client_for.get(reverse("graders:history", args=[drill.slug])).content.decode()
    assert '<span class="diff-del">-    return x + 2</span>' in page
    assert "+    return x + 1  # &lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)" not in page
    # One line per changed line: each line is a block, so no newline between them (that doubled the spacing).
    assert "</span>\n<span" not in page.split("data-diff>", 1)[1].split("</pre>", 1)[0]


def test_it_renders_a_markdown_drill_title_on_every_page_that_names_it(client_for: Client, drill: Drill) -> None:
    Drill.objects.filter(pk=drill.pk).update(title="Add one with `x + 1`")
    post_code(client_for, drill, RIGHT)
    sub = Submission.objects.get()
    for name, args in (
        ("graders:drill", [drill.slug]),
        ("graders:history", [drill.slug]),
        ("graders:submission", [sub.uuid]),
    ):
        page = client_for.get(reverse(name, args=args)).content.decode()
        assert "Add one with <code>x + 1</code>" in page, name
        assert "`" not in page.split("<h1>", 1)[1].split("</h1>", 1)[0], name
        assert "<title>" in page and "Add one with x + 1" in page.split("<title>", 1)[1].split("</title>", 1)[0], name


def test_the_review_page_links_a_drill_card_without_rating_buttons(
    client_for: Client, drill: Drill, django_assert_num_queries: Any
) -> None:
    client_for.get(reverse("cards:review"))  # creates the learner's profile
    # session, user + profile, counts + queue heads, the card: no query more than any other card
    with django_assert_num_queries(4):
        response = client_for.get(reverse("cards:review"))
    page = response.content.decode()
    assert response.context["item"].card == drill.card
    assert reverse("graders:for_card", args=[drill.card.uuid]) in page
    assert "data-rating-form" not in page and "Show answer" not in page


def test_it_refuses_a_self_rating_for_a_drill_card(client_for: Client, drill: Drill) -> None:
    response = client_for.post(reverse("cards:rate", args=[drill.card.uuid]), {"quality": 5, "version": 0})
    assert response.status_code == 409
    assert ReviewLog.objects.count() == 0 and not CardState.objects.exists()


def test_the_review_page_shows_an_output_cards_answer_box(client_for: Client, note: Any) -> None:
    from tests.cards.factories import make_card

    card = make_card(note=note, kind="output")
    page = client_for.get(reverse("cards:review")).content.decode()
    assert f'id="output-answer-{card.uuid}"' in page and "data-rating-form" in page
