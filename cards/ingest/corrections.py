"""Corrections to the bundled notes: where a note is wrong and its cards are right. Pure: no Django, no I/O.

The notes stay as their authors wrote them (they are reading material), but a learner who reads a
wrong passage on the note page must see what the card says instead. ``notes/corrections.toml``
names each passage by its own lines and gives the correction; the note page renders it as a
marked callout right after the block that holds the passage (``cards.rendering.render_note``).

    [[correction]]
    note = "pytorch-basics.md"                 # the note file's name
    passage = "total_loss += loss"             # lines of the note in a row, each a part of its line
    correction = "应写 `total_loss += loss.item()`。"   # Markdown
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass

from cards.ingest.slugs import note_slug

_FIELDS = {"note", "passage", "correction"}


class CorrectionError(ValueError):
    """A corrections file that cannot be used; the message names every problem found."""


@dataclass(frozen=True)
class Correction:
    note: str  # the note's slug
    passage: tuple[str, ...]  # stripped, non-empty lines
    correction: str  # Markdown

    @property
    def quoted(self) -> str:
        """The passage on one line, for lists and messages."""
        return " / ".join(self.passage)


def parse_corrections(text: str, shown: str) -> list[Correction]:
    """Every ``[[correction]]`` table, in file order; ``CorrectionError`` listing every mistake."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CorrectionError(f"{shown}: not valid TOML ({exc}).") from exc
    rows = data.get("correction", [])
    if set(data) - {"correction"} or not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise CorrectionError(f"{shown}: expected only [[correction]] tables.")
    errors: list[str] = []
    found: list[Correction] = []
    for number, row in enumerate(rows, start=1):
        problems = [f"unknown field {name!r}" for name in sorted(set(row) - _FIELDS)]
        problems += [
            f"{name} is missing or empty"
            for name in sorted(_FIELDS)
            if not isinstance(row.get(name), str) or not row[name].strip()
        ]
        if problems:
            errors += [f"{shown}: correction {number}: {p}" for p in problems]
            continue
        passage = tuple(line.strip() for line in row["passage"].strip().splitlines() if line.strip())
        found.append(Correction(note_slug(row["note"]), passage, row["correction"].strip()))
    if errors:
        raise CorrectionError("\n".join(errors))
    return found


def find_passage(lines: list[str], passage: tuple[str, ...]) -> list[int]:
    """The index of the last line of each place where ``passage`` occurs: its lines in a row, each a part
    of its line (indentation aside)."""
    n = len(passage)
    return [
        start + n - 1
        for start in range(len(lines) - n + 1)
        if all(part in lines[start + i] for i, part in enumerate(passage))
    ]
