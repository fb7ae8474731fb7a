"""The audit's two teacher's checks on small cases: two questions on one front, and one fact carded twice."""

from __future__ import annotations

import pytest

from cards.ingest.quality import Face, asks_two_questions, half_width_marks, near_duplicates


@pytest.mark.parametrize(
    "front",
    [
        "对 `w` 调用 `w.numpy()` 会怎样？怎么改？",
        "`nn.MSELoss()` 的 `reduction` 默认是什么?返回的 loss 是什么形状?",
        "`x[:, 1]` 和 `x[:, 1:2]` 的形状各是？",
        "`nn.Conv2d(1, 6, 5)` 的两个参数分别是什么？",
    ],
)
def test_it_finds_a_front_that_asks_two_things(front: str) -> None:
    assert asks_two_questions(front)


@pytest.mark.parametrize(
    "front",
    [
        "`x.view(...)` 在什么情况下会报错？",
        "`a ? b` 与 `c ? d` 在 C 里是什么？",  # question marks inside code are not questions
        "运行下面的代码会输出什么？\n\n```python\nprint('?')\nprint('？')\n```",
        "不清零，分别调用 `l1.backward()` 和 `l2.backward()`，`.grad` 与一次 `(l1 + l2).backward()` 是什么关系？",
    ],
)
def test_it_leaves_a_front_that_asks_one_thing(front: str) -> None:
    assert not asks_two_questions(front)


def face(name: str, front: str, back: str, kind: str = "qa") -> Face:
    return Face(name, kind, front, back)


def test_it_pairs_one_fact_carded_in_two_notes_and_nothing_else() -> None:
    faces = [
        face("basics", "除了 `with` 语句，`torch.no_grad` 还能怎样用在整个函数上？", "作装饰器：`@torch.no_grad()`。"),
        face(
            "summary", "除了 `with` 语句,`torch.no_grad` 还能怎样使用?", "作为装饰器 `@torch.no_grad()` 修饰整个函数。"
        ),
        face("other", "`x.view(...)` 在什么情况下会报错？", "`x` 不连续时；先 `.contiguous()`。"),
        face("same names", "`torch.no_grad` 和 `with` 有什么关系？", "完全无关的另一句话，讲的是别的事情。"),
    ]
    [(a, b, score)] = near_duplicates(faces)
    assert (a.name, b.name) == ("basics", "summary")
    assert 0.5 <= score <= 1


def test_it_never_pairs_mapping_or_output_cards() -> None:
    one = "`np.less` 对应什么？"
    assert near_duplicates([face("a", one, "`x.lt`", "mapping"), face("b", one, "`x.lt`", "mapping")]) == []


@pytest.mark.parametrize(
    ("markdown", "marks"),
    [
        ("`x` 的形状是?", ["的形状是?"]),
        ("返回新张量,`x` 不变", ["回新张量,`C` "]),
        ("形状 (N, C)：每行", ["形状 (N, C"]),
        ("移回 CPU 并转成 float64?", ["at64?"]),  # a Chinese question ends in "？" after a name too
        ("（每一维一个元组）?", ["个元组）?"]),
        ("形状 `(N, C)`：每行；`x.view(2, 3)` 是什么？", []),
        ("RuntimeError: a Tensor with 3 elements cannot be converted to Scalar；改用 `.item()`。", []),
        ("```python\nprint('中文', 1)\n```", []),
    ],
)
def test_it_finds_half_width_marks_inside_chinese_sentences_only(markdown: str, marks: list[str]) -> None:
    assert half_width_marks(markdown) == marks
