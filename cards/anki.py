"""Anki interoperability: export decks as ``.apkg``, import ``.apkg`` or CSV files as new decks.

Why: learners already keep decks in Anki, and some want their quizsite cards on a phone. The export
carries the rendered HTML (Pygments classes with their stylesheet, ``\\(...\\)`` math, which Anki
typesets with MathJax), tags from the card and its heading path, and, when asked, the learner's schedule
as Anki review-card fields (interval, due day, ease factor, repetitions, lapses). The interval is the one
the learner's own scheduler set: SM-2's, or under FSRS the days from the last review to the due day
FSRS chose (the SM-2 interval a card keeps under FSRS is 1 or 6 early on, and would contradict its due day).

Imports read files from strangers, so every step assumes hostility:
1. budgets (``ANKI_IMPORT_*`` settings): the upload's bytes, the cards one import makes, the seconds its
   reading takes, the bytes its cards would store, and a learner's private cards across all imports;
   size caps on the upload, on the archive's members (declared sizes checked before anything is
   extracted, then enforced again while copying, because a header can lie) and on every field;
2. only the collection file is extracted, into a private temporary folder removed afterwards;
3. the SQLite file is opened read-only, with ``trusted_schema`` off and a time budget, and its
   tables and columns are checked before any row is read;
4. every field is sanitised with nh3 (no images: the archive's media are not imported);
5. everything is parsed before the first write, and the deck is written in one transaction.

A package's review log (``revlog``, at most ``MAX_REVIEWS`` rows) comes too, on the page: the answers to
the first card of each note imported become the importing learner's history of the card made from it
(``cards.history``: source ``import``, days before today, no XP), in the same transaction.
"""

from __future__ import annotations

import csv
import hashlib
import html
import io
import itertools
import re
import secrets
import sqlite3
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import genanki
import nh3
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from cards import extensions, history
from cards.ingest.slugs import slugify
from cards.models import Card, CardState, Note, Profile, Scheduler
from cards.rendering import pygments_css, render_markdown
from cards.review import get_profile
from quizsite import json_depth

# Limits for imports. A real deck of 20,000 notes is a few MiB; these leave room and no more. The budgets a
# deployment tunes are settings: ANKI_IMPORT_MAX_BYTES, ANKI_IMPORT_MAX_CARDS, ANKI_IMPORT_TIME_BUDGET and
# ANKI_PRIVATE_CARDS_QUOTA.
MAX_MEMBERS = 20_000
MAX_TOTAL_UNCOMPRESSED = 512 * 1024 * 1024
MAX_COLLECTION_BYTES = 128 * 1024 * 1024
MAX_COMPRESSION_RATIO = 200
MAX_NOTES = 20_000
MAX_FIELD_BYTES = 64 * 1024
MAX_REVIEWS = 1_000_000  # revlog rows: a heavy Anki user's decade is a few hundred thousand
# The cards an import makes may store (both faces, text and HTML) this many times the upload cap.
STORED_PER_UPLOAD_BYTE = 4
SQLITE_TIME_BUDGET_S = 10.0

# Anki counts a review card's due day from the collection's creation time (``col.crt``); genanki's
# collection row was created on this day (1411124400 = 2014-09-19 11:00 UTC).
ANKI_COLLECTION_DAY = date(2014, 9, 19)
MODEL_ID = 1_607_392_319  # fixed: re-exports must reuse the note type, not add a new one each time
_FIELD_SEPARATOR = "\x1f"
# A drill card's export carries this tag; an import skips such cards (a drill is graded here, not recalled).
DRILL_TAG = "quizsite::drill"
# ...and recognises an export from before the tag by its back, the drill card's instruction.
_DRILL_BACK = re.compile(r"in the drill editor and submit it: the grader's verdict rates this card")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Every pattern applied to uploaded text is linear: no nested or adjacent quantifiers that can share
# characters, and no scan that restarts from each of many openings to the end of the text. ``[sound:``
# stops at the next ``[``, so a field of openings without a ``]`` is read once, not once per opening.
_SOUND = re.compile(r"\[sound:[^\[\]]*\]")
_CLOZE_OPEN = re.compile(r"\{\{c[0-9]+::")
_TAG_CHARS = re.compile(r"\s+")
_NON_ASCII_SLUG = re.compile(r"[^a-z0-9-]+")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_COLLECTIONS = ("collection.anki21", "collection.anki2")  # the first is the real one when both exist
_IMPORT_TAGS = {
    "a", "b", "blockquote", "br", "code", "dd", "del", "div", "dl", "dt", "em", "h1", "h2", "h3", "h4",
    "h5", "h6", "hr", "i", "kbd", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "sup", "table",
    "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul",
}  # fmt: skip
_CLEANER = nh3.Cleaner(
    tags=_IMPORT_TAGS,
    clean_content_tags={"script", "style"},
    attributes={"*": {"class"}, "a": {"href"}},
    url_schemes={"http", "https", "mailto"},
    link_rel="noopener noreferrer nofollow",
)
_TEXT_ONLY = nh3.Cleaner(tags=set(), clean_content_tags={"script", "style"}, attributes={})


class AnkiImportError(Exception):
    """A file that cannot be imported; the message says why, in words a learner can act on."""


# --- export ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportSummary:
    decks: int
    cards: int
    scheduled: int


def anki_model() -> genanki.Model:
    return genanki.Model(
        MODEL_ID,
        "quizsite card",
        fields=[{"name": "Front"}, {"name": "Back"}, {"name": "Source"}],
        templates=[
            {
                "name": "Card 1",
                "qfmt": "{{Front}}",
                "afmt": '{{FrontSide}}<hr id="answer">{{Back}}<div class="source">{{Source}}</div>',
            }
        ],
        css=_MODEL_CSS + pygments_css(".highlight"),
    )


_MODEL_CSS = """.card { font-family: system-ui, sans-serif; font-size: 18px; text-align: left; }
.highlight pre { padding: .5em; overflow-x: auto; background: #f6f8fa; }
.source { margin-top: 1em; font-size: 12px; color: #888; }
"""


def deck_id(note: Note) -> int:
    """Stable per note, so importing a second export into Anki updates the same deck."""
    return (1 << 30) + int(hashlib.sha256(note.slug.encode()).hexdigest()[:8], 16) % (1 << 30)


def card_tags(card: Card) -> list[str]:
    """The card's own tags plus one hierarchical tag (``quizsite::note::heading``); Anki tags have no spaces."""
    hierarchy = "::".join(
        [
            "quizsite",
            card.note.slug,
            *[slugify(part, 60) for part in card.heading_path.split(" / ") if slugify(part, 60)],
        ]
    )
    tags = [_TAG_CHARS.sub("_", str(tag)) for tag in card.tags if str(tag).strip()]
    kind = [DRILL_TAG] if card.kind == Card.Kind.DRILL else []
    return list(dict.fromkeys([*tags, hierarchy, *kind]))


@dataclass(frozen=True)
class Schedule:
    """A learner's schedule in Anki's terms; the interval is their scheduler's (see the module docstring)."""

    interval: int
    due_day: int
    factor: int
    reps: int
    lapses: int
    suspended: bool

    @classmethod
    def from_state(cls, state: CardState, scheduler: str = Scheduler.SM2) -> Schedule:
        interval = state.interval
        if scheduler == Scheduler.FSRS and state.last_review_day is not None:
            interval = max(1, (state.due - state.last_review_day).days)
        return cls(
            interval=interval,
            due_day=(state.due - ANKI_COLLECTION_DAY).days,
            factor=int(state.easiness * 1000),
            reps=state.repetitions,
            lapses=state.lapses,
            suspended=state.suspended,
        )


class _ScheduledCard(genanki.Card):
    """A genanki card written as an Anki review card (type 2, queue 2) when it has a schedule."""

    def __init__(self, ord: int, schedule: Schedule | None) -> None:
        super().__init__(ord, suspend=bool(schedule and schedule.suspended))
        self.schedule = schedule

    def write_to_db(self, cursor: Any, timestamp: float, deck_id: int, note_id: int, id_gen: Any, due: int = 0) -> None:
        s = self.schedule
        if s is None:
            super().write_to_db(cursor, timestamp, deck_id, note_id, id_gen, due)
            return
        queue = -1 if s.suspended else 2
        row = (next(id_gen), note_id, deck_id, self.ord, int(timestamp), -1, 2, queue, s.due_day, s.interval)
        cursor.execute(
            "INSERT INTO cards VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?);",
            (*row, s.factor, s.reps, s.lapses, 0, 0, 0, 0, ""),
        )


class _QuizNote(genanki.Note):
    def __init__(self, schedule: Schedule | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.schedule = schedule

    @property
    def cards(self) -> list[genanki.Card]:
        return [_ScheduledCard(0, self.schedule)]


def _field(value: str) -> str:
    return _CONTROL.sub("", value)


def _back_html(card: Card, backs: dict[int, str]) -> str:
    """A card's back as Anki shows it under the front. A drill card's stored back only says to use the drill
    editor, which Anki has not: the app that owns drills gives its export back (``extensions.export_backs``)."""
    back = backs.get(card.pk)
    return card.back_html if back is None else render_markdown(back)


def build_package(
    notes: Sequence[Note], *, schedule_for: Any = None, learner: Any = None
) -> tuple[genanki.Package, ExportSummary]:
    """One Anki deck per note (``quizsite::<title>``) with its active cards, in note order. ``learner``: whose
    export it is (a drill's reference only where they may see it); None for the operator's command."""
    model = anki_model()
    cards = list(
        Card.objects.active().filter(note__in=notes).select_related("note", "drill").order_by("note", "position")
    )
    states: dict[int, CardState] = {}
    scheduler = Scheduler.SM2
    if schedule_for is not None:
        scheduler = Profile.objects.filter(user=schedule_for).values_list("scheduler", flat=True).first() or scheduler
        states = {
            s.card_id: s
            for s in CardState.objects.filter(user=schedule_for, card__in=cards, last_reviewed_at__isnull=False)
        }
    backs = extensions.export_backs(cards, learner)
    decks: dict[int, genanki.Deck] = {}
    for card in cards:
        deck = decks.get(card.note_id)
        if deck is None:
            deck = decks[card.note_id] = genanki.Deck(deck_id(card.note), f"quizsite::{card.note.title}")
        state = states.get(card.pk)
        source = html.escape(" / ".join(part for part in (card.note.title, card.source_path) if part))
        deck.add_note(
            _QuizNote(
                Schedule.from_state(state, scheduler) if state else None,
                model=model,
                fields=[_field(card.front_html), _field(_back_html(card, backs)), _field(source)],
                tags=card_tags(card),
                guid=genanki.guid_for("quizsite", str(card.uuid)),
            )
        )
    return genanki.Package(list(decks.values())), ExportSummary(len(decks), len(cards), len(states))


def write_apkg(
    package: genanki.Package, out: io.BufferedIOBase | io.BytesIO, *, timestamp: float | None = None
) -> None:
    """Like ``Package.write_to_file``, but the temporary SQLite file is always removed (genanki keeps it)."""
    stamp = time.time() if timestamp is None else timestamp
    with tempfile.TemporaryDirectory(prefix="quizsite-anki-") as folder:
        db_path = Path(folder) / "collection.anki2"
        conn = sqlite3.connect(db_path)
        try:
            package.write_to_db(conn.cursor(), stamp, itertools.count(int(stamp * 1000)))
            conn.commit()
        finally:
            conn.close()
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.write(db_path, "collection.anki2")
            archive.writestr("media", "{}")


# --- import: reading ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportedCard:
    front: str
    back: str
    front_html: str
    back_html: str
    tags: list[str]
    anki_note: int = 0  # the Anki note it came from (0: a CSV row), to match the collection's review log


@dataclass(frozen=True)
class AnkiReview:
    """One row of the collection's ``revlog``: a review of the first card of note ``note``."""

    note: int
    at_ms: int  # Anki's revlog id: when it was answered, in milliseconds since 1970
    ease: int  # the button, 1 (Again) to 4 (Easy): FSRS's rating
    time_ms: int


@dataclass
class ParsedDeck:
    title: str
    cards: list[ImportedCard] = field(default_factory=list)
    skipped: int = 0  # no front
    drills: int = 0  # quizsite drill cards: never imported as questions
    stored_bytes: int = 0  # what the cards would store: both faces, text and HTML
    reviews: list[AnkiReview] = field(default_factory=list)  # the collection's review log, oldest first
    history: history.Summary | None = None  # what became the importing learner's history (save_deck)

    def summary(self) -> str:
        """What was left out, in words a learner can act on ("" when nothing was)."""
        parts = []
        if self.skipped:
            parts.append(_("%(n)d without a front skipped") % {"n": self.skipped})
        if self.drills:
            skipped = ngettext(
                "%(n)d coding drill skipped: a drill is graded by running your code, so it cannot be a question "
                "card; the drills are already in the drill hub and your queue",
                "%(n)d coding drills skipped: a drill is graded by running your code, so it cannot be a question "
                "card; the drills are already in the drill hub and your queue",
                self.drills,
            )
            parts.append(skipped % {"n": self.drills})
        return _("; ").join(parts)


class _Budget:
    """What reading one upload may cost: cards, bytes they would store, and seconds (``ANKI_IMPORT_*``)."""

    def __init__(self) -> None:
        self.deadline = time.monotonic() + settings.ANKI_IMPORT_TIME_BUDGET
        self.max_cards = settings.ANKI_IMPORT_MAX_CARDS
        self.max_stored = STORED_PER_UPLOAD_BYTE * settings.ANKI_IMPORT_MAX_BYTES

    def add(self, parsed: ParsedDeck, card: ImportedCard | None) -> None:
        """Take ``card`` into ``parsed`` (``None``: a row skipped, without a front), or refuse the whole file once
        it is over any budget."""
        if card is None:
            parsed.skipped += 1
            self.check_time(parsed)
            return
        parsed.cards.append(card)
        parsed.stored_bytes += sum(
            len(face.encode()) for face in (card.front, card.back, card.front_html, card.back_html)
        )
        if len(parsed.cards) > self.max_cards:
            raise AnkiImportError(
                _("The file has more than %(limit)d cards, the most one import may make; split it.")
                % {"limit": self.max_cards}
            )
        if parsed.stored_bytes > self.max_stored:
            raise AnkiImportError(
                _("The cards would take more than %(limit)d bytes once rendered, the most one import may store.")
                % {"limit": self.max_stored}
            )
        self.check_time(parsed)

    def check_time(self, parsed: ParsedDeck) -> None:
        if time.monotonic() > self.deadline:
            raise AnkiImportError(
                _("Reading the file took more than %(seconds)d seconds after %(n)d cards; split it into smaller files.")
                % {"seconds": settings.ANKI_IMPORT_TIME_BUDGET, "n": len(parsed.cards)}
            )


def read_upload(name: str, data: bytes) -> ParsedDeck:
    """An ``.apkg`` (a zip archive) or a CSV of front/back pairs, parsed and sanitised; nothing written."""
    if len(data) > settings.ANKI_IMPORT_MAX_BYTES:
        raise AnkiImportError(
            _("The file is %(size)d bytes, over the %(limit)d byte limit.")
            % {"size": len(data), "limit": settings.ANKI_IMPORT_MAX_BYTES}
        )
    if not data.strip():
        raise AnkiImportError(_("The file is empty."))
    default_title = Path(name).stem[:200] or _("Imported deck")
    budget = _Budget()
    if data[:4] == b"PK\x03\x04" or name.lower().endswith((".apkg", ".colpkg", ".zip")):
        return read_apkg(data, default_title, budget)
    return read_csv(data, default_title, budget)


def read_apkg(data: bytes, default_title: str, budget: _Budget) -> ParsedDeck:
    with tempfile.TemporaryDirectory(prefix="quizsite-anki-") as folder:
        db_path = _extract_collection(data, Path(folder))
        return _read_collection(db_path, default_title, budget)


def _extract_collection(data: bytes, folder: Path) -> Path:
    """Check the archive's directory, then copy out only the collection, counting every byte."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError):
        raise AnkiImportError(_("This is not an Anki package: the file is not a readable zip archive.")) from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise AnkiImportError(
                _("The archive has %(n)d files, over the limit of %(limit)d.")
                % {"n": len(members), "limit": MAX_MEMBERS}
            )
        total = sum(member.file_size for member in members)
        if total > MAX_TOTAL_UNCOMPRESSED:
            raise AnkiImportError(
                _("The archive would unpack to %(size)d bytes, over the %(limit)d byte limit.")
                % {"size": total, "limit": MAX_TOTAL_UNCOMPRESSED}
            )
        by_name = {member.filename: member for member in members}
        if "collection.anki21b" in by_name:
            # Such packages also hold a collection.anki2, but it is a stub asking to update Anki.
            raise AnkiImportError(
                _("This package uses Anki's newest format; export it again with 'Support older Anki versions' ticked.")
            )
        member = next((by_name[name] for name in _COLLECTIONS if name in by_name), None)
        if member is None:
            raise AnkiImportError(_("This zip archive has no Anki collection (collection.anki2) in it."))
        _check_member(member)
        target = folder / "collection.sqlite3"
        try:
            _bounded_copy(archive, member, target)
        except (zipfile.BadZipFile, EOFError, OSError, NotImplementedError, RuntimeError) as exc:
            raise AnkiImportError(
                _("The archive is damaged: %(name)s cannot be unpacked (%(error)s).")
                % {"name": member.filename, "error": exc}
            ) from None
    return target


def _check_member(member: zipfile.ZipInfo) -> None:
    if member.file_size > MAX_COLLECTION_BYTES:
        raise AnkiImportError(
            _("%(name)s would unpack to %(size)d bytes, over the %(limit)d byte limit.")
            % {"name": member.filename, "size": member.file_size, "limit": MAX_COLLECTION_BYTES}
        )
    if member.file_size > 1024 * 1024 and member.file_size > MAX_COMPRESSION_RATIO * max(member.compress_size, 1):
        raise AnkiImportError(
            _("%(name)s is compressed %(ratio)d to 1, which no real deck is: refused as a possible zip bomb.")
            % {"name": member.filename, "ratio": member.file_size // max(member.compress_size, 1)}
        )


def _bounded_copy(archive: zipfile.ZipFile, member: zipfile.ZipInfo, target: Path) -> None:
    """Copy at most the declared size (and the limit): a header that lies about the size gains nothing."""
    limit = min(member.file_size, MAX_COLLECTION_BYTES)
    written = 0
    with archive.open(member) as source, target.open("wb") as sink:
        while chunk := source.read(1024 * 1024):
            written += len(chunk)
            if written > limit:
                raise AnkiImportError(
                    _("%(name)s unpacks to more than it declares: refused.") % {"name": member.filename}
                )
            sink.write(chunk)


def _open_readonly(db_path: Path) -> sqlite3.Connection:
    with db_path.open("rb") as fh:
        if fh.read(len(_SQLITE_MAGIC)) != _SQLITE_MAGIC:
            raise AnkiImportError(_("The package's collection is not an SQLite database."))
    conn = sqlite3.connect(f"{db_path.as_uri()}?mode=ro&immutable=1", uri=True)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 16 * 1024 * 1024)
    conn.execute("PRAGMA trusted_schema = OFF")
    conn.execute("PRAGMA query_only = ON")
    deadline = time.monotonic() + SQLITE_TIME_BUDGET_S
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    return conn


def _read_collection(db_path: Path, default_title: str, budget: _Budget) -> ParsedDeck:
    conn = _open_readonly(db_path)
    try:
        _check_schema(conn)
        models = _models(conn)
        title = _main_deck_name(conn) or default_title
        count = conn.execute("SELECT count(*) FROM notes").fetchone()[0]
        if count > MAX_NOTES:
            raise AnkiImportError(
                _("The deck has %(n)d notes, over the limit of %(limit)d.") % {"n": count, "limit": MAX_NOTES}
            )
        parsed = ParsedDeck(title=title)
        rows = conn.execute("SELECT id, mid, tags, flds FROM notes ORDER BY id")
        for note_id, mid, tags, flds in rows:
            if not isinstance(flds, str) or not isinstance(tags, str):
                raise AnkiImportError(
                    _("Note %(id)s has fields of an unexpected type: not an Anki collection.") % {"id": note_id}
                )
            if _is_drill(tags.split(), flds.split(_FIELD_SEPARATOR)[1:2]):
                parsed.drills += 1
                budget.check_time(parsed)
                continue
            card = _note_to_card(note_id, flds, tags, models.get(str(mid), 0))
            budget.add(parsed, card and replace(card, anki_note=note_id))
        parsed.reviews = _read_revlog(conn, parsed, budget)
        return parsed
    except sqlite3.DatabaseError as exc:
        raise AnkiImportError(_("The package's collection cannot be read (%(error)s).") % {"error": exc}) from None
    finally:
        conn.close()


_REVLOG_COLUMNS = {"id", "cid", "ease", "time", "type"}


def _read_revlog(conn: sqlite3.Connection, parsed: ParsedDeck, budget: _Budget) -> list[AnkiReview]:
    """The collection's review log, for the first card of each note (an import makes one card of a note):
    answers only (ease 1-4; learning, review, relearning and filtered-deck reviews, not manual reschedules).
    Empty when the collection has no ``revlog`` table of the expected columns."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "revlog" not in tables or _REVLOG_COLUMNS - {row[1] for row in conn.execute("PRAGMA table_info(revlog)")}:
        return []
    count = conn.execute("SELECT count(*) FROM revlog").fetchone()[0]
    if count > MAX_REVIEWS:
        raise AnkiImportError(
            _("The review log has %(n)d entries, over the limit of %(limit)d.") % {"n": count, "limit": MAX_REVIEWS}
        )
    rows = conn.execute(
        "SELECT r.id, c.nid, r.ease, r.time FROM revlog r JOIN cards c ON c.id = r.cid "
        "WHERE r.ease BETWEEN 1 AND 4 AND r.type BETWEEN 0 AND 3 "
        "AND c.id = (SELECT min(first.id) FROM cards first WHERE first.nid = c.nid) ORDER BY r.id"
    )
    reviews = []
    for index, (at_ms, note, ease, time_ms) in enumerate(rows):
        if not all(isinstance(value, int) for value in (at_ms, note, ease, time_ms)):
            raise AnkiImportError(_("The review log has entries of an unexpected type: not an Anki collection."))
        reviews.append(AnkiReview(note, at_ms, ease, max(0, time_ms)))
        if index % 1000 == 0:
            budget.check_time(parsed)
    return reviews


_REQUIRED_COLUMNS = {"notes": {"id", "mid", "tags", "flds"}, "cards": {"id", "nid", "did"}, "col": {"models", "decks"}}


def _check_schema(conn: sqlite3.Connection) -> None:
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    for table, required in _REQUIRED_COLUMNS.items():
        if table not in tables:
            raise AnkiImportError(
                _("The collection has no %(table)s table: not an Anki collection.") % {"table": repr(table)}
            )
        columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        if missing := required - columns:
            raise AnkiImportError(
                _("The collection's %(table)s table lacks %(columns)s.")
                % {"table": repr(table), "columns": ", ".join(sorted(missing))}
            )


def _json_column(conn: sqlite3.Connection, column: str) -> dict[str, Any]:
    row = conn.execute(f"SELECT {column} FROM col LIMIT 1").fetchone()
    try:
        value = json_depth.loads(row[0]) if row and isinstance(row[0], str) and row[0] else {}
    except ValueError:  # json_depth.TooDeep included: a collection nested thousands deep was a 500
        raise AnkiImportError(_("The collection's %(column)s are not valid JSON.") % {"column": column}) from None
    return value if isinstance(value, dict) else {}


def _models(conn: sqlite3.Connection) -> dict[str, int]:
    """Note type id -> type (0 standard, 1 cloze); unknown types read as standard."""
    return {
        str(mid): int(m.get("type", 0) == 1) for mid, m in _json_column(conn, "models").items() if isinstance(m, dict)
    }


def _main_deck_name(conn: sqlite3.Connection) -> str:
    decks = _json_column(conn, "decks")
    for did, _count in conn.execute("SELECT did, count(*) AS n FROM cards GROUP BY did ORDER BY n DESC LIMIT 3"):
        deck = decks.get(str(did))
        if isinstance(deck, dict) and isinstance(deck.get("name"), str) and deck["name"] != "Default":
            return deck["name"].replace("\x1f", "::")[:200]
    return ""


def _is_drill(tags: list[str], back: list[str]) -> bool:
    """A quizsite drill card: tagged so by the export, or (an older export) its back is the drill instruction."""
    return DRILL_TAG in tags or any(_DRILL_BACK.search(_text(_CLEANER.clean(b))) for b in back)


def _note_to_card(note_id: int, flds: str, tags: str, model_type: int) -> ImportedCard | None:
    if len(flds.encode()) > MAX_FIELD_BYTES * 4:
        raise AnkiImportError(
            _("Note %(id)s is %(size)d bytes long, over the limit for one note.")
            % {"id": note_id, "size": len(flds.encode())}
        )
    fields = flds.split(_FIELD_SEPARATOR)
    for value in fields:
        if len(value.encode()) > MAX_FIELD_BYTES:
            raise AnkiImportError(
                _("Note %(id)s has a field over the %(limit)d byte limit.") % {"id": note_id, "limit": MAX_FIELD_BYTES}
            )
    if model_type == 1:  # cloze: the front hides each deletion, the back shows it
        text = fields[0]
        front_raw = _replace_clozes(text, lambda answer, hint: f"[{hint or '...'}]")
        back_raw = _replace_clozes(text, lambda answer, hint: f"<b>{answer}</b>") + "".join(
            f"<br>{f}" for f in fields[1:2] if f
        )
    else:
        front_raw, back_raw = fields[0], fields[1] if len(fields) > 1 else ""
    return _imported(front_raw, back_raw, tags.split(), is_html=True)


def _replace_clozes(text: str, replace: Callable[[str, str], str]) -> str:
    """Each ``{{cN::answer::hint}}`` (the hint optional) replaced, in one pass over the text.

    Why not one regex: the one we had (a lazy answer, then an optional lazy ``::hint``, then ``}}``)
    backtracks cubically on a field of repeated openings with no ``}}``: 64 KiB of them, in a 600-byte
    package, would hold a web process for hours. Here each opening
    looks for the first ``}}`` after it; without one no later opening can close either, so the scan
    stops. The answer ends at the first ``::`` inside, as the regex read it."""
    out: list[str] = []
    position = 0
    while opening := _CLOZE_OPEN.search(text, position):
        end = text.find("}}", opening.end())
        if end < 0:
            break
        answer, _sep, hint = text[opening.end() : end].partition("::")
        out += [text[position : opening.start()], replace(answer, hint)]
        position = end + 2
    out.append(text[position:])
    return "".join(out)


def _imported(front: str, back: str, tags: Iterable[str], *, is_html: bool) -> ImportedCard | None:
    """Sanitised HTML and plain text for both faces; ``None`` when the front has no text left."""
    if is_html:
        front_html = _CLEANER.clean(_SOUND.sub("", _CONTROL.sub("", front)))
        back_html = _CLEANER.clean(_SOUND.sub("", _CONTROL.sub("", back)))
        front_text, back_text = _text(front_html), _text(back_html)
    else:
        front_text, back_text = _CONTROL.sub("", front).strip(), _CONTROL.sub("", back).strip()
        if not front_text:  # before rendering: a skipped row costs no Markdown
            return None
        front_html, back_html = render_markdown(front_text), render_markdown(back_text)
    if not front_text:
        return None
    clean_tags = [_TAG_CHARS.sub("_", tag)[:60] for tag in tags if tag.strip()][:20]
    return ImportedCard(front_text, back_text, front_html, back_html, list(dict.fromkeys(clean_tags)))


def _text(cleaned_html: str) -> str:
    with_breaks = re.sub(r"<br\s*/?>|</(?:p|div|li|tr|h\d)>", "\n", cleaned_html)
    return re.sub(r"[ \t]+", " ", html.unescape(_TEXT_ONLY.clean(with_breaks))).strip()


_HEADERS = {("front", "back"), ("question", "answer"), ("正面", "背面"), ("问题", "答案")}


def read_csv(data: bytes, default_title: str, budget: _Budget) -> ParsedDeck:
    """Rows of ``front,back[,tags]`` (comma, tab or semicolon separated; markdown allowed in both faces)."""
    if b"\x00" in data:
        raise AnkiImportError(_("This is not a CSV file: it contains NUL bytes (a binary file?)."))
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise AnkiImportError(
            _("The CSV file is not valid UTF-8 (byte offset %(offset)d).") % {"offset": exc.start}
        ) from None
    first_line = text.split("\n", 1)[0]
    delimiter = max(",\t;", key=first_line.count)
    parsed = ParsedDeck(title=default_title)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if reader.line_num == 1 and tuple(c.strip().lower() for c in row[:2]) in _HEADERS:
                continue
            _check_row(row, reader.line_num)
            if _is_drill(row[2].split() if len(row) > 2 else [], [row[1]]):
                parsed.drills += 1
                budget.check_time(parsed)
                continue
            card = _imported(row[0], row[1], row[2].split() if len(row) > 2 else [], is_html=False)
            budget.add(parsed, card)
    except csv.Error as exc:
        raise AnkiImportError(
            _("The CSV file is malformed near line %(line)d: %(error)s.") % {"line": reader.line_num, "error": exc}
        ) from None
    return parsed


def _check_row(row: list[str], line: int) -> None:
    if len(row) < 2:
        raise AnkiImportError(_("Line %(line)d has one column; each row needs a front and a back.") % {"line": line})
    for cell in row:
        if len(cell.encode()) > MAX_FIELD_BYTES:
            raise AnkiImportError(
                _("Line %(line)d has a field over the %(limit)d byte limit.") % {"line": line, "limit": MAX_FIELD_BYTES}
            )


# --- import: writing ------------------------------------------------------------------------------


def save_deck(
    parsed: ParsedDeck,
    *,
    source_name: str,
    content_hash: str,
    title: str = "",
    owner: Any = None,
    reviewer: Any = None,
) -> Note:
    """A new Note holding the imported cards, all written in one transaction (or none of them).

    ``owner``: the learner whose private deck this is (``None``: shared with every learner). ``reviewer``:
    the learner whose history the collection's review log becomes (``cards.history``; ``None``: ignored)."""
    if not parsed.cards:
        left_out = f" ({parsed.summary()})" if parsed.summary() else ""
        raise AnkiImportError(_("The file has no cards with a front to import%(left_out)s.") % {"left_out": left_out})
    title = (title or parsed.title).strip()[:300] or _("Imported deck")
    # ASCII only: the deck page's URL takes a ``slug`` path converter, which has no CJK.
    base = f"anki-{_NON_ASCII_SLUG.sub('', slugify(title, 80)).strip('-') or 'deck'}"
    with transaction.atomic():
        if owner is not None:
            _check_quota(owner, len(parsed.cards))
        slug = base if not Note.objects.filter(slug=base).exists() else f"{base}-{secrets.token_hex(3)}"
        note = Note.objects.create(
            slug=slug,
            path=f"anki-import/{Path(source_name).name}"[:500],
            title=title,
            content=f"# {title}\n\nImported from `{Path(source_name).name}`: {len(parsed.cards)} cards.\n",
            content_hash=content_hash,
            owner=owner,
        )
        rows = Card.objects.bulk_create(
            [_card_row(note, index, card) for index, card in enumerate(parsed.cards)], batch_size=500
        )
        if reviewer is not None and parsed.reviews:
            made = {card.anki_note: row.uuid for card, row in zip(parsed.cards, rows, strict=True) if card.anki_note}
            parsed.history = history.save(reviewer, _history_rows(parsed.reviews, made, reviewer), timezone.now())
    return note


def _history_rows(reviews: list[AnkiReview], made: dict[int, Any], reviewer: Any) -> list[history.Row]:
    """The reviews of the cards this import made, on the learner's days (their zone and day start)."""
    profile = get_profile(reviewer)
    rows = []
    for review in reviews:
        if review.note not in made:
            continue  # a note not imported (a drill, no front)
        at = datetime.fromtimestamp(review.at_ms / 1000, UTC)
        day = (at.astimezone(profile.zone) - timedelta(hours=profile.day_start_hour)).date()
        quality = history.QUALITY_FOR_RATING[review.ease]
        duration = min(review.time_ms, history.MAX_DURATION_MS)
        rows.append(history.Row(made[review.note], at, day, quality, duration, None, None, Scheduler.SM2))
    return rows


def _check_quota(owner: Any, adding: int) -> None:
    """A learner's private cards stay within ``ANKI_PRIVATE_CARDS_QUOTA``; their row is locked, so two imports
    at once are counted one after the other."""
    get_user_model().objects.select_for_update().filter(pk=owner.pk).first()
    owned = Card.objects.filter(note__owner=owner).count()
    quota = settings.ANKI_PRIVATE_CARDS_QUOTA
    if owned + adding > quota:
        raise AnkiImportError(
            _(
                "You have %(owned)d private cards and this file holds %(adding)d: together over the %(quota)d "
                "private cards one learner may keep. Nothing was imported."
            )
            % {"owned": owned, "adding": adding, "quota": quota}
        )


def _card_row(note: Note, index: int, card: ImportedCard) -> Card:
    digest = hashlib.sha256(f"{note.slug}\0{index}".encode()).hexdigest()
    return Card(
        key=f"anki:{digest[:59]}",
        note=note,
        kind=Card.Kind.QA,
        front=card.front,
        back=card.back,
        front_html=card.front_html,
        back_html=card.back_html,
        heading_path=note.title[:500],
        tags=card.tags,
        position=index,
        content_hash=hashlib.sha256(f"{card.front}\0{card.back}".encode()).hexdigest(),
    )


def import_file(
    name: str, data: bytes, *, title: str = "", owner: Any = None, reviewer: Any = None
) -> tuple[Note, ParsedDeck]:
    """Read, check and save an upload: the one entry point for the view and the command."""
    parsed = read_upload(name, data)
    digest = hashlib.sha256(data).hexdigest()
    note = save_deck(parsed, source_name=name, content_hash=digest, title=title, owner=owner, reviewer=reviewer)
    return note, parsed


__all__ = [
    "AnkiImportError",
    "ExportSummary",
    "build_package",
    "import_file",
    "read_upload",
    "save_deck",
    "write_apkg",
]
