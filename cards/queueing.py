"""Today's review queue for one learner: its counts and the head of each queue, for the web process.

Why it is built here and not in one SQL statement: the queue buries siblings (the two directions of a
mapping row never come on one day) and orders new cards by the learning order, and as correlated SQL
subqueries that Django compiled and PostgreSQL ran at great cost on every rating
(docs/performance.md, "Review queue"). What only changes when the deck is imported or a team reorders
its stages (the order of the new cards, which cards are siblings) is computed once per process and
kept (``Deck``), checked on each request against one cheap stamp query; what changes with every rating
(the learner's due and repeat states, what blocks a new card, today's reviews) is read fresh each time by
one statement (``fastpath.review_day``), and the queue is walked in Python. Nothing a learner
does is cached, so no rating, undo, suspension or settings change can leave a stale queue behind.

The rules are those of the SQL it replaced (kept in ``tests/cards/queue_reference.py``, which the
tests compare against after every step):

- due: seen, available (active, not suspended, not buried) states due today, most overdue first
  (``due``, ``last_reviewed_at``, ``pk``), less a mapping card whose sibling was answered today or is
  due too and earlier in that order;
- new: active cards with no state that blocks them (seen, suspended, buried), in the learning order,
  less a mapping card whose sibling was answered today, is due today, or is new and earlier in its note;
- repeats: available states rated below Good today (``needs_repeat``), the longest-waiting first;
- each count capped by the daily limit less today's first answers of its kind.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from django.apps import apps
from django.db import router

from cards import extensions
from cards.ingest import concepts as conceptual
from cards.models import (
    Card,
    Course,
    LearningStage,
    Note,
    Profile,
    concept_map,
    private_courses_of,
)
from fastpath import review_day
from fastpath.deck import kept, read_stamp

HEADING_SEPARATOR = " › "  # how the importer joins the headings of a card's path
_PLACE = tuple[int, int, int, int, int]  # (default stage index, turn in its stage, note, place in note, pk)


@dataclass(frozen=True)
class QueueSnapshot:
    """Today's numbers and the head of each queue."""

    due: int  # due reviews still allowed today (capped by the reviews limit)
    new: int  # new cards still allowed today (capped by the new limit)
    repeats: int
    reviewed_today: int
    next_due: int | None  # CardState pk
    next_new: int | None  # Card pk
    next_repeat: int | None  # CardState pk

    @property
    def remaining(self) -> int:
        return self.due + self.new + self.repeats

    @property
    def progress_percent(self) -> int:
        total = self.reviewed_today + self.remaining
        return 100 if total == 0 else round(100 * self.reviewed_today / total)


# --- The deck: what changes only when notes are imported or the stages change -------------------------


@dataclass(frozen=True)
class Stage:
    slug: str
    title: str
    sections: dict[int, frozenset[str]]  # note pk -> the headings of that note this stage covers


@dataclass
class Deck:
    """Every card's place, the mapping cards' siblings, and the stages, as of ``stamp``."""

    stamp: tuple[Any, ...]
    stages: list[Stage]  # in the default order
    active: dict[int, _PLACE]  # card pk -> its place
    mapping: dict[int, tuple[int, bool]]  # mapping card pk -> (position, active); inactive ones too
    siblings: dict[int, tuple[int, ...]]  # mapping card pk -> its siblings' pks
    # card pk -> the learner whose private deck (an Anki import) holds it: no other learner's new card. A
    # note's owner is set when it is made, with its cards, so a new private deck moves the stamp too.
    owners: dict[int, int] = field(default_factory=dict)
    # card pk -> its private course (a team's): only the learners who may read that course get it. A note's
    # course is set when it is made, with its cards, so a new course moves the stamp too.
    courses: dict[int, int] = field(default_factory=dict)
    # The concepts of the stages (``cards.ingest.concepts``) and, for each active card of a note a stage names,
    # (kind, the concept it teaches, the concepts it needs). No concepts: the stages' order of old (below).
    concepts: conceptual.ConceptMap = field(default_factory=lambda: conceptual.ConceptMap([]))
    tags: dict[int, tuple[str, str | None, frozenset[str]]] = field(default_factory=dict)
    # drill card pk -> (its track, its place in the track), for the drills of a named sequence (tensor-puzzles)
    tracks: dict[int, tuple[str, int]] = field(default_factory=dict)
    # concept -> the active cards other than drills that teach it, from ``tags``: what a passed drill credits
    # (``cards.review.credit_prerequisites``) is a lookup per concept, not a walk over the deck's tags.
    teachers: dict[str, tuple[int, ...]] = field(init=False, default_factory=dict)
    _orders: dict[tuple[str, ...], list[int]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        teachers: dict[str, list[int]] = {}
        for pk, (kind, teaches, _needs) in self.tags.items():
            if teaches is not None and kind != Card.Kind.DRILL:
                teachers.setdefault(teaches, []).append(pk)
        self.teachers = {concept: tuple(pks) for concept, pks in teachers.items()}

    def order(self, stage_slugs: tuple[str, ...] = ()) -> list[int]:
        """Active card pks in the learning order, computed once per stage order and kept.

        With concepts (the bundled course): the staged cards in ``cards.ingest.concepts.order``'s order, never
        a card before its prerequisites, the started topics interleaved, every kind in the first two days;
        the stages as ``stage_slugs`` orders them (the default order when empty; stages it leaves out follow
        in the default order) rank the concepts they introduce. Then the cards no stage names, note after
        note, each in note order (a learner's own import keeps its order exactly).
        Without concepts: the stages in that order; within a stage the notes take turns (each note's first
        card, then each note's second...); then the cards no stage names as above."""
        found = self._orders.get(stage_slugs)
        if found is None:
            rank = stage_ranks(self.stages, stage_slugs)
            if self.tags:
                found = self._concept_order(rank)
            else:
                found = sorted(self.active, key=lambda pk: (rank[self.active[pk][0]], *self.active[pk][1:]))
            if self.tracks:
                found = in_track_order(found, self.tracks)
                if self.tags:  # a track card held back may have been a concept's first teacher
                    found = keeping_prerequisites(found, self.tags)
            with self._lock:
                self._orders[stage_slugs] = found
        return found

    def items(self, rank: list[int]) -> list[conceptual.Item]:
        """The staged cards as ``cards.ingest.concepts.order`` reads them, ranked by the stage order ``rank``."""
        stage_index = {stage.slug: i for i, stage in enumerate(self.stages)}
        items = []
        for pk, (kind, teaches, needs) in self.tags.items():
            stage, _, note, place, _ = self.active[pk]
            if teaches is None:
                topic, key = f"{self.stages[stage].slug}/{note}", (rank[stage], len(self.concepts.index))
            else:
                concept = self.concepts.concepts[self.concepts.index[teaches]]
                topic, key = teaches, (rank[stage_index[concept.stage]], self.concepts.index[teaches])
            items.append(conceptual.Item(pk, kind, topic, teaches, needs, (*key, note, place)))
        return items

    def _concept_order(self, rank: list[int]) -> list[int]:
        staged = conceptual.order(self.items(rank))
        rest = sorted((pk for pk in self.active if pk not in self.tags), key=lambda pk: self.active[pk][2:])
        return staged + rest

    def reaches(self, card_pk: int, user_id: int, courses: frozenset[int]) -> bool:
        """The card is this learner's to study: not another learner's private deck, not a course they cannot
        read (``courses``: the private courses they may read, e.g. after leaving a team: none of its)."""
        course = self.courses.get(card_pk)
        return self.owners.get(card_pk, user_id) == user_id and (course is None or course in courses)

    def stage_of(self, card_pk: int) -> Stage | None:
        index = self.active[card_pk][0]
        return self.stages[index] if index < len(self.stages) else None


def in_track_order(order: list[int], tracks: dict[int, tuple[str, int]]) -> list[int]:
    """``order`` with each track's cards in their authored place (puzzle 1, 2, 3...), never earlier than the
    learning order put them (so never before their prerequisites): a track card comes at its own place or
    right after the track's card before it, whichever is later. The other cards keep their places."""
    index = {pk: i for i, pk in enumerate(order)}
    keys: dict[int, tuple[int, int]] = {pk: (i, 0) for i, pk in enumerate(order)}
    last: dict[str, int] = {}
    in_place = sorted((tracks[pk][0], tracks[pk][1], index[pk], pk) for pk in order if pk in tracks)
    for turn, (track, _place, natural, pk) in enumerate(in_place, start=1):
        slot = max(natural, last.get(track, -1))
        last[track] = slot
        keys[pk] = (slot, turn)
    return sorted(order, key=keys.__getitem__)


def keeping_prerequisites(order: list[int], tags: dict[int, tuple[str, str | None, frozenset[str]]]) -> list[int]:
    """``order`` with each card that comes before a concept it needs is taught held back to just after it is
    (``tags``: card pk -> (kind, teaches, needs)); the rest keep their order."""
    taught_somewhere = {teaches for _, teaches, _ in tags.values() if teaches}
    taught: set[str] = set()
    placed: list[int] = []
    waiting: list[int] = []

    def unmet(pk: int) -> bool:
        needs = tags[pk][2] if pk in tags else frozenset()
        return any(need in taught_somewhere and need not in taught for need in needs)

    def place(pk: int) -> None:
        placed.append(pk)
        teaches = tags[pk][1] if pk in tags else None
        if teaches and teaches not in taught:
            taught.add(teaches)
            for held in [held for held in waiting if not unmet(held)]:
                if held in waiting and not unmet(held):
                    waiting.remove(held)
                    place(held)

    for pk in order:
        if unmet(pk):
            waiting.append(pk)
        else:
            place(pk)
    return placed + waiting


def stage_ranks(stages: list[Stage], stage_slugs: Iterable[str]) -> list[int]:
    """Each default stage index's rank in the given order; the index past the stages ranks last."""
    chosen = [s for s in dict.fromkeys(stage_slugs) if any(stage.slug == s for stage in stages)]
    ordered = chosen + [stage.slug for stage in stages if stage.slug not in chosen]
    position = {slug: i for i, slug in enumerate(ordered)}
    return [position[stage.slug] for stage in stages] + [len(stages)]


def headings(heading_path: str) -> set[str]:
    """The headings on a card's path, without markdown backticks (the importer keeps some)."""
    return {part.replace("`", "").strip() for part in heading_path.split(HEADING_SEPARATOR) if part.strip()}


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]


def find_siblings(rows: list[tuple[int, int, str, str]]) -> dict[int, tuple[int, ...]]:
    """``cards.models.siblings`` in Python: mapping cards ``(pk, note, front, back)`` of one note are
    siblings when one's front holds ": " and the other's answer (its back's first line)."""
    by_note: dict[int, list[tuple[int, str, str]]] = {}
    for pk, note, front, back in rows:
        by_note.setdefault(note, []).append((pk, front, ": " + _first_line(back)))
    found: dict[int, list[int]] = {}
    for cards in by_note.values():
        for pk, front, asks in cards:
            for other, other_front, other_asks in cards:
                if other != pk and (other_asks in front or asks in other_front):
                    found.setdefault(pk, []).append(other)
    return {pk: tuple(others) for pk, others in found.items()}


def _load_stages() -> list[Stage]:
    notes = dict(apps.get_model("cards", "Note").objects.values_list("slug", "pk"))
    stages = []
    for stage in LearningStage.objects.order_by("rank", "slug"):
        sections: dict[int, set[str]] = {}
        for section in stage.sections:
            if section.get("note") in notes:
                named = {h.replace("`", "").strip() for h in section.get("headings", [])}
                sections.setdefault(notes[section["note"]], set()).update(named)
        stages.append(Stage(stage.slug, stage.title, {note: frozenset(h) for note, h in sections.items()}))
    return stages


def _stage_index(stages: list[Stage], note: int, heading_path: str) -> int:
    on_path = headings(heading_path)
    for index, stage in enumerate(stages):
        if stage.sections.get(note, frozenset()) & on_path:
            return index
    return len(stages)


def build_deck(stamp: tuple[Any, ...]) -> Deck:
    """Read the whole deck once: every card's (pk, note, kind, position, active, headings), plus the
    mapping cards' text for their siblings: too slow for every request, so once per process per change."""
    stages = _load_stages()
    by_note: dict[int, list[tuple[int, int, str]]] = {}  # note -> [(position, pk, heading path)], active only
    mapping: dict[int, tuple[int, bool]] = {}
    owned = dict(Note.objects.filter(owner__isnull=False).values_list("pk", "owner_id"))
    private = dict(Note.objects.filter(course__public=False).values_list("pk", "course_id"))
    owners: dict[int, int] = {}
    courses: dict[int, int] = {}
    concepts = _load_concepts()
    kinds: dict[int, str] = {}
    rows = Card.objects.order_by().values_list("pk", "note_id", "kind", "position", "active", "heading_path")
    for pk, note, kind, position, is_active, heading_path in rows.iterator(chunk_size=5000):
        kinds[pk] = kind
        if note in owned:
            owners[pk] = owned[note]
        if note in private:
            courses[pk] = private[note]
        if is_active:
            by_note.setdefault(note, []).append((position, pk, heading_path))
        if kind == Card.Kind.MAPPING:
            mapping[pk] = (position, is_active)
    texts = Card.objects.filter(kind=Card.Kind.MAPPING).order_by().values_list("pk", "note_id", "front", "back")
    siblings = find_siblings(list(texts))
    placed: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (stage, note) -> [(place in note, pk)]
    for note, cards in by_note.items():
        shared = note not in owned  # a learner's own import keeps its order exactly
        in_note = sorted(cards, key=lambda c: (_anchor(c[0], c[1], siblings, mapping) if shared else c[0], *c[:2]))
        for place, (_, pk, heading_path) in enumerate(in_note):
            placed.setdefault((_stage_index(stages, note, heading_path), note), []).append((place, pk))
    active: dict[int, _PLACE] = {}
    for (stage, note), placed_cards in placed.items():
        for turn, (place, pk) in enumerate(sorted(placed_cards)):
            active[pk] = (stage, turn if stage < len(stages) else 0, note, place, pk)
    tags = _tags(concepts, stages, active, kinds) if concepts.concepts else {}
    tracks = extensions.card_tracks(list(active))
    return Deck(stamp, stages, active, mapping, siblings, owners, courses, concepts, tags, tracks)


def _load_concepts() -> conceptual.ConceptMap:
    """The stages' concepts as one map; a stored map that no longer reads as one is left out (the file's
    import checks it, so only a hand edit in the admin gets here): the stages' order of old then holds."""
    try:
        return concept_map(LearningStage.objects.order_by("rank", "slug").values_list("slug", "concepts"))
    except (conceptual.ConceptError, KeyError, TypeError, ValueError):
        return conceptual.ConceptMap([])


def _tags(
    concepts: conceptual.ConceptMap, stages: list[Stage], active: dict[int, _PLACE], kinds: dict[int, str]
) -> dict[int, tuple[str, str | None, frozenset[str]]]:
    """(kind, teaches, needs) of each active card some stage names: one more read, of their fronts."""
    staged = [pk for pk, place in active.items() if place[0] < len(stages)]
    slugs = dict(Note.objects.values_list("pk", "slug"))
    tags = {}
    rows = Card.objects.filter(pk__in=staged).order_by().values_list("pk", "note_id", "heading_path", "front", "key")
    for pk, note, heading_path, front, key in rows.iterator(chunk_size=5000):
        path = [part.replace("`", "").strip() for part in heading_path.split(HEADING_SEPARATOR) if part.strip()]
        teaches, needs = concepts.tag(slugs[note], path, front, key)
        tags[pk] = (kinds[pk], teaches, needs)
    return tags


def _anchor(position: int, pk: int, siblings: dict[int, tuple[int, ...]], mapping: dict[int, tuple[int, bool]]) -> int:
    """Where a card sits in its note's new-card order: a mapping card right after its first active sibling.

    The importer writes a table's forward cards first, then the reverse ones (so a learner never met both
    sides in a row); burying now keeps the two sides apart (never on one day, nor while the other is due), so
    that order only held the reverse side back: behind every forward row of its table, 34 rows of the
    bundled NumPy table put the first PyTorch -> NumPy card on day 9 of a 20-a-day learner. Next to its
    sibling, the reverse side comes as soon as burying lets it (the day after its sibling's first review is
    done with: day 3)."""
    found = [mapping[s][0] for s in siblings.get(pk, ()) if mapping[s][1]]
    return min([position, *found])


def deck_for(stamp: tuple[Any, ...], alias: str) -> Deck:
    """The deck as of ``stamp``: kept per process while the stamp holds (``fastpath.deck``)."""
    return kept(stamp, alias, build_deck)


def current_deck() -> Deck:
    """The deck, for pages that show it (the queue reads the stamp with the learner's day instead)."""
    alias = router.db_for_read(Card)
    return deck_for(read_stamp(alias), alias)


# --- The learner: read fresh on every request ---------------------------------------------------------


def stage_slugs(stages: Any) -> tuple[str, ...]:
    """A learner's stored order as slugs, whatever shape it was stored in (a list is expected)."""
    if isinstance(stages, str):  # PostgreSQL's jsonb and SQLite's text both arrive as text in raw SQL
        stages = json.loads(stages)
    return tuple(s for s in stages if isinstance(s, str)) if isinstance(stages, list) else ()


@dataclass(frozen=True)
class _Day:
    """What the learner's states and logs say today, read in one query."""

    deck: Deck
    user_id: int
    stage_order: tuple[str, ...]
    due: list[tuple[int, int]]  # (state pk, card pk) in queue order: most overdue first
    repeats: list[int]  # state pks, longest-waiting first
    blocked: set[int]  # card pks that are not new
    answered: set[int]  # card pks answered today
    courses: frozenset[int]  # the private courses the learner may read (read only when the deck has any)
    new_done: int
    reviews_done: int
    reviewed_today: int


def _read_day(user_id: int, today: date) -> _Day:
    alias = router.db_for_read(Card)
    rows = review_day.read(alias, user_id, today)
    deck = deck_for(rows.stamp, alias)
    courses = readable_courses(user_id) if deck.courses else frozenset()
    due, repeats = [], []
    private = bool(deck.owners or deck.courses)  # no private card in the deck: every card reaches everyone
    for pk, card, is_due, is_repeat, due_rank, repeat_rank in rows.queued:
        # an inactive card's state is in no queue, nor one of a course the learner no longer reads
        if card in deck.active and (not private or deck.reaches(card, user_id, courses)):
            if is_due:
                due.append((due_rank, pk, card))
            if is_repeat:
                repeats.append((repeat_rank, pk))
    due.sort()
    repeats.sort()
    return _Day(
        deck=deck,
        user_id=user_id,
        stage_order=stage_slugs(rows.learning_order),
        due=[(pk, card) for _, pk, card in due],
        repeats=[pk for _, pk in repeats],
        blocked=rows.blocked,
        answered=rows.answered,
        courses=courses,
        new_done=rows.new_done,
        reviews_done=rows.reviews_done,
        reviewed_today=rows.reviewed_today,
    )


def readable_courses(user_id: int) -> frozenset[int]:
    """The private courses the learner may read: one more query, only while some course is private."""
    readable = Course.objects.filter(public=False).filter(private_courses_of(user_id))
    return frozenset(readable.values_list("pk", flat=True))


def _due_queue(deck: Deck, day: _Day) -> Iterator[int]:
    """State pks of the due queue, in order; a mapping card waits when a sibling was answered today or
    came earlier in this queue (due or not, it was due: each sibling buries the later ones)."""
    earlier: set[int] = set()
    answered, siblings_of = day.answered, deck.siblings
    for pk, card in day.due:
        siblings = siblings_of.get(card)
        if not siblings or not any(s in answered or s in earlier for s in siblings):
            yield pk
        earlier.add(card)


def _new_queue(deck: Deck, day: _Day, order: list[int]) -> Iterator[int]:
    """Card pks of the new queue, in the learning order, less other learners' private decks; a mapping card
    waits when a sibling was answered today, is due today, or is new and earlier in its note."""
    due_cards = {card for _, card in day.due}
    blocked, siblings_of = day.blocked, deck.siblings
    private = bool(deck.owners or deck.courses)  # no private card in the deck: every card reaches everyone
    for card in order:
        if card in blocked or (private and not deck.reaches(card, day.user_id, day.courses)):
            continue
        siblings = siblings_of.get(card)
        if siblings and any(
            s in day.answered or s in due_cards or _new_and_earlier(deck, day, s, card) for s in siblings
        ):
            continue
        yield card


def _new_and_earlier(deck: Deck, day: _Day, sibling: int, card: int) -> bool:
    position, active = deck.mapping[sibling]
    return active and sibling not in day.blocked and (position, sibling) < (deck.mapping[card][0], card)


def _head_and_count(queue: Iterator[int], cap: int) -> tuple[int | None, int]:
    """The first item and how many there are, counting no further than ``cap``."""
    head, count = None, 0
    for item in queue:
        if count >= cap:
            break
        head = item if count == 0 else head
        count += 1
    return head, count


def snapshot(user_id: int, profile: Profile, today: date) -> QueueSnapshot:
    """Today's counts and queue heads for the learner: two queries, then a walk of the queues."""
    day = _read_day(user_id, today)
    due_cap = max(0, profile.reviews_per_day - day.reviews_done)
    new_cap = max(0, profile.new_cards_per_day - day.new_done)
    next_due, due = _head_and_count(_due_queue(day.deck, day), due_cap)
    order = day.deck.order(day.stage_order)
    next_new, new = _head_and_count(_new_queue(day.deck, day, order), new_cap)
    return QueueSnapshot(
        due=due,
        new=new,
        repeats=len(day.repeats),
        reviewed_today=day.reviewed_today,
        next_due=next_due,
        next_new=next_new,
        next_repeat=day.repeats[0] if day.repeats else None,
    )


def new_card_count(user_id: int, today: date) -> int:
    """Every card the new queue would bring today with no daily limit (the workload preview's backlog)."""
    day = _read_day(user_id, today)
    return sum(1 for _ in _new_queue(day.deck, day, day.deck.order(day.stage_order)))
