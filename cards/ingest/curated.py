"""Hand-written question cards for a note: ``cards/<note-stem>.toml`` beside the note.

The importer can only cut cards out of a note's own sentences; a teacher asks better questions.
When a note has a curated file, its question and cloze cards come from that file (mapping and
output cards still come from the note's tables and snippets). Pure: no Django, no I/O.

    [[card]]
    id = "view-needs-contiguous"        # stable: the card's key comes from note slug + id
    section = "张量 › view 与 reshape"   # the heading path as the note has it (" › " between levels)
    kind = "qa"                          # or "cloze": the front holds "[...]" once, the back fills it
    front = "`x.view(...)` 在什么情况下会报错?"
    back = "`x` 不连续时(例如转置之后);先 `.contiguous()` 或改用 `reshape`。"
    tags = ["view"]                      # optional

    [[skip]]                             # an output card the note's snippets give, kept out of the deck
    section = "MSELoss初探"
    code = "14.0119 / 12"                # lines of the snippet, in a row, that no other snippet of the section has
    why = "arithmetic, not PyTorch"      # required: trivial, or the same as another card

Every card is checked when the note is imported: one fact per card (a back of at most
``BACK_PROSE_LIMIT`` characters of prose, code blocks not counted), a section the note has,
an id used once. A mistake names the file, the card and the field.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cards.ingest.blocks import is_substantive, top_level_blocks
from cards.ingest.markdown import normalize_newlines, split_front_matter
from cards.ingest.sections import PATH_SEPARATOR, Section, split_sections

KINDS = ("qa", "cloze")
CLOZE_BLANK = "[...]"
# One card, one fact: a back of at most about 150 characters of prose (code blocks not counted),
# a front short enough to read at a glance. Issue 11's size rule, shared with ``audit_cards``.
BACK_PROSE_LIMIT = 150
FRONT_PROSE_LIMIT = 200
_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", re.DOTALL | re.MULTILINE)
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_TAG = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
_FIELDS = {"id", "section", "kind", "front", "back", "tags"}
_SKIP_FIELDS = {"section", "code", "why"}


@dataclass(frozen=True)
class SkippedOutput:
    """An output card a snippet gives that the deck leaves out (trivial, or the same fact as another card)."""

    section: Section
    code: str
    why: str

    def matches(self, section: Section, code: str) -> bool:
        """Whether ``code`` is a snippet of this skip's section with its lines in a row (spacing aside)."""
        wanted = [line.strip() for line in self.code.strip().splitlines()]
        lines = [line.strip() for line in code.splitlines()]
        n = len(wanted)
        return section is self.section and any(lines[i : i + n] == wanted for i in range(len(lines) - n + 1))


class CuratedError(ValueError):
    """A curated file that cannot be used; the message names every problem found."""


@dataclass(frozen=True)
class CuratedCard:
    id: str
    kind: str
    front: str
    back: str
    section: Section
    tags: tuple[str, ...]


def curated_file_path(note: Path) -> Path:
    """Where a note's hand-written cards live: ``cards/<note stem>.toml`` in the note's folder."""
    return note.parent / "cards" / f"{note.stem}.toml"


def prose_length(markdown: str) -> int:
    """Characters of a face outside fenced code blocks, whitespace runs counted once."""
    return len(re.sub(r"\s+", " ", _FENCE.sub("", markdown)).strip())


def section_path(section: Section) -> str:
    """The heading path a curated card names (and a card stores); the title's own section goes by the title."""
    path = PATH_SEPARATOR.join(h.text for h in section.path)
    return path or (section.heading.text if section.heading is not None else "")


def substantive_paths(sections: list[Section]) -> list[str]:
    """Heading paths whose own section teaches something (prose, a list, a table or code)."""
    return [
        section_path(s)
        for s in sections
        if s.heading is not None and any(is_substantive(s.tokens, b) for b in top_level_blocks(s.tokens))
    ]


def heading_paths(text: str) -> list[str]:
    """Every heading path of a note's text, as cards store them."""
    sections = split_sections(split_front_matter(normalize_newlines(text))[1])[0]
    return [section_path(s) for s in sections if s.heading is not None]


def substantive_headings(text: str) -> list[str]:
    """The heading paths of a note's text that teach something, read as the importer reads the note
    (front matter off, so a note's first heading can be its title)."""
    return substantive_paths(split_sections(split_front_matter(normalize_newlines(text))[1])[0])


def _tables(text: str, shown: str, name: str) -> list[dict[str, Any]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CuratedError(f"{shown}: not valid TOML ({exc}).") from exc
    extra = set(data) - {"card", "skip"}
    rows = data.get(name, [])
    if extra or not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        found = ", ".join(sorted(extra)) or name
        raise CuratedError(f"{shown}: expected only [[card]] and [[skip]] tables (found {found}).")
    return rows


def _sections_by_path(sections: list[Section]) -> dict[str, Section | None]:
    by_path: dict[str, Section | None] = {}
    for section in sections:
        if section.heading is not None:
            path = section_path(section)
            by_path[path] = None if path in by_path else section  # None: the path names two sections
    return by_path


def parse_skips(text: str, sections: list[Section], shown: str) -> list[SkippedOutput]:
    """The file's ``[[skip]]`` tables: output cards left out of the deck, each with the reason why."""
    by_path = _sections_by_path(sections)
    errors: list[str] = []
    skips: list[SkippedOutput] = []
    for number, row in enumerate(_tables(text, shown, "skip"), start=1):
        problems = [f"unknown field {name!r}" for name in sorted(set(row) - _SKIP_FIELDS)]
        problems += [
            f"{name} is missing or empty"
            for name in sorted(_SKIP_FIELDS)
            if not isinstance(row.get(name), str) or not row[name].strip()
        ]
        if not problems and by_path.get(row["section"]) is None:
            problems.append(f"section {row['section']!r} is not one heading path of the note")
        errors += [f"{shown}: skip {number}: {p}" for p in problems]
        if not problems:
            section = by_path[row["section"]]
            assert section is not None
            skips.append(SkippedOutput(section, row["code"], row["why"]))
    if errors:
        raise CuratedError("\n".join(errors))
    return skips


def parse_curated(text: str, sections: list[Section], shown: str) -> list[CuratedCard]:
    """The file's cards in file order; ``CuratedError`` listing every mistake, so one edit fixes all."""
    rows = _tables(text, shown, "card")
    by_path = _sections_by_path(sections)
    errors: list[str] = []
    cards: list[CuratedCard] = []
    seen: set[str] = set()
    for number, row in enumerate(rows, start=1):
        where = f"{shown}: card {number} ({row.get('id', 'no id')!s})"
        problems = _problems(row, by_path, seen)
        errors += [f"{where}: {p}" for p in problems]
        if isinstance(row.get("id"), str):
            seen.add(row["id"])
        if not problems:
            section = by_path[row["section"]]
            assert section is not None  # _problems refused a path that names two sections
            tags = tuple(row.get("tags", ()))
            cards.append(CuratedCard(row["id"], row["kind"], row["front"].strip(), row["back"].strip(), section, tags))
    if errors:
        raise CuratedError("\n".join(errors))
    return cards


def _problems(row: dict[str, Any], by_path: dict[str, Section | None], seen: set[str]) -> list[str]:
    problems = [f"unknown field {name!r}" for name in sorted(set(row) - _FIELDS)]
    for name in ("id", "section", "kind", "front", "back"):
        if not isinstance(row.get(name), str) or not row[name].strip():
            problems.append(f"{name} is missing or empty")
    if problems:
        return problems
    if not _ID.match(row["id"]):
        problems.append("id must be lowercase words joined by '-'")
    elif row["id"] in seen:
        problems.append("id is used by an earlier card")
    if row["section"] not in by_path:
        problems.append(f"section {row['section']!r} is not a heading path of the note")
    elif by_path[row["section"]] is None:
        problems.append(f"section {row['section']!r} names two sections of the note; rename one heading")
    if row["kind"] not in KINDS:
        problems.append(f"kind must be one of {', '.join(KINDS)}")
    elif row["kind"] == "cloze" and row["front"].count(CLOZE_BLANK) != 1:
        problems.append(f"a cloze front holds {CLOZE_BLANK} exactly once")
    if prose_length(row["back"]) > BACK_PROSE_LIMIT:
        problems.append(
            f"back has {prose_length(row['back'])} characters of prose; one fact is at most {BACK_PROSE_LIMIT}"
        )
    if prose_length(row["front"]) > FRONT_PROSE_LIMIT:
        problems.append(f"front has {prose_length(row['front'])} characters of prose; at most {FRONT_PROSE_LIMIT}")
    tags = row.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) and _TAG.match(t) for t in tags):
        problems.append("tags must be a list of lowercase words")
    return problems
