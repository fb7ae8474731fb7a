"""The card audit (``manage.py audit_cards``): are the cards flashcards, and does every heading reach one?

Measured per note and kind from the stored cards and note text, so anyone can rerun it after an import
or after editing the curated files. Output cards are judged by the notes check's stored runs,
which the ``outputs`` app adds (``manage.py audit_cards`` lives there, so ``cards`` never imports it).
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from cards.ingest.blocks import is_substantive, top_level_blocks
from cards.ingest.parser import PATH_SEPARATOR
from cards.ingest.sections import split_sections
from cards.models import Card, Note

# One card, one fact: a back of at most about 150 characters of prose (code blocks not counted),
# a front short enough to read at a glance. Issue 11's size rule.
BACK_PROSE_LIMIT = 150
FRONT_PROSE_LIMIT = 200
GENERIC_FRONT = "要点是什么"
_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", re.DOTALL | re.MULTILINE)


def prose_length(markdown: str) -> int:
    """Characters of a face outside fenced code blocks, whitespace runs counted once."""
    return len(re.sub(r"\s+", " ", _FENCE.sub("", markdown)).strip())


@dataclass
class KindRow:
    note: str
    kind: str
    cards: int = 0
    back_lengths: list[int] = field(default_factory=list)
    long_fronts: int = 0
    long_backs: int = 0
    generic_fronts: int = 0

    @property
    def back_median(self) -> int:
        return round(statistics.median(self.back_lengths)) if self.back_lengths else 0

    @property
    def back_max(self) -> int:
        return max(self.back_lengths, default=0)


@dataclass
class Audit:
    rows: list[KindRow]
    uncovered: dict[str, list[str]]  # note slug -> heading paths with substance and no active card
    headings: dict[str, int]  # note slug -> headings with substance
    output_cards: int = 0
    output_flagged: list[str] = field(default_factory=list)  # "<note> › <heading>: <problem>"
    output_unchecked: int = 0


def substantive_headings(text: str) -> list[str]:
    """Heading paths (plain text, as cards store them) whose own section teaches something."""
    sections, _ = split_sections(text)
    paths = []
    for section in sections:
        if section.heading is None:
            continue
        if any(is_substantive(section.tokens, block) for block in top_level_blocks(section.tokens)):
            paths.append(PATH_SEPARATOR.join(h.text for h in section.path))
    return paths


def audit_cards() -> Audit:
    rows: dict[tuple[str, str], KindRow] = {}
    covered: dict[str, set[str]] = defaultdict(set)
    cards = Card.objects.active().select_related("note").only("kind", "front", "back", "heading_path", "note__slug")
    for card in cards:
        slug = card.note.slug
        row = rows.setdefault((slug, card.kind), KindRow(slug, card.kind))
        row.cards += 1
        back = prose_length(card.back)
        row.back_lengths.append(back)
        row.long_backs += back > BACK_PROSE_LIMIT
        row.long_fronts += prose_length(card.front) > FRONT_PROSE_LIMIT
        row.generic_fronts += GENERIC_FRONT in card.front
        covered[slug].add(card.heading_path)
    uncovered: dict[str, list[str]] = {}
    headings: dict[str, int] = {}
    for note in Note.objects.order_by("slug").only("slug", "content"):
        paths = substantive_headings(note.content)
        headings[note.slug] = len(paths)
        uncovered[note.slug] = [p for p in paths if p not in covered[note.slug]]
    audit = Audit(rows=sorted(rows.values(), key=lambda r: (r.note, r.kind)), uncovered=uncovered, headings=headings)
    return audit
