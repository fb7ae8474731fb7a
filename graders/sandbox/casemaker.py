"""A drill's case expressions, evaluated inside a runner: an author's expressions are code, and code runs in the jail.

Any course authors drills in the browser, so an expression like ``torch.from_file(...)`` or a
``sum(range(10**12))`` is an attack like any submission. The loader's vocabulary check
(``graders.drills.schema``) keeps honest mistakes out; this module is what makes the rest harmless: the
pool runs it in a runner under the drill's limits, and the parent gets back only plain values through
``wire``. Pure Python (torch, no Django); imported by the fork server before any runner forks.

One spec per case instance: ``(case_seed, lets, args, device)``, the seed already derived by the host from the
drill seed, the case's name and its repetition (so a case's inputs do not depend on the others), and the
device name the expressions see (tensors are made on the CPU whatever it says: inputs never depend on it).
``case_seed`` may be a pair ``[rng_seed, g_seed]``: ``rng`` (which draws the shapes by the drills' habit) and
``g`` (the values) seeded apart, for a case of the same shape with new values (``graders.drills.cases.twins``).
"""

from __future__ import annotations

import builtins
import math
import random
from typing import Any

import torch

BUILTINS: dict[str, Any] = {
    name: getattr(builtins, name)
    for name in ("range", "len", "list", "tuple", "dict", "int", "float", "bool", "min", "max", "abs", "sum")
    + ("sorted", "zip", "__import__")  # torch imports lazily inside some calls; expressions cannot name it
}


def expand(
    case_seed: int | tuple[int, int],
    lets: list[tuple[str, str]],
    args: list[str],
    device: str,
    compiled: dict[str, Any],
) -> tuple[Any, ...]:
    """One case instance's arguments: each ``let`` bound in order, then each argument expression
    (``compiled``: each expression's code, compiled once per job: a batch repeats them per seed)."""

    def code(expr: str) -> Any:
        if expr not in compiled:
            compiled[expr] = compile(expr, "<case>", "eval")
        return compiled[expr]

    rng_seed, g_seed = case_seed if isinstance(case_seed, tuple) else (case_seed, case_seed)
    namespace: dict[str, Any] = {
        "__builtins__": BUILTINS,
        "torch": torch,
        "math": math,
        "g": torch.Generator().manual_seed(g_seed),
        "rng": random.Random(rng_seed),
        "device": device,
    }
    for key, expr in lets:
        namespace[key] = eval(code(expr), namespace)  # noqa: S307 - in the runner's jail, under the drill's limits
    return tuple(eval(code(expr), namespace) for expr in args)  # noqa: S307


def make(specs: list[tuple[Any, ...]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every spec's arguments as a runner's result: per case ``ok`` and ``error``, the values apart (by index).

    A failing expression is that case's error (the host names the case); anything that is not plain data
    is refused by the wire, as a case error too, so the result always goes back.
    """
    from graders.sandbox import child, wire

    compiled: dict[str, Any] = {}
    results: list[dict[str, Any]] = []
    values: dict[str, Any] = {}
    for index, spec in enumerate(specs):
        try:
            case_seed, lets, args, device = spec
            lets = [(str(k), str(e)) for k, e in lets]
            seeds = (int(case_seed[0]), int(case_seed[1])) if isinstance(case_seed, list | tuple) else int(case_seed)
            value = expand(seeds, lets, [str(e) for e in args], str(device), compiled)
            wire._Encoder().encode(value)
        except BaseException as exc:  # noqa: BLE001 - any failure is the case's, reported by name
            if child.is_memory_error(exc):
                raise  # the runner's memory limit: the job's status, not one case's error
            results.append({"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]})
            continue
        values[str(index)] = value
        results.append({"ok": True, "error": None})
    return {"status": "ok", "message": "", "cases": results}, values
