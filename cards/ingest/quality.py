"""Checks a teacher makes on a deck that the size rules cannot: a front that asks two questions, two cards
that ask the same fact, and half-width punctuation inside Chinese sentences. Pure: no Django;
``manage.py audit_cards`` and the deck's tests use them.

Both are measures of text, so they flag what to read, not a verdict: a duplicate pair is two cards that show
the same API names and say much the same around them (character pairs, so Chinese counts as well as English).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", re.DOTALL | re.MULTILINE)
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
# A question mark that closes a question: two of them, or one asking for two answers at once ("各是", "分别是").
_QUESTION_END = re.compile(r"[^\s?？][?？]")
_TWO_ANSWERS = re.compile(r"各是|各为|各自是|分别是|分别为|分别对应|分别表示")
_WORD = re.compile(r"[\W_]+")
_NAME = re.compile(r"[A-Za-z_][\w.]*")
# Names too common to tell two facts apart ("x", "torch", "tensor").
_COMMON = frozenset("x a b t y p w v i n F C nn torch tensor dim True False None model loss".split())
# Two cards ask the same fact when they name the same APIs (half their names in common) and their words
# around the code say the same (cosine of character pairs).
DUPLICATE_NAMES = 0.5
DUPLICATE_WORDS = 0.45


@dataclass(frozen=True)
class Face:
    """What the checks read of a card: a name to show, its kind, front and back."""

    name: str
    kind: str
    front: str
    back: str


def prose(markdown: str) -> str:
    """The words of a face around its code: fenced blocks and code spans become one placeholder each."""
    return _CODE_SPAN.sub("C", _FENCE.sub("", markdown))


def asks_two_questions(front: str) -> bool:
    """A front that asks two things ("会怎样？怎么改？", "形状各是？"): it should be two cards."""
    text = prose(front)
    return len(_QUESTION_END.findall(text)) > 1 or bool(_TWO_ANSWERS.search(text))


_CJK = "\u3400-\u9fff"
_CHINESE = f"{_CJK}\u3000-\u303f\uff00-\uffef"  # characters and full-width marks
# A half-width mark with a Chinese character or mark right before or after it (spaces aside), outside code.
_HALF_WIDTH = re.compile(rf"(?<=[{_CHINESE}])\s*[,;:?!()]|[,;:?!()]\s*(?=[{_CJK}])")


def half_width_marks(markdown: str) -> list[str]:
    """Half-width punctuation inside Chinese sentences ("是什么?", "形状,dtype"), each with its neighbours.

    Chinese sentences take full-width marks (，；：？！（）), and a question in Chinese ends in "？" even after
    a code name or a number; code, and English text between Chinese, keep theirs.
    """
    text = _CODE_SPAN.sub("`C`", _FENCE.sub("", markdown))
    found = list(_HALF_WIDTH.finditer(text))
    if re.search(f"[{_CJK}]", text):
        found += [m for m in re.finditer(r"\?", text) if not any(f.start() <= m.start() < f.end() for f in found)]
    return [text[max(0, m.start() - 4) : m.end() + 4] for m in sorted(found, key=lambda m: m.start())]


def _names(face: Face) -> frozenset[str]:
    spans = _CODE_SPAN.findall(f"{face.front}\n{face.back}")
    return frozenset(name.split(".")[-1] for _, span in spans for name in _NAME.findall(span)) - _COMMON


def _words(face: Face) -> Counter[str]:
    flat = _WORD.sub("", _CODE_SPAN.sub("", _FENCE.sub("", face.front + face.back)).lower())
    return Counter(flat[i : i + 2] for i in range(len(flat) - 1))


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    norm = math.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))
    return sum(count * b[gram] for gram, count in a.items()) / norm if norm else 0.0


def near_duplicates(faces: Iterable[Face]) -> list[tuple[Face, Face, float]]:
    """Pairs of question cards (``qa``, ``cloze``) that look like one fact carded twice, most alike first.

    A pair counts when half the API names the two cards show are shared (``DUPLICATE_NAMES``) and their
    words around the code are alike (``DUPLICATE_WORDS``); the score is the mean of the two.
    """
    read = [(face, _names(face), _words(face)) for face in faces if face.kind in ("qa", "cloze")]
    found = []
    for (a, names_a, words_a), (b, names_b, words_b) in itertools.combinations(read, 2):
        if not names_a or not names_b:
            continue
        names = len(names_a & names_b) / len(names_a | names_b)
        words = _cosine(words_a, words_b)
        if names >= DUPLICATE_NAMES and words >= DUPLICATE_WORDS:
            found.append((a, b, round((names + words) / 2, 2)))
    return sorted(found, key=lambda row: -row[2])
