"""Import the drill files (``notes/drills/**.toml``) as Drill rows and their drill cards.

Why a command: drills are written next to the notes in the repository, and the database
copy is what workers grade, so every deploy (and ``make run``) re-imports them. It is
idempotent: an unchanged drill is left alone, a changed one is updated in place (its card
keeps its id, so learners keep their SM-2 state), and a drill whose file disappeared is
retired (inactive), never deleted, because submissions point at it.

Run ``import_notes`` first: each drill card belongs to the note its ``source.note`` names.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nh3
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.db.models import Q

from cards.ingest.curated import heading_paths
from cards.ingest.markdown import shared_parser
from cards.ingest.sections import PATH_SEPARATOR
from cards.ingest.slugs import note_slug, plain_anchor
from cards.models import Card, Course, Note, bundled_course
from graders.drills.schema import Drill as DrillSpec
from graders.drills.schema import DrillError, load_drills
from graders.kinds import examples
from graders.models import Drill

CARD_KEY_MAX = 64
CARD_POSITION_BASE = 10_000  # after the note's own cards, in file order


def card_key(slug: str) -> str:
    """Stable across re-imports and unique among all cards: ``drill:<slug>``."""
    key = f"drill:{slug}"
    if len(key) <= CARD_KEY_MAX:
        return key
    return f"drill:{hashlib.sha256(slug.encode()).hexdigest()[:40]}"


def render(markdown: str) -> str:
    return nh3.clean(shared_parser().render(markdown))


def card_fields(spec: DrillSpec, note: Note, position: int) -> dict[str, Any]:
    front = f"**{spec.title}**\n\n{spec.prompt_zh}\n\n{spec.prompt_en}"
    back = f"Write `{spec.entry_point}` in the drill editor and submit it: the grader's verdict rates this card."
    return {
        "note": note,
        "kind": Card.Kind.DRILL,
        "front": front,
        "back": back,
        "front_html": render(front),
        "back_html": render(back),
        "heading_path": spec.source.heading,
        "anchor": plain_anchor(spec.source.heading),  # the note page's id for it, even when named in Markdown
        "tags": ["drill", spec.device],
        "position": position,
        "content_hash": spec.version,
        "active": True,
    }


def drill_fields(spec: DrillSpec, definition: str, source_path: str) -> dict[str, Any]:
    return {
        "title": spec.title,
        "prompt_zh": spec.prompt_zh,
        "prompt_en": spec.prompt_en,
        "entry_point": spec.entry_point,
        "starter_code": spec.starter,
        "reference_code": spec.reference,
        "device": spec.device,
        "difficulty": spec.difficulty,
        "tags": list(spec.tags),
        "track": spec.track,
        "position": spec.position,
        "limits": {
            "cpu_seconds": spec.limits.cpu_seconds,
            "wall_seconds": spec.limits.wall_seconds,
            "memory_mb": spec.limits.memory_mb,
        },
        "definition": definition,
        "version": spec.version,
        "source_path": source_path,
        "active": True,
    }


@dataclass
class Report:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def relative_path(path: str) -> str:
    try:
        return str(Path(path).resolve().relative_to(settings.BASE_DIR))
    except ValueError:
        return path


def upsert(spec: DrillSpec, note: Note, position: int, report: Report, slug: str = "") -> None:
    """One drill and its card, in place: the card keeps its id (and learners their SM-2 state). ``slug``: the
    stored slug (a team course's drill is stored under its course's, ``Course.qualified``); the file's by default."""
    slug = slug or spec.slug
    definition = Path(spec.path).read_text(encoding="utf-8")
    fields = drill_fields(spec, definition, relative_path(spec.path))
    existing = Drill.objects.select_related("card").filter(slug=slug).first()
    if existing is not None and existing.active and existing.version == spec.version:
        card = existing.card
        same_card = (
            card.note_id == note.pk
            and card.position == position
            and card.active
            and card.anchor == plain_anchor(spec.source.heading)
        )
        if same_card:
            report.unchanged.append(spec.slug)
            return
    card, _ = Card.objects.update_or_create(key=card_key(slug), defaults=card_fields(spec, note, position))
    Drill.objects.update_or_create(slug=slug, defaults={**fields, "card": card})
    (report.updated if existing is not None else report.created).append(spec.slug)


def missing_headings(specs: dict[str, DrillSpec], notes: dict[str, Note]) -> list[str]:
    """Drills whose ``[source] heading`` their note does not have: the card would link to no section."""
    anchors: dict[str, set[str]] = {}  # compared as anchors of the plain text, however the heading is written
    for spec in specs.values():
        slug = note_slug(spec.source.note)
        if slug not in anchors:
            paths = heading_paths(notes[slug].content) if slug in notes else []
            anchors[slug] = {plain_anchor(part) for path in paths for part in path.split(PATH_SEPARATOR)}
    return [
        f"drill {slug!r}: {spec.source.note} has no heading {spec.source.heading!r}; fix its [source] heading"
        for slug, spec in sorted(specs.items())
        if plain_anchor(spec.source.heading) not in anchors[note_slug(spec.source.note)]
    ]


def import_drills(folder: Path, course: Course | None = None) -> Report:
    """Steps: 1. load and validate every file  2. find each drill's note  3. upsert  4. retire the rest.

    ``course``: the course the drills belong to (``None``: the bundled course). A team course's drills are
    stored under its slugs (``Course.qualified``: unique across courses, so is their card's key) and their
    ``[source] note`` is a note of that course.
    """
    try:
        specs = load_drills(folder)
    except DrillError as exc:
        raise CommandError(str(exc)) from None
    course = course or bundled_course()
    stored = {slug: course.qualified(slug) for slug in specs}
    rows = Note.objects.filter(owner__isnull=True).filter(_in_course(course))
    notes = {course.unqualified(note.slug): note for note in rows}
    missing = sorted({spec.source.note for spec in specs.values() if note_slug(spec.source.note) not in notes})
    if missing:
        raise CommandError(f"drills name notes that are not imported (run import_notes first): {', '.join(missing)}")
    report = Report()
    per_note: dict[str, int] = {}
    for slug in sorted(specs):
        spec = specs[slug]
        note = notes[note_slug(spec.source.note)]
        per_note[note.slug] = per_note.get(note.slug, 0) + 1
        upsert(spec, note, CARD_POSITION_BASE + per_note[note.slug], report, stored[slug])
    # The expected outputs of every drill's examples, computed by a worker now rather than on a page view
    # (a GET never writes): a drill whose version has its row already queues nothing.
    for drill in Drill.objects.filter(slug__in=list(stored.values()), active=True):
        examples.example_outputs(drill)
    gone = Drill.objects.filter(active=True).of_course(course).exclude(slug__in=list(stored.values()))  # the course's
    report.retired = sorted(gone.values_list("slug", flat=True))
    report.warnings = missing_headings(specs, notes)
    Card.objects.filter(drill__in=gone).update(active=False)
    gone.update(active=False)
    return report


def _in_course(course: Course) -> Q:
    """The notes of ``course`` (the bundled course's: also notes imported before courses, in none)."""
    return Q(course=course) | Q(course__isnull=True) if course.is_bundled else Q(course=course)


class Command(BaseCommand):
    help = (
        "Import every drill file under the drills folder (default: notes/drills) as a Drill and its drill card, "
        "updating changed drills in place and retiring drills whose file is gone."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--folder", type=Path, default=None, help="Drills folder (default: GRADER_DRILLS_DIR).")
        parser.add_argument("--dry-run", action="store_true", help="Report what would change and write nothing.")

    def handle(self, *args: Any, folder: Path | None, dry_run: bool, verbosity: int, **options: Any) -> None:
        folder = folder or settings.GRADER_DRILLS_DIR
        if not folder.is_dir():
            raise CommandError(f"{folder} is not a folder")
        with transaction.atomic():
            report = import_drills(folder)
            if dry_run:
                transaction.set_rollback(True)
        prefix = "would have " if dry_run else ""
        if verbosity >= 2:
            for label in ("created", "updated", "retired"):
                for slug in getattr(report, label):
                    self.stdout.write(f"  {label}: {slug}")
        for warning in report.warnings:
            if verbosity >= 1:
                self.stderr.write(self.style.WARNING(f"warning: {warning}"))
        if verbosity >= 1:
            self.stdout.write(
                f"drills: {prefix}created {len(report.created)}, {prefix}updated {len(report.updated)}, "
                f"unchanged {len(report.unchanged)}, {prefix}retired {len(report.retired)}"
            )
