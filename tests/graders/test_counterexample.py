"""A counterexample that leaks nothing (graders.drills.counterexample): search, shrink, text, and the leak rule.

The drills here are trusted, so the in-process runner runs them; the job through a real worker is in
tests/graders/test_integration.py, the whole flow in tests/browser/test_counterexample.py.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from bench.counterexample import hidden_only, known_wrong
from graders.drills import DRILLS_DIR, load_drills
from graders.drills.cases import _case_seed, instances, make_cases
from graders.drills.counterexample import (
    arguments_text,
    find,
    same_value,
    shrink_candidates,
    size_key,
)
from graders.drills.grading import ReferenceCache, grade
from graders.drills.local import LocalRunner
from graders.drills.own_input import RUN_SEED
from graders.drills.schema import call_arguments, parse_drill

DRILL = """
slug = "column-sums"
title = "Column sums"
entry_point = "solution"
device = "cpu"
difficulty = "easy"
prompt_en = "Return the sum of each column of `x`."
starter = "def solution(x):\\n    ...\\n"
reference = "def solution(x):\\n    return x.sum(0)\\n"

[source]
note = "basics.md"
heading = "Tensors"

[[examples]]
name = "small"
args = ["torch.tensor([[1.0, 2.0], [3.0, 4.0]])"]

[[hidden]]
name = "random"
repeat = 3
let = { n = "rng.randint(5, 9)", m = "rng.randint(3, 6)" }
args = ["torch.randn(n, m, generator=g) * 100"]
"""

# Right on the two-row example, wrong from three rows on: the smallest input it gets wrong is 3 x 1 zeros.
WRONG_FROM_THREE_ROWS = "def solution(x):\n    return x.sum(0) if x.shape[0] < 3 else x.sum(0) + 1\n"


def drill_of(text: str) -> Any:
    return parse_drill(text, "column-sums.toml")


def literal(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The arguments the text of ``args`` makes, as "Run" makes them (the case language, in a runner)."""
    text = arguments_text(args)
    assert text is not None
    made = LocalRunner().make_cases([(0, [], list(call_arguments(text)), "cpu")])
    assert made.cases[0].ok, made.cases[0].error
    return made.cases[0].value


def test_it_shrinks_to_the_smallest_input_the_code_gets_wrong() -> None:
    report = find(drill_of(DRILL), WRONG_FROM_THREE_ROWS, LocalRunner(), repr, hidden_seed=7, seconds=5)
    assert report["found"], report
    assert report["arguments"] == "torch.tensor([[0.0], [0.0], [0.0]], dtype=torch.float32)"
    assert report["shrinks"] > 0
    run = report["run"]
    assert run["same"] is False and run["expected"] == repr(torch.tensor([0.0]))
    assert run["actual"] == repr(torch.tensor([1.0]))


def test_it_says_none_was_found_when_every_fresh_input_passes() -> None:
    right = "def solution(x):\n    return torch.sum(x, dim=0)\n"
    report = find(drill_of(DRILL), right, LocalRunner(), repr, hidden_seed=7, seconds=0.3)
    assert not report["found"] and report["reason"] == "none_failed" and report["tried"] > 0


def test_it_draws_no_fixed_hidden_case() -> None:
    fixed = DRILL.replace(
        "[[hidden]]", '[[hidden]]\nname = "empty"\nfixed = true\nargs = ["torch.zeros(0, 2)"]\n\n[[hidden]]', 1
    ).replace('[[hidden]]\nname = "random"', '[[hidden]]\nname = "random"\nrepeat = 1', 1)
    only_fixed = fixed.split('[[hidden]]\nname = "random"')[0]
    report = find(drill_of(only_fixed), WRONG_FROM_THREE_ROWS, LocalRunner(), repr, hidden_seed=7, seconds=1)
    assert report["reason"] == "no_seeded_cases"


def test_every_candidate_is_simpler_and_a_shared_size_is_cut_everywhere_at_once() -> None:
    args = (torch.randn(4, 3), torch.randint(0, 3, (4,)), [torch.ones(2), torch.ones(2)], 4)
    candidates = list(shrink_candidates(args))
    simpler = [c for c in candidates if size_key(c) < size_key(args)]
    assert len(simpler) >= 10
    lockstep = (torch.Size([1, 3]), torch.Size([1]))
    assert any((c[0].shape, c[1].shape) == lockstep and c[3] == 1 for c in candidates)
    assert any(len(c[2]) == 1 for c in candidates)
    assert any(torch.equal(c[0], args[0].round()) for c in candidates)


def test_size_key_ranks_fewer_items_then_integers_then_tenths_then_magnitude() -> None:
    assert size_key((torch.zeros(2),)) < size_key((torch.zeros(3),))
    assert size_key((torch.tensor([1.5, 2.0]),)) < size_key((torch.tensor([1.25, 2.0]),))
    assert size_key((torch.tensor([2.0]),)) < size_key((torch.tensor([1.5]),))
    assert size_key((torch.tensor([1.0]),)) < size_key((torch.tensor([2.0]),))


@pytest.mark.parametrize(
    "args",
    [
        (torch.tensor([[0.1, -2.5e-8], [3.4028235e38, 1.0]]),),
        (torch.randn(3, 4, dtype=torch.float64), 3, 0.5, True, None),
        (torch.tensor([float("nan"), float("inf"), -float("inf")]),),
        (torch.randn(2, 3).t(),),  # a transposed view stays one
        (torch.randn(2, 2, requires_grad=True),),
        (torch.tensor([True, False]), torch.tensor([1, -2], dtype=torch.int32), torch.zeros(0, 3)),
        ([torch.ones(2), torch.zeros(1)], (1, 2), {"k": torch.tensor(1.5, dtype=torch.float16)}),
        (torch.tensor([1.5, 2.25], dtype=torch.bfloat16),),
    ],
)
def test_its_text_makes_the_same_input_in_run(args: tuple[Any, ...]) -> None:
    made = literal(args)
    assert same_value(made, args)
    for mine, theirs in zip(made, args, strict=True):
        if isinstance(theirs, torch.Tensor):
            assert mine.is_contiguous() == theirs.is_contiguous()


# --------------------------------------------------------------------------------------------- the leak rule

FEW_VALUES = """
slug = "plus-one"
title = "Plus one"
entry_point = "solution"
device = "cpu"
difficulty = "easy"
prompt_en = "Return `x + 1`."
starter = "def solution(x):\\n    ...\\n"
reference = "def solution(x):\\n    return x + 1\\n"

[source]
note = "basics.md"
heading = "Tensors"

[[examples]]
name = "small"
args = ["torch.tensor([5.0])"]

[[hidden]]
name = "few"
repeat = 2
let = { n = "rng.randint(1, 2)" }
args = ["torch.full((n,), float(rng.randint(0, 2)))"]
"""

# Right on the example (5), wrong on everything the hidden generator makes (0, 1 or 2, once or twice).
WRONG_BELOW_FIVE = "def solution(x):\n    return torch.where(x < 5, x, x + 1)\n"


class Recording(LocalRunner):
    """Records every input the learner's code is called on."""

    def __init__(self, code: str) -> None:
        super().__init__()
        self.code, self.inputs = code, []

    def run(self, code: str, entry_point: str, cases: list[tuple[Any, ...]], **options: Any) -> Any:
        if code == self.code:
            self.inputs += cases
        return super().run(code, entry_point, cases, **options)


def test_the_hidden_seeds_inputs_never_appear_even_where_the_generator_has_six_values() -> None:
    drill = parse_drill(FEW_VALUES, "plus-one.toml")
    runner = Recording(WRONG_BELOW_FIVE)
    shown, avoided_smallest = set(), 0
    for hidden_seed in range(30):
        hidden = [c.args for c in make_cases(drill, runner, instances(drill.hidden, hidden_seed))]
        runner.inputs = []
        report = find(drill, WRONG_BELOW_FIVE, runner, repr, hidden_seed=hidden_seed, seconds=2)
        assert report["found"], report
        assert runner.inputs, "the learner's code ran on fresh inputs"
        for called in runner.inputs:  # not shown, and not even run: the learner's code never meets them
            assert not any(same_value(called, secret) for secret in hidden), (hidden_seed, called)
        assert not any(same_value(literal(made_of(report["arguments"])), secret) for secret in hidden)
        shown.add(report["arguments"])
        avoided_smallest += any(same_value(secret, (torch.zeros(1),)) for secret in hidden)
    assert avoided_smallest >= 3, "the smallest input was a hidden one for some seeds: the rule was tested"
    assert len(shown) >= 2  # so a seed whose hidden cases hold the smallest input gets another one


def made_of(text: str) -> tuple[Any, ...]:
    made = LocalRunner().make_cases([(0, [], list(call_arguments(text)), "cpu")])
    return made.cases[0].value


def test_its_inputs_come_from_fresh_seeds_and_the_hidden_seed_only_says_what_to_leave_out() -> None:
    drill = parse_drill(FEW_VALUES, "plus-one.toml")
    drawn: list[int] = []

    def new_seed() -> int:
        drawn.append(1000 + len(drawn))
        return drawn[-1]

    class Seeds(LocalRunner):
        def __init__(self) -> None:
            super().__init__()
            self.batches: list[list[int]] = []

        def make_cases(self, specs: list[Any], **options: Any) -> Any:
            self.batches.append([int(spec[0]) for spec in specs])
            return super().make_cases(specs, **options)

    runner = Seeds()
    report = find(drill, WRONG_BELOW_FIVE, runner, repr, hidden_seed=99, seconds=1, new_seed=new_seed)
    assert report["found"]
    hidden = [_case_seed(99, spec.name, i) for _seed, spec, i in instances(drill.hidden, 99)]
    avoid, *search, shown = runner.batches
    assert avoid == hidden  # made once, to be left out
    assert search and all(seed in drawn for batch in search for seed in batch)
    assert shown == [RUN_SEED]  # the shown input is a literal: "Run"'s fixed seed draws nothing from it
    assert not set(drawn) & {99, *hidden}


# ------------------------------------------------------------------------------ the project's known-wrong ones


@pytest.mark.slow
def test_a_counterexample_is_found_for_at_least_80_percent_of_the_known_wrong_that_fail_only_hidden_cases() -> None:
    drills, runner, cache = load_drills(DRILLS_DIR), LocalRunner(), ReferenceCache()
    found = total = 0
    for slug, drill in sorted(drills.items()):
        for _why, code in known_wrong(slug, drill):
            verdict = grade(drill, code, seed=None, runner=runner, cache=cache)
            if hidden_only(verdict):
                total += 1
                found += find(drill, code, runner, repr, hidden_seed=verdict["seed"], seconds=2)["found"]
    assert total >= 10
    assert found / total >= 0.8, (found, total)
    assert math.isfinite(found / total)


def test_a_search_runner_job_gets_at_most_the_time_left_and_never_under_the_floor() -> None:
    import time

    from graders.drills.counterexample import FLOOR_SECONDS, _Search

    drill = drill_of(
        DRILL.replace('heading = "Tensors"', 'heading = "Tensors"\n\n[limits]\ncpu_seconds = 8.0\nwall_seconds = 9.0')
    )
    roomy = _Search(drill, RIGHT_CODE, LocalRunner(), [], time.monotonic() + 3).capped()["limits"]
    assert 2.5 < roomy.cpu_seconds <= 3 and 2.5 < roomy.wall_seconds <= 3
    late = _Search(drill, RIGHT_CODE, LocalRunner(), [], time.monotonic() - 1).capped()["limits"]
    assert (late.cpu_seconds, late.wall_seconds) == (FLOOR_SECONDS, FLOOR_SECONDS)
    early = _Search(drill, RIGHT_CODE, LocalRunner(), [], time.monotonic() + 60).capped()["limits"]
    assert (early.cpu_seconds, early.wall_seconds) == (8.0, 9.0)  # never more than the drill's own


RIGHT_CODE = "def solution(x):\n    return x.sum(0)\n"


@pytest.mark.sandbox
@pytest.mark.slow
def test_in_the_sandbox_code_that_loops_on_fresh_inputs_costs_the_budget_and_one_run() -> None:
    """Through a real pool: the search's runner jobs are cut to the time left, so code that never returns on
    three rows or more costs the budget plus one confirming "Run" under the drill's own (3 s) limits."""
    import time

    from graders.sandbox import SandboxPool

    drill = drill_of(
        DRILL.replace('heading = "Tensors"', 'heading = "Tensors"\n\n[limits]\ncpu_seconds = 3.0\nwall_seconds = 3.0')
    )
    looping = "def solution(x):\n    while x.shape[0] >= 3:\n        pass\n    return x.sum(0)\n"
    with SandboxPool(size=2) as pool:
        pool.warm()
        started = time.monotonic()
        report = find(drill, looping, pool, repr, hidden_seed=7, seconds=1.5)
        spent = time.monotonic() - started
    assert report["found"] and report["run"]["status"] == "time_limit", report
    assert report["arguments"].startswith("torch.tensor([[") and report["arguments"].count("], [") >= 2
    assert spent < 1.5 + 0.5 + 3.0 + 3.0, spent  # budget, one cut job's overrun, the Run, runner start-ups
