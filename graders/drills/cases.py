"""Seeded case generation: the same (drill, seed) always gives bit-for-bit the same inputs.

Each case gets its own generators, seeded from (seed, case name, repetition), so adding or
reordering cases in a drill file never changes the inputs of the other cases, and every
learner graded with one seed sees exactly the inputs the cached reference outputs were made from.

The expressions are a drill author's code, and any course may author drills: they are evaluated by a runner
(``Runner.make_cases``, ``graders.sandbox.casemaker``), in the jail under the drill's limits, and come back
as plain values. This module only derives the seeds and names the cases.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any, Protocol

from graders.drills.schema import CaseSpec, Drill, DrillError


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[Any, ...]
    hidden: bool
    twin_of: str = ""  # a visible case of the same shape as the named one, on new values (``twins``)


# The seed of the twin cases: the same for every drill seed, so the visible cases stay the same for every attempt.
TWIN_SEED = 1_000_003
TWIN_CANDIDATES = 3  # the first hidden specs tried for a twin pair (each costs two case instances to make)


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
    rows: list[tuple[int | list[int], CaseSpec, str]] = [
        (_case_seed(seed, spec.name, index), spec, _name(spec, index)) for seed, spec, index in instances
    ]
    return _made(drill, runner, rows, device=device, limits=limits, background=background)


def _made(
    drill: Drill,
    runner: CaseMaker,
    rows: list[tuple[int | list[int], CaseSpec, str]],
    *,
    device: str,
    limits: Any,
    background: bool,
) -> list[Case]:
    """Rows of (case seed, spec, name) evaluated in one runner job; a twin row's seed is ``[rng, g]``."""
    specs = [(seed, [list(pair) for pair in spec.let], list(spec.args), device) for seed, spec, _ in rows]
    if not specs:
        return []
    result = runner.make_cases(specs, limits=limits, background=background)
    if result.status != "ok" or len(result.cases) != len(specs):
        raise DrillError(f"{drill.path}: its cases could not be made ({result.status}: {result.message})")
    cases = []
    for (_seed, spec, name), outcome in zip(rows, result.cases, strict=True):
        if not outcome.ok or not isinstance(outcome.value, tuple):
            raise DrillError(f"{drill.path}: case '{name}': {outcome.error or 'not a tuple of arguments'}")
        cases.append(Case(name, outcome.value, spec.hidden))
    return cases


def instances(specs: tuple[CaseSpec, ...], seed: int) -> list[tuple[int, CaseSpec, int]]:
    """Each spec's repetitions for ``seed``, in order."""
    return [(seed, spec, i) for spec in specs for i in range(spec.repeat)]


def generate_cases(
    drill: Drill,
    seed: int,
    visible_only: bool = False,
    *,
    runner: CaseMaker,
    device: str = "cpu",
    twins: bool = False,
    limits: Any = None,
    background: bool = False,
) -> list[Case]:
    """The drill's fixed examples, then (unless ``visible_only``) its hidden cases for ``seed``, then with
    ``twins`` two visible cases of the same shape on different values (``pick_twins``).

    ``device`` is the string the case expressions see as ``device``; tensors are always created
    on the CPU by the expressions, so the inputs do not depend on where grading happens.
    """
    specs = drill.examples if visible_only else drill.examples + drill.hidden
    rows: list[tuple[int | list[int], CaseSpec, str]] = [
        (_case_seed(s, spec.name, i), spec, _name(spec, i)) for s, spec, i in instances(specs, seed)
    ]
    candidates = [spec for spec in drill.hidden if not spec.fixed][:TWIN_CANDIDATES] if twins else []
    for spec in candidates:
        shape_seed = _case_seed(TWIN_SEED, spec.name, 0)
        for part, value_seed in (("a", shape_seed), ("b", _case_seed(TWIN_SEED + 1, spec.name, 0))):
            rows.append(([shape_seed, value_seed], dataclasses.replace(spec, hidden=False), f"{spec.name}-twin-{part}"))
    made = _made(drill, runner, rows, device=device, limits=limits, background=background)
    n = len(made) - 2 * len(candidates)
    return made[:n] + pick_twins(made[n:])


def pick_twins(pairs: list[Case]) -> list[Case]:
    """The first pair of candidate cases of one shape (every tensor's shape and dtype, every other non-float value
    equal) with different values, the second marked as the first's twin; none where no candidate makes one. The
    first hidden spec is most often a drill's general case (a special one, like an all-false mask, sees less).

    A second call on the same values cannot see state a function keeps per shape (a mask or a network built on
    the first call and reused): a call on new values of a shape it has seen does.
    """
    for first, second in zip(pairs[::2], pairs[1::2], strict=True):
        if _shape(first.args) == _shape(second.args) and not _same_values(first.args, second.args):
            return [first, dataclasses.replace(second, twin_of=first.name)]
    return []


def _shape(value: Any, depth: int = 0) -> Any:
    import torch

    if depth > 8:
        return None
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), str(value.dtype), value.layout == torch.strided and value.is_contiguous())
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(_shape(v, depth + 1) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _shape(v, depth + 1)) for k, v in value.items()))
    return "float" if isinstance(value, float) else (type(value).__name__, repr(value)[:200])


def _same_values(a: Any, b: Any) -> bool:
    """For two values of one ``_shape``: every tensor and every float equal."""
    import torch

    if isinstance(a, torch.Tensor):
        return bool(torch.equal(a, b))
    if isinstance(a, list | tuple):
        return all(_same_values(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return all(_same_values(a[k], b[k]) for k in a)
    return bool(a == b)


def hidden_cases(
    drill: Drill, seeds: list[int], *, runner: CaseMaker, device: str = "cpu", **options: Any
) -> list[list[Case]]:
    """Only the hidden cases, for each of ``seeds`` (one runner job for all: the reservoir's batches)."""
    every = [inst for seed in seeds for inst in instances(drill.hidden, seed)]
    made = make_cases(drill, runner, every, device=device, **options)
    per = sum(spec.repeat for spec in drill.hidden)
    return [made[i * per : (i + 1) * per] for i in range(len(seeds))]
