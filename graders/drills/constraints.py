"""Constraints checked on the source before it runs: no loops, forbidden calls, allowed calls, one expression.

A forbidden name is matched on the fully resolved dotted name, so the usual aliases do not get
around it: ``F.nll_loss``, ``torch.nn.functional.nll_loss``, ``from torch.nn import functional
as G; G.nll_loss``, ``from torch.nn.functional import nll_loss as f`` and ``loss = F.nll_loss``
all resolve to ``torch.nn.functional.nll_loss``. A forbidden entry that starts with a dot
(``.flip``) forbids that attribute on any object, for methods such as ``x.flip(0)``.

``allow`` turns the list around, as puzzle sets do ("only ``torch.arange`` and ``torch.where``"):
every call must be of a name it lists (resolved the same way, so aliases neither help nor hurt)
or of a function the submission defines itself; a call of anything the checker cannot name
(``(lambda: f)()(x)``, ``fs[0](x)``) and a decorator (a hidden call) are refused. Operators,
indexing and attributes such as ``x.shape`` are not calls and stay free.
``single_expression`` asks for the puzzle form: imports and functions only, each function's body
a single ``return <expression>``.

This is a teaching aid, not a security layer (the sandbox is); it aims at honest shortcuts. It is also the
first thing the worker does with a learner's text, so reading it is bounded and total (``parse``): whatever
the text, the answer is a tree or a violation that names the limit, never an exception in the worker
(19,000 unary minus signs once raised MemoryError here, a 7,000-term sum RecursionError).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from graders.drills.schema import Constraints
from graders.sandbox.mainblocks import without_main_blocks

# How deeply a submission's syntax may nest (AST levels from the module down, a function's body included).
# Honest code stays far below (a drill's reference: about 15); the worker's recursive passes over the tree
# (RestrictedPython's transformer, the compiler) need this bound with room to spare: measured with 300 frames
# already on the stack, the transformer failed at 155 levels of calls and 205 levels of a sum.
MAX_NESTING = 100

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

_STATEMENTS = {ast.Assign: "an assignment", ast.AugAssign: "an assignment", ast.AnnAssign: "an assignment",
               ast.Expr: "an expression statement", ast.ClassDef: "a class", ast.If: "an if statement"}  # fmt: skip


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


def _own_functions(nodes: list[ast.AST]) -> set[str]:
    """Names the submission binds to its own functions (``def f`` or ``f = lambda ...``)."""
    names = {n.name for n in nodes if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    for node in nodes:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _parameter_defaults(nodes: list[ast.AST], aliases: dict[str, str]) -> dict[str, str]:
    """Parameters whose default is a dotted name (``def f(x, op=torch.flip)``): calling ``op`` calls that."""
    found: dict[str, str] = {}
    for node in nodes:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        args = node.args
        positional = args.posonlyargs + args.args
        pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True))
        pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
        for arg, default in pairs:
            name = _dotted(default, aliases)
            if name is not None:
                found[arg.arg] = name
    return found


def _not_allowed(nodes: list[ast.AST], allow: tuple[str, ...]) -> list[Violation]:
    aliases = _collect_aliases(nodes)
    defaults = _parameter_defaults(nodes, aliases)
    own = _own_functions(nodes) - set(aliases)
    dotted = {canonical(item) for item in allow if not item.startswith(".")}
    methods = {item[1:] for item in allow if item.startswith(".")}
    modules = {"torch", "numpy", "math"} | {name.split(".")[0] for name in aliases.values()}
    listing = ", ".join(allow)
    found: list[Violation] = []
    for node in nodes:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.decorator_list:
            line = node.decorator_list[0].lineno
            found.append(
                Violation("allow", line, f"line {line}: a decorator; this drill allows only calls of {listing}")
            )
        if not isinstance(node, ast.Call):
            continue
        func, line = node.func, node.lineno
        if isinstance(func, ast.Name) and func.id in own:
            continue
        name = _dotted(func, aliases)
        if isinstance(func, ast.Name) and func.id in defaults:  # a parameter whose default is the real callee
            name = defaults[func.id]
        if name is not None and name in dotted:
            continue
        attr = func.attr if isinstance(func, ast.Attribute) else None
        method = attr is not None and (name is None or name.split(".")[0] not in modules)
        if method and attr in methods:
            continue
        shown = f".{attr}" if method else (name or ast.unparse(func))
        if isinstance(func, ast.Name) and func.id in defaults:
            shown = f"{func.id} (its default is {defaults[func.id]})"
        found.append(Violation("allow", line, f"line {line}: calls {shown[:60]}; this drill allows only {listing}"))
    return found


def _not_one_expression(tree: ast.Module) -> list[Violation]:
    found: list[Violation] = []

    def refuse(node: ast.AST, what: str) -> None:
        line = getattr(node, "lineno", 0)
        found.append(
            Violation("single_expression", line, f"line {line}: {what}; write each function as one return expression")
        )

    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom) or _is_docstring(node) or _is_lambda_helper(node):
            continue  # ``ones = lambda a: a * 0 + 1`` is a function of one expression already
        if not isinstance(node, ast.FunctionDef):
            what = _STATEMENTS.get(type(node), f"a {type(node).__name__.lower()} statement")
            refuse(node, f"{what} outside a function")
            continue
        body = node.body[1:] if _is_docstring(node.body[0]) else node.body
        if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
            first = next((n for n in body if not isinstance(n, ast.Return)), body[0] if body else node)
            refuse(first, f"{node.name}() has {len(body)} statements, not a single return")
    return found


def _is_lambda_helper(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Lambda)
        and all(isinstance(t, ast.Name) for t in node.targets)
    )


def _is_docstring(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def parse(code: str, max_bytes: int) -> ast.Module | Violation:
    """The code's tree, or the first limit it breaks: size, text, syntax, nesting. Never raises.

    Steps: 1. the size in bytes (a lone surrogate, which JSON lets a client send, counts as the 3 bytes it
    would take); 2. text that is not text (a lone surrogate has no UTF-8 form: the parser would raise
    UnicodeEncodeError); 3. the parser, whose own limits raise MemoryError ("too complex") and RecursionError;
    4. the tree's depth (``MAX_NESTING``), which later passes walk recursively.
    """
    size = len(code.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        return Violation("size", 0, f"the code is {size} bytes; the limit is {max_bytes}")
    lone = _LONE_SURROGATE.search(code)
    if lone is not None:
        line = code.count("\n", 0, lone.start()) + 1
        what = f"U+{ord(lone.group()):04X}"
        message = f"line {line}: the character {what} is half of a surrogate pair, not text; retype that part"
        return Violation("text", line, message)
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return Violation("syntax", exc.lineno or 0, f"line {exc.lineno}: syntax error: {exc.msg}")
    except (MemoryError, RecursionError, ValueError):  # the parser's own depth limits; ValueError: a NUL on 3.11
        return _too_deep(0, f"more than Python's parser reads ({MAX_NESTING} here)")
    depth, line = nesting(tree)
    if depth > MAX_NESTING:
        return _too_deep(line, f"{depth} levels")
    return tree


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _too_deep(line: int, how_deep: str) -> Violation:
    where = f"line {line}: " if line else ""
    return Violation(
        "nesting",
        line,
        f"{where}the code nests {how_deep} deep; the limit is {MAX_NESTING}: give the inner parts names "
        "(`a = ...`, then use `a`) or a loop, so that no expression is built of hundreds of nested pieces",
    )


def nesting(tree: ast.AST) -> tuple[int, int]:
    """How many levels the tree nests (its deepest path, counted iteratively) and the line where it does."""
    deepest, line = 0, 0
    stack: list[tuple[ast.AST, int, int]] = [(tree, 1, 0)]
    while stack:
        node, depth, at = stack.pop()
        at = getattr(node, "lineno", at)
        if depth > deepest:
            deepest, line = depth, at
        stack.extend((child, depth + 1, at) for child in ast.iter_child_nodes(node))
    return deepest, line


def check_constraints(code: str, constraints: Constraints) -> list[Violation]:
    """Every violation, in source order; an empty list means the code may run (``if __name__ == "__main__":``
    blocks are not judged: they never run)."""
    tree = parse(code, constraints.max_source_bytes)
    if isinstance(tree, Violation):
        return [tree]
    tree.body = without_main_blocks(tree.body)
    nodes = list(ast.walk(tree))  # walked once: ast.walk is slow, and the checks below go over it 3-5 times
    found: list[Violation] = []
    if constraints.no_loops:
        for node in nodes:
            if isinstance(node, ast.stmt | ast.expr) and type(node) in _LOOPS:  # the loops: statements, expressions
                what = _LOOPS[type(node)]
                found.append(
                    Violation("no_loops", node.lineno, f"line {node.lineno}: {what}; this drill forbids loops")
                )
    found += _forbidden(nodes, constraints.forbid)
    if constraints.allow:
        found += _not_allowed(nodes, constraints.allow)
    if constraints.single_expression:
        found += _not_one_expression(tree)
    unique = {(v.line, v.message): v for v in found}
    return sorted(unique.values(), key=lambda v: (v.line, v.message))
