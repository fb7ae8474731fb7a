"""Teacher words (graders.drills.teacher): the common mistakes named with their fix, a time limit's unreached
cases "not run", a rejected submission shown as refused before running."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import translation

from graders.drills import DRILLS_DIR, load_drills
from graders.drills.grading import ReferenceCache, grade
from graders.drills.local import LocalRunner
from graders.drills.schema import parse_drill
from graders.drills.teacher import (
    LEAF_CHANGED,
    LEAF_IN_PLACE,
    NONFINITE,
    OVERFLOW,
    TIME_LIMIT,
    UNDERFLOW,
    hint_for,
)
from graders.models import Drill
from graders.sandbox.results import RunResult
from graders.web.verdict_text import SHAPES
from tests.graders.conftest import RIGHT, graded_submission
from tests.graders.test_feedback import page_of

DRILLS = load_drills(DRILLS_DIR)
SGD = DRILLS["manual-sgd-step"]
SOFTMAX = DRILLS["softmax-dim"]
REVERSE = DRILLS["reverse-1d"]

LEAF_UPDATE = """import torch


def solution(w, b, x, y, lr):
    w = w.clone().requires_grad_(True)
    b = b.clone().requires_grad_(True)
    loss = ((x @ w + b - y) ** 2).mean()
    loss.backward()
    w -= lr * w.grad
    b -= lr * b.grad
    return w.detach(), b.detach()
"""
NAIVE_SOFTMAX = "def solution(alpha):\n    e = torch.exp(alpha)\n    return e / e.sum(dim=0, keepdim=True)\n"


def graded(drill: Any, code: str, runner: Any = None) -> dict[str, Any]:
    return dict(grade(drill, code, seed=7, runner=runner or LocalRunner(), cache=ReferenceCache()))


def test_an_in_place_update_of_a_leaf_names_no_grad() -> None:
    verdict = graded(SGD, LEAF_UPDATE)
    assert verdict["status"] == "runtime_error" and verdict["hint"] == LEAF_IN_PLACE
    assert "with torch.no_grad():" in verdict["hint"]


def test_an_overflowing_softmax_is_told_to_subtract_the_maximum() -> None:
    verdict = graded(SOFTMAX, NAIVE_SOFTMAX)
    assert verdict["status"] == "wrong_answer" and verdict["hint"] == OVERFLOW
    assert verdict["mismatch"]["message"].endswith("* |expected|)")  # the value line keeps its one shape


def test_a_right_or_plainly_wrong_answer_gets_no_hint() -> None:
    assert "hint" not in graded(SOFTMAX, SOFTMAX.reference)
    assert "hint" not in graded(SOFTMAX, "def solution(alpha):\n    return alpha\n")


class TimedOutExamples(LocalRunner):
    """The learner's code runs out of time in the examples (the reference runs as ever)."""

    def run(self, *args: Any, **kwargs: Any) -> RunResult:
        if kwargs.get("reference"):
            return super().run(*args, **kwargs)
        return RunResult("time_limit", message="time limit: over 10 s of wall time")


class TimedOutHidden(LocalRunner):
    """The examples pass; the hidden phase runs out of time after its first two cases."""

    def run(self, *args: Any, **kwargs: Any) -> RunResult:
        result = super().run(*args, **kwargs)
        if kwargs.get("reference"):
            return result
        return dataclasses.replace(result, hidden=result.hidden[:2], hidden_status="time_limit")


def test_a_time_limit_says_the_hidden_cases_after_it_were_not_run() -> None:
    early = graded(REVERSE, REVERSE.reference, TimedOutExamples())
    assert early["status"] == "time_limit" and early["hint"] == TIME_LIMIT
    assert {t["message"] for t in early["tests"] if t["hidden"]} == {"not run"}
    late = graded(REVERSE, REVERSE.reference, TimedOutHidden())
    hidden = [t["message"] for t in late["tests"] if t["hidden"]]
    assert late["status"] == "time_limit" and late["hint"] == TIME_LIMIT
    assert hidden[:3] == ["failed", "failed", "time_limit"] and set(hidden[3:]) == {"not run"}


def test_every_hint_is_in_the_translation_catalogue() -> None:
    sources = {shape.source for shape in SHAPES}
    assert {LEAF_IN_PLACE, LEAF_CHANGED, OVERFLOW, UNDERFLOW, NONFINITE, TIME_LIMIT} <= sources


@pytest.mark.django_db
def test_the_verdict_page_shows_the_hint_and_time_limits_not_run(
    client_for: Client, learner: User, drill: Drill
) -> None:
    sub = graded_submission(learner, drill, "time_limit", drill.created_at)
    sub.verdict = graded(drill.spec, RIGHT, TimedOutExamples())
    sub.save(update_fields=["verdict"])
    with translation.override("en"):
        page = page_of(client_for, sub)
    assert "Hint:" in page and "were not run, not failed" in page
    assert page.count('class="skip"') == sub.verdict["hidden_total"] and "not run" in page


@pytest.mark.django_db
def test_a_rejected_submission_shows_no_counts_and_says_nothing_ran(
    client_for: Client, learner: User, make_drill: Callable[..., Drill]
) -> None:
    drill = make_drill()

    class Refusing(LocalRunner):
        def run(self, *args: Any, **kwargs: Any) -> RunResult:
            if kwargs.get("reference"):
                return super().run(*args, **kwargs)
            return RunResult("rejected", message='line 1: "import os" is not allowed')

    sub = graded_submission(learner, drill, "rejected", drill.created_at)
    sub.verdict = graded(drill.spec, "import os\n" + RIGHT, Refusing())
    sub.save(update_fields=["verdict"])
    page = page_of(client_for, sub)
    assert sub.verdict["total"] == 0 and "passed" not in page.split('id="verdict"')[1].split("</p>")[0]
    assert "nothing ran, so no test passed or failed" in page and "import os" in page
    sub.verdict = {**sub.verdict, "passed": 0, "total": 10}  # stored before rejections carried no counts
    sub.save(update_fields=["verdict"])
    history = client_for.get(reverse("graders:history", args=[drill.slug])).content.decode()
    assert "0/10" not in history and "Rejected before running, nothing ran:" in history
    assert "0/10" not in page_of(client_for, sub)


def test_an_underflowing_softmax_is_not_told_it_overflowed() -> None:
    """Very negative inputs: every `exp` is 0 and 0/0 is nan; the fix names the underflow, not an overflow."""
    text = Path(SOFTMAX.path).read_text(encoding="utf-8")
    large = 'args = ["torch.tensor([[[1000.0]], [[999.0]], [[-1000.0]]])"]'
    assert large in text
    very_negative = parse_drill(text.replace(large, 'args = ["torch.tensor([[[-1000.0]], [[-1001.0]], [[-1003.0]]])"]'))
    verdict = graded(very_negative, NAIVE_SOFTMAX)
    assert verdict["status"] == "wrong_answer" and verdict["message"].startswith("large-values"), verdict["message"]
    assert verdict["hint"] == UNDERFLOW
    assert hint_for("wrong_answer", [], {"nonfinite": True}) == OVERFLOW  # a stored mismatch from before the kind
    assert hint_for("wrong_answer", [], {"nonfinite": True, "nonfinite_kind": ""}) == NONFINITE


def test_a_puzzle_that_refuses_clone_shows_the_shape_error_not_a_clone() -> None:
    """Returning the argument itself shares its memory and has the wrong shape: the shape is what to fix, and a
    puzzle whose allowed calls leave out `.clone()` is never told to call it."""
    flatten = DRILLS["puzzle-flatten"]
    verdict = graded(flatten, "import torch\n\n\ndef flatten(a):\n    return a\n")
    assert verdict["status"] == "wrong_answer" and "shape" in verdict["message"], verdict["message"]
    assert "clone" not in verdict["message"]


def test_changing_an_input_in_place_on_a_drill_without_an_update_is_not_told_to_use_no_grad() -> None:
    """stop-gradient's input requires grad and the drill has no update: `x += 1` is the mistake, not a missing
    `torch.no_grad()` around an update (manual-sgd-step, whose reference updates under it, still gets that)."""
    verdict = graded(DRILLS["stop-gradient"], "import torch\n\n\ndef solution(x):\n    x += 1\n    return x\n")
    assert verdict["status"] == "runtime_error" and verdict["hint"] == LEAF_CHANGED, verdict
    assert "no_grad" not in verdict["hint"]
