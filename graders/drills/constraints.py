"""Constraints checked on the source before it runs: no Python loops, forbidden calls.

A forbidden name is matched on the fully resolved dotted name, so the usual aliases do not get
around it: ``F.nll_loss``, ``torch.nn.functional.nll_loss``, ``from torch.nn import functional
as G; G.nll_loss``, ``from torch.nn.functional import nll_loss as f`` and ``loss = F.nll_loss``
all resolve to ``torch.nn.functional.nll_loss``. A forbidden entry that starts with a dot
(``.flip``) forbids that attribute on any object, for methods such as ``x.flip(0)``.
This is a teaching aid, not a security layer (the sandbox is); it aims at honest shortcuts.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from graders.drills.schema import Constraints

# The short names the notes (and most learners) use for the allowed modules.
DEFAULT_ALIASES = {"F": "torch.nn.functional", "nn": "torch.nn", "np": "numpy"}
_LOOPS = {
    ast.For: "a for loop",
    ast.AsyncFor: "a for loop",
    ast.While: "a while loop",
    ast.ListComp: "a list comprehension",
    ast.SetComp: "a set comprehension",
    ast.DictComp: "a dict comprehension",
    ast.GeneratorExp: "a generator expression",
}


@dataclass(frozen=True)
class Violation:
    rule: str
    line: int
    message: str


def canonical(name: str) -> str:
    """``F.nll_loss`` -> ``torch.nn.functional.nll_loss`` (module aliases expanded)."""
    head, _, rest = name.partition(".")
    head = DEFAULT_ALIASES.get(head, head)
    return f"{head}.{rest}" if rest else head


def _collect_aliases(nodes: list[ast.AST]) -> dict[str, str]:
    """Names bound by imports or by plain ``name = dotted.chain`` assignments anywhere in the code."""
    aliases: dict[str, str] = {}
    binders = [node for node in nodes if isinstance(node, ast.Import | ast.ImportFrom | ast.Assign)]
    for _ in range(3):  # a few rounds so that chains of aliases resolve
        for node in binders:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    root = alias.name.split(".")[0]
                    aliases[alias.asname or root] = alias.name if alias.asname else root
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    aliases[alias.asname or alias.name] = f"{_resolve_text(node.module, aliases)}.{alias.name}"
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                target = _dotted(node.value, aliases)
                if target is not None and target != node.targets[0].id:
                    aliases[node.targets[0].id] = target
    return aliases


def _resolve_text(name: str, aliases: dict[str, str]) -> str:
    head, _, rest = name.partition(".")
    head = aliases.get(head, DEFAULT_ALIASES.get(head, head))
    return f"{head}.{rest}" if rest else head


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """The resolved dotted name of ``a.b.c`` or of ``getattr(a.b, "c")``; None for anything else."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            parts.append(node.args[1].value)
            node = node.args[0]
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            return _resolve_text(".".join(reversed(parts)), aliases)
        else:
            return None


def _attribute_names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
        if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            return [node.args[1].value]
    return []


def _forbidden(nodes: list[ast.AST], forbid: tuple[str, ...]) -> list[Violation]:
    aliases = _collect_aliases(nodes)
    dotted = {canonical(item): item for item in forbid if not item.startswith(".")}
    methods = {item[1:]: item for item in forbid if item.startswith(".")}
    stars = [
        _resolve_text(node.module, {})
        for node in nodes
        if isinstance(node, ast.ImportFrom) and node.module and any(a.name == "*" for a in node.names)
    ]
    found: list[Violation] = []
    for node in nodes:
        line = getattr(node, "lineno", 0)
        for attr in _attribute_names(node):
            if attr in methods:
                found.append(Violation("forbid", line, f"line {line}: the drill forbids {methods[attr]}"))
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [f"{_resolve_text(node.module, {})}.{a.name}" for a in node.names]
            resolved = names
        else:
            name = _dotted(node, aliases) if isinstance(node, ast.Attribute | ast.Name | ast.Call) else None
            resolved = [name] if name else []
            if isinstance(node, ast.Name) and node.id not in aliases:  # maybe from a star import
                resolved += [f"{module}.{node.id}" for module in stars]
        for name in resolved:
            for banned, shown in dotted.items():
                if name == banned or name.startswith(banned + "."):
                    found.append(Violation("forbid", line, f"line {line}: the drill forbids {shown} (found {name})"))
    return found


def check_constraints(code: str, constraints: Constraints) -> list[Violation]:
    """Every violation, in source order; an empty list means the code may run."""
    size = len(code.encode("utf-8"))
    if size > constraints.max_source_bytes:
        return [Violation("size", 0, f"the code is {size} bytes; the limit is {constraints.max_source_bytes}")]
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return [Violation("syntax", exc.lineno or 0, f"line {exc.lineno}: syntax error: {exc.msg}")]
    nodes = list(ast.walk(tree))  # walked once: ast.walk is slow, and the checks below go over it 3-5 times
    found: list[Violation] = []
    if constraints.no_loops:
        for node in nodes:
            if type(node) in _LOOPS:
                what = _LOOPS[type(node)]
                found.append(
                    Violation("no_loops", node.lineno, f"line {node.lineno}: {what}; this drill forbids loops")
                )
    found += _forbidden(nodes, constraints.forbid)
    unique = {(v.line, v.message): v for v in found}
    return sorted(unique.values(), key=lambda v: (v.line, v.message))
