"""The deck stamp, and the deck each process keeps while the stamp holds.

What only changes when the deck is imported or a team reorders its stages (the order of the new cards,
which cards are siblings: ``cards.queueing.Deck``) is built once per process and kept, checked on each
request against the stamp: the newest card change (``CardQuerySet.update`` and ``auto_now`` keep
``updated_at`` moving), the newest card, and the stages' count and newest change. ``review_day`` reads the
stamp in the same statement as the learner's day, so the check costs no query of its own.

The A/B that keeps it: docs/performance.md, "Review queue: CPU per rating" (the queue built per request
against the deck kept per process).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

from django.db import connections

from cards.models import Card, LearningStage

D = TypeVar("D")

_decks: dict[str, Any] = {}  # database alias -> the deck as last built in this process
_lock = threading.Lock()


def stamp_columns() -> str:
    """The stamp as four SELECT columns: the newest card change, the newest card, the stages' count and
    their newest change."""
    card, stage = Card._meta.db_table, LearningStage._meta.db_table
    return (  # the table names are the models' own
        f"(SELECT MAX(updated_at) FROM {card}), (SELECT MAX(id) FROM {card}), "
        f"(SELECT COUNT(*) FROM {stage}), (SELECT MAX(updated_at) FROM {stage})"
    )


def read_stamp(alias: str) -> tuple[Any, ...]:
    """The stamp on its own (pages that show the deck; the queue reads it with the learner's day)."""
    with connections[alias].cursor() as cursor:
        cursor.execute(f"SELECT {stamp_columns()}")
        return tuple(cursor.fetchone())


def kept(stamp: tuple[Any, ...], alias: str, build: Callable[[tuple[Any, ...]], D]) -> D:
    """The deck as of ``stamp``: the one kept for ``alias`` while it has that stamp, else ``build(stamp)``,
    kept from then on. The stamp is read before the deck, so a change committed in between costs one more
    build, never a stale deck."""
    deck = _decks.get(alias)
    if deck is None or deck.stamp != stamp:
        deck = build(stamp)
        with _lock:
            _decks[alias] = deck
    return cast(D, deck)


def forget() -> None:
    """Drop every kept deck (tests)."""
    with _lock:
        _decks.clear()
