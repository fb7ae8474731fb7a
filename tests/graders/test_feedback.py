"""The verdict as a judge gives it: the learner's output beside the expected one, each fact once."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
import torch
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from graders.drills.compare import REPR_CHARS, describe
from graders.drills.grading import SAME_AS_EXAMPLES, ReferenceCache, grade
from graders.drills.local import LocalRunner
from graders.models import Drill, Submission
from tests.graders.conftest import RIGHT, WRONG, graded_submission

pytestmark = pytest.mark.django_db


def graded(learner: User, drill: Drill, code: str) -> Submission:
    """Grade ``code`` for real (trusted, in this process) and store the verdict as a worker would."""
    verdict = grade(drill.spec, code, seed=7, runner=LocalRunner(), cache=ReferenceCache())
    sub = graded_submission(learner, drill, verdict["status"], timezone.now())
    sub.code, sub.verdict = code, verdict
    sub.save(update_fields=["code", "verdict"])
    return sub


def page_of(client: Client, sub: Submission) -> str:
    return client.get(reverse("graders:submission", args=[sub.uuid])).content.decode()


def test_it_shows_the_learners_values_beside_the_expected_ones_once(
    client_for: Client, learner: User, drill: Drill
) -> None:
    wrong = "def solution(x):\n    return x + 2 if x.numel() == 2 else x + 1\n"  # right on the twin pair
    sub = graded(learner, drill, wrong)  # x + 2 where x + 1 is expected; the example is [1.0, 2.0]
    around = sub.verdict["mismatch"]["around"]
    assert [(n["actual"], n["expected"], n["differs"]) for n in around] == [(3.0, 2.0, True), (4.0, 3.0, True)]
    page = page_of(client_for, sub)
    assert page.count("data-mismatch") == 1 and page.count("data-around") == 2
    assert page.count("wrong value") == 0  # the table says it; the sentence is not repeated three times
    assert "Your output" in page and "<code>3.0</code></td><td><code>2.0</code>" in page
    assert "torch.float32" in page and "[2]" in page  # dtype and shape, both sides


def test_it_shows_a_wrong_shape_and_the_first_values(client_for: Client, learner: User, drill: Drill) -> None:
    sub = graded(learner, drill, "def solution(x):\n    return (x + 1).unsqueeze(0).expand(2, -1)\n")
    page = page_of(client_for, sub)
    assert sub.verdict["mismatch"]["kind"] == "shape"
    assert "<td data-actual-shape><code>[2, 2]</code></td><td><code>[2]</code>" in page
    assert "data-actual-values" in page


def test_it_shows_what_a_wrongly_typed_answer_was(client_for: Client, learner: User, drill: Drill) -> None:
    sub = graded(learner, drill, "def solution(x):\n    return [1, 2] if x.numel() == 2 else x + 1\n")
    page = page_of(client_for, sub)
    assert "expected a tensor, got list" in page and "<td data-actual-value><code>[1, 2]</code>" in page
    assert page.count("expected a tensor, got list") == 1


def test_hidden_cases_say_passed_or_failed_only(client_for: Client, learner: User, drill: Drill) -> None:
    # The twin pair is drawn from the first hidden spec: one of the example's shape, so the code below is right
    # on every visible case and wrong on the three hidden ones.
    drill.definition = drill.definition.replace(
        "[[hidden]]", '[[hidden]]\nname = "pair"\nargs = ["torch.randn(2, generator=g)"]\n\n[[hidden]]', 1
    )
    drill.save(update_fields=["definition"])
    code = "def solution(x):\n    return x + 1 if x.numel() == 2 else x\n"  # right on the visible cases only
    sub = graded(learner, drill, code)
    assert "mismatch" not in sub.verdict
    page = page_of(client_for, sub)
    assert "data-mismatch" not in page and "Your output" not in page and "hidden case" not in page
    assert page.count('class="fail"') == 3


def test_a_view_stays_bounded_whatever_was_returned() -> None:
    assert len(describe(list(range(100_000)))["repr"]) <= REPR_CHARS
    big = describe(torch.arange(1_000_000))
    assert big["shape"] == [1_000_000] and len(big["values"]) < 100


def test_the_editor_starts_from_the_learners_latest_code_even_in_a_new_review(
    client_for: Client, learner: User, drill: Drill
) -> None:
    old = graded_submission(learner, drill, "wrong_answer", timezone.now() - timedelta(days=3))
    old.code = "def solution(x):\n    return 'my last try'\n"
    old.save(update_fields=["code"])
    page = client_for.get(reverse("graders:drill", args=[drill.slug])).content.decode()
    assert "my last try" in page


def test_every_failing_visible_case_shows_its_own_output(client_for: Client, learner: User, drill: Drill) -> None:
    spec_text = drill.definition.replace(
        "[[hidden]]", '[[examples]]\nname = "bigger"\nargs = ["torch.tensor([5.0, 6.0, 7.0])"]\n\n[[hidden]]', 1
    )
    drill.definition = spec_text
    drill.save(update_fields=["definition"])
    sub = graded(learner, drill, WRONG)
    visible = [test for test in sub.verdict["tests"] if not test["hidden"]]
    assert [test["name"] for test in visible] == ["small", "bigger", "line-twin-a", "line-twin-b"]
    assert all("mismatch" in test for test in visible[:2])  # every failing example shows its own output
    assert all(test["message"] == SAME_AS_EXAMPLES for test in visible[2:])  # the twins only say they fail too
    assert not any("mismatch" in test for test in sub.verdict["tests"] if test["hidden"])
    page = page_of(client_for, sub)
    assert page.count("data-mismatch") == 2 and "<code>7.0</code></td><td><code>6.0</code>" in page


def test_a_cuda_drill_graded_on_the_cpu_says_so_on_the_verdict(
    client_for: Client, learner: User, make_drill: Callable[..., Drill]
) -> None:
    sub = graded(learner, make_drill(device="cuda"), RIGHT)
    sub.device = "cpu"  # as a worker without a GPU records it (make run's GRADER_CPU_FALLBACK)
    sub.save(update_fields=["device"])
    assert "ran on CPU (no GPU on this server)" in page_of(client_for, sub)
    sub.device = "cuda"
    sub.save(update_fields=["device"])
    assert "ran on CUDA GPU" in page_of(client_for, sub)
    drill_page = client_for.get(reverse("graders:drill", args=[sub.drill.slug])).content.decode()
    assert "a server without a GPU grades it on the CPU, and the verdict says so" in drill_page
