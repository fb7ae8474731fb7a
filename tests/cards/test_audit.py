"""manage.py audit_cards on the bundled notes, and its measures on small cases."""

from __future__ import annotations

import io

from django.core.management import call_command
from django.test import TestCase

from cards.audit import audit_cards, prose_length
from cards.ingest.curated import substantive_headings
from tests.cards.factories import make_card, make_note


def test_prose_length_leaves_out_code_blocks_and_whitespace_runs() -> None:
    assert prose_length("返回 `x`\n\n```python\nprint(1)\n```\n\n  完  ") == len("返回 `x` 完")


def test_only_headings_that_teach_something_count() -> None:
    text = "# 标题\n\n## 有内容\n\n张量是多维数组。\n\n## 只有链接\n\n参考：https://pytorch.org\n"
    assert substantive_headings(text) == ["有内容"]


class AuditTests(TestCase):
    def test_it_counts_long_and_generic_cards_and_uncovered_headings(self) -> None:
        note = make_note(slug="tiny", content="# 张量\n\n## 形状\n\n形状是元组。\n\n## 设备\n\n在 CPU 上。\n")
        make_card(note=note, heading_path="形状", front="形状: 要点是什么?", back="长" * 151)
        make_card(note=note, heading_path="形状", front="`x.shape` 的类型?", back="`torch.Size`")
        audit = audit_cards()
        [row] = audit.rows
        self.assertEqual((row.note, row.kind, row.cards), ("tiny", "qa", 2))
        self.assertEqual((row.long_backs, row.generic_fronts, row.back_max), (1, 1, 151))
        self.assertEqual(audit.uncovered, {"tiny": ["设备"]})  # a lone top heading is the title, not on the path

    def test_it_lists_two_question_fronts_and_near_duplicate_pairs(self) -> None:
        note = make_note(slug="tiny", content="# 张量\n\n## 形状\n\n形状是元组。\n")
        make_card(note=note, heading_path="形状", front="`w.numpy()` 会怎样？怎么改？", back="报错；先 `detach()`。")
        make_card(
            note=note, heading_path="形状", front="`torch.no_grad` 还能怎样用？", back="作装饰器 `@torch.no_grad()`。"
        )
        make_card(
            note=note, heading_path="形状", front="`torch.no_grad` 还能怎么用？", back="作为装饰器 `@torch.no_grad()`。"
        )
        make_card(
            note=note, heading_path="形状", front="`x` 是 `(2, 3)` 的张量，它的 `requires_grad` 是什么，为什么？",
            back="`False`：新建张量默认不要梯度。",
        )  # fmt: skip
        make_card(
            note=note, heading_path="形状", kind="mapping",
            front="PyTorch → Numpy: `torch.from_numpy(np.load(path))` 对应什么？", back="`np.load(path)`",
        )  # fmt: skip
        make_card(note=note, heading_path="形状", front="`torch.stack` 对应 NumPy 的哪个函数？", back="`np.stack`")
        make_card(note=note, heading_path="形状", front="`x` 的形状是？", back="`(5, 3)`:两维。")
        audit = audit_cards()
        self.assertEqual(audit.named_answers, ["tiny › 形状: `torch.stack` 对应 NumPy 的哪个函数？"])
        self.assertEqual(audit.half_width, ["tiny › 形状: `x` 的形状是？: `C`:两维。"])
        self.assertEqual(
            audit.two_questions,
            [
                "tiny › 形状: `w.numpy()` 会怎样？怎么改？",
                "tiny › 形状: `x` 是 `(2, 3)` 的张量，它的 `requires_grad` 是什么，为什么？",
            ],
        )
        [pair] = audit.duplicates
        self.assertIn(
            "same question: tiny › 形状: `torch.no_grad` 还能怎样用？  =  tiny › 形状: `torch.no_grad` 还能怎么用？",
            pair,
        )
        self.assertEqual(
            audit.own_answers, ["tiny › 形状: PyTorch → Numpy: `torch.from_numpy(np.load(path))` 对应什么？"]
        )
        out = io.StringIO()
        call_command("audit_cards", stdout=out)
        self.assertIn("fronts that ask two questions: 2\n", out.getvalue())
        self.assertIn("possible near-duplicates (one fact carded twice): 1 pairs\n", out.getvalue())
        self.assertIn("cards whose question shows their answer: 1\n", out.getvalue())
        self.assertIn("cards whose question spells their one-name answer: 1\n", out.getvalue())
        self.assertIn("cards with half-width marks in Chinese sentences: 1\n", out.getvalue())
        self.assertIn("drill statements that contradict their contract: ", out.getvalue())  # the drills: test_deck

    def test_the_command_prints_the_table_on_the_bundled_notes(self) -> None:
        call_command("import_notes", "notes", verbosity=0)
        out = io.StringIO()
        call_command("audit_cards", stdout=out)
        text = out.getvalue()
        self.assertIn("pytorch-basics", text)
        self.assertIn("headings with substance:", text)
        self.assertIn("output cards:", text)


def test_it_reads_headings_as_the_importer_does_behind_front_matter() -> None:
    text = '---\ntitle: "摘要"\n---\n\n## Pytorch\n\n动态图。\n\n### 常用操作\n\n- `x.view`：改变形状\n'
    assert substantive_headings(text) == ["Pytorch", "常用操作"]  # the paths its cards store


class BundledNotesTargetTests(TestCase):
    """Issue 11's targets for the five bundled notes, as a learner's review would meet them."""

    @classmethod
    def setUpTestData(cls) -> None:
        call_command("import_notes", "notes", verbosity=0)
        cls.audit = audit_cards()

    def test_every_heading_with_substance_has_a_card(self) -> None:
        self.assertEqual({slug: paths for slug, paths in self.audit.uncovered.items() if paths}, {})
        self.assertGreaterEqual(sum(self.audit.headings.values()), 60)

    def test_they_give_at_least_300_atomic_cards_none_generic_or_long(self) -> None:
        note_cards = [row for row in self.audit.rows if row.kind in ("qa", "cloze", "mapping")]
        self.assertGreaterEqual(sum(row.cards for row in note_cards), 300)
        self.assertEqual(sum(row.generic_fronts + row.long_backs + row.long_fronts for row in note_cards), 0)
