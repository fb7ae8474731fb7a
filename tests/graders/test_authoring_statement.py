"""The statement-vs-contract rule (``graders.authoring.statement``), on the bundled drills' real statements.

numpy-repeat and index-assign-rows promise "a new tensor" while their contracts say ``result = "may_view"``:
the rule names both; the same statements with a contract that agrees, and every other bundled drill, pass.
"""

from __future__ import annotations

import dataclasses

import pytest

from graders.authoring.statement import contradictions, sentences
from graders.drills import DRILLS_DIR, load_drills
from graders.drills.schema import Contract, Drill

DRILLS = load_drills(DRILLS_DIR)
# The bundled drills whose statement contradicts their contract today (each found by this rule).
CONTRADICTING = {"numpy-repeat", "index-assign-rows"}


def found(drill: Drill, contract: Contract | None = None) -> list[str]:
    return contradictions(
        [drill.prompt_en, drill.prompt_zh], contract or drill.contract, drill.arg_names, drill.entry_point
    )


@pytest.mark.parametrize("slug", sorted(CONTRADICTING))
def test_it_names_a_new_tensor_promised_where_the_contract_allows_a_view(slug: str) -> None:
    problems = found(DRILLS[slug])
    assert len(problems) == 2  # one per language
    assert all('result = "may_view"' in problem for problem in problems)
    assert "return a new tensor" in problems[0] and "返回一个新张量" in problems[1]


@pytest.mark.parametrize("slug", sorted(CONTRADICTING))
def test_it_accepts_the_same_statement_once_the_contract_agrees(slug: str) -> None:
    assert found(DRILLS[slug], dataclasses.replace(DRILLS[slug].contract, result="new")) == []


def test_every_other_bundled_drill_agrees_with_its_contract() -> None:
    assert {slug for slug, drill in DRILLS.items() if found(drill)} == CONTRADICTING


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
    trap = DRILLS["index-assign-rows"]
    assert found(trap, dataclasses.replace(trap.contract, result="new")) == []


def test_it_splits_sentences_but_not_code() -> None:
    assert sentences("Use `torch.zeros(3)`. Then `x.sum()`! 然后返回。再见") == [
        "Use `torch.zeros(3)`.", "Then `x.sum()`!", "然后返回", "再见"
    ]  # fmt: skip
