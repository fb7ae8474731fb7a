"""The concept graph and the new-card order (``cards.ingest.concepts``): pure, property-tested."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cards.ingest.concepts import KINDS_FIRST, Concept, ConceptError, ConceptMap, Item, order, unmet_needs


def test_a_concept_requires_only_earlier_ones() -> None:
    ConceptMap([Concept("a", "A", "s"), Concept("b", "B", "s", requires=("a",))])
    for concepts in (
        [Concept("b", "B", "s", requires=("a",)), Concept("a", "A", "s")],
        [Concept("a", "A", "s"), Concept("a", "A again", "s")],
        [Concept("a", "A", "s", keywords=("(",))],
    ):
        try:
            ConceptMap(concepts)
        except ConceptError:
            continue
        raise AssertionError(f"accepted {concepts}")


def test_a_card_teaches_the_latest_concept_it_names_and_needs_the_rest() -> None:
    graph = ConceptMap(
        [
            Concept("tensor", "T", "tensors", headings=frozenset({("n", "Tensors")})),
            Concept("grad", "G", "autograd", requires=("tensor",), keywords=("backward",)),
            Concept("graph", "Graph", "autograd", requires=("grad",), keywords=("计算图",)),
            Concept("loss", "L", "modules", requires=("tensor",), keywords=("NLLLoss",)),
        ]
    )
    # Filed under "Tensors", about the graph: it teaches the graph and needs what the graph needs.
    assert graph.tag("n", ["Tensors"], "PyTorch 的计算图是什么时候建立的？", "k1") == ("graph", {"tensor", "grad"})
    assert graph.tag("n", ["Tensors"], "`torch.zeros(2)`?", "k2") == ("tensor", frozenset())
    # Two named concepts, neither requiring the other: the later one taught, the earlier needed.
    assert graph.tag("n", ["Other"], "`NLLLoss` after `backward`?", "k3") == ("loss", {"tensor", "grad"})
    assert graph.tag("m", ["Tensors"], "nothing named", "k4") == (None, frozenset())
    # A hand override decides what the card teaches.
    claimed = ConceptMap([Concept("tensor", "T", "s"), Concept("grad", "G", "s", requires=("tensor",), cards=("k5",))])
    assert claimed.tag("n", [], "`torch.zeros(2)`", "k5abc") == ("grad", {"tensor"})


@st.composite
def decks(draw: st.DrawFn, kinds_rooted: bool = False) -> list[Item]:
    """Concepts in file order (each requires some earlier ones) and cards teaching them, needing their
    prerequisites and maybe other earlier concepts; with ``kinds_rooted``, one card of each kind needs nothing."""
    n = draw(st.integers(1, 8))
    ancestors: list[frozenset[str]] = []
    for i in range(n):
        direct = draw(st.sets(st.integers(0, i - 1), max_size=2)) if i else set()
        ancestors.append(frozenset().union(*({f"c{j}"} | ancestors[j] for j in direct)))
    items = []
    for pk in range(draw(st.integers(1, 60))):
        concept = draw(st.integers(-1, n - 1))
        kind = draw(st.sampled_from(KINDS_FIRST))
        rank = (draw(st.integers(0, 3)), draw(st.integers(0, 30)))
        if concept < 0:
            items.append(Item(pk, kind, f"note{rank[0]}", None, frozenset(), rank))
            continue
        extra = draw(st.sets(st.integers(0, concept - 1), max_size=2)) if concept else set()
        needs = ancestors[concept] | {f"c{j}" for j in extra}
        items.append(Item(pk, kind, f"c{concept}", f"c{concept}", frozenset(needs), (concept, *rank)))
    if kinds_rooted:
        for offset, kind in enumerate(KINDS_FIRST):
            items.append(Item(1000 + offset, kind, "root", None, frozenset(), (99, offset)))
    return items


@settings(max_examples=300, deadline=None)
@given(decks())
def test_no_card_comes_before_its_prerequisites(items: list[Item]) -> None:
    placed = order(items)
    assert sorted(placed) == sorted(item.pk for item in items)
    assert unmet_needs(items, placed) == []


@settings(max_examples=300, deadline=None)
@given(decks(kinds_rooted=True), st.integers(5, 60))
def test_every_kind_comes_within_the_first_two_days(items: list[Item], per_day: int) -> None:
    placed = order(items, window=2 * per_day)
    kinds = {item.pk: item.kind for item in items}
    assert {kinds[pk] for pk in placed[: 2 * per_day]} == set(KINDS_FIRST)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(2, 12), min_size=2, max_size=8))
def test_started_topics_take_turns(sizes: list[int]) -> None:
    """Ready cards of several topics: no topic comes twice in a row while another open topic has cards, and
    no more than three topics are open (started, not finished) at once."""
    items = [
        Item(100 * topic + i, "qa", f"t{topic}", f"t{topic}", frozenset(), (topic, i))
        for topic, size in enumerate(sizes)
        for i in range(size)
    ]
    placed = order(items, window=0)
    topics = [pk // 100 for pk in placed]
    left = dict(enumerate(sizes))
    started: set[int] = set()
    for before, after in zip(topics, topics[1:], strict=False):
        left[before] -= 1
        started.add(before)
        open_now = {t for t in started if left[t]}
        assert len(open_now) <= 3
        if before == after:
            assert all(left[t] == 0 for t in left if t != before), topics


def test_notes_of_one_topic_do_not_take_turns() -> None:
    """Two notes teach one concept: their cards come together (note order), not alternating note by note."""
    items = [Item(i, "qa", "t", "t", frozenset(), (0, i // 3, i % 3)) for i in range(6)]
    assert order(items, window=0) == [0, 1, 2, 3, 4, 5]


def test_a_circle_of_needs_still_places_every_card() -> None:
    items = [Item(1, "qa", "a", "a", frozenset({"b"}), (0,)), Item(2, "qa", "b", "b", frozenset({"a"}), (1,))]
    assert order(items) == [1, 2]
