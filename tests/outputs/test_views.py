"""The output-card answer box and the notes check page (runs stored directly: no sandbox here)."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from cards.models import Card, CardState, Note, ReviewLog, TouchedDay
from jobs import lifecycle as jobs
from jobs.models import GraderHeartbeat
from jobs.status import Status
from outputs import runs
from outputs.models import SnippetRun

FRONT = "S: 运行下面的代码会输出什么?\n\n```python\nx = torch.tensor([1., 2.])\nx * 2\n```"
BACK = "```text\ntensor([2., 4.])\n```"


@pytest.fixture
def note(db: None) -> Note:
    return Note.objects.create(slug="n", path="notes/n.md", title="N", content="# N", content_hash="0")


def _card(note: Note, kind: str = Card.Kind.OUTPUT, front: str = FRONT, back: str = BACK) -> Card:
    return Card.objects.create(
        key=uuid.uuid4().hex,
        note=note,
        kind=kind,
        front=front,
        back=back,
        front_html="f",
        back_html="b",
        content_hash="h",
    )


@pytest.fixture
def card(note: Note) -> Card:
    return _card(note)


@pytest.fixture
def ran(card: Card) -> SnippetRun:
    snippet = runs.snippet_for(card)
    assert snippet is not None
    return SnippetRun.objects.create(
        card=card,
        content_hash=snippet.content_hash,
        status=Status.DONE,
        finished_at=timezone.now(),
        outcome="ok",
        output="tensor([2., 4.])",
    )


@pytest.fixture
def learner(db: None) -> User:
    return User.objects.create_user("learner", password="x")


@pytest.fixture
def signed_in(client: Client, learner: User) -> Client:
    client.force_login(learner)
    return client


def _answer(client: Client, card: Card, text: str, version: int = 0) -> object:
    return client.post(reverse("outputs:answer", args=[card.uuid]), {"answer": text, "version": version})


def test_it_needs_a_login(client: Client, card: Card, ran: SnippetRun) -> None:
    response = _answer(client, card, "tensor([2., 4.])")
    assert response.status_code == 302
    assert not ReviewLog.objects.exists()


def test_it_rates_a_right_answer_4_exactly_once(signed_in: Client, learner: User, card: Card, ran: SnippetRun) -> None:
    first = _answer(signed_in, card, "tensor([2.0000, 4.0000])")
    assert first.status_code == 200
    assert b"Right!" in first.content and b"tensor([2., 4.])" in first.content
    # The page's counts move with the rating: one done, nothing left (the progress swapped out of band).
    progress = first.content.decode().split('id="review-progress" hx-swap-oob="true"', 1)[1]
    assert '<span id="count-reviewed">1</span> done' in progress and "0 new" in progress
    again = _answer(signed_in, card, "tensor([2.0000, 4.0000])")
    assert b"already rated" in again.content
    logs = list(ReviewLog.objects.filter(user=learner, card=card))
    assert [(log.quality, log.source) for log in logs] == [(4, "output")]
    state = CardState.objects.get(user=learner, card=card)
    state.refresh_from_db()
    assert state.version == 1 and state.repetitions == 1
    # The answer marked its learner day for the teams rollup, once, in its own transaction.
    assert list(TouchedDay.objects.values_list("user_id", "day")) == [(learner.pk, logs[0].review_day)]


def test_it_rates_a_wrong_answer_1_and_shows_the_real_output(
    signed_in: Client, learner: User, card: Card, ran: SnippetRun
) -> None:
    response = _answer(signed_in, card, "tensor([2, 4])")
    assert b"Not quite." in response.content and b"tensor([2., 4.])" in response.content
    assert list(ReviewLog.objects.values_list("quality", flat=True)) == [1]
    assert CardState.objects.get(user=learner, card=card).needs_repeat is True


def test_it_refuses_an_answer_with_someone_elses_state_version(signed_in: Client, card: Card, ran: SnippetRun) -> None:
    other = User.objects.create_user("other", password="x")
    CardState.objects.create(user=other, card=card, due="2020-01-01", version=3)
    response = _answer(signed_in, card, "tensor([2., 4.])", version=3)
    assert response.status_code == 404
    assert not ReviewLog.objects.exists()


def test_it_answers_404_for_an_unknown_card_and_400_for_a_card_of_another_kind(signed_in: Client, note: Note) -> None:
    qa = _card(note, kind=Card.Kind.QA, front="Q?", back="A")
    missing = signed_in.post(reverse("outputs:answer", args=[uuid.uuid4()]), {"answer": "1", "version": 0})
    assert missing.status_code == 404
    assert _answer(signed_in, qa, "1").status_code == 400
    assert not ReviewLog.objects.exists() and not SnippetRun.objects.exists()


def test_it_shows_a_form_error_for_an_empty_answer_and_writes_nothing(
    signed_in: Client, card: Card, django_capture_on_commit_callbacks: object
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        response = _answer(signed_in, card, "   ")
    assert response.status_code == 200
    assert b"This field is required." in response.content
    assert callbacks == []
    assert not ReviewLog.objects.exists() and not SnippetRun.objects.exists() and not CardState.objects.exists()


def test_it_requests_a_missing_run_once_and_polls_without_rating(
    signed_in: Client, card: Card, django_capture_on_commit_callbacks: object
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        first = _answer(signed_in, card, "tensor([2., 4.])")
        second = _answer(signed_in, card, "tensor([2., 4.])")
    assert b"The grader is offline" in first.content and b"Your answer is saved" in second.content
    assert len(callbacks) == 1  # one task for one pending row
    run = SnippetRun.objects.get(card=card)
    assert run.status == Status.QUEUED
    GraderHeartbeat.objects.create(name="h:1", queues=["grade_cpu"], device="cpu")
    assert b"Waiting for a grader" in _answer(signed_in, card, "tensor([2., 4.])").content
    assert not ReviewLog.objects.exists()


def test_it_falls_back_to_self_rating_for_a_random_snippet(signed_in: Client, card: Card, ran: SnippetRun) -> None:
    SnippetRun.objects.filter(pk=ran.pk).update(outcome="random")
    response = _answer(signed_in, card, "tensor([2., 4.])")
    assert b"cannot be checked automatically" in response.content
    assert not ReviewLog.objects.exists()


def test_it_shows_the_notes_check_to_staff_only(client: Client, learner: User, card: Card, ran: SnippetRun) -> None:
    SnippetRun.objects.filter(pk=ran.pk).update(output="tensor([2., 5.])")
    client.force_login(learner)
    assert client.get(reverse("outputs:notes_check")).status_code == 302
    learner.is_staff = True
    learner.save(update_fields=["is_staff"])
    response = client.get(reverse("outputs:notes_check"))
    assert response.status_code == 200
    html = response.content.decode()
    # The run qualifies (the card asks what torch prints); the note shows another output.
    assert "The note shows another output (1)" in html and "tensor([2., 5.])" in html
    assert "Kept out of review (0)" in html
    SnippetRun.objects.filter(pk=ran.pk).update(outcome="random")
    html = client.get(reverse("outputs:notes_check")).content.decode()
    assert "Kept out of review (1)" in html and "<strong>random</strong>: prints something else" in html


def test_it_asks_for_the_run_when_the_box_loads(
    signed_in: Client, card: Card, django_capture_on_commit_callbacks: object
) -> None:
    with django_capture_on_commit_callbacks() as callbacks:
        response = signed_in.post(reverse("outputs:prepare", args=[card.uuid]))
    assert response.status_code == 204
    assert len(callbacks) == 1
    assert SnippetRun.objects.get(card=card).status == Status.QUEUED


def test_it_lets_exactly_one_worker_claim_a_run(card: Card) -> None:
    snippet = runs.snippet_for(card)
    assert snippet is not None
    run = SnippetRun.objects.create(card=card, content_hash=snippet.content_hash)
    first, second = (jobs.claim(runs.SNIPPETS, run.pk, timezone.now()) for _ in range(2))
    assert first.job is not None and second.job is None and second.reason == "busy"
    run.refresh_from_db()
    assert run.status == Status.RUNNING and run.claimed_at is not None and run.claim_token == first.token
    jobs.release_claim(first.token)


def test_it_sends_snippet_runs_to_the_cpu_grading_queue(card: Card) -> None:
    snippet = runs.snippet_for(card)
    assert snippet is not None
    assert runs.SNIPPETS.queue(SnippetRun(card=card, content_hash=snippet.content_hash)) == "grade_cpu"


def test_it_renders_the_answer_box_with_the_review_items_version(rf: object, learner: User, card: Card) -> None:
    from types import SimpleNamespace

    from django.template.loader import render_to_string

    request = rf.get("/review/")
    request.user = learner
    html = render_to_string(
        "outputs/snippets/output_answer.html", {"card": card, "item": SimpleNamespace(version=7)}, request=request
    )
    assert reverse("outputs:answer", args=[card.uuid]) in html
    assert 'name="version" value="7"' in html
    assert reverse("outputs:prepare", args=[card.uuid]) in html


def test_it_grades_a_snippet_that_continues_an_earlier_block_against_the_run_with_context(
    signed_in: Client, card: Card, ran: SnippetRun
) -> None:
    SnippetRun.objects.filter(pk=ran.pk).update(
        outcome="needs_context", output="", context_outcome="ok", context_output="tensor(0.9076)"
    )
    response = _answer(signed_in, card, "tensor(0.9076)")
    assert b"Right!" in response.content
    assert list(ReviewLog.objects.values_list("quality", flat=True)) == [4]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.xdist_group("celery-redis")
def test_it_grades_through_a_real_worker(workers: object, transactional_db: None, learner: User, card: Card) -> None:
    """The answer box asks for the run, a Celery worker runs the snippet, the poll then gets the verdict."""
    import time

    from tests.graders.conftest import Workers

    assert isinstance(workers, Workers)
    workers.current  # noqa: B018 - starts one when none is running
    from django.conf import settings

    from jobs.heartbeat import grader_status

    deadline = time.monotonic() + 30
    # The worker beats once it has started; on a loaded machine a beat can come late, so wait until
    # the queue reads online rather than for the first row.
    while not (GraderHeartbeat.objects.exists() and grader_status(settings.GRADER_QUEUE_CPU).online):
        assert time.monotonic() < deadline, "the worker never wrote a heartbeat"
        time.sleep(0.05)
    client = Client()
    client.force_login(learner)
    assert b"Waiting for a grader" in _answer(client, card, "tensor([2., 4.])").content
    deadline = time.monotonic() + 60
    while not SnippetRun.objects.filter(card=card, status=Status.DONE, outcome="ok").exists():
        assert time.monotonic() < deadline, "the worker never ran the snippet"
        time.sleep(0.05)
    assert b"Right!" in _answer(client, card, "tensor([2., 4.])").content
    assert SnippetRun.objects.get(card=card).output == "tensor([2., 4.])"
    assert list(ReviewLog.objects.values_list("quality", flat=True)) == [4]


def test_another_learners_private_output_card_is_not_found(signed_in: Client, note: Note, ran: SnippetRun) -> None:
    note.owner = User.objects.create_user("owner", password="x")
    note.save(update_fields=["owner"])
    assert _answer(signed_in, ran.card, "tensor([2., 4.])").status_code == 404  # type: ignore[attr-defined]
    assert signed_in.post(reverse("outputs:prepare", args=[ran.card.uuid])).status_code == 404
    assert not ReviewLog.objects.exists()
