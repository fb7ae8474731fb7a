"""Notes on disk -> ``Note`` and ``Card`` rows, for the ``import_notes`` command.

Three properties matter more than speed here, and the design follows from them:
1. Review history hangs off card rows, so a card is matched by its stable ``key`` and updated in
   place; a card whose source vanished is retired (``active=False``), never deleted, and comes
   back to life with its history if the source returns.
2. Re-importing unchanged notes writes nothing, so the whole comparison is done on two reads
   (notes by slug, their cards' keys and hashes) before any transaction is opened.
3. Bad input changes nothing: every file is read and checked before the first write.

Some kinds are reviewed only once another app vouches for them: an output card only once the sandbox
has run its code (the ``outputs`` app registers itself with ``register_verifier``; cards never imports
it). The importer writes those cards inactive, never activates them, and hands the verifier the cards
each changed note has now.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from cards.ingest import CardSpec, ParsedNote, note_slug, parse_note
from cards.ingest.curated import CuratedError, curated_file_path
from cards.models import Card, Note
from cards.rendering import render_markdown

MAX_NOTE_BYTES = 2 * 1024 * 1024
MARKDOWN_SUFFIXES = {".md", ".markdown"}
_CARD_FIELDS = [
    "kind", "front", "back", "front_html", "back_html", "heading_path", "anchor", "tags", "position",
    "content_hash", "active", "updated_at",
]  # fmt: skip
_BATCH = 200
# The kinds this importer owns; drill cards hang off the same notes but come from import_drills,
# so they are never retired here.
IMPORTED_KINDS = [Card.Kind.QA, Card.Kind.MAPPING, Card.Kind.CLOZE, Card.Kind.OUTPUT]


# kind -> verify(ids of the changed notes, [(card id, spec) of their cards of that kind]) -> a report line.
Verifier = Callable[[list[int], list[tuple[int, CardSpec]]], str]
_VERIFIERS: dict[str, Verifier] = {}


def register_verifier(kind: str, verify: Verifier) -> None:
    """Cards of ``kind`` reach review only when ``verify`` activates them (see the module docstring)."""
    _VERIFIERS[kind] = verify


class NoteFileError(Exception):
    """A file that cannot be imported; the message names the path and the reason."""


@dataclass(frozen=True)
class NoteSource:
    path: Path
    display_path: str
    slug: str
    text: str
    curated: str | None = None  # the hand-written cards file beside the note, if there is one
    curated_path: str = ""


@dataclass
class NoteReport:
    """What an import did (or, in a dry run, would do) to one note."""

    slug: str
    path: str
    note_created: bool = False
    note_changed: bool = False
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    reactivated: list[str] = field(default_factory=list)
    unchanged: int = 0
    retired: list[str] = field(default_factory=list)
    cards: int = 0  # what the note gives now; 0 means no section had an atomic fact to ask

    @property
    def writes(self) -> bool:
        return bool(self.note_created or self.note_changed or self.created or self.updated or self.retired)


@dataclass
class _Plan:
    report: NoteReport
    note: Note | None
    create: list[CardSpec] = field(default_factory=list)
    update: list[tuple[Card, CardSpec]] = field(default_factory=list)
    retire: list[int] = field(default_factory=list)


def load_sources(paths: Sequence[str]) -> tuple[list[NoteSource], list[str]]:
    """Every note named by ``paths`` (files, or the ``*.md`` files directly in folders), checked.

    Returns the sources and warnings (skipped empty files, folders without notes). Raises
    ``NoteFileError`` listing every bad path before anything is written.
    """
    errors: list[str] = []
    warnings: list[str] = []
    files: dict[Path, str] = {}
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in MARKDOWN_SUFFIXES)
            if not found:
                warnings.append(f"{raw}: no markdown (*.md) files in this folder, nothing imported from it.")
            for file in found:
                files.setdefault(file.resolve(), str(file))
        elif path.is_file():
            files.setdefault(path.resolve(), raw)
        else:
            errors.append(f"{raw}: no such file or folder.")
    sources: list[NoteSource] = []
    for resolved, shown in files.items():
        try:
            text = read_note_file(resolved, shown)
        except NoteFileError as exc:
            errors.append(str(exc))
            continue
        if text is None:
            warnings.append(f"{shown}: the file is empty, skipped.")
            continue
        try:
            curated, curated_path = _curated_file(resolved)
        except NoteFileError as exc:
            errors.append(str(exc))
            continue
        sources.append(NoteSource(resolved, _display_path(resolved), note_slug(resolved), text, curated, curated_path))
    errors.extend(_slug_clashes(sources))
    if errors:
        raise NoteFileError("\n".join(errors))
    return sources, warnings


def read_note_file(path: Path, shown: str) -> str | None:
    """The note's text, ``None`` when it is empty; ``NoteFileError`` when it is not a text note."""
    try:
        size = path.stat().st_size
        if size > MAX_NOTE_BYTES:
            raise NoteFileError(f"{shown}: the file is {size} bytes, over the {MAX_NOTE_BYTES} byte limit for a note.")
        data = path.read_bytes()
    except OSError as exc:
        raise NoteFileError(f"{shown}: cannot be read ({exc.strerror or exc}).") from exc
    if b"\0" in data:
        raise NoteFileError(f"{shown}: looks like a binary file (it contains NUL bytes), not a markdown note.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NoteFileError(
            f"{shown}: is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})."
        ) from exc
    return text if text.strip() else None


def _curated_file(note: Path) -> tuple[str | None, str]:
    """The text of the note's curated cards file (``""`` when empty: no questions) and its shown path."""
    path = curated_file_path(note)
    if not path.is_file():
        return None, ""
    shown = _display_path(path)
    return read_note_file(path, shown) or "", shown


def _slug_clashes(sources: list[NoteSource]) -> Iterable[str]:
    by_slug: dict[str, NoteSource] = {}
    for source in sources:
        other = by_slug.setdefault(source.slug, source)
        if other is not source:
            yield f"{source.display_path}: has the same note slug {source.slug!r} as {other.display_path}; rename one."


def _display_path(path: Path) -> str:
    """The path to store on the note: relative to the project when inside it, so checkouts agree."""
    try:
        return str(path.relative_to(Path(settings.BASE_DIR).resolve()))
    except ValueError:
        return os.fspath(path)


def import_notes(
    sources: Sequence[NoteSource],
    *,
    dry_run: bool = False,
    on_note: Callable[[NoteReport], None] | None = None,
    on_verified: Callable[[str], None] | None = None,
) -> list[NoteReport]:
    """Bring the database in line with ``sources``: one transaction per note that changed.

    ``on_note`` is called with each note's report as soon as that note is done, so a long import
    can show its progress; ``on_verified`` with each verifier's report line (see ``register_verifier``).

    Raises ``NoteFileError`` before anything is written when a curated cards file has mistakes.

    Steps: 1. parse every note (nothing written yet); 2. read the stored notes and their cards'
    keys and hashes in two queries; 3. for each note whose plan writes something, re-plan inside
    its transaction with the note row locked, then write with bulk operations; 4. hand the notes
    written to the verifiers.
    """
    parsed, errors = [], []
    for source in sources:
        try:
            parsed.append((source, parse_note(source.text, source.slug, source.curated, source.curated_path)))
        except CuratedError as exc:
            errors.append(str(exc))
    if errors:
        raise NoteFileError("\n".join(errors))
    notes = {n.slug: n for n in Note.objects.filter(slug__in=[p.slug for _, p in parsed]).defer("content")}
    cards_by_note = _cards_by_note([n.pk for n in notes.values()])
    reports = []
    written: list[ParsedNote] = []
    for source, note_spec in parsed:
        note = notes.get(note_spec.slug)
        plan = _plan(source, note_spec, note, cards_by_note.get(note.pk, []) if note else [])
        if plan.report.writes and not dry_run:
            with transaction.atomic():
                plan = _locked_plan(source, note_spec)
                _apply(plan, source, note_spec)
            written.append(note_spec)
        reports.append(plan.report)
        if on_note is not None:
            on_note(plan.report)
    for line in _verify(written):
        if on_verified is not None and line:
            on_verified(line)
    return reports


def _verify(written: list[ParsedNote]) -> list[str]:
    """Hand each verifier the current cards of its kind in the notes this import wrote."""
    if not written or not _VERIFIERS:
        return []
    specs = {(n.slug, spec.key): spec for n in written for spec in n.cards if spec.kind in _VERIFIERS}
    rows = Card.objects.filter(note__slug__in=[n.slug for n in written], kind__in=list(_VERIFIERS))
    note_ids = sorted(set(Note.objects.filter(slug__in=[n.slug for n in written]).values_list("pk", flat=True)))
    current: dict[str, list[tuple[int, CardSpec]]] = {kind: [] for kind in _VERIFIERS}
    for pk, key, kind, slug in rows.values_list("pk", "key", "kind", "note__slug").order_by("note__slug", "position"):
        spec = specs.get((slug, key))
        if spec is not None:
            current[kind].append((pk, spec))
    return [verify(note_ids, current[kind]) for kind, verify in _VERIFIERS.items()]


def _cards_by_note(note_ids: list[int]) -> dict[int, list[Card]]:
    grouped: dict[int, list[Card]] = {}
    if note_ids:
        cards = Card.objects.filter(note_id__in=note_ids, kind__in=IMPORTED_KINDS).only(
            "pk", "key", "content_hash", "active", "note_id", "front"
        )
        for card in cards.order_by():
            grouped.setdefault(card.note_id, []).append(card)
    return grouped


def _locked_plan(source: NoteSource, spec: ParsedNote) -> _Plan:
    note = Note.objects.select_for_update().filter(slug=spec.slug).defer("content").first()
    cards = _cards_by_note([note.pk]).get(note.pk, []) if note else []
    return _plan(source, spec, note, cards)


def _plan(source: NoteSource, spec: ParsedNote, note: Note | None, cards: list[Card]) -> _Plan:
    report = NoteReport(slug=spec.slug, path=source.display_path, cards=len(spec.cards))
    report.note_created = note is None
    report.note_changed = note is not None and (
        note.content_hash != spec.content_hash or note.path != source.display_path or note.title != spec.title
    )
    plan = _Plan(report=report, note=note)
    existing = {card.key: card for card in cards}
    for card_spec in spec.cards:
        card = existing.pop(card_spec.key, None)
        verified = card_spec.kind in _VERIFIERS  # inactive until its verifier says otherwise
        if card is None:
            plan.create.append(card_spec)
            report.created.append(card_spec.front)
        elif card.content_hash != card_spec.content_hash or not (card.active or verified):
            plan.update.append((card, card_spec))
            report.updated.append(card_spec.front)
            if not card.active and not verified:
                report.reactivated.append(card_spec.front)
        else:
            report.unchanged += 1
    for card in existing.values():
        if card.active:
            plan.retire.append(card.pk)
            report.retired.append(card.front)
    return plan


def _apply(plan: _Plan, source: NoteSource, spec: ParsedNote) -> None:
    note = plan.note or Note(slug=spec.slug)
    if plan.report.note_created or plan.report.note_changed:
        note.path, note.title = source.display_path, spec.title
        note.content, note.content_hash = source.text, spec.content_hash
        if plan.report.note_created:
            note.save()
        else:
            note.save(update_fields=["path", "title", "content", "content_hash", "imported_at"])
    now = timezone.now()
    if plan.create:
        Card.objects.bulk_create([_fill(Card(key=s.key, note=note), s, now) for s in plan.create], batch_size=_BATCH)
    if plan.update:
        Card.objects.bulk_update([_fill(card, s, now) for card, s in plan.update], _CARD_FIELDS, batch_size=_BATCH)
    if plan.retire:
        Card.objects.filter(pk__in=plan.retire).update(active=False, updated_at=now)


def _fill(card: Card, spec: CardSpec, now: datetime) -> Card:
    card.kind, card.front, card.back = spec.kind, spec.front, spec.back
    card.front_html, card.back_html = render_markdown(spec.front), render_markdown(spec.back)
    card.heading_path, card.anchor = spec.heading_path[:500], spec.anchor[:200]
    card.tags, card.position, card.content_hash = list(spec.tags), spec.position, spec.content_hash
    card.active = spec.kind not in _VERIFIERS
    card.updated_at = now
    return card
