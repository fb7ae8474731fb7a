"""Seeded case generation: the same (drill, seed) always gives bit-for-bit the same inputs.

Each case gets its own generators, seeded from (seed, case name, repetition), so adding or
reordering cases in a drill file never changes the inputs of the other cases, and every
learner graded with one seed sees exactly the inputs the cached reference outputs were made from.
"""

from __future__ import annotations

import builtins
import functools
import hashlib
import math
import random
from dataclasses import dataclass
from typing import Any

import torch

from graders.drills.schema import CaseSpec, Drill, DrillError

_BUILTINS: dict[str, Any] = {
    name: getattr(builtins, name)
    for name in ("range", "len", "list", "tuple", "dict", "int", "float", "bool", "min", "max", "abs", "sum")
    + ("sorted", "zip", "__import__")  # torch imports lazily inside some calls; expressions cannot name it
}


@dataclass(frozen=True)
class Case:
    name: str
    args: tuple[Any, ...]
    hidden: bool


def _case_seed(seed: int, name: str, index: int) -> int:
    digest = hashlib.sha256(f"{seed}/{name}/{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


@functools.lru_cache(maxsize=4096)
def _compiled(expr: str) -> Any:
    """An expression compiled once: a fresh seed's cases are made in batches, and compiling was most of it."""
    return compile(expr, "<case>", "eval")


def _name(spec: CaseSpec, index: int) -> str:
    return spec.name if spec.repeat == 1 else f"{spec.name}-{index + 1}"


def _expand(drill: Drill, spec: CaseSpec, seed: int, index: int, device: str) -> Case:
    case_seed = _case_seed(seed, spec.name, index)
    namespace: dict[str, Any] = {
        "__builtins__": _BUILTINS,
        "torch": torch,
        "math": math,
        "g": torch.Generator().manual_seed(case_seed),
        "rng": random.Random(case_seed),
        "device": device,
    }
    name = _name(spec, index)
    try:
        for key, expr in spec.let:
            namespace[key] = eval(_compiled(expr), namespace)  # noqa: S307 - team-written, checked at load time
        args = tuple(eval(_compiled(expr), namespace) for expr in spec.args)  # noqa: S307
    except Exception as exc:
        raise DrillError(f"{drill.path}: case '{name}': {type(exc).__name__}: {exc}") from exc
    return Case(name, args, spec.hidden)


def generate_cases(drill: Drill, seed: int, visible_only: bool = False, *, device: str = "cpu") -> list[Case]:
    """The drill's fixed examples, then (unless ``visible_only``) its hidden cases for ``seed``.

    ``device`` is the string the case expressions see as ``device``; tensors are always created
    on the CPU by the expressions, so the inputs do not depend on where grading happens.
    """
    specs = drill.examples if visible_only else drill.examples + drill.hidden
    return [_expand(drill, spec, seed, i, device) for spec in specs for i in range(spec.repeat)]


def hidden_cases(drill: Drill, seed: int, *, device: str = "cpu") -> list[Case]:
    """Only the hidden cases for ``seed`` (the examples are the same for every seed: made once, elsewhere)."""
    return [_expand(drill, spec, seed, i, device) for spec in drill.hidden for i in range(spec.repeat)]
