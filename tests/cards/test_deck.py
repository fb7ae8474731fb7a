"""The bundled deck as a teacher reads it: no wrong mapping, one question per card, no repeats, no card that shows
its own answer, gaps carded, and drill statements that promise only what their contracts check.

Pure: the five bundled notes parsed with their curated files, as ``import_notes`` would, without a database.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from cards.ingest import parse_note
from cards.ingest.curated import curated_file_path
from cards.ingest.parser import CardSpec
from cards.ingest.quality import (
    Face,
    asks_two_questions,
    contains_own_answer,
    half_width_marks,
    names_its_answer,
    near_duplicates,
)
from cards.ingest.slugs import note_slug
from graders.authoring.statement import drill_contradictions
from graders.drills import DRILLS_DIR, load_drills

NOTES = Path(__file__).resolve().parents[2] / "notes"


@cache
def deck() -> dict[str, list[CardSpec]]:
    """Every card of every bundled note, by note slug."""
    cards = {}
    for note in sorted(NOTES.glob("*.md")):
        curated = curated_file_path(note)
        text = curated.read_text(encoding="utf-8") if curated.is_file() else None
        cards[note_slug(note)] = parse_note(note.read_text(encoding="utf-8"), note_slug(note), text, str(curated)).cards
    return cards


def mapping(front_part: str) -> list[tuple[str, str]]:
    return [
        (c.front, c.back) for cards in deck().values() for c in cards if c.kind == "mapping" and front_part in c.front
    ]


@pytest.mark.parametrize(
    ("asked", "answer"),
    [
        ("Numpy → PyTorch: `np.nonzero(x)` ", "`torch.nonzero(x, as_tuple=True)`"),
        ("PyTorch → Numpy: `torch.nonzero(x, as_tuple=True)` ", "`np.nonzero(x)`"),
        ("Numpy → PyTorch: `np.argwhere(x)` ", "`torch.nonzero(x)`"),
        ("PyTorch → Numpy: `torch.nonzero(x)` ", "`np.argwhere(x)`"),
        ("Numpy → PyTorch: `np.load(path)` ", "`torch.from_numpy(np.load(path))`"),
    ],
)
def test_the_numpy_table_maps_nonzero_argwhere_and_load_right_both_ways(asked: str, answer: str) -> None:
    [(_, back)] = mapping(asked)
    assert back == answer


def test_the_np_load_row_is_asked_one_way_only_as_its_reverse_would_show_its_answer() -> None:
    assert mapping("PyTorch → Numpy: `torch.from_numpy(np.load(path))`") == []
    assert mapping("PyTorch → Numpy: `x.reshape; x.view`") == []


def test_the_tf_names_asked_are_tf2s_with_tf1s_beside_the_answer() -> None:
    for tf2, tf1 in [
        ("tf.math.is_finite", "tf.is_finite"),
        ("tf.linalg.diag_part", "tf.matrix_diag_part"),
        ("tf.linalg.diag", "tf.matrix_diag"),
        ("tf.linalg.tensor_diag", "tf.diag"),
    ]:
        [(_, back)] = mapping(f"TensorFlow → PyTorch: `{tf2}(")
        [(_, reverse)] = [(f, b) for f, b in mapping("PyTorch → TensorFlow") if b.startswith(f"`{tf2}(")]
        assert f"TF1：{tf1}" in reverse and f"`{tf1}(" not in back


def test_no_mapping_card_matches_np_nonzero_or_np_load_with_their_wrong_torch_names() -> None:
    backs = {front: back for front, back in mapping("Numpy")}
    assert not [f for f, b in backs.items() if b in ("`torch.nonzero`", "`torch.load`")]
    assert not [f for f in backs if "`torch.load`" in f or "`torch.nonzero` " in f]


def test_no_mapping_back_keeps_set_up_code_as_leftover_text() -> None:
    backs = [back for _, back in mapping("→")]
    assert backs and not [b for b in backs if "sh = (2,3)" in b]
    [(front, back)] = mapping("TensorFlow → PyTorch: `tf.reduce_min")
    assert "`sh = (2,3)`" in front and back.startswith("`torch.amin(a, dim=sh, keepdim=True)`")


def output_cards() -> list[CardSpec]:
    return [c for cards in deck().values() for c in cards if c.kind == "output"]


def snippet(card: CardSpec) -> str:
    return card.front.split("```python\n", 1)[1].rsplit("\n```", 1)[0]


def test_no_output_card_asks_for_plain_arithmetic() -> None:
    assert output_cards()
    assert not [snippet(c) for c in output_cards() if re.fullmatch(r"[\d\s.+\-*/()]+", snippet(c))]


def test_no_two_output_cards_ask_the_same_snippet_or_print_the_same_thing_in_one_section() -> None:
    snippets = [snippet(c) for c in output_cards()]
    assert len(snippets) == len(set(snippets))
    shown = [(c.heading_path, c.back) for c in output_cards()]
    assert len(shown) == len(set(shown)), [s for s in shown if shown.count(s) > 1]


def test_chinese_sentences_take_full_width_punctuation_on_every_card() -> None:
    """The deck's own sentences; the notes' headings an output card names are the notes' text, not the deck's."""
    found = [
        (slug, card.front[:40], marks)
        for slug, cards in deck().items()
        for card in cards
        for face in (card.front.partition("：运行下面")[2] or card.front, card.back)
        if (marks := half_width_marks(face))
    ]
    assert found == []


def question_faces() -> list[Face]:
    return [Face(c.front, c.kind, c.front, c.back) for cards in deck().values() for c in cards if c.kind != "output"]


def test_no_front_asks_two_questions() -> None:
    assert [f.front for f in question_faces() if f.kind != "mapping" and asks_two_questions(f.front)] == []


# Pairs the duplicate measure lists that a teacher read and kept: each asks a different fact of one API.
DISTINCT = {
    frozenset(pair)
    for pair in [
        (  # the spelling keepdim (not keepdims), and amin over several dims
            "TF/NumPy 的 `axis=..., keepdims=True` 在 torch 中写作 `dim=..., [...]`",
            "TensorFlow → PyTorch: `tf.reduce_min(a, sh, keepdims=True)`（其中 `sh = (2,3)`） 对应什么？",
        ),
    ]
}


def test_no_fact_is_carded_twice_across_the_notes() -> None:
    pairs = [frozenset((a.front, b.front)) for a, b, _ in near_duplicates(question_faces())]
    assert [sorted(p) for p in pairs if p not in DISTINCT] == []


def test_no_card_shows_its_own_answer() -> None:
    assert [(f.front, f.back) for f in question_faces() if contains_own_answer(f)] == []


def test_no_card_spells_its_one_name_answer_in_its_question() -> None:
    assert [(f.front, f.back) for f in question_faces() if names_its_answer(f)] == []


def test_every_drill_statement_promises_only_what_its_contract_checks() -> None:
    """Each statement's promise of a new tensor, an in-place change or a dtype, read against its contract."""
    drills = load_drills(DRILLS_DIR)
    assert len(drills) > 50
    assert {slug: problems for slug, drill in drills.items() if (problems := drill_contradictions(drill))} == {}


@pytest.mark.parametrize(
    ("front_part", "also_right"),
    [
        ("让已创建的张量 `a` 开始被 autograd 追踪", "`a.requires_grad = True`"),
        ("需要完整的雅可比矩阵", "`torch.func.jacrev(f)(x)`"),
        ("怎样一步求它们的逐元素之和", "`sum(ts)`"),
    ],
)
def test_an_ambiguous_question_accepts_the_other_right_answer(front_part: str, also_right: str) -> None:
    [back] = [f.back for f in question_faces() if front_part in f.front]
    assert also_right in back


@pytest.mark.parametrize(
    "idea",
    ["能广播", "set_grad_enabled", "create_graph", "dilation", "H_out", "pad_sequence", "pack_padded_sequence"],
)
def test_every_idea_the_notes_teach_has_a_card(idea: str) -> None:
    assert [f.front for f in question_faces() if idea in f.front or idea in f.back]


def test_a_card_says_transforms_take_tensors_too() -> None:
    assert [f for f in question_faces() if "RandomCrop" in f.front and "张量" in f.front and f.back.startswith("能")]
