"""The card audit (``manage.py audit_cards``): are the cards flashcards, and does every heading reach one?

Measured per note and kind from the stored cards and note text, so anyone can rerun it after an import
or after editing the curated files. Output cards are judged by the notes check's stored runs,
which the ``outputs`` app adds (``manage.py audit_cards`` lives there, so ``cards`` never imports it).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from cards import extensions
from cards.ingest.curated import BACK_PROSE_LIMIT, FRONT_PROSE_LIMIT, prose_length, substantive_headings
from cards.ingest.quality import (
    Face,
    asks_two_questions,
    contains_own_answer,
    half_width_marks,
    names_its_answer,
    near_duplicates,
)
from cards.models import Card, Note

GENERIC_FRONT = "要点是什么"


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
    output_cards: int = 0  # active output cards
    output_verified: int = 0  # active, and the back is what the card's qualifying sandbox run printed
    output_flagged: list[str] = field(default_factory=list)  # active but not verified: "<note> › <heading>: why"
    output_kept_out: int = 0  # in their notes, kept out of review by the notes check
    output_unchecked: int = 0  # in their notes, no final run yet
    two_questions: list[str] = field(default_factory=list)  # "<note> › <heading>: <front>" of fronts asking two things
    duplicates: list[str] = field(default_factory=list)  # "<why>: <card> = <card>" of cards that ask one fact
    own_answers: list[str] = field(default_factory=list)  # "<note> › <heading>: <front>" of fronts showing the back
    named_answers: list[str] = field(default_factory=list)  # "<note> › <heading>: <front>" spelling a one-name back
    half_width: list[str] = field(default_factory=list)  # "<note> › <heading>: <front>: <marks>" in Chinese sentences
    checks: dict[str, list[str]] = field(default_factory=dict)  # the apps' own checks: title -> problems


def audit_cards() -> Audit:
    rows: dict[tuple[str, str], KindRow] = {}
    covered: dict[str, set[str]] = defaultdict(set)
    cards = (
        Card.objects.active()
        .select_related("note")
        .only("kind", "front", "back", "heading_path", "note__slug")
        .order_by("note__slug", "position")
    )
    faces = []
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
        faces.append(Face(f"{slug} › {card.heading_path}: {_line(card.front)}", card.kind, card.front, card.back))
    uncovered: dict[str, list[str]] = {}
    headings: dict[str, int] = {}
    for note in Note.objects.order_by("slug").only("slug", "content"):
        paths = substantive_headings(note.content)
        headings[note.slug] = len(paths)
        uncovered[note.slug] = [p for p in paths if p not in covered[note.slug]]
    audit = Audit(rows=sorted(rows.values(), key=lambda r: (r.note, r.kind)), uncovered=uncovered, headings=headings)
    audit.two_questions = [face.name for face in faces if face.kind != "mapping" and asks_two_questions(face.front)]
    audit.duplicates = [f"{why}: {a.name}  =  {b.name}" for a, b, why in near_duplicates(faces)]
    audit.own_answers = [face.name for face in faces if contains_own_answer(face)]
    audit.named_answers = [face.name for face in faces if names_its_answer(face)]
    audit.half_width = [
        f"{face.name}: {' / '.join(marks)}"
        for face in faces
        if face.kind != "output"  # an output card's front quotes the note's heading, which is the note's own text
        and (marks := half_width_marks(face.front) + half_width_marks(face.back))
    ]
    audit.checks = extensions.audit_checks()
    return audit


def _line(front: str) -> str:
    """A front on one short line, for a list."""
    flat = " ".join(front.split())
    return flat if len(flat) <= 70 else flat[:69] + "…"
