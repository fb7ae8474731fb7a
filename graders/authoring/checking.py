""" "Check" for a drill an author wrote (grading worker): does the drill do what its file says it does?

In order, each item into one report (``CheckReport``) the editor page shows:

1. the statement against the contract (``graders.authoring.statement``: pure, nothing runs);
2. the reference graded as a submission on every case, examples and hidden, for two seeds: it must be
   accepted (it ran, kept its own contract, gave the same answer twice);
3. the hidden cases for the two seeds: a hidden case whose inputs are the same for both (and for a few more
   seeds, tried only then: a case drawn from a handful of shapes meets itself by chance) never varies with
   the seed (a learner would learn its one bit per verdict, then its answer), refused unless the author
   marked it ``fixed = true``;
4. each known-wrong solution (``[[wrong]]``) graded: it must get the verdict class its author expects, and
   its message must contain ``says`` when given;
5. each alternative (``[[alternative]]``) graded: it must be accepted.

Everything runs through ``graders.drills.grading.grade`` on the runner it is given (the worker's sandbox pool),
with a reference cache of its own (a draft never shares reference outputs with a published drill, nor one
author's with another's), and stops once ``budget_seconds`` are spent: the rest of the items then say they
were not run. A drill's code and case expressions run only where ``grade`` runs them. Items 3-5 read the
reference's outputs from that cache: nothing runs twice (but the extra seeds of item 3).

Pure Python (torch, loaded on first use; no Django): the job kind ``graders.kinds.checks`` calls ``run_check``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypedDict

from graders.authoring.statement import drill_contradictions
from graders.drills.schema import CaseSpec, Drill, Solution

MESSAGE_CHARS = 1200
OUTPUT_CHARS = 800


class CheckItem(TypedDict):
    kind: str  # statement, reference, varies, wrong, alternative, budget, internal
    name: str  # what it is about: a seed, a solution's "why", a hidden case
    passed: bool
    status: str  # the verdict it got ("" where nothing ran)
    expected: str  # the verdict it had to get ("" where none)
    message: str


class ExampleShown(TypedDict):
    name: str
    output: str


class CheckReport(TypedDict):
    passed: bool
    version: str  # the checked text's hash (``Drill.version``)
    seeds: list[int]
    items: list[CheckItem]
    examples: list[ExampleShown]  # the reference's output for each example: the preview shows them
    elapsed_ms: int


def item(kind: str, name: str, passed: bool, message: str, status: str = "", expected: str = "") -> CheckItem:
    return CheckItem(
        kind=kind, name=name[:200], passed=passed, status=status, expected=expected, message=message[:MESSAGE_CHARS]
    )


def failed_report(spec_version: str, kind: str, message: str) -> CheckReport:
    """A report of one failed item: the drill could not be checked at all (it does not parse, or ours failed)."""
    return CheckReport(
        passed=False, version=spec_version, seeds=[], items=[item(kind, kind, False, message)], examples=[],
        elapsed_ms=0,
    )  # fmt: skip


def fresh_seeds() -> tuple[int, int]:
    """Two different fresh seeds: a check's hidden cases are drawn as a learner's would be."""
    from graders.drills.grading import fresh_seed

    first = fresh_seed()
    second = fresh_seed()
    while second == first:
        second = fresh_seed()
    return first, second


class _Clock:
    def __init__(self, budget_seconds: float, clock: Callable[[], float]) -> None:
        self.budget, self.clock, self.started = budget_seconds, clock, clock()

    @property
    def spent(self) -> float:
        return self.clock() - self.started

    def over(self) -> bool:
        return self.spent > self.budget


def run_check(
    spec: Drill,
    runner: Any,
    *,
    seeds: tuple[int, int],
    budget_seconds: float,
    format_output: Callable[[Any], str] = repr,
    clock: Callable[[], float] = time.monotonic,
) -> CheckReport:
    """Steps 1-5 of the module docstring; the report passes only when every item passed. ``format_output``
    writes an example's output as the drill page shows it (``graders.kinds.examples.format_value``)."""
    from graders.drills.grading import ReferenceCache

    timer = _Clock(budget_seconds, clock)
    found = drill_contradictions(spec)
    items = [item("statement", "statement", False, message) for message in found]
    if not found:
        items.append(item("statement", "statement", True, "The statement agrees with the contract."))
    cache = ReferenceCache(size=4)
    examples: list[ExampleShown] = []
    reference_ok = _reference(spec, runner, seeds, cache, timer, items)
    if reference_ok:
        items.append(_varies(spec, runner, seeds, cache, timer))
        examples = _examples(spec, runner, seeds[0], cache, format_output)
    for kind, solutions in (("wrong", spec.wrong), ("alternative", spec.alternatives)):
        for index, solution in enumerate(solutions):
            name = solution.why or f"{kind} {index + 1}"
            if not reference_ok:
                items.append(item(kind, name, False, "Not run: the reference must pass its own cases first."))
            elif timer.over():
                items.append(item(kind, name, False, _over_budget(timer)))
            else:
                items.append(_solution(spec, runner, seeds[0], cache, kind, name, solution))
    return CheckReport(
        passed=all(one["passed"] for one in items),
        version=spec.version,
        seeds=list(seeds),
        items=items,
        examples=examples,
        elapsed_ms=round(timer.spent * 1000),
    )


def _over_budget(timer: _Clock) -> str:
    return f"Not run: the check used its {timer.budget:g} s of sandbox time. Fewer or smaller cases and solutions fit."


def _reference(
    spec: Drill, runner: Any, seeds: tuple[int, int], cache: Any, timer: _Clock, items: list[CheckItem]
) -> bool:
    """The reference graded as a submission for each seed: every case, examples and hidden."""
    from graders.drills.grading import grade

    passed = True
    for seed in seeds:
        if timer.over():
            items.append(item("reference", f"seed {seed}", False, _over_budget(timer)))
            return False
        verdict = grade(spec, spec.reference, seed=seed, runner=runner, cache=cache)
        ok = verdict["status"] == "accepted"
        message = verdict["message"] if ok else f"The reference is not accepted on its own cases: {verdict['message']}"
        items.append(item("reference", f"seed {seed}", ok, message, verdict["status"], "accepted"))
        passed = passed and ok
        if not ok:
            return False
    return passed


def _solution(spec: Drill, runner: Any, seed: int, cache: Any, kind: str, name: str, solution: Solution) -> CheckItem:
    """A known-wrong solution must get its class (and say its words); an alternative must be accepted."""
    from graders.drills.grading import grade

    verdict = grade(spec, solution.code, seed=seed, runner=runner, cache=cache)
    status, message = verdict["status"], verdict["message"]
    said = f"{status}: {message} {verdict.get('hint', '')}"  # a common mistake is named in the hint
    if status != solution.expect:
        why = f"Expected {solution.expect}, got {status}: {message}"
        return item(kind, name, False, why, status, solution.expect)
    if solution.says and solution.says not in said:
        why = f"Got {status} as expected, but the message does not say “{solution.says}”: {message}"
        return item(kind, name, False, why, status, solution.expect)
    return item(kind, name, True, message, status, solution.expect)


# A hidden case whose inputs are the same for the two seeds is tried on up to this many more before it is called
# one that never varies: a case drawn from a handful of shapes meets itself by chance (1 in 4 for 4 shapes), 9
# seeds in a row almost never (a two-valued case: 1 in 256).
MORE_SEEDS = 7


def _varies(spec: Drill, runner: Any, seeds: tuple[int, int], cache: Any, timer: _Clock) -> CheckItem:
    """Step 3: each hidden case's inputs for the two seeds (from the cache the reference filled); a case that
    met itself is tried on more seeds (one reference run each, only then)."""
    first = _hidden_inputs(spec, runner, seeds[0], cache)
    candidates = [case for case in spec.hidden if not case.fixed]
    tried = 1
    for seed in [seeds[1], *(seeds[1] + 1 + k for k in range(MORE_SEEDS))]:
        if not candidates or (tried > 1 and timer.over()):
            break
        other = _hidden_inputs(spec, runner, seed, cache)
        candidates = [case for case in candidates if _same_case(case, first, other)]
        tried += 1
    if not candidates:
        return item("varies", "hidden cases", True, "Every hidden case draws new inputs for each seed.")
    names = ", ".join(f"“{case.name}”" for case in candidates)
    return item(
        "varies",
        "hidden cases",
        False,
        f"The hidden case{'s' if len(candidates) > 1 else ''} {names} had the same inputs for {tried} seeds: a "
        "learner would learn its answer from its verdicts. Draw its inputs from g or rng, or mark an edge case "
        "whose pass/fail a learner may learn with fixed = true.",
    )


def _hidden_inputs(spec: Drill, runner: Any, seed: int, cache: Any) -> dict[str, Any]:
    from graders.drills.grading import reference_outputs

    cases, _, _ = reference_outputs(spec, seed, False, runner, cache)
    return {case.name: case.args for case in cases if case.hidden}


def _same_case(case_spec: CaseSpec, first: dict[str, Any], other: dict[str, Any]) -> bool:
    """Every repetition of the case has the same inputs in both."""
    return all(name in other and same_value(args, other[name]) for name, args in _expanded(case_spec, first))


def _expanded(case_spec: CaseSpec, made: dict[str, Any]) -> list[tuple[str, Any]]:
    names = (
        [case_spec.name] if case_spec.repeat == 1 else [f"{case_spec.name}-{i + 1}" for i in range(case_spec.repeat)]
    )
    return [(name, made[name]) for name in names if name in made]


def _examples(
    spec: Drill, runner: Any, seed: int, cache: Any, format_value: Callable[[Any], str]
) -> list[ExampleShown]:
    """The reference's output for each example, as the drill page shows it (from the cache)."""
    from graders.drills.grading import reference_outputs

    cases, outputs, _ = reference_outputs(spec, seed, False, runner, cache)
    return [
        ExampleShown(name=case.name, output=format_value(value)[:OUTPUT_CHARS])
        for case, value in zip(cases, outputs, strict=True)
        if not case.hidden
    ]


def same_value(first: Any, second: Any) -> bool:
    """Bit for bit the same case input (tensors: dtype, shape and bytes; containers item by item; modules by
    their state). Anything else this cannot compare counts as different: never refuse a case on a guess."""
    import torch

    if isinstance(first, torch.Tensor):
        return isinstance(second, torch.Tensor) and _same_tensor(first, second)
    if isinstance(first, torch.nn.Module):
        return isinstance(second, torch.nn.Module) and same_value(first.state_dict(), second.state_dict())
    if isinstance(first, list | tuple):
        return (
            type(first) is type(second)
            and len(first) == len(second)
            and all(same_value(a, b) for a, b in zip(first, second, strict=True))
        )
    if isinstance(first, dict):
        return (
            isinstance(second, dict)
            and list(first) == list(second)
            and all(same_value(first[k], second[k]) for k in first)
        )
    if isinstance(first, bool | int | float | str | bytes | type(None)):
        return type(first) is type(second) and first == second
    return False


def _same_tensor(first: Any, second: Any) -> bool:
    import torch

    if first.dtype != second.dtype or first.shape != second.shape or first.device != second.device:
        return False
    try:
        return bool(torch.equal(_as_bytes(first), _as_bytes(second)))
    except (RuntimeError, TypeError):  # a layout without bytes to compare (sparse...): count it as different
        return False


def _as_bytes(tensor: Any) -> Any:
    import torch

    return tensor.detach().contiguous().reshape(-1).view(torch.uint8)
