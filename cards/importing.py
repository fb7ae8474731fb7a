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
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from cards.ingest import CardSpec, ParsedNote, note_slug, parse_note
from cards.ingest.changes import note_edits
from cards.ingest.curated import CuratedError, curated_file_path
from cards.ingest.parser import cut_card_key
from cards.ingest.sections import PATH_SEPARATOR
from cards.ingest.slugs import NOTE_SLUG_MAX, plain_anchor
from cards.models import Card, Course, Note, bundled_course
from cards.rendering import render_markdown

MAX_NOTE_BYTES = 2 * 1024 * 1024
MARKDOWN_SUFFIXES = {".md", ".markdown"}
_CARD_FIELDS = [
    "key", "kind", "front", "back", "front_html", "back_html", "heading_path", "anchor", "tags", "position",
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
    updated: list[str] = field(default_factory=list)  # the question or the answer changed
    moved: list[str] = field(default_factory=list)  # the same card under another heading or at another place
    reactivated: list[str] = field(default_factory=list)  # retired cards back in review
    unchanged: int = 0
    retired: list[str] = field(default_factory=list)
    cards: int = 0  # what the note gives now; 0 means no section had an atomic fact to ask
    text_edits: list[str] = field(default_factory=list)  # what changed in the note's own text, section by section
    warnings: list[str] = field(default_factory=list)  # e.g. a drill whose heading the note no longer has

    @property
    def changed(self) -> int:
        """Cards created, retired or written in place (fronts are unique in a note, so none counts twice)."""
        return len(self.created) + len(self.retired) + len({*self.updated, *self.moved, *self.reactivated})

    @property
    def writes(self) -> bool:
        changes = self.created or self.updated or self.moved or self.reactivated or self.retired
        return bool(self.note_created or self.note_changed or changes)


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
    return decode_note(data, shown)


def decode_note(data: bytes, shown: str) -> str | None:
    """A note's (or cards file's) bytes as text, ``None`` when blank; ``NoteFileError`` naming the line of the
    first byte that makes it no text note (a file read from disk and an uploaded one are judged alike)."""
    if len(data) > MAX_NOTE_BYTES:
        raise NoteFileError(f"{shown}: the file is {len(data)} bytes, over the {MAX_NOTE_BYTES} byte limit for a note.")
    if b"\0" in data:
        line = data.count(b"\n", 0, data.index(b"\0")) + 1
        raise NoteFileError(
            f"{shown}: looks like a binary file (it contains NUL bytes, the first on line {line}), not a markdown note."
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise NoteFileError(
            f"{shown}: is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}, line {line})."
        ) from exc
    return text if text.strip() else None


# The slug of a note uploaded through the site: Latin letters, digits, '-' and '_' (it is the note's address).
UPLOADED_SLUG = re.compile(r"^[a-z0-9_]+(?:-[a-z0-9_]+)*$")


def sources_from_uploads(files: Sequence[tuple[str, bytes]], qualify: Callable[[str], str]) -> list[NoteSource]:
    """Notes uploaded through the site (files, a zip's members, pasted text), checked as files on disk are.

    ``files`` are (name as uploaded, bytes): ``<name>.md`` is a note and ``cards/<name>.toml`` (or
    ``<name>.toml``) beside it its curated cards file. ``qualify`` turns a note's slug into its course's
    (``Course.qualified``). Raises ``NoteFileError`` listing every problem, so one correction fixes them all.
    """
    sources, errors = uploaded_sources(files, qualify)
    if errors:
        raise NoteFileError("\n".join(errors))
    return sources


def uploaded_sources(
    files: Sequence[tuple[str, bytes]], qualify: Callable[[str], str]
) -> tuple[list[NoteSource], list[str]]:
    """``sources_from_uploads`` that returns the good notes beside the problems of the others (a page that
    reports everything at once checks the good ones further)."""
    notes: dict[str, bytes] = {}
    curated: dict[str, bytes] = {}
    errors: list[str] = []
    for name, data in files:
        suffix = PurePosixPath(name).suffix.lower()
        if suffix in MARKDOWN_SUFFIXES:
            notes[name] = data
        elif suffix == ".toml":
            curated[name] = data
        else:
            errors.append(f"{name}: is neither a note (.md) nor a cards file (.toml).")
    sources: list[NoteSource] = []
    claimed: set[str] = set()
    for name, data in notes.items():
        claimed.update(_cards_names(PurePosixPath(name)))  # a note refused is refused once, not with its cards file
        try:
            sources.append(_uploaded_source(name, data, curated, qualify))
        except NoteFileError as exc:
            errors.append(str(exc))
    errors += [
        f"{name}: a cards file for no note of this upload (name it cards/<note>.toml beside <note>.md)."
        for name in curated
        if name not in claimed
    ]
    errors += _uploaded_slug_clashes(sources)
    return sources, errors


def _uploaded_source(name: str, data: bytes, curated: dict[str, bytes], qualify: Callable[[str], str]) -> NoteSource:
    path = PurePosixPath(name)
    text = decode_note(data, name)
    if text is None:
        raise NoteFileError(f"{name}: the file is empty.")
    slug = note_slug(path.name)
    if not UPLOADED_SLUG.match(slug):
        raise NoteFileError(
            f"{name}: name the file with Latin letters, digits, '-' or '_' (its name becomes the note's address)."
        )
    stored = qualify(slug)
    if len(stored) > NOTE_SLUG_MAX:
        room = NOTE_SLUG_MAX - (len(stored) - len(slug))
        raise NoteFileError(f"{name}: the file name is too long: at most {room} characters before .md here.")
    cards_name = next((c for c in _cards_names(path) if c in curated), "")
    cards_text = (decode_note(curated[cards_name], cards_name) or "") if cards_name else None
    return NoteSource(Path(name), path.name, stored, text, cards_text, cards_name)


def _cards_names(note: PurePosixPath) -> tuple[str, str]:
    """Where an uploaded note's curated cards file may be: ``cards/<stem>.toml`` beside it (a course folder's
    layout), or ``<stem>.toml`` beside it (files picked one by one)."""
    return str(note.parent / "cards" / f"{note.stem}.toml"), f"{note.parent / note.stem}.toml"


def _uploaded_slug_clashes(sources: list[NoteSource]) -> list[str]:
    by_slug: dict[str, NoteSource] = {}
    return [
        f"{source.display_path}: gives the same note name as {by_slug[source.slug].display_path}; rename one."
        for source in sources
        if by_slug.setdefault(source.slug, source) is not source
    ]


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
    course: Course | None = None,
    dry_run: bool = False,
    on_note: Callable[[NoteReport], None] | None = None,
    on_verified: Callable[[str], None] | None = None,
    parsed: Sequence[ParsedNote] | None = None,
) -> list[NoteReport]:
    """Bring the database in line with ``sources``: one transaction per note that changed.

    ``course``: the course the notes belong to (``None``: the bundled course); the sources' slugs are already
    the course's (``Course.qualified``). ``on_note`` is called with each note's report as soon as that note is
    done, so a long import can show its progress; ``on_verified`` with each verifier's report line (see
    ``register_verifier``). ``parsed``: the sources already parsed (``parse_note``, in the same order), by a
    caller that needed their cards first (the course page's preview); they are not parsed again.

    Raises ``NoteFileError`` before anything is written when a curated cards file has mistakes.

    Steps: 1. parse every note (nothing written yet); 2. read the stored notes and their cards'
    keys and hashes in two queries; 3. for each note whose plan writes something, re-plan inside
    its transaction with the note row locked, then write with bulk operations; 4. hand the notes
    written to the verifiers.
    """
    pairs, errors = _parsed(sources, parsed)
    if errors:
        raise NoteFileError("\n".join(errors))
    stored = Note.objects.filter(slug__in=[p.slug for _, p in pairs]).select_related("course").defer("content")
    notes = {n.slug: n for n in stored}
    errors = [
        f"{n.path}: the note {slug!r} belongs to another course" for slug, n in notes.items() if not _ours(n, course)
    ]
    if errors:
        raise NoteFileError("\n".join(errors))
    cards_by_note = _cards_by_note([n.pk for n in notes.values()])
    reports = []
    written: list[ParsedNote] = []
    for source, note_spec in pairs:
        note = notes.get(note_spec.slug)
        plan = _plan(source, note_spec, note, cards_by_note.get(note.pk, []) if note else [], course)
        if plan.report.writes and not dry_run:
            with transaction.atomic():
                plan = _locked_plan(source, note_spec, course)
                _apply(plan, source, note_spec, course)
            written.append(note_spec)
        reports.append(plan.report)
        if on_note is not None:
            on_note(plan.report)
    for line in _verify(written):
        if on_verified is not None and line:
            on_verified(line)
    return reports


def _parsed(
    sources: Sequence[NoteSource], parsed: Sequence[ParsedNote] | None
) -> tuple[list[tuple[NoteSource, ParsedNote]], list[str]]:
    """Each source with its parsed note (parsed here unless the caller did), and the curated files' mistakes."""
    if parsed is not None:
        if [p.slug for p in parsed] != [s.slug for s in sources]:
            raise ValueError("parsed notes must be the sources', in the same order")
        return list(zip(sources, parsed, strict=True)), []
    pairs, errors = [], []
    for source in sources:
        try:
            pairs.append((source, parse_note(source.text, source.slug, source.curated, source.curated_path)))
        except CuratedError as exc:
            errors.append(str(exc))
    return pairs, errors


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
            "pk", "key", "kind", "content_hash", "active", "note_id", "front", "back", "heading_path", "position"
        )
        for card in cards.order_by():
            grouped.setdefault(card.note_id, []).append(card)
    return grouped


def _ours(note: Note, course: Course | None) -> bool:
    """A stored note this import may write (``course`` ``None``: the bundled course): the course's own, or a
    shared note in no course yet, for the bundled course. Never a learner's private deck."""
    if note.owner_id is not None:
        return False
    if course is None or course.is_bundled:
        return note.course_id is None or note.course.is_bundled
    return note.course_id == course.pk


def _moves_course(note: Note, course: Course | None) -> bool:
    """The stored note is to be put in the import's course (a shared note from before courses, into the bundled)."""
    return note.course_id is None if course is None or course.is_bundled else note.course_id != course.pk


def _locked_plan(source: NoteSource, spec: ParsedNote, course: Course | None) -> _Plan:
    note = Note.objects.select_for_update().filter(slug=spec.slug).defer("content").first()
    if note is not None and not _ours(note, course):
        raise NoteFileError(f"{source.display_path}: the note {spec.slug!r} belongs to another course")
    cards = _cards_by_note([note.pk]).get(note.pk, []) if note else []
    return _plan(source, spec, note, cards, course)


def _plan(
    source: NoteSource, spec: ParsedNote, note: Note | None, cards: list[Card], course: Course | None = None
) -> _Plan:
    report = NoteReport(slug=spec.slug, path=source.display_path, cards=len(spec.cards))
    report.note_created = note is None
    report.note_changed = note is not None and (
        note.content_hash != spec.content_hash
        or note.path != source.display_path
        or note.title != spec.title
        or _moves_course(note, course)
    )
    if note is not None and report.note_changed:
        report.text_edits = _text_edits(note, source.text)
        report.warnings = _drill_warnings(note, spec)
    plan = _Plan(report=report, note=note)
    for card_spec, card in _match(spec, cards, plan):
        verified = card_spec.kind in _VERIFIERS  # inactive until its verifier says otherwise
        if card is None:
            plan.create.append(card_spec)
            report.created.append(card_spec.front)
        elif card.content_hash != card_spec.content_hash or not (card.active or verified):
            plan.update.append((card, card_spec))
            if card.content_hash != card_spec.content_hash:
                (report.moved if _same_content(card_spec, card) else report.updated).append(card_spec.front)
            if not card.active and not verified:
                report.reactivated.append(card_spec.front)
        else:
            report.unchanged += 1
    return plan


def _match(spec: ParsedNote, cards: list[Card], plan: _Plan) -> list[tuple[CardSpec, Card | None]]:
    """Each card spec with the stored card it continues (``None``: a new card); the stored cards left over
    are retired (into ``plan``).

    Steps: 1. by key (the same identity in a section with the same heading path); 2. by identity under
    another heading path (a heading renamed at any level, or the card's text moved to another section),
    section by section, the pairs of sections that share most cards first; 3. by content: the same kind,
    answer and question (less its heading) once in each, anywhere in the note (an output card renumbered
    because a snippet before it went); 4. by place: the same kind, heading path and position in the note
    (a card whose text was edited where its identity is its text, like a table row's other column).
    """
    existing = {card.key: card for card in cards}
    found: dict[str, Card | None] = {s.key: existing.pop(s.key, None) for s in spec.cards}
    left = [s for s in spec.cards if found[s.key] is None and s.identity]  # a curated card's key never moves
    matches = _by_identity(spec.slug, left, existing) + _by_content(left, existing) + _by_place(left, existing)
    for card_spec, card in matches:
        if found[card_spec.key] is None and card.key in existing:
            found[card_spec.key] = existing.pop(card.key)
    for card in existing.values():
        if card.active:
            plan.retire.append(card.pk)
            plan.report.retired.append(card.front)
    return [(s, found[s.key]) for s in spec.cards]


def _by_identity(slug: str, specs: list[CardSpec], cards: dict[str, Card]) -> list[tuple[CardSpec, Card]]:
    """Specs whose identity under a stored card's heading path gives that card's key, best section pairs first."""
    old_paths = {card.heading_path for card in cards.values()}
    path_keys = [p if n == 1 else f"{p}\x1e{n}" for p in old_paths for n in range(1, 6)]
    pairs: dict[tuple[str, str], list[tuple[CardSpec, Card]]] = {}
    for card_spec in specs:
        for path_key in path_keys:
            card = cards.get(cut_card_key(slug, path_key, card_spec.kind, card_spec.identity))
            if card is not None:
                pairs.setdefault((card_spec.anchor, path_key), []).append((card_spec, card))

    def rank(group: list[tuple[CardSpec, Card]]) -> tuple[int, int, int]:
        same = sum(s.back == c.back for s, c in group)
        return (-len(group), -same, sum(abs(s.position - c.position) for s, c in group))

    return [pair for group in sorted(pairs.values(), key=rank) for pair in group]


def _by_content(specs: list[CardSpec], cards: dict[str, Card]) -> list[tuple[CardSpec, Card]]:
    """Specs with exactly one stored card of the same content (``_same_content``), and it with one spec."""
    result = []
    for card_spec in specs:
        matches = [card for card in cards.values() if _same_content(card_spec, card)]
        if len(matches) == 1 and sum(_same_content(s, matches[0]) for s in specs) == 1:
            result.append((card_spec, matches[0]))
    return result


def _by_place(specs: list[CardSpec], cards: dict[str, Card]) -> list[tuple[CardSpec, Card]]:
    """Specs with a stored card of the same kind at the same place (heading path and position in the note)."""
    at = {(card.kind, card.heading_path, card.position): card for card in cards.values()}
    found = ((spec, at.get((spec.kind, spec.heading_path[:500], spec.position))) for spec in specs)
    return [(spec, card) for spec, card in found if card is not None]


def _same_content(spec: CardSpec, card: Card) -> bool:
    """The same kind, answer and question, the heading path a question starts with aside."""
    return card.kind == spec.kind and card.back == spec.back and card.front.endswith(spec.body)


def _text_edits(note: Note, text: str) -> list[str]:
    """What changed in the note's own text since the stored copy (read only for a note that changed)."""
    old = Note.objects.filter(pk=note.pk).values_list("content", flat=True).first() or ""
    return note_edits(old, text).lines()


def _drill_warnings(note: Note, spec: ParsedNote) -> list[str]:
    """Drills on this note whose heading the note no longer has: their card would link to nothing."""
    # Compared as anchors of the plain text: a drill names its heading in Markdown or plain text.
    anchors = {plain_anchor(part) for heading in spec.headings for part in heading.split(PATH_SEPARATOR)}
    drills = Card.objects.filter(note=note, kind=Card.Kind.DRILL, active=True).order_by("position")
    return [
        f"drill {key.removeprefix('drill:')!r} points at the heading {heading!r}, which the note no longer has; "
        "change its [source] heading"
        for key, heading in drills.values_list("key", "heading_path")
        if plain_anchor(heading) not in anchors
    ]


def _apply(plan: _Plan, source: NoteSource, spec: ParsedNote, course: Course | None) -> None:
    note = plan.note or Note(slug=spec.slug)
    if plan.report.note_created or plan.report.note_changed:
        note.path, note.title = source.display_path, spec.title
        note.content, note.content_hash = source.text, spec.content_hash
        note.course = course or bundled_course()
        if plan.report.note_created:
            note.save()
        else:
            note.save(update_fields=["path", "title", "content", "content_hash", "course", "imported_at"])
    now = timezone.now()
    if plan.create:
        Card.objects.bulk_create([_fill(Card(key=s.key, note=note), s, now) for s in plan.create], batch_size=_BATCH)
    if plan.update:
        Card.objects.bulk_update([_fill(card, s, now) for card, s in plan.update], _CARD_FIELDS, batch_size=_BATCH)
    if plan.retire:
        Card.objects.filter(pk__in=plan.retire).update(active=False, updated_at=now)


def _fill(card: Card, spec: CardSpec, now: datetime) -> Card:
    card.key, card.kind, card.front, card.back = spec.key, spec.kind, spec.front, spec.back
    card.front_html, card.back_html = render_markdown(spec.front), render_markdown(spec.back)
    card.heading_path, card.anchor = spec.heading_path[:500], spec.anchor[:200]
    card.tags, card.position, card.content_hash = list(spec.tags), spec.position, spec.content_hash
    card.active = spec.kind not in _VERIFIERS
    card.updated_at = now
    return card
