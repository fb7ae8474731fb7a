"""The statement-vs-contract rule (``graders.authoring.statement``), on the bundled drills' real statements.

numpy-repeat and index-assign-rows promised "a new tensor" while their contracts said ``result = "may_view"``
(issue 39): the rule names both as they were; the same statements with a contract that agrees pass, and so does
every bundled drill now (numpy-repeat's statement says a view is fine; index-assign-rows' contract says "new").
"""

from __future__ import annotations

import dataclasses

import pytest

from graders.authoring.statement import contradictions, drill_contradictions, sentences
from graders.drills import DRILLS_DIR, load_drills
from graders.drills.schema import Contract, Drill

DRILLS = load_drills(DRILLS_DIR)
# The two bundled drills as issue 39 found them: each statement promised a new tensor, each contract said a view
# of an argument passes.
_REPEAT = DRILLS["numpy-repeat"]
_ROWS = DRILLS["index-assign-rows"]
AS_FOUND = {
    "numpy-repeat": dataclasses.replace(
        _REPEAT,
        prompt_zh="写 `solution(x, n)`：输入一维张量 `x` 和正整数 `n`，返回一个新张量，其中每个元素连续重复 `n` 次"
        "（`x` 本身不变），dtype 不变。",
        prompt_en="Write `solution(x, n)`: given a 1-D tensor `x` and a positive int `n`, return a new tensor in which "
        "each element is repeated `n` times in a row (`x` itself unchanged), keeping the dtype.",
    ),
    "index-assign-rows": dataclasses.replace(_ROWS, contract=dataclasses.replace(_ROWS.contract, result="may_view")),
}


def found(drill: Drill, contract: Contract | None = None) -> list[str]:
    return contradictions(
        [drill.prompt_en, drill.prompt_zh], contract or drill.contract, drill.arg_names, drill.entry_point
    )


@pytest.mark.parametrize("slug", sorted(AS_FOUND))
def test_it_names_a_new_tensor_promised_where_the_contract_allows_a_view(slug: str) -> None:
    problems = found(AS_FOUND[slug])
    assert len(problems) == 2  # one per language
    assert all('result = "may_view"' in problem for problem in problems)
    assert "return a new tensor" in problems[0] and "返回一个新张量" in problems[1]


@pytest.mark.parametrize("slug", sorted(AS_FOUND))
def test_it_accepts_the_same_statement_once_the_contract_agrees(slug: str) -> None:
    assert found(AS_FOUND[slug], dataclasses.replace(AS_FOUND[slug].contract, result="new")) == []


def test_every_bundled_drill_agrees_with_its_contract() -> None:
    assert {slug for slug, drill in DRILLS.items() if drill_contradictions(drill)} == set()


def test_it_names_a_dtype_promised_where_the_comparison_ignores_dtypes() -> None:
    loose = dataclasses.replace(_REPEAT, compare=dataclasses.replace(_REPEAT.compare, check_dtype=False))
    problems = drill_contradictions(loose)
    assert len(problems) == 2 and all("check_dtype = false" in problem for problem in problems)
    assert problems[0].startswith("The statement promises a dtype (“Write") and "dtype 不变" in problems[1]
    assert drill_contradictions(_REPEAT) == []  # the same statement, dtypes compared
    free = ["Write `solution(x)`: return `x` doubled, in any dtype."]
    assert contradictions(free, _REPEAT.contract, ("x",), "solution", check_dtype=False) == []


def test_it_names_a_new_tensor_promised_where_the_contract_changes_an_argument_in_place() -> None:
    drill = DRILLS["reverse-1d"]
    in_place = dataclasses.replace(drill.contract, in_place=("x",))
    promised = [problem for problem in found(drill, in_place) if problem.startswith("The statement promises")]
    assert len(promised) == 2 and all("change `x` in place" in problem for problem in promised)


def test_it_names_in_place_said_of_an_argument_the_contract_keeps_untouched() -> None:
    problems = contradictions(
        ["Write `step(w, grad, lr)`: update `w` in place by `lr * grad` and return nothing."], Contract(),
        ("w", "grad", "lr"), "step",
    )  # fmt: skip
    assert len(problems) == 1
    assert "changes `w`, `grad`, `lr` in place" in problems[0] and "in_place is empty" in problems[0]
    assert contradictions(["原地更新 `w`：减去 `lr * grad`。"], Contract(), ("w", "grad", "lr"), "step")
    agrees = Contract(in_place=("w",))
    assert (
        contradictions(["Write `step(w, grad, lr)`: update `w` in place."], agrees, ("w", "grad", "lr"), "step") == []
    )


def test_it_names_an_argument_said_unchanged_that_the_contract_updates_in_place() -> None:
    problems = contradictions(["`x` itself unchanged."], Contract(in_place=("x",)), ("x",), "solution")
    assert len(problems) == 1 and "`x` stays unchanged" in problems[0]
    assert contradictions(["`x` 本身不变。"], Contract(in_place=("x",)), ("x",), "solution")


def test_it_reads_a_trap_described_or_negated_as_no_promise() -> None:
    """The bundled statements that mention "in place" without promising it: a trap on a name that is no argument
    (index-assign-rows' `tt`), a negation (to-is-not-inplace), copies updated in place (manual-sgd-step), and a
    helper's parameters (reset-model-parameters' `reset(model, seed)`)."""
    for slug in ("to-is-not-inplace", "manual-sgd-step", "reset-model-parameters", "snapshot-state-dict"):
        assert found(DRILLS[slug]) == [], slug
    assert found(_ROWS) == []


def test_it_splits_sentences_but_not_code() -> None:
    assert sentences("Use `torch.zeros(3)`. Then `x.sum()`! 然后返回。再见") == [
        "Use `torch.zeros(3)`.", "Then `x.sum()`!", "然后返回", "再见"
    ]  # fmt: skip
