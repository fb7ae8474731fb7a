"""The key that groups accepted solutions which differ only in names, formatting, comments and docstrings.

Pure Python (``ast`` and ``hashlib``), never Django: the grading worker computes it when it records an accepted
attempt, the web computes the reference's. Exercism calls the idea a "representer": two solutions with the same
key do the same operations in the same order.

What normalising does, on the syntax tree (so formatting and comments are gone by construction):

1. every name the source binds (arguments, assignment and loop targets, ``def``/``class`` names, ``as`` names,
   comprehension variables) becomes ``v0``, ``v1``... in order of first appearance;
2. an imported name becomes the module path it stands for and the imports go (``F.relu`` and
   ``torch.nn.functional.relu`` are one operation), while names the source never binds (``torch`` provided by the
   sandbox, builtins) and every attribute name stay as written;
3. docstrings and other bare string statements go, and so do annotations;
4. ``ast.unparse`` prints the tree and its SHA-256 is the key.

Sources are learner input, so ``solution_key`` is total: too long, unparsable, too deep (``RecursionError``) or too
big (``MemoryError``) falls back to the hash of the raw text, a key no other spelling shares.
"""

from __future__ import annotations

import ast
import hashlib
from typing import Any

MAX_SOURCE_CHARS = 20_000  # the submission cap (GRADER_MAX_CODE_BYTES); beyond it the raw text's hash
KEY_LENGTH = 66  # "a:" or "r:" and 64 hex digits (Submission.solution_key's max_length)


def solution_key(source: str) -> str:
    """``a:<sha256>`` of the normalised source, or ``r:<sha256>`` of the raw text when it cannot be normalised."""
    normalised = normalised_source(source)
    if normalised is None:
        return "r:" + _sha256(source)
    return "a:" + _sha256(normalised)


def normalised_source(source: str) -> str | None:
    """The source as its key sees it, or None when it cannot be normalised (never raises)."""
    if not isinstance(source, str) or len(source) > MAX_SOURCE_CHARS:
        return None
    try:
        tree = ast.parse(source)
        tree = _Normaliser(_bound_names(tree), _import_aliases(tree)).visit(tree)
        return ast.unparse(ast.fix_missing_locations(tree))
    except Exception:  # SyntaxError, ValueError (NUL), RecursionError, MemoryError: all learner input
        return None


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _import_aliases(tree: ast.AST) -> dict[str, str]:
    """The names imports bind and the module paths they stand for (``F`` -> ``torch.nn.functional``)."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    aliases[top] = top
        elif isinstance(node, ast.ImportFrom) and not node.level:
            for alias in node.names:
                if alias.name != "*":
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}" if node.module else alias.name
    return aliases


def _bound_names(tree: ast.AST) -> set[str]:
    """Every name the source binds itself (imports aside): these are the learner's to choose."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
    return bound


def _is_string_statement(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


class _Normaliser(ast.NodeTransformer):
    """Steps 1-3 of the module docstring, in one walk in source order (so "first appearance" is the same for
    any two spellings of one tree)."""

    def __init__(self, bound: set[str], aliases: dict[str, str]) -> None:
        self.bound = bound
        self.aliases = {name: path for name, path in aliases.items() if name not in bound}
        self.names: dict[str, str] = {}

    def canonical(self, name: str) -> str:
        if name in self.aliases:
            return self.aliases[name]
        if name not in self.bound:
            return name
        if name not in self.names:
            self.names[name] = f"v{len(self.names)}"
        return self.names[name]

    def generic_visit(self, node: ast.AST) -> ast.AST:
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if isinstance(statements, list) and statements and isinstance(statements[0], ast.stmt):
                kept = [s for s in statements if not _is_string_statement(s) and not _is_import(s)]
                setattr(
                    node, field, kept or ([ast.Pass()] if field == "body" and not isinstance(node, ast.Module) else [])
                )
        return super().generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        node.id = self.canonical(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self.canonical(node.arg)
        node.annotation = None
        return node

    def _visit_def(self, node: Any) -> ast.AST:
        node.name = self.canonical(node.name)
        if not isinstance(node, ast.ClassDef):
            node.returns = None
        return self.generic_visit(node)

    visit_FunctionDef = _visit_def
    visit_AsyncFunctionDef = _visit_def
    visit_ClassDef = _visit_def

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        if node.name:
            node.name = self.canonical(node.name)
        return self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> ast.AST:
        if node.name:
            node.name = self.canonical(node.name)
        return self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> ast.AST:
        if node.name:
            node.name = self.canonical(node.name)
        return node

    def _visit_scope_names(self, node: ast.Global | ast.Nonlocal) -> ast.AST:
        node.names = [self.canonical(name) for name in node.names]
        return node

    visit_Global = _visit_scope_names
    visit_Nonlocal = _visit_scope_names

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | None:
        """``x: T = v`` is ``x = v``; a bare ``x: T`` does nothing."""
        if node.value is None:
            return None
        assign = ast.Assign(targets=[node.target], value=node.value)
        self.generic_visit(assign)
        return assign


def _is_import(node: ast.stmt) -> bool:
    return isinstance(node, ast.Import) or (isinstance(node, ast.ImportFrom) and not node.level)
