""" "Check" for an authored drill (``graders.authoring.checking``): each item of the report, with the trusted
in-process runner (the drills here are ours); tests/courses/test_hostile_drills.py runs hostile ones in the sandbox.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from graders.authoring.checking import run_check, same_value
from graders.drills.local import LocalRunner
from graders.drills.schema import parse_drill

pytestmark = pytest.mark.slow

DRILL = """\
slug = "double"
title = "Double it"
entry_point = "solution"
device = "cpu"
prompt_en = "Write `solution(x)`: return `2 * x`."
starter = "def solution(x):\\n    ...\\n"
reference = "def solution(x):\\n    return x * 2\\n"

[source]
note = "basics.md"
heading = "Tensors"

[[examples]]
name = "small"
args = ["torch.tensor([1.0, 2.0])"]

[[hidden]]
name = "random"
repeat = 2
args = ["torch.randn(4, generator=g)"]

[[wrong]]
why = "adds instead of multiplying"
expect = "wrong_answer"
code = "def solution(x):\\n    return x + 2\\n"

[[wrong]]
why = "a typo"
expect = "runtime_error"
says = "NameError"
code = "def solution(x):\\n    return y * 2\\n"

[[alternative]]
why = "add it to itself"
code = "def solution(x):\\n    return x + x\\n"
"""


@pytest.fixture(scope="module")
def runner() -> LocalRunner:
    return LocalRunner()


def check(text: str, runner: Any, **kw: Any) -> dict[str, Any]:
    kw.setdefault("budget_seconds", 60.0)
    return dict(run_check(parse_drill(text), runner, seeds=(11, 12), **kw))


def items(report: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [item for item in report["items"] if item["kind"] == kind]


def test_it_passes_a_drill_whose_checks_all_hold(runner: LocalRunner) -> None:
    report = check(DRILL, runner)
    assert report["passed"], report["items"]
    assert [i["kind"] for i in report["items"]] == [
        "statement", "reference", "reference", "varies", "wrong", "wrong", "alternative"
    ]  # fmt: skip
    assert [i["name"] for i in items(report, "reference")] == ["seed 11", "seed 12"]
    assert [i["status"] for i in items(report, "wrong")] == ["wrong_answer", "runtime_error"]
    assert report["examples"] == [{"name": "small", "output": "tensor([2., 4.])"}]
    assert report["seeds"] == [11, 12] and report["version"] == parse_drill(DRILL).version


def test_it_fails_a_reference_that_fails_its_own_cases_and_runs_nothing_else(runner: LocalRunner) -> None:
    broken = DRILL.replace("return x * 2\\n", "return x * 2 if x.numel() == 2 else x.undefined\\n", 1)
    report = check(broken, runner)
    assert not report["passed"]
    reference = items(report, "reference")
    assert len(reference) == 1 and not reference[0]["passed"]
    assert "not accepted on its own cases" in reference[0]["message"]
    assert "the reference failed case random-1" in reference[0]["message"] and "undefined" in reference[0]["message"]
    assert all(i["message"].startswith("Not run") for i in items(report, "wrong") + items(report, "alternative"))
    assert items(report, "varies") == []


def test_it_fails_a_wrong_solution_that_gets_another_verdict_than_expected(runner: LocalRunner) -> None:
    text = DRILL.replace('expect = "runtime_error"', 'expect = "time_limit"')
    typo = items(check(text, runner), "wrong")[1]
    assert not typo["passed"]
    assert (typo["status"], typo["expected"]) == ("runtime_error", "time_limit")
    assert typo["message"].startswith("Expected time_limit, got runtime_error")


def test_it_fails_a_wrong_solution_whose_message_lacks_its_words(runner: LocalRunner) -> None:
    report = check(DRILL.replace('says = "NameError"', 'says = "ZeroDivisionError"'), runner)
    typo = items(report, "wrong")[1]
    assert not typo["passed"] and "does not say “ZeroDivisionError”" in typo["message"]
    assert not report["passed"]


def test_a_wrong_solutions_words_may_be_in_the_verdicts_hint(runner: LocalRunner) -> None:
    leaf = "def solution(x):\\n    x = x.clone().requires_grad_()\\n    x *= 2\\n    return x.detach()\\n"
    # The drill has no update (its reference updates nothing under no_grad): the hint names the out-of-place form.
    text = DRILL.replace('says = "NameError"', 'says = "use the out-of-place form"').replace(
        'code = "def solution(x):\\n    return y * 2\\n"', f'code = "{leaf}"'
    )
    in_place = items(check(text, runner), "wrong")[1]
    assert in_place["passed"] and in_place["status"] == "runtime_error", in_place


def test_it_fails_an_alternative_that_is_not_accepted(runner: LocalRunner) -> None:
    report = check(DRILL.replace("return x + x", "return x + x + 1"), runner)
    alternative = items(report, "alternative")[0]
    assert not alternative["passed"] and alternative["status"] == "wrong_answer"


def test_it_fails_a_wrong_solution_that_is_accepted(runner: LocalRunner) -> None:
    report = check(DRILL.replace("return x + 2\\n", "return 2 * x\\n"), runner)
    assert items(report, "wrong")[0]["status"] == "accepted" and not report["passed"]


def test_it_refuses_a_hidden_case_that_never_varies_with_the_seed(runner: LocalRunner) -> None:
    text = DRILL.replace('"torch.randn(4, generator=g)"', '"torch.ones(4) + 0 * torch.rand(1, generator=g)"')
    varies = items(check(text, runner), "varies")[0]
    assert not varies["passed"] and "“random”" in varies["message"] and "fixed = true" in varies["message"]
    assert "the same inputs for 9 seeds" in varies["message"]


def test_it_tries_more_seeds_before_refusing_a_case_that_met_itself_by_chance(runner: LocalRunner) -> None:
    """A case drawn from three shapes is the same for two seeds one time in three: not a case that never varies."""
    from graders.drills import generate_cases

    text = DRILL.replace('"torch.randn(4, generator=g)"', '"torch.zeros(rng.randint(1, 3))"')
    drill = parse_drill(text)
    made = {seed: generate_cases(drill, seed, runner=runner) for seed in range(100)}
    shapes = {seed: [c.args[0].shape for c in cases if c.hidden] for seed, cases in made.items()}
    first = next(seed for seed in range(99) if shapes[seed] == shapes[seed + 1])
    varies = items(dict(run_check(drill, runner, seeds=(first, first + 1), budget_seconds=60.0)), "varies")[0]
    assert varies["passed"], varies


def test_it_counts_a_hidden_case_that_draws_from_rng_as_varying(runner: LocalRunner) -> None:
    text = DRILL.replace('"torch.randn(4, generator=g)"', '"torch.arange(rng.randint(2, 1000))"')
    assert items(check(text, runner), "varies")[0]["passed"]


def test_it_fails_a_statement_that_contradicts_the_contract(runner: LocalRunner) -> None:
    text = DRILL.replace("return `2 * x`.", "return a new tensor, `2 * x`.").replace(
        "[source]", '[contract]\nresult = "may_view"\n\n[source]'
    )
    report = check(text, runner)
    statement = items(report, "statement")
    assert not statement[0]["passed"] and 'result = "may_view"' in statement[0]["message"]
    assert not report["passed"]
    assert all(i["passed"] for i in report["items"] if i["kind"] != "statement")  # the rest still ran


def test_it_stops_once_its_budget_is_spent_and_says_what_was_not_run(runner: LocalRunner) -> None:
    ticks = itertools.count(step=10.0)  # every look at the clock: ten more seconds
    report = check(DRILL, runner, budget_seconds=25.0, clock=lambda: next(ticks))
    assert not report["passed"]
    not_run = [i for i in report["items"] if i["message"].startswith("Not run: the check used its 25 s")]
    assert not_run and all(not i["passed"] for i in not_run)


def test_it_compares_case_inputs_bit_for_bit() -> None:
    import torch

    assert same_value((torch.tensor([1.0, float("nan")]), [2, "a"]), (torch.tensor([1.0, float("nan")]), [2, "a"]))
    assert not same_value(torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64))
    assert not same_value(torch.zeros(2, 3), torch.zeros(3, 2))
    assert not same_value(torch.tensor([0.0]), torch.tensor([-0.0]))  # equal values, different bits
    assert not same_value(object(), object())  # cannot tell: never refuse on a guess
    modules = []
    for seed in (0, 0, 1):
        torch.manual_seed(seed)
        modules.append(torch.nn.Linear(2, 2))
    assert same_value(modules[0], modules[1]) and not same_value(modules[0], modules[2])
