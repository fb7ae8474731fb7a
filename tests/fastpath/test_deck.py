"""``fastpath.deck``: the deck is built once per stamp and per database, and again when the stamp moves."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from fastpath import deck
from tests.cards.factories import make_card

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Built:
    stamp: tuple[Any, ...]


@pytest.fixture(autouse=True)
def _no_kept_deck() -> Iterator[None]:
    deck.forget()
    yield
    deck.forget()


def test_it_keeps_the_deck_while_the_stamp_holds_and_builds_again_when_it_moves() -> None:
    builds: list[tuple[Any, ...]] = []

    def build(stamp: tuple[Any, ...]) -> Built:
        builds.append(stamp)
        return Built(stamp)

    first = deck.read_stamp("default")
    kept = deck.kept(first, "default", build)
    assert deck.kept(deck.read_stamp("default"), "default", build) is kept
    make_card()  # a new card moves the stamp
    moved = deck.read_stamp("default")
    assert moved != first
    assert deck.kept(moved, "default", build).stamp == moved
    assert builds == [first, moved]


def test_forget_drops_the_kept_deck() -> None:
    stamp = deck.read_stamp("default")
    kept = deck.kept(stamp, "default", Built)
    deck.forget()
    assert deck.kept(stamp, "default", Built) is not kept
