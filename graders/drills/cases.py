"""Seeded case generation: the same (drill, seed) always gives bit-for-bit the same inputs.

Each case gets its own generators, seeded from (seed, case name, repetition), so adding or
reordering cases in a drill file never changes the inputs of the other cases, and every
learner graded with one seed sees exactly the inputs the cached reference outputs were made from.

The expressions are a drill author's code, and any course may author drills: they are evaluated by a runner
(``Runner.make_cases``, ``graders.sandbox.casemaker``), in the jail under the drill's limits, and come back
as plain values. This module only derives the seeds and names the cases.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Protocol

from graders.drills.schema import CaseSpec, Drill, DrillError


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[Any, ...]
    hidden: bool


class CaseMaker(Protocol):
    """What evaluates case specs: the sandbox pool (in a runner) or ``LocalRunner`` (trusted drills, tests)."""

    def make_cases(self, specs: list[tuple[Any, ...]], *, limits: Any = None, background: bool = False) -> Any: ...


def _case_seed(seed: int, name: str, index: int) -> int:
    digest = hashlib.sha256(f"{seed}/{name}/{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def _name(spec: CaseSpec, index: int) -> str:
    return spec.name if spec.repeat == 1 else f"{spec.name}-{index + 1}"


def make_cases(
    drill: Drill,
    runner: CaseMaker,
    instances: list[tuple[int, CaseSpec, int]],
    *,
    device: str = "cpu",
    limits: Any = None,
    background: bool = False,
) -> list[Case]:
    """The cases for ``(seed, spec, repetition)`` instances, evaluated in one runner job.

    Raises DrillError naming the first case whose expressions failed (the drill's fault, never a learner's).
    """
    specs = [
        (_case_seed(seed, spec.name, index), [list(pair) for pair in spec.let], list(spec.args), device)
        for seed, spec, index in instances
    ]
    if not specs:
        return []
    result = runner.make_cases(specs, limits=limits, background=background)
    if result.status != "ok" or len(result.cases) != len(specs):
        raise DrillError(f"{drill.path}: its cases could not be made ({result.status}: {result.message})")
    cases = []
    for (_seed, spec, index), outcome in zip(instances, result.cases, strict=True):
        name = _name(spec, index)
        if not outcome.ok or not isinstance(outcome.value, tuple):
            raise DrillError(f"{drill.path}: case '{name}': {outcome.error or 'not a tuple of arguments'}")
        cases.append(Case(name, outcome.value, spec.hidden))
    return cases


def instances(specs: tuple[CaseSpec, ...], seed: int) -> list[tuple[int, CaseSpec, int]]:
    """Each spec's repetitions for ``seed``, in order."""
    return [(seed, spec, i) for spec in specs for i in range(spec.repeat)]


def generate_cases(
    drill: Drill, seed: int, visible_only: bool = False, *, runner: CaseMaker, device: str = "cpu", **options: Any
) -> list[Case]:
    """The drill's fixed examples, then (unless ``visible_only``) its hidden cases for ``seed``.

    ``device`` is the string the case expressions see as ``device``; tensors are always created
    on the CPU by the expressions, so the inputs do not depend on where grading happens.
    """
    specs = drill.examples if visible_only else drill.examples + drill.hidden
    return make_cases(drill, runner, instances(specs, seed), device=device, **options)


def hidden_cases(
    drill: Drill, seeds: list[int], *, runner: CaseMaker, device: str = "cpu", **options: Any
) -> list[list[Case]]:
    """Only the hidden cases, for each of ``seeds`` (one runner job for all: the reservoir's batches)."""
    every = [inst for seed in seeds for inst in instances(drill.hidden, seed)]
    made = make_cases(drill, runner, every, device=device, **options)
    per = sum(spec.repeat for spec in drill.hidden)
    return [made[i * per : (i + 1) * per] for i in range(len(seeds))]
