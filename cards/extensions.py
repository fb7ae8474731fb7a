"""Where the apps built on cards add to its pages, so that cards never imports or names them.

The arrows run one way: ``graders`` and ``outputs`` know about cards; cards knows only this registry,
which they fill in their ``AppConfig.ready``. Two extension points:

- a card kind's part of the review card (a drill's "Open the drill editor", an output card's answer
  box), and whether it replaces the Show answer / rating buttons (a drill is rated by its verdict);
- a section of the stats page (the drills' pass rates), with the function that computes its context;
- a card kind's own listing (the drill hub): a deck filtered to that kind lists it there instead;
- a part of the decks page's learning order (a team's: whose order the learner follows, and a way to switch);
- who may read a private course (a team's members): ``register_course_readers``; who edits one (its owner and
  editors: the drill hub shows them where a drill's label disagrees with its learners): ``register_course_editors``;
- a line on the login and sign-up pages about where the visitor is going (an invite names its team):
  ``register_login_note``.
- a check of its own in ``manage.py audit_cards`` (the drills' statements against their contracts);
- the tracks cards belong to (a drill's track, e.g. the tensor puzzles, and its place in it: the queue keeps a
  track's cards in that order): ``register_card_tracks``;
- a card kind's backs in an Anki export (a drill's: its reference once the learner may see it, else a link),
  asked once per kind for all of an export's cards of it, so an export costs the same queries for any deck:
  ``register_export_back``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ReviewPart:
    template: str  # included under the card's front, with ``card`` and ``item`` in its context
    replaces_answer: bool  # True: no Show answer and no rating buttons (something else rates the card)


@dataclass(frozen=True)
class StatsSection:
    template: str  # included in the stats page with ``section`` (the context below) in its context
    context: Callable[[Any], dict[str, Any]]  # the learner -> what the template shows


_REVIEW_PARTS: dict[str, ReviewPart] = {}
_KIND_LISTINGS: dict[str, Callable[[str], str]] = {}
_STATS_SECTIONS: dict[str, StatsSection] = {}
_ORDER_SECTIONS: dict[str, StatsSection] = {}
_EXPORT_BACKS: dict[str, Callable[[list[Any], Any], dict[int, str]]] = {}
_TRACKS: list[Callable[[list[int]], dict[int, tuple[str, int]]]] = []


def register_review_part(kind: str, template: str, *, replaces_answer: bool = False) -> None:
    _REVIEW_PARTS[kind] = ReviewPart(template, replaces_answer)


def review_part(kind: str) -> ReviewPart | None:
    return _REVIEW_PARTS.get(kind)


def register_card_tracks(tracks: Callable[[list[int]], dict[int, tuple[str, int]]]) -> None:
    """``tracks(card_ids)``: {card id: (track, place in the track)} for those of the cards that are in one."""
    _TRACKS.append(tracks)


def card_tracks(card_ids: list[int]) -> dict[int, tuple[str, int]]:
    found: dict[int, tuple[str, int]] = {}
    for tracks in _TRACKS:
        found.update(tracks(card_ids))
    return found


def register_export_back(kind: str, backs: Callable[[list[Any], Any], dict[int, str]]) -> None:
    """``backs(cards, learner)``: {card pk: the Markdown an Anki export shows as its back} for an export's
    cards of ``kind`` for ``learner`` (None: the operator's command); a card left out keeps its own back.
    Called once per export with every card of the kind: a constant number of queries, however many."""
    _EXPORT_BACKS[kind] = backs


def export_backs(cards: list[Any], learner: Any) -> dict[int, str]:
    """{card pk: Markdown back} of the ``cards`` whose kind registered its own export back."""
    found: dict[int, str] = {}
    for kind, backs in _EXPORT_BACKS.items():
        of_kind = [card for card in cards if card.kind == kind]
        if of_kind:
            found.update(backs(of_kind, learner))
    return found


def register_stats_section(name: str, template: str, context: Callable[[Any], dict[str, Any]]) -> None:
    _STATS_SECTIONS[name] = StatsSection(template, context)


def stats_sections(user: Any) -> list[tuple[str, dict[str, Any]]]:
    """(template, context) of every registered stats section, in registration order."""
    return [(section.template, section.context(user)) for section in _STATS_SECTIONS.values()]


def register_kind_listing(kind: str, url_for_note: Callable[[str], str]) -> None:
    """``url_for_note(note_slug)``: where a deck's cards of ``kind`` are listed, with their own columns."""
    _KIND_LISTINGS[kind] = url_for_note


def kind_listing(kind: str, note_slug: str) -> str | None:
    listing = _KIND_LISTINGS.get(kind)
    return listing(note_slug) if listing is not None else None


def register_order_section(name: str, template: str, context: Callable[[Any], dict[str, Any]]) -> None:
    """A part of the decks page's learning order, shown under the stages: ``context(learner)`` feeds it."""
    _ORDER_SECTIONS[name] = StatsSection(template, context)


def order_sections(user: Any) -> list[tuple[str, dict[str, Any]]]:
    """(template, context) of every registered learning-order section, in registration order."""
    return [(section.template, section.context(user)) for section in _ORDER_SECTIONS.values()]


_COURSE_READERS: list[Callable[[int], Any]] = []


def register_course_readers(readers: Callable[[int], Any]) -> None:
    """``readers(user_id)``: a query of the ids of the private courses that user may read (``values("course")``
    shape: one column of course ids), used as a subquery, so visibility stays one statement."""
    _COURSE_READERS.append(readers)


def course_reader_queries(user_id: int) -> list[Any]:
    """The registered subqueries of the private course ids ``user_id`` may read (none registered: none)."""
    return [readers(user_id) for readers in _COURSE_READERS]


_COURSE_EDITORS: list[Callable[[int], Any]] = []


def register_course_editors(editors: Callable[[int], Any]) -> None:
    """``editors(user_id)``: a query of the ids of the courses that user edits (the same shape as readers')."""
    _COURSE_EDITORS.append(editors)


def course_editor_queries(user_id: int) -> list[Any]:
    """The registered subqueries of the course ids ``user_id`` edits (none registered: none)."""
    return [editors(user_id) for editors in _COURSE_EDITORS]


_LOGIN_NOTES: list[Callable[[str], str | None]] = []


def register_login_note(note: Callable[[str], str | None]) -> None:
    """``note(next_url)``: a sentence for the login and sign-up pages about the page the visitor asked for
    (plain text, escaped where shown), or None when it has nothing to say about that address."""
    _LOGIN_NOTES.append(note)


def login_notes(next_url: str) -> list[str]:
    return [said for note in _LOGIN_NOTES if next_url and (said := note(next_url))]


_AUDIT_CHECKS: dict[str, Callable[[], list[str]]] = {}


def register_audit_check(title: str, problems: Callable[[], list[str]]) -> None:
    """``problems()``: one line per problem that ``manage.py audit_cards`` lists under ``title``."""
    _AUDIT_CHECKS[title] = problems


def audit_checks() -> dict[str, list[str]]:
    """Every registered audit check's problems, by title, in registration order."""
    return {title: problems() for title, problems in _AUDIT_CHECKS.items()}
