"""Small views over a section's token stream: its top-level blocks and their source text."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from markdown_it.token import Token

_URL = re.compile(r"(https?://|www\.)\S+")
_REFERENCE_WORDS = re.compile(
    r"参考资料|参考|参见|详见|如下|来源|链接|references?|see also|see|refer to", re.IGNORECASE
)
_PUNCT_SPACE = re.compile(r"[\W_]+")
_TAG = re.compile(r"<[^>]*>")
_MIN_TEXT = 4


@dataclass(frozen=True)
class Block:
    """A top-level block: ``tokens[start:end]``, from source lines ``first_line`` to ``last_line``."""

    type: str
    start: int
    end: int
    first_line: int
    last_line: int


def top_level_blocks(tokens: list[Token]) -> list[Block]:
    blocks: list[Block] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        end = index + 1
        if token.nesting == 1:
            depth = 1
            while depth and end < len(tokens):
                depth += tokens[end].nesting
                end += 1
        lines = token.map or [0, 0]
        blocks.append(Block(token.type.removesuffix("_open"), index, end, lines[0], lines[1]))
        index = end
    return blocks


def block_source(lines: list[str], blocks: list[Block]) -> str:
    """The markdown of some blocks, blank-line separated, as written in the note."""
    parts = ["\n".join(lines[b.first_line : b.last_line]).strip("\n") for b in blocks]
    return "\n\n".join(part for part in parts if part.strip())


def list_item_source(lines: list[str], item: Token) -> str:
    """A list item's markdown without its bullet, dedented as if it stood alone."""
    first, last = item.map or [0, 0]
    chunk = lines[first:last]
    if not chunk:
        return ""
    marker = re.match(r"^\s*([-*+]|\d+[.)])\s?", chunk[0])
    head = chunk[0][marker.end() :] if marker else chunk[0]
    return (head.strip() + "\n" + textwrap.dedent("\n".join(chunk[1:]))).strip()


def is_substantive(tokens: list[Token], block: Block) -> bool:
    """Whether a block teaches something: not a rule, a bare image, or a "参考：<link>" line."""
    token = tokens[block.start]
    if block.type == "hr":
        return False
    if block.type == "html_block":
        return bool(_TAG.sub("", token.content).strip())
    if block.type == "paragraph":
        return not is_reference_only(tokens[block.start + 1])
    return True


def is_reference_only(inline: Token) -> bool:
    """A paragraph that only points elsewhere (links, URLs, "参考：")."""
    text: list[str] = []
    in_link = 0
    has_link = False
    for child in inline.children or []:
        if child.type == "link_open":
            in_link += 1
            has_link = True
        elif child.type == "link_close":
            in_link -= 1
        elif not in_link and child.type in {"text", "code_inline", "math_inline"}:
            text.append(child.content)
        elif not in_link and child.type == "html_inline" and not child.content.startswith("<img"):
            text.append(_TAG.sub("", child.content))
    joined = "".join(text)
    remaining = _PUNCT_SPACE.sub("", _REFERENCE_WORDS.sub("", _URL.sub("", joined)))
    points_elsewhere = has_link or bool(_URL.search(joined) or _REFERENCE_WORDS.search(joined))
    # "此部分参考<url>" leaves a word or two: still only a pointer.
    return not remaining or (points_elsewhere and len(remaining) < _MIN_TEXT)
