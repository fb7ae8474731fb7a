"""``if __name__ == "__main__":`` blocks: a script's own test run, which never runs when the grader imports the
code (its ``__name__`` is never ``"__main__"``). The sandbox drops them before it compiles
(``graders.sandbox.policy``), and the drill rules (``graders.drills.constraints``) never judge them. Pure ``ast``.
"""

from __future__ import annotations

import ast


def is_main_block(node: ast.AST) -> bool:
    """``if __name__ == "__main__":``, either way round."""
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    test = node.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = (test.left, test.comparators[0])
    named = sum(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
    main = sum(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides)
    return named == 1 and main == 1


def without_main_blocks(body: list[ast.stmt]) -> list[ast.stmt]:
    """A module's statements with each ``if __name__ == "__main__":`` block replaced by its ``else`` part
    (which is what runs)."""
    kept: list[ast.stmt] = []
    for node in body:
        if is_main_block(node):
            assert isinstance(node, ast.If)
            kept += without_main_blocks(node.orelse)
        else:
            kept.append(node)
    return kept
