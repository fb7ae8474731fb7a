"""Two-sided equivalences ("np.less" is "x.lt") from two-column tables and TF -> PyTorch code.

A mapping card asks for one side given the other. Both directions are made when they differ;
several rows that share a right-hand side become one reverse card listing every left-hand side,
so no two cards ask the same question.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from markdown_it.token import Token

from cards.ingest.markdown import inline_plain_text

_CJK = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")
_TF_LINE = re.compile(r"^tf\.\S")
# The libraries whose names the tables map between: a name under one of them that is the same name under
# another (``np.where`` | ``torch.where``) is one fact, "PyTorch has it too", not a mapping to recall.
_LIBRARY = re.compile(r"(?<![\w.])(?:np|numpy|tf|torch)\.")


@dataclass(frozen=True)
class Pair:
    """One row: left and right as inline markdown, plus optional notes shown with the answer."""

    left: str
    right: str
    left_label: str
    right_label: str
    note: str = ""
    context: str = ""  # set-up code the row needs to be read (``sh = (2,3)``), shown with the question


def table_pairs(tokens: list[Token], table_open: int) -> list[Pair] | None:
    """Rows of a two-column table whose cells are both filled; ``None`` when not two columns."""
    rows: list[list[Token]] = []
    current: list[Token] = []
    for token in tokens[table_open:]:
        if token.type == "tr_open":
            current = []
        elif token.type == "inline":
            current.append(token)
        elif token.type == "tr_close":
            rows.append(current)
        elif token.type == "table_close":
            break
    if not rows or len(rows[0]) != 2:
        return None
    header = [inline_plain_text(cell) or fallback for cell, fallback in zip(rows[0], ("左列", "右列"), strict=True)]
    pairs = []
    for row in rows[1:]:
        if len(row) != 2:
            continue
        left, right = (cell.content.strip() for cell in row)
        if left and right:
            pairs.append(Pair(_as_code(left), _as_code(right), header[0], header[1]))
    return pairs


def tf_pairs(code: str) -> list[Pair]:
    """TensorFlow lines and the PyTorch lines written under them, where the pairing is unambiguous.

    The code is read in blank-line separated groups. A group counts when, after optional setup
    lines, it is either strictly alternating ``tf.`` / other lines, or ``k`` ``tf.`` lines
    followed by exactly ``k`` other lines; comments in the group become the card's note.
    """
    pairs = []
    for chunk in re.split(r"\n\s*\n", code):
        lines = [line.rstrip() for line in chunk.split("\n") if line.strip()]
        comments = [line.lstrip("# ").strip() for line in lines if line.lstrip().startswith("#")]
        statements = [line.strip() for line in lines if not line.lstrip().startswith("#")]
        first_tf = next((i for i, line in enumerate(statements) if _TF_LINE.match(line)), None)
        if first_tf is None:
            continue
        setup, rest = statements[:first_tf], statements[first_tf:]
        matched = _pair_lines(rest)
        if not matched:
            continue
        note = "\n".join(comments)
        context = "; ".join(setup)
        for tf_line, torch_line in matched:
            pairs.append(
                Pair(
                    _as_code(tf_line),
                    _as_code(torch_line),
                    "TensorFlow",
                    "PyTorch",
                    note,
                    _as_code(context) if context else "",
                )
            )
    return pairs


def _pair_lines(lines: list[str]) -> list[tuple[str, str]]:
    is_tf = [bool(_TF_LINE.match(line)) for line in lines]
    if any(line.endswith(":") or line.startswith(("import ", "from ")) for line in lines):
        return []
    if len(lines) % 2:
        return []
    half = len(lines) // 2
    if all(is_tf[i] == (i % 2 == 0) for i in range(len(lines))):
        return [(lines[i], lines[i + 1]) for i in range(0, len(lines), 2)]
    if all(is_tf[:half]) and not any(is_tf[half:]):
        return list(zip(lines[:half], lines[half:], strict=True))
    return []


def _as_code(cell: str) -> str:
    """Show an API name as code unless the cell already has markup or prose in it."""
    if "`" in cell or _CJK.search(cell):
        return cell
    return f"`{cell}`"


def normalized(cell: str) -> str:
    return " ".join(cell.replace("`", "").split())


def same_name(left: str, right: str) -> bool:
    """Whether a row's two sides are one name, spacing, code marks and the library prefixes aside
    (``x.sum`` | ``x.sum``; ``np.where`` | ``torch.where``; ``tf.logical_and(a, b)`` | ``torch.logical_and(a, b)``;
    not ``np.floor(x)`` | ``torch.floor(x); x.floor()``, whose method form is something to recall)."""
    return _LIBRARY.sub("", normalized(left)) == _LIBRARY.sub("", normalized(right))


def iter_directions(pairs: list[Pair]) -> Iterator[tuple[str, str, str, str, str, str]]:
    """(identity, asked side, answer, from label, to label, note) for every card the pairs make.

    The asked side carries the row's set-up as context ("`x` （其中 `sh = (2,3)`）"), never the answer.

    Rows are grouped by their labels and asked side, so a name that appears twice gives one card
    listing every answer. A row that maps a name to itself (``x.sum`` | ``x.sum``), or to the same name under
    another library (``np.where`` | ``torch.where``: :func:`same_name`), gives no card of its own: its answer
    would be its question with the prefix swapped. Where another row asks the same side (``np.argsort`` |
    ``torch.sort`` beside ``np.sort`` | ``torch.sort``), the same-name row's side is still one of that card's
    answers, so the card stays whole. Nor does a side whose answer stands whole in it
    (``torch.from_numpy(np.load(path))`` asked for ``np.load(path)``, ``x.reshape; x.view`` for
    ``x.reshape``): that direction is asked the other way only. The identity names the labels and the
    asked side, never the position of the table, so adding text around a table keeps its cards.
    """
    groups: dict[tuple[str, str, str], list[tuple[Pair, str]]] = {}
    for pair in pairs:  # every forward card first, so a learner does not meet both sides in a row
        groups.setdefault((pair.left_label, pair.right_label, normalized(pair.left)), []).append((pair, pair.right))
    for pair in pairs:
        key = (pair.right_label, pair.left_label, normalized(pair.right))
        groups.setdefault(key, []).append((pair, pair.left))
    for (from_label, to_label, asked), members in groups.items():
        if all(same_name(p.left, p.right) for p, _ in members):
            continue  # only same-name rows ask this; beside another row's answer one is still an answer
        first = next(p for p, _ in members if not same_name(p.left, p.right))
        shown = first.left if first.left_label == from_label else first.right
        if first.context:
            shown = f"{shown}（其中 {first.context}）"
        answers = dict.fromkeys(a for _, a in members)
        if all(stands_in(normalized(a), normalized(asked)) for a in answers):
            continue
        answer = "; ".join(answers)
        notes = "\n".join(dict.fromkeys(p.note for p, _ in members if p.note))
        yield f"{from_label}>{to_label}:{asked}", shown, answer, from_label, to_label, notes


def stands_in(part: str, whole: str) -> bool:
    """Whether ``part`` is a whole piece of ``whole``, spacing aside: bounded by neither a letter, digit nor
    ``_`` (``np.load(path)`` in ``torch.from_numpy(np.load(path))``; not ``x.put`` in ``x.put_``)."""
    part, whole = "".join(part.split()), "".join(whole.split())
    start = whole.find(part)
    while start >= 0:
        end = start + len(part)
        edges = (whole[start - 1] if start else " ", whole[end] if end < len(whole) else " ")
        if not any(edge.isalnum() or edge == "_" for edge in edges):
            return True
        start = whole.find(part, start + 1)
    return False
