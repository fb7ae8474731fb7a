"""Slugs for note files and heading anchors, shared by the parser and the renderer.

Stdlib only: the anchor a card stores and the ``id`` the note page renders must come from the
same function, and both sides (the pure parser and the web renderer) import it from here.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable

# Anything that is not a letter, digit or underscore in any script separates words; CJK
# characters count as letters, so Chinese headings keep their characters.
_NON_WORD = re.compile(r"[^\w]+")

NOTE_SLUG_MAX = 120
ANCHOR_MAX = 80


def slugify(text: str, max_length: int) -> str:
    """A unicode-aware slug: NFKC, lower case, words joined by ``-``, CJK kept, never over ``max_length``."""
    normalized = unicodedata.normalize("NFKC", text).lower()
    slug = _NON_WORD.sub("-", normalized).strip("-")
    if len(slug) > max_length:
        slug = slug[:max_length].rstrip("-")
    return slug


def note_slug(path: str | os.PathLike[str]) -> str:
    """The slug a note file is stored under: its file name without the extension, slugified.

    Only the name counts (not the folder), so the same note imported from another checkout or
    working directory keeps its slug and therefore its cards.
    """
    name = os.path.basename(os.fspath(path).rstrip("/\\"))
    stem, ext = os.path.splitext(name)
    if ext.lower() not in {".md", ".markdown"}:
        stem = name
    return slugify(stem, NOTE_SLUG_MAX) or "note"


def plain_anchor(heading: str) -> str:
    """The anchor of a heading named in Markdown or plain text (code spans' backticks and bold's asterisks
    dropped), for matching a heading someone names (a drill's ``[source] heading``) to the note's."""
    return heading_anchor(heading.replace("`", "").replace("**", ""))


def heading_anchor(text: str) -> str:
    """The ``id`` a heading with this plain text gets on the note page, before de-duplication."""
    return slugify(text, ANCHOR_MAX) or "section"


class AnchorAllocator:
    """Hands out heading anchors in document order, suffixing repeats (``x``, ``x-1``, ``x-2``).

    The renderer and the parser each walk a note's headings in the same order with a fresh
    allocator, so they agree on every anchor without sharing state.
    """

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self._taken: set[str] = set(taken)

    def allocate(self, text: str) -> str:
        base = heading_anchor(text)
        anchor, n = base, 0
        while anchor in self._taken:
            n += 1
            anchor = f"{base}-{n}"
        self._taken.add(anchor)
        return anchor
