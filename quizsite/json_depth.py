"""Nesting bounds for JSON from strangers, in the web process: API request bodies and Anki collections.

Why: ``json.loads`` recurses once per level, so a body of ten thousand ``[`` raised ``RecursionError``
(no ``ValueError``: a 500), and a body just shallow enough to parse was then walked recursively again by
the serializers and the error renderer. Here the parse's ``RecursionError`` becomes ``TooDeep``, and the
parsed value's depth is measured with a loop, never recursion, before anything else reads it.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 32  # no request or collection we read nests deeper than a few levels


class TooDeep(ValueError):
    """JSON nested deeper than the bound (or than the parser could follow)."""


def loads(text: str | bytes, max_depth: int = MAX_DEPTH, **options: Any) -> Any:
    """``json.loads`` that refuses, with ``TooDeep``, anything nested deeper than ``max_depth``."""
    try:
        value = json.loads(text, **options)
    except RecursionError:
        raise TooDeep(f"JSON nested deeper than {max_depth} levels") from None
    check(value, max_depth)
    return value


def check(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """Raise ``TooDeep`` when lists and dicts in ``value`` nest deeper than ``max_depth`` (a loop, no recursion)."""
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth >= max_depth:
            raise TooDeep(f"JSON nested deeper than {max_depth} levels")
        stack.extend((child, depth + 1) for child in children)
