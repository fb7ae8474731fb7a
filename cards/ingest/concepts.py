"""Concepts at card level and the order new cards come in: pure (no Django), for the queue and the docs.

A concept (``notes/learning-order.toml``, ``[[stage.concept]]``) has a slug, the earlier concepts it
``requires``, the note headings whose cards teach it, keywords (regular expressions) that mark a card as
being about it wherever it sits, and ``cards``: key prefixes of cards it claims by hand (the checked
overrides). The file lists concepts in a topological order: a concept requires only concepts before it.

``tag`` gives each card one concept it *teaches* (its topic) and the concepts it *needs*: of the concepts
its heading and its front name, the latest in the file is the one it teaches, and every other one, with
everything the taught one requires (transitively), is needed. So a question about the computational
graph filed under "Tensors" teaches the graph and needs what the graph needs.

``order`` turns tagged cards into the new-card order (see its docstring): never a card before a card
that teaches each concept it needs, a few started topics interleaved, every kind of card early.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

KINDS_FIRST = ("mapping", "output", "cloze", "drill", "qa")  # the kinds every learner meets in the first days


@dataclass(frozen=True)
class Concept:
    slug: str
    title: str
    stage: str  # the stage that introduces it
    requires: tuple[str, ...] = ()
    headings: frozenset[tuple[str, str]] = frozenset()  # (note slug, heading) whose cards teach it
    keywords: tuple[str, ...] = ()  # regular expressions searched in a card's front
    cards: tuple[str, ...] = ()  # key prefixes of cards that teach it, checked by hand


class ConceptError(ValueError):
    """The concepts are malformed: an unknown or later prerequisite, a bad pattern, a repeated slug."""


@dataclass
class ConceptMap:
    """The concepts in file order, with each one's prerequisites closed transitively."""

    concepts: list[Concept]
    index: dict[str, int] = field(init=False)
    ancestors: dict[str, frozenset[str]] = field(init=False)
    _patterns: list[tuple[str, re.Pattern[str]]] = field(init=False)

    def __post_init__(self) -> None:
        self.index, self.ancestors, self._patterns = {}, {}, []
        for concept in self.concepts:
            if concept.slug in self.index:
                raise ConceptError(f"concept {concept.slug!r} comes twice")
            closed: set[str] = set()
            for need in concept.requires:
                if need not in self.index:
                    raise ConceptError(f"concept {concept.slug!r} requires {need!r}, which no earlier concept is")
                closed |= {need, *self.ancestors[need]}
            self.index[concept.slug] = len(self.index)
            self.ancestors[concept.slug] = frozenset(closed)
            for keyword in concept.keywords:
                try:
                    re.compile(keyword)
                except re.error as error:
                    raise ConceptError(f"concept {concept.slug!r}: keyword {keyword!r}: {error}") from None
            if concept.keywords:  # one search per concept, not per keyword
                self._patterns.append((concept.slug, re.compile("|".join(f"(?:{k})" for k in concept.keywords))))

    def named_by(self, text: str) -> set[str]:
        return {slug for slug, pattern in self._patterns if pattern.search(text)}

    def tag(self, note: str, path: Iterable[str], front: str, key: str) -> tuple[str | None, frozenset[str]]:
        """(the concept the card teaches, the concepts it needs); (None, {}) when no concept names it.

        A hand override (``cards``) decides what it teaches; otherwise the latest concept in file order
        of those its headings (the deepest heading first) and its front's keywords name."""
        on_path = list(path)
        named = self.named_by(front)
        for concept in self.concepts:
            for heading in reversed(on_path):
                if (note, heading) in concept.headings:
                    named.add(concept.slug)
                    break
        forced = [c.slug for c in self.concepts if any(key.startswith(prefix) for prefix in c.cards)]
        if forced:
            teaches = forced[0]
        elif named:
            teaches = max(named, key=self.index.__getitem__)
        else:
            return None, frozenset()
        needs = (named | self.ancestors[teaches]) - {teaches}
        return teaches, frozenset(need for need in needs if teaches not in self.ancestors.get(need, ()))

    def builds_on(self, teaches: str, needs: Iterable[str]) -> set[str]:
        """The concepts a card builds on directly: what its concept requires, and what else it names (its
        needs less what its concept requires transitively). A passed drill credits cards teaching these."""
        concept = self.concepts[self.index[teaches]]
        return set(concept.requires) | (set(needs) - self.ancestors[teaches])


@dataclass(frozen=True)
class Item:
    """One new card as ``order`` sees it."""

    pk: int
    kind: str
    topic: str  # the concept it teaches, or a stand-in (``stage/note``) for an untagged card
    teaches: str | None
    needs: frozenset[str]
    rank: tuple[int, ...]  # where the learner's stage order and the notes put it (smaller first)


def order(
    items: Sequence[Item],
    window: int = 40,
    open_topics: int = 3,
    kind_every: int = 4,
    kinds: Sequence[str] = KINDS_FIRST,
) -> list[int]:
    """Card pks in the order new cards come.

    1. Never before its prerequisites: a card is *ready* once, for each concept it needs that some card of
       ``items`` teaches, a card teaching that concept came before it.
    2. Topics interleaved: up to ``open_topics`` started topics take turns card by card, each in rank order
       (the learner's stage order, then the notes' order); a topic opens, in rank order, when fewer are
       open or none of the open ones has a ready card.
    3. Every kind early: in the first ``window`` cards (two days at the default new-card limit), every
       ``kind_every``-th card (more often when the window is too short for every kind) is the
       best-ranked ready card of a kind not met yet, if there is one; such a card's topic opens too.
    A deck whose needs go round in a circle still comes out whole: when nothing is ready, the best-ranked
    card comes next (the bundled deck has no such circle; a test says so)."""
    taught_somewhere = {item.teaches for item in items if item.teaches}
    by_topic: dict[str, list[Item]] = {}
    for item in sorted(items, key=lambda i: (i.rank, i.pk)):
        by_topic.setdefault(item.topic, []).append(item)
    topic_order = sorted(by_topic, key=lambda t: by_topic[t][0].rank)
    waiting = {topic: list(cards) for topic, cards in by_topic.items()}
    taught: set[str] = set()
    present = [kind for kind in kinds if any(item.kind == kind for item in items)]
    met: set[str] = set()
    if present:  # enough turns for every kind within the window, however small
        kind_every = max(1, min(kind_every, window // len(present)))
    opened: list[str] = []  # open topics, in turn order
    last: str | None = None
    placed: list[int] = []

    def ready(item: Item) -> bool:
        return all(need in taught or need not in taught_somewhere for need in item.needs)

    def first_ready(topic: str) -> Item | None:
        return next((item for item in waiting[topic] if ready(item)), None)

    def place(item: Item) -> None:
        waiting[item.topic].remove(item)
        placed.append(item.pk)
        met.add(item.kind)
        nonlocal last
        last = item.topic
        if item.teaches:
            taught.add(item.teaches)

    while len(placed) < len(items):
        if last in opened:  # the open topics in turn, starting after the last one used
            at = opened.index(last) + 1
            rotation = opened[at:] + opened[:at]
        else:
            rotation = list(opened)
        opened = [topic for topic in opened if waiting[topic]]
        rotation = [topic for topic in rotation if waiting[topic]]
        missing = [kind for kind in present if kind not in met]
        if missing and len(placed) < window and len(placed) % kind_every == kind_every - 1:
            candidates = [
                item for topic in topic_order for item in waiting[topic] if item.kind in missing and ready(item)
            ]
            if candidates:
                chosen = min(candidates, key=lambda i: (missing.index(i.kind), i.rank, i.pk))
                if chosen.topic not in opened:
                    opened.append(chosen.topic)
                place(chosen)
                continue
        if len(opened) < open_topics:
            fresh = next((t for t in topic_order if waiting[t] and t not in opened and first_ready(t)), None)
            if fresh is not None:  # a new topic starts at once
                opened.append(fresh)
                rotation.insert(0, fresh)
        choice: Item | None = None
        for topic in rotation:
            choice = first_ready(topic)
            if choice is not None:
                break
        if choice is None:  # every open topic waits on a need: open the next topic that is ready
            fresh = next((t for t in topic_order if waiting[t] and t not in opened and first_ready(t)), None)
            if fresh is not None:
                opened.append(fresh)
                choice = first_ready(fresh)
        if choice is None:  # a circle of needs: the best-ranked card breaks it
            choice = min((item for cards in waiting.values() for item in cards), key=lambda i: (i.rank, i.pk))
        place(choice)
    return placed


def unmet_needs(items: Sequence[Item], placed: Sequence[int]) -> list[tuple[int, str]]:
    """(card pk, concept) for each card placed before any card teaching a concept it needs: empty when
    the order keeps every prerequisite (what the tests and ``docs/learning-order.md`` check)."""
    by_pk = {item.pk: item for item in items}
    taught_somewhere = {item.teaches for item in items if item.teaches}
    taught: set[str] = set()
    found = []
    for pk in placed:
        item = by_pk[pk]
        found += [(pk, need) for need in sorted(item.needs) if need in taught_somewhere and need not in taught]
        if item.teaches:
            taught.add(item.teaches)
    return found
