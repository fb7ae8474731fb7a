"""Cut a note into sections: the lines under each heading up to the next heading of any level.

Each section's lines are parsed again on their own (dedented, since the bundled notes put
headings inside list items), so card builders see a small, self-contained token stream.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

from markdown_it.token import Token

from cards.ingest.markdown import inline_plain_text, shared_parser

PATH_SEPARATOR = " › "  # between the levels of a heading path, as cards store and show it


@dataclass(frozen=True)
class Heading:
    level: int
    text: str  # plain text, for keys and the stored heading path
    markdown: str  # inline markdown, for card fronts (keeps `code`)
    anchor: str
    line: int
    end_line: int


@dataclass
class Section:
    """The content under one heading (or before the first heading, with ``heading=None``)."""

    heading: Heading | None
    path: list[Heading]
    body: str
    tokens: list[Token] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return self.heading.anchor if self.heading else ""

    @property
    def body_lines(self) -> list[str]:
        return self.body.split("\n")


def find_headings(tokens: list[Token]) -> list[Heading]:
    headings = []
    for index, token in enumerate(tokens):
        if token.type != "heading_open" or token.map is None:
            continue
        inline = tokens[index + 1]
        headings.append(
            Heading(
                level=int(token.tag[1]),
                text=inline_plain_text(inline),
                markdown=inline.content.strip(),
                anchor=str(token.attrGet("id") or ""),
                line=token.map[0],
                end_line=token.map[1],
            )
        )
    return headings


def title_heading(headings: list[Heading]) -> Heading | None:
    """The first heading when it is the only one at the top level: the note's title, not a topic."""
    if not headings:
        return None
    top = min(h.level for h in headings)
    first = headings[0]
    if first.level == top and sum(1 for h in headings if h.level == top) == 1:
        return first
    return None


def split_sections(body: str) -> tuple[list[Section], Heading | None]:
    """Sections in document order, each with its heading path (the title heading left out)."""
    parser = shared_parser()
    lines = body.split("\n")
    headings = find_headings(parser.parse(body))
    title = title_heading(headings)
    sections: list[Section] = []
    first_line = headings[0].line if headings else len(lines)
    preamble = _section_text(lines[:first_line])
    if preamble:
        sections.append(Section(heading=None, path=[], body=preamble))
    stack: list[Heading] = []
    for index, heading in enumerate(headings):
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
        end = headings[index + 1].line if index + 1 < len(headings) else len(lines)
        path = [h for h in stack if h is not title]
        sections.append(Section(heading=heading, path=path, body=_section_text(lines[heading.end_line : end])))
    for section in sections:
        section.tokens = parser.parse(section.body) if section.body else []
    return sections, title


def _section_text(lines: list[str]) -> str:
    return textwrap.dedent("\n".join(lines)).strip("\n")
