"""The pure note parser: each card kind on small fixtures, then properties of the five real notes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from cards.ingest import AnchorAllocator, CardSpec, ParsedNote, heading_anchor, note_slug, parse_note
from cards.ingest.outputs import split_session, unbound_names
from cards.rendering import render_markdown

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
NOTES = sorted((ROOT / "notes").glob("*.md"))


def parse(markdown: str, slug: str = "note") -> ParsedNote:
    return parse_note(textwrap.dedent(markdown), slug)


def of_kind(note: ParsedNote, kind: str) -> list[CardSpec]:
    return [card for card in note.cards if card.kind == kind]


@cache
def kinds_fixture() -> ParsedNote:
    return parse_note((FIXTURES / "kinds.md").read_text(encoding="utf-8"), "kinds")


@cache
def real_notes() -> tuple[tuple[str, ParsedNote], ...]:
    return tuple(
        (p.read_text(encoding="utf-8"), parse_note(p.read_text(encoding="utf-8"), note_slug(p))) for p in NOTES
    )


# --- slugs and anchors ---------------------------------------------------------------------------


def test_it_slugs_a_note_from_its_file_name_only() -> None:
    assert note_slug("notes/pytorch-basics.md") == "pytorch-basics"
    assert note_slug(Path("/elsewhere/Tips Gradients.MD")) == "tips-gradients"
    assert note_slug("笔记/张量 基础.md") == "张量-基础"
    assert note_slug("!!!.md") == "note"


def test_it_keeps_chinese_characters_in_heading_anchors() -> None:
    assert heading_anchor("NLLLoss与CrossEntropyLoss") == "nllloss与crossentropyloss"
    assert heading_anchor("获取idx: torch.nonzero") == "获取idx-torch-nonzero"
    assert heading_anchor("（）") == "section"


def test_it_suffixes_repeated_anchors_in_document_order() -> None:
    allocator = AnchorAllocator()
    assert [allocator.allocate(t) for t in ["参考", "参考", "参考-1", "参考"]] == [
        "参考",
        "参考-1",
        "参考-1-1",
        "参考-2",
    ]


def test_it_never_imports_django_from_the_pure_parser() -> None:
    code = "import sys, cards.ingest; sys.exit(any(m.split('.')[0] in {'django', 'celery'} for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False).returncode == 0


# --- qa ------------------------------------------------------------------------------------------


def test_it_never_makes_a_card_of_a_whole_section() -> None:
    """A passage cannot be recalled from its heading: no "要点是什么" card; its bold key statement
    becomes a cloze card, tied to the section by its heading path and anchor."""
    note = kinds_fixture()
    assert note.title == "样例笔记"
    assert not any("要点是什么" in c.front for c in note.cards)
    assert not [c for c in of_kind(note, "qa") if c.heading_path == "损失函数 › NLLLoss"]
    [cloze] = [c for c in note.cards if c.heading_path == "损失函数 › NLLLoss"]
    assert (cloze.kind, cloze.anchor, cloze.tags) == ("cloze", "nllloss", ["kinds", "nllloss"])


def test_it_makes_no_card_for_grouping_headings_empty_sections_or_bare_references() -> None:
    paths = {card.heading_path for card in kinds_fixture().cards}
    assert "损失函数" not in paths
    assert "损失函数 › 空的小节" not in paths
    assert "分组标题 › 参考资料" not in paths


def test_a_section_with_no_atomic_fact_gives_no_card() -> None:
    assert parse("## 怎么用？\n\n要一起用。\n\n## 其他\n\n内容。\n").cards == []


def test_it_names_cards_of_a_note_without_headings_after_its_title() -> None:
    note = parse("---\ntitle: 小笔记\n---\n\n只有一段正文，**没有标题**。\n")
    assert [(c.front, c.anchor) for c in note.cards] == [("小笔记:\n\n只有一段正文，\\[...\\]。", "")]


def test_it_keeps_a_numbered_heading_from_rendering_as_a_list() -> None:
    note = parse("## 1. 张量\n\n张量类似于 **ndarray**。\n")
    assert note.cards[0].front.startswith("1\\. 张量:")
    assert "<ol" not in render_markdown(note.cards[0].front)


def test_it_splits_a_cheat_sheet_list_into_one_card_per_term() -> None:
    fronts = [c.front for c in kinds_fixture().cards if c.heading_path == "常用操作"]
    assert fronts == ["常用操作 › `tensor.t()`: 作用是什么？", "常用操作 › `tensor.squeeze()`: 作用是什么？"]


def test_it_never_makes_a_list_of_facts_one_card() -> None:
    note = parse("## 计算图\n\n- 叶子节点的grad_fn为None。\n- 多次反向传播时，梯度是累加的。\n\n## 其他\n\n内容。\n")
    assert of_kind(note, "qa") == []


def test_a_term_with_a_passage_for_an_answer_gives_no_card() -> None:
    long = "很长的解释。" * 60
    note = parse(f"## 操作\n\n- `a()`\n  {long}\n- `b()`\n  简短的解释。\n")
    assert [c.back for c in of_kind(note, "qa")] == ["简短的解释。"]


# --- mapping -------------------------------------------------------------------------------------


def test_it_maps_filled_table_rows_in_both_directions() -> None:
    cards = {c.front: c.back for c in of_kind(kinds_fixture(), "mapping")}
    assert cards == {
        "Numpy → PyTorch: `np.less` 对应什么？": "`x.lt`",
        "Numpy → PyTorch: `np.argsort` 对应什么？": "`torch.sort`",
        "PyTorch → Numpy: `x.lt` 对应什么？": "`np.less`",
        # ``np.sort`` | ``torch.sort`` is one name under two libraries: no card of its own, but still one of
        # the answers of the card another row asks.
        "PyTorch → Numpy: `torch.sort` 对应什么？": "`np.sort`; `np.argsort`",
    }


def test_it_makes_no_card_of_a_row_that_maps_a_name_to_itself() -> None:
    table = "| Numpy | PyTorch |\n| - | - |\n| x.sum | x.sum |\n| x.min | `x.min` |\n| x.clip | x.clamp |\n"
    fronts = [c.front for c in of_kind(parse(f"## 表\n\n{table}"), "mapping")]
    assert fronts == ["Numpy → PyTorch: `x.clip` 对应什么？", "PyTorch → Numpy: `x.clamp` 对应什么？"]


def test_it_makes_no_card_of_a_row_that_maps_a_name_to_the_same_name_under_another_library() -> None:
    table = (
        "| Numpy | PyTorch |\n| - | - |\n| np.where | torch.where |\n| numpy.argsort | `torch.argsort` |\n"
        "| np.floor(x) | torch.floor(x); x.floor() |\n| np.concatenate | torch.cat |\n"
        "| np.ones(2, dtype=np.int8) | torch.ones(2, dtype=torch.int8) |\n| np.linalg.norm | torch.linalg.norm |\n"
    )
    code = "```python\ntf.logical_and(a, b)\ntorch.logical_and(a, b)\n\ntf.math.is_finite(a)\ntorch.isfinite(a)\n```\n"
    cards = of_kind(parse(f"## 表\n\n{table}\n## TF\n\n{code}"), "mapping")
    asked = {c.front.split(": ", 1)[1].removesuffix(" 对应什么？") for c in cards}
    # Kept: a method form to recall, and another name.
    assert asked == {
        "`np.floor(x)`", "`torch.floor(x); x.floor()`", "`np.concatenate`", "`torch.cat`",
        "`tf.math.is_finite(a)`", "`torch.isfinite(a)`",
    }  # fmt: skip


def test_it_keeps_mapping_keys_when_text_is_added_around_the_table() -> None:
    table = "| Numpy | PyTorch |\n| - | - |\n| np.less | x.lt |\n"
    before = of_kind(parse(f"## 表\n\n{table}"), "mapping")
    after = of_kind(parse(f"## 表\n\n新加的一段说明文字。\n\n{table}\n后面也加了一段文字。\n"), "mapping")
    assert len(before) == 2
    assert [c.key for c in before] == [c.key for c in after]


def test_it_does_not_also_ask_about_a_table_section_as_a_whole() -> None:
    assert not [c for c in of_kind(kinds_fixture(), "qa") if c.heading_path == "对照表"]


def test_it_pairs_tensorflow_and_pytorch_lines_only_where_clear() -> None:
    note = parse(
        """
        ## TF

        ```python
        tf.stop_gradient(a)
        a.detach()

        # 两个 tf 对一个 torch：不清楚，跳过
        tf.matrix_diag_part
        tf.matrix_diag
        torch.diag

        sh = (2,3)
        tf.reduce_min(a, sh)
        torch.amin(a, sh)
        ```
        """
    )
    cards = {c.front: c.back for c in of_kind(note, "mapping")}
    assert cards["TensorFlow → PyTorch: `tf.stop_gradient(a)` 对应什么？"] == "`a.detach()`"
    assert cards["PyTorch → TensorFlow: `a.detach()` 对应什么？"] == "`tf.stop_gradient(a)`"
    # The set-up line is the question's context, not leftover text in the answer.
    context = "（其中 `sh = (2,3)`）"
    assert cards[f"TensorFlow → PyTorch: `tf.reduce_min(a, sh)`{context} 对应什么？"] == "`torch.amin(a, sh)`"
    assert cards[f"PyTorch → TensorFlow: `torch.amin(a, sh)`{context} 对应什么？"] == "`tf.reduce_min(a, sh)`"
    assert not any("diag" in front for front in cards)


# --- cloze ---------------------------------------------------------------------------------------


def test_it_blanks_a_bold_key_statement_but_not_a_bold_label() -> None:
    [cloze] = of_kind(kinds_fixture(), "cloze")
    assert (
        cloze.front
        == "损失函数 › NLLLoss:\n\n输入应该是 log softmax 的结果，target 应该是\\[...\\]而不是 one hot 向量。"
    )
    assert cloze.back == "**类别下标**"  # the answer alone: the sentence is on the front


def test_it_makes_one_cloze_per_bold_part_and_ignores_bold_markers_in_code() -> None:
    note = parse("## A\n\n- 先**清零**再`a**2`然后**反向传播**，最后更新参数。\n")
    assert [c.back.split("\n")[0] for c in of_kind(note, "cloze")] == ["**清零**", "**反向传播**"]
    assert "`a**2`" in of_kind(note, "cloze")[0].front


def clozes(markdown: str) -> list[tuple[str, str]]:
    """(the sentence on the front, the answer) of each cloze card of a one-section note."""
    return [(c.front.split("\n\n", 1)[1], c.back) for c in of_kind(parse(markdown), "cloze")]


def test_it_blanks_the_inline_code_of_a_key_sentence() -> None:
    assert clozes("## A\n\n用 `.to(device)` 把张量移动到 GPU 上。\n") == [
        ("用 \\[...\\] 把张量移动到 GPU 上。", "`.to(device)`")
    ]


def test_it_makes_one_card_per_sentence_with_that_sentence_alone_on_the_front() -> None:
    markdown = "## A\n\n`x.view()` 要求张量连续。不连续时先调用 `contiguous()` 再变形。第三句没有术语。\n"
    assert clozes(markdown) == [
        ("\\[...\\] 要求张量连续。", "`x.view()`"),
        ("不连续时先调用 \\[...\\] 再变形。", "`contiguous()`"),
    ]


def test_it_asks_for_the_code_a_sentence_says_something_about_not_its_subject() -> None:
    markdown = "## A\n\n- 直接`tensor[idx]`得到的是一个0-dim 的tensor，通过`.item()`转换为一般对象\n"
    assert clozes(markdown) == [
        ("直接`tensor[idx]`得到的是一个0-dim 的tensor，通过\\[...\\]转换为一般对象", "`.item()`")
    ]
    assert clozes("## A\n\n- `torch.Size` 是 tuple 的子类\n") == [("\\[...\\] 是 tuple 的子类", "`torch.Size`")]


def test_it_prefers_the_authors_bold_term_and_never_blanks_a_bold_statement() -> None:
    assert clozes("## A\n\n除了 `ToTensor()` 其余都要求输入 **PIL 图像**。\n") == [
        ("除了 `ToTensor()` 其余都要求输入 \\[...\\]。", "**PIL 图像**")
    ]
    statement = "## A\n\nweight 默认为 none，**即默认所有类的 weight 都是 1，且不需要 sum 为 1，求 mean 时作分母**。\n"
    assert clozes(statement) == []  # a whole clause is a passage to read, not a term to recall


def test_it_asks_what_a_defined_term_does() -> None:
    note = parse("## 数据集\n\n- `__len__`：返回样本的数量。\n- **ImageFolder**: 按文件夹读取图片。\n")
    assert [(c.kind, c.front, c.back) for c in note.cards] == [
        ("qa", "数据集 › `__len__`: 作用是什么？", "返回样本的数量。"),
        ("qa", "数据集 › **ImageFolder**: 作用是什么？", "按文件夹读取图片。"),
    ]


def test_it_asks_for_the_code_written_for_a_name() -> None:
    note = parse("## 乘法\n\n- element-wise 相乘：`torch.mul()` or `torch.Tensor.mul()`\n")
    assert [(c.kind, c.front, c.back) for c in note.cards] == [
        ("qa", "乘法 › element-wise 相乘: 对应的写法是什么?", "`torch.mul()` or `torch.Tensor.mul()`")
    ]


def test_a_definition_with_a_passage_for_an_explanation_gives_no_card() -> None:
    long = "这是一个很长的解释，" * 20
    assert parse(f"## A\n\n- `x.grad`：{long}\n").cards == []


@pytest.mark.parametrize(
    ("sentence", "why"),
    [
        ("常用的有 `view`、`reshape` 和 `flatten` 三个。", "three code spans: a list of APIs, not one fact"),
        ("可以用 `x.clone()` 或者 `x.detach()` 得到。", "two alternatives: one gives the other away"),
        ("详见 [文档](https://pytorch.org) 中的 `torch.cat`。", "a pointer elsewhere"),
        ("例如：`eval_ema_pred_2` 的最后三行改变了：", "the lead-in to an example"),
        ("用 `x`。", "a one-letter name is not a term"),
        ("需要把空格和 `\\n` 替换掉。", "an escape is not a term"),
        ("这一句没有任何代码或者加粗的术语。", "nothing marked as a term"),
        ("调用 `f()`。", "too little sentence left to recall the term from"),
        ("用 `torch.cat` " + "并且说明很多很多的细节" * 20 + "。", "a passage, not a sentence"),
        ("原因：可能是 `num_workers` 的问题，**设置为0！而不是别的值**", "the sentence cuts through a bold"),
    ],
)
def test_it_makes_no_cloze_of_a_sentence_that_asks_nothing_clearly(sentence: str, why: str) -> None:
    assert clozes(f"## A\n\n{sentence}\n") == [], why


def test_it_does_not_also_blank_the_explanations_of_a_cheat_sheet() -> None:
    items = ["- tensor.t()", "将二维张量转置，同 `transpose(0, 1)` 一样。", "- tensor.squeeze()", "删除为 1 的维度。"]
    note = parse("## 操作\n\n" + "\n".join(items) + "\n")
    assert [c.kind for c in note.cards] == ["qa", "qa"]


# --- output --------------------------------------------------------------------------------------


def test_it_finds_output_in_a_following_block_and_in_transcripts() -> None:
    answers = [c.back for c in of_kind(kinds_fixture(), "output")]
    assert answers == [
        "```text\ntensor([0, 1, 2])\n```",
        "```text\ntensor(2.)\n```",
        "```text\ntensor([3., 3.])\n```",
        "```text\ntorch.Size([2])\n```",
    ]
    second = of_kind(kinds_fixture(), "output")[2]
    # The answer to the card before (">>>tensor(2.)") and the echo it came from are not in this front.
    assert second.front.endswith(
        "（最后一行的值按 Python 交互环境的方式显示）\n\n```python\na = torch.ones(2)\nb = a * 3\nb\n```"
    )


def test_it_asks_about_a_script_without_the_repl_hint() -> None:
    first = of_kind(kinds_fixture(), "output")[0]
    # No breadcrumb ("输出：") before the question: the review page's source line already names the headings.
    assert first.front == "运行下面的代码会输出什么？\n\n```python\nx = torch.arange(3)\nprint(x)\n```"


def test_it_reads_output_after_an_output_label_but_not_after_plain_code() -> None:
    note = parse(
        """
        ## A

        ```python
        print(1)
        ```

        输出：

        ```python
        1
        ```

        ## B

        ```python
        torch.device('cuda:0')
        ```

        ```python
        torch.device('cuda')
        ```
        """
    )
    assert [(c.heading_path, c.back) for c in of_kind(note, "output")] == [("A", "```text\n1\n```")]


def lines(*parts: str) -> str:
    return "\n".join(parts)


def exchanges(block: str) -> list[tuple[str, str]]:
    return [(e.code, e.output) for e in split_session(block)]


def test_it_strips_the_prompts_and_earlier_outputs_of_a_standard_repl_session() -> None:
    assert exchanges(">>> x = 1\n>>> x + 1\n2\n>>> [x,\n... x]\n[1, 1]") == [
        ("x = 1\nx + 1", "2"),
        ("x = 1\n[x,\nx]", "[1, 1]"),
    ]


def test_it_reads_ipython_out_cells_spanning_several_lines() -> None:
    code = lines(
        "In [1]: t = torch.tensor([[1, 2], [3, 4]])",
        "In [2]: t",
        "Out[2]:",
        "tensor([[1, 2],",
        "        [3, 4]])",
        "In [3]: 1 + 1",
        "Out[3]: 2",
    )
    assert exchanges(code) == [("1 + 1", "2")]  # the echo of `t` shows its own value: no card
    shown = "In [1]: x = torch.ones(2)\nIn [2]: x.sum()\nOut[2]:\ntensor(2.)\nIn [3]: x * 2\nOut[3]:\ntensor([2., 2.])"
    assert exchanges(shown) == [
        ("x = torch.ones(2)\nx.sum()", "tensor(2.)"),
        ("x = torch.ones(2)\nx * 2", "tensor([2., 2.])"),
    ]


def test_it_reads_a_traceback_up_to_its_error_line_and_leaves_the_failed_cell_out_of_later_ones() -> None:
    block = lines(
        ">>>torch.cat([t])",
        ">>>Traceback (most recent call last):",
        '  File "x"',
        "RuntimeError: bad",
        ">>>torch.stack([t])",
        ">>>tensor([[1]])",
    )
    assert exchanges(block) == [
        ("torch.cat([t])", 'Traceback (most recent call last):\n  File "x"\nRuntimeError: bad'),
        ("torch.stack([t])", "tensor([[1]])"),
    ]


def test_it_writes_out_a_random_value_the_transcript_shows_so_the_card_is_deterministic() -> None:
    block = lines(
        "In [1]: b = torch.randint(10, size=(2,)).float()",
        "In [2]: b",
        "Out[2]: tensor([3., 5.])",
        "In [3]: b.sum()",
        "Out[3]: tensor(8.)",
    )
    assert exchanges(block) == [("b = torch.tensor([3., 5.])\nb.sum()", "tensor(8.)")]


def test_it_skips_echoes_of_random_values_nobody_could_predict() -> None:
    assert split_session("a = torch.randn(3)\na\nOut[1]: tensor([0.1, 0.2, 0.3])") == []
    assert len(split_session("a = torch.ones(3)\na\nOut[1]: tensor([1., 1., 1.])")) == 1


def test_it_keeps_only_the_earlier_cells_a_cell_needs_and_silences_their_prints() -> None:
    block = lines(
        ">>> a = torch.ones(2)",
        ">>> print(a)",
        "tensor([1., 1.])",
        ">>> c = 7",
        ">>> a.add_(1)",
        "tensor([2., 2.])",
        ">>> a * 2",
        "tensor([4., 4.])",
    )
    # `c` is not needed; `print(a)` printed its own output; `a.add_(1)` changes `a`, so it stays.
    assert exchanges(block)[-1] == ("a = torch.ones(2)\na.add_(1)\na * 2", "tensor([4., 4.])")


def test_it_puts_the_set_up_a_block_needs_from_an_earlier_block_in_front() -> None:
    note = parse(
        """
        ## 准备

        ```python
        a = torch.tensor([1., 2.])
        unused = torch.zeros(3)
        ```

        ## 使用

        ```python
        >>> a.sum()
        tensor(3.)
        ```
        """
    )
    [card] = of_kind(note, "output")
    assert "```python\na = torch.tensor([1., 2.])\nunused = torch.zeros(3)\na.sum()\n```" in card.front


def test_it_does_not_borrow_set_up_that_needs_more_than_it_gives_or_imports_other_libraries() -> None:
    note = parse(
        """
        ## 准备

        ```python
        a = torch.tensor([1., 2.])
        ```

        ```python
        from torchvision import datasets
        a = make_tensor(datasets)
        ```

        ## 使用

        ```python
        >>> a.sum()
        tensor(3.)
        >>> alpha.shape
        torch.Size([2])
        ```
        """
    )
    first, second = of_kind(note, "output")
    assert "```python\na = torch.tensor([1., 2.])\na.sum()\n```" in first.front
    assert "```python\nalpha.shape\n```" in second.front  # nothing binds it: the sandbox will say so


def test_it_makes_no_card_whose_code_shows_its_answer() -> None:
    note = parse(
        """
        ## A

        ```python
        x = torch.tensor([1, 2, 3])
        x
        ```

        ```
        tensor([1, 2, 3])
        ```
        """
    )
    assert of_kind(note, "output") == []


def test_it_finds_the_names_code_reads_before_binding_them() -> None:
    assert unbound_names("dist = dist + dist.T\ndist") == {"dist"}
    assert unbound_names("for i in range(3):\n    total = i + w") == {"w"}
    assert unbound_names("def f(a):\n    return a + g\ng = 1\n[k for k in ks]") == {"ks"}
    assert unbound_names("x += 1\nnp.ones(2)") == {"x"}


# --- keys ----------------------------------------------------------------------------------------


def test_it_keeps_keys_when_a_section_is_edited_and_changes_the_hash() -> None:
    before = parse("## A\n\n旧的内容，**重点**在这里。\n")
    after = parse("## A\n\n新的内容，改写过了，**重点**在这里。\n")
    assert [c.key for c in before.cards] == [c.key for c in after.cards]
    assert [c.content_hash for c in before.cards] != [c.content_hash for c in after.cards]


def test_it_derives_keys_from_the_note_and_heading_path() -> None:
    base = parse("## A\n\n张量类似于 **ndarray**。\n").cards[0].key
    assert parse("## B\n\n张量类似于 **ndarray**。\n").cards[0].key != base
    assert parse("## A\n\n张量类似于 **ndarray**。\n", slug="other").cards[0].key != base
    assert len(base) == 64


def test_it_gives_repeated_headings_distinct_anchors_keys_and_fronts() -> None:
    note = parse("## 小结\n\n第一段讲 **view**。\n\n## 小结\n\n第二段讲 **reshape**。\n")
    assert [c.anchor for c in note.cards] == ["小结", "小结-1"]
    assert len({c.key for c in note.cards}) == 2
    assert len({c.front for c in note.cards}) == 2


def test_it_parses_crlf_and_lf_files_to_the_same_cards() -> None:
    text = "## A\n\n内容，**重点**。\n"
    assert parse_note(text, "n").cards == parse_note(text.replace("\n", "\r\n"), "n").cards


# --- the five bundled notes ----------------------------------------------------------------------


def test_it_makes_at_least_150_cards_of_every_kind_from_the_bundled_notes() -> None:
    cards = [card for _, note in real_notes() for card in note.cards]
    counts = Counter(card.kind for card in cards)
    assert len(NOTES) == 5
    assert len(cards) >= 150
    assert all(counts[kind] > 0 for kind in ("qa", "mapping", "cloze", "output")), counts


def test_it_gives_every_bundled_card_a_unique_nonempty_front_and_key() -> None:
    cards = [card for _, note in real_notes() for card in note.cards]
    fronts = Counter(card.front for card in cards)
    assert all(card.front.strip() and card.back.strip() for card in cards)
    assert [front for front, n in fronts.items() if n > 1] == []
    assert len({card.key for card in cards}) == len(cards)


def test_it_points_every_bundled_card_at_an_anchor_on_the_rendered_note() -> None:
    for text, note in real_notes():
        html = render_markdown(text)
        for card in note.cards:
            assert card.anchor, card.front
            assert f'id="{card.anchor}"' in html, (note.slug, card.anchor)
        assert [c.position for c in note.cards] == list(range(len(note.cards)))


def test_it_parses_paragraphs_of_bold_openings_in_linear_time() -> None:
    """An uploaded note is parsed on a web thread: these paragraphs took 9 s at 20 KB, and their square beyond."""
    many_bolds = "**a" * 7000  # 3,500 bolds in one paragraph: each was a card holding the whole paragraph
    unclosed = "**x** " + "**a " * 5000  # 5,000 openings, each scanned to the paragraph's end
    started = time.thread_time()  # this thread's CPU: a busy neighbour on the machine does not count
    note = parse(f"# T\n\n## Bold\n\n{many_bolds}\n\n## Open\n\n{unclosed}\n")
    assert time.thread_time() - started < 5.0  # well under 1 s of CPU now; 18 s before
    assert len(note.cards) < 20
