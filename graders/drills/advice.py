"""Advice on an accepted solution: torch habits worth changing, shown as advice and never as a failure.

Read from the source alone (no run): a Python loop over a tensor's elements, ``.item()`` inside a loop,
``torch.tensor`` on something that is already a tensor. A habit the drill's own reference has (summing
``loss.item()`` per batch is the lesson of one drill) is never advised against for that drill.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass

from graders.drills.constraints import parse
from graders.drills.schema import entry_arg_names

ADVICE_SOURCE_BYTES = 200_000  # a drill's own limit stopped larger code before it ran; this bounds any caller

_LOOPS = (ast.For, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclass(frozen=True)
class Advice:
    rule: str
    line: int
    message: str


def advise(code: str, entry_point: str, tensors: frozenset[str]) -> list[Advice]:
    """Each habit once (its first place), in source order; [] for code that does not parse (or that is too
    large or too deeply nested to read: ``constraints.parse``).

    ``tensors``: the entry point's parameters that are tensors in the drill's cases (by name).
    """
    tree = parse(code, ADVICE_SOURCE_BYTES)  # bounded and total, as the constraints' reading is
    if not isinstance(tree, ast.Module):
        return []
    params = set(entry_arg_names(code, entry_point)) & tensors
    found: dict[str, Advice] = {}
    for node in ast.walk(tree):
        for advice in _element_loop(node, params), _item_in_loop(node), _tensor_of_tensor(node, params):
            if advice is not None and advice.rule not in found:
                found[advice.rule] = advice
    return sorted(found.values(), key=lambda a: a.line)


def advice_for(code: str, entry_point: str, reference: str, tensors: frozenset[str]) -> list[str]:
    """The messages for ``code``, less the habits ``reference`` has itself."""
    own = _reference_rules(reference, entry_point, tensors)
    return [a.message for a in advise(code, entry_point, tensors) if a.rule not in own]


@functools.lru_cache(maxsize=256)
def _reference_rules(reference: str, entry_point: str, tensors: frozenset[str]) -> frozenset[str]:
    return frozenset(a.rule for a in advise(reference, entry_point, tensors))


def _element_loop(node: ast.AST, params: set[str]) -> Advice | None:
    """``for i in range(len(x))``, ``range(x.shape[0])``, ``range(x.size(0))``, ``for v in x``, ``enumerate(x)``:
    x a tensor parameter."""
    if not isinstance(node, ast.For):
        return None
    target, name = node.iter, None
    call = target if isinstance(target, ast.Call) and isinstance(target.func, ast.Name) else None
    called = call.func.id if call is not None and isinstance(call.func, ast.Name) else ""
    if call is not None and called == "range" and call.args and not isinstance(call.args[-1], ast.Name):
        name = _param_in(call.args[-1], params)  # range(len(x)), range(x.shape[0]), range(x.size(0))
    elif call is not None and called == "enumerate" and call.args:
        name = _param_in(call.args[0], params)
    elif isinstance(target, ast.Name):
        name = _param_in(target, params)
    if name is None:
        return None
    return Advice(
        "element-loop",
        node.lineno,
        f"line {node.lineno}: a Python loop over the elements of `{name}` runs one small torch call per element; "
        "a vectorised form (broadcasting, indexing with a tensor, `torch.where`) does it in one call",
    )


def _param_in(node: ast.AST, params: set[str]) -> str | None:
    if isinstance(node, ast.Name) and node.id in params:
        return node.id
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and node.args:
        return _param_in(node.args[0], params)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
        return _param_in(node.value.value, params)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size":
        return _param_in(node.func.value, params)
    return None


def _item_in_loop(node: ast.AST) -> Advice | None:
    if not isinstance(node, _LOOPS):
        return None
    body = node.body if isinstance(node, ast.For | ast.While) else [node]
    for inner in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "item":
            return Advice(
                "item-in-loop",
                inner.lineno,
                f"line {inner.lineno}: `.item()` inside a loop makes the CPU wait for the device at every step "
                "(one GPU sync each); keep the values as tensors in the loop and convert once at the end",
            )
    return None


def _tensor_of_tensor(node: ast.AST, params: set[str]) -> Advice | None:
    if not (isinstance(node, ast.Call) and node.args and _dotted_end(node.func) == ("torch", "tensor")):
        return None
    name = _param_in(node.args[0], params)
    if name is None:
        return None
    return Advice(
        "tensor-of-tensor",
        node.lineno,
        f"line {node.lineno}: `torch.tensor({name})` copies a tensor and warns; use `{name}.clone().detach()` "
        f"(or `torch.as_tensor({name})` when no copy is needed)",
    )


def _dotted_end(node: ast.AST) -> tuple[str, str] | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return node.value.id, node.attr
    return None
