"""The import report an upload's preview shows, as JSON kept on the ``Upload`` (web process).

What the importer would do to each note (``cards.importing.NoteReport``: cards to create, change, retire),
the note's title and its cards by kind, and a few cards of each kind to render as the review page would. The
``base`` and ``plan`` parts are what the confirmation compares: the same notes' versions and the same plan
against the database then mean nothing changed the course's notes in between.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, TypedDict

from cards.importing import NoteReport, NoteSource
from cards.ingest import ParsedNote
from cards.models import Card, Course, Note

PREVIEWS_PER_KIND = 2
KIND_ORDER = [Card.Kind.QA, Card.Kind.CLOZE, Card.Kind.MAPPING, Card.Kind.OUTPUT]


class CardPreview(TypedDict):
    kind: str
    front: str  # Markdown: rendered (and sanitised) when the page is shown
    back: str


class NoteEntry(TypedDict):
    slug: str  # as its author named it (the course's stored slug less the course's)
    path: str
    title: str
    cards: int
    kinds: dict[str, int]
    note_created: bool
    note_changed: bool
    created: list[str]
    updated: list[str]
    moved: list[str]
    reactivated: list[str]
    retired: list[str]
    unchanged: int
    text_edits: list[str]
    warnings: list[str]
    previews: list[CardPreview]


def note_entry(source: NoteSource, report: NoteReport, parsed: ParsedNote, course: Course) -> NoteEntry:
    kinds = Counter(spec.kind for spec in parsed.cards)
    previews: list[CardPreview] = []
    for kind in KIND_ORDER:
        shown = [spec for spec in parsed.cards if spec.kind == kind][:PREVIEWS_PER_KIND]
        previews += [CardPreview(kind=kind, front=spec.front, back=spec.back) for spec in shown]
    return NoteEntry(
        slug=course.unqualified(report.slug),
        path=source.display_path,
        title=parsed.title,
        cards=report.cards,
        kinds={kind: kinds[kind] for kind in KIND_ORDER if kinds[kind]},
        note_created=report.note_created,
        note_changed=report.note_changed,
        created=report.created,
        updated=report.updated,
        moved=report.moved,
        reactivated=report.reactivated,
        retired=report.retired,
        unchanged=report.unchanged,
        text_edits=report.text_edits,
        warnings=report.warnings,
        previews=previews,
    )


def plan_of(reports: list[NoteReport]) -> list[list[Any]]:
    """What the import would write, note by note, in a form JSON keeps and compares exactly."""
    return [
        [
            r.slug,
            r.note_created,
            r.note_changed,
            *(sorted(fronts) for fronts in (r.created, r.updated, r.moved, r.reactivated, r.retired)),
        ]
        for r in sorted(reports, key=lambda r: r.slug)
    ]


def base_of(sources: list[NoteSource]) -> dict[str, str]:
    """The version of each note the plan was made against: its stored content hash ("" while it is new). A
    confirmation finding another version knows the course changed, even where the cards' plan would not."""
    stored = dict(Note.objects.filter(slug__in=[s.slug for s in sources]).values_list("slug", "content_hash"))
    return {s.slug: stored.get(s.slug, "") for s in sources}


def build(
    sources: list[NoteSource],
    reports: list[NoteReport],
    parsed: list[ParsedNote],
    course: Course,
    skipped: list[str],
    base: dict[str, str],
) -> dict[str, Any]:
    """The whole report: one entry per note (in upload order), what was left out, the plan and its base."""
    entries = [note_entry(s, r, p, course) for s, r, p in zip(sources, reports, parsed, strict=True)]
    return {"notes": entries, "skipped": skipped, "plan": plan_of(reports), "base": base, "totals": totals(entries)}


def totals(entries: list[NoteEntry]) -> dict[str, int]:
    return {
        "notes": len(entries),
        "cards": sum(e["cards"] for e in entries),
        "create": sum(len(e["created"]) for e in entries),
        "change": sum(len({*e["updated"], *e["moved"], *e["reactivated"]}) for e in entries),
        "retire": sum(len(e["retired"]) for e in entries),
    }
