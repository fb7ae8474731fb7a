"""The one markdown-it configuration that both card extraction and page rendering use.

Cards point at headings by anchor; the note page renders the same headings with ids. Both only
agree if they parse with the same rules, strip the same front matter and allocate anchors in the
same order, so all of that lives here.
"""

from __future__ import annotations

import re
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin

from cards.ingest.slugs import AnchorAllocator

_FENCE_LINE = re.compile(r"^---\s*$")
_META_LINE = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*?)\s*$")
_FRONT_MATTER_MAX_LINES = 60


def split_front_matter(text: str) -> tuple[dict[str, str], str]:
    """Split a Jekyll/Hexo style ``---`` block off the top of a note.

    Left in, it would render as a horizontal rule plus a setext heading made of ``key: value``
    lines. It only counts as front matter when it closes within a few lines and holds at least
    one ``key: value`` line, so a note that merely starts with a rule is left alone.
    """
    lines = text.split("\n")
    if not lines or not _FENCE_LINE.match(lines[0]):
        return {}, text
    for end in range(1, min(len(lines), _FRONT_MATTER_MAX_LINES)):
        if _FENCE_LINE.match(lines[end]):
            meta = {}
            for line in lines[1:end]:
                match = _META_LINE.match(line)
                if match:
                    meta[match.group(1).lower()] = match.group(2).strip().strip("\"'")
            if not meta:
                return {}, text
            return meta, "\n".join(lines[end + 1 :])
    return {}, text


def inline_plain_text(token: Token) -> str:
    """The visible text of an inline token (code spans and math keep their content, markup goes)."""
    parts: list[str] = []
    for child in token.children or []:
        if child.type in {"text", "code_inline", "math_inline", "math_inline_double"}:
            parts.append(child.content)
        elif child.type in {"softbreak", "hardbreak"}:
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content)
    return " ".join("".join(parts).split())


def _assign_heading_ids(state: StateCore) -> None:
    """Core rule: give every heading an ``id`` from its text, unique within the document."""
    allocator = AnchorAllocator()
    tokens = state.tokens
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and index + 1 < len(tokens):
            token.attrSet("id", allocator.allocate(inline_plain_text(tokens[index + 1])))


def make_markdown() -> MarkdownIt:
    """A fresh parser: CommonMark, raw HTML allowed (sanitised later), tables, ~~del~~, $math$."""
    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    md.use(dollarmath_plugin, allow_space=True, allow_digits=False, double_inline=True)
    md.core.ruler.push("heading_ids", _assign_heading_ids)
    return md


@lru_cache(maxsize=1)
def shared_parser() -> MarkdownIt:
    """The parse-only instance; building one costs more than parsing a small note."""
    return make_markdown()


def normalize_newlines(text: str) -> str:
    """One line-ending convention, so hashes and line maps do not depend on the editor."""
    return text.replace("\r\n", "\n").replace("\r", "\n")
