"""Re-importing an edited note: a renamed heading or a moved card keeps its row and history, and the report
says what really changed (issue 28 item 6)."""

from __future__ import annotations

import shutil
import tempfile
from datetime import date
from pathlib import Path

from django.test import SimpleTestCase, TestCase

from cards.ingest.changes import note_edits
from cards.models import Card, CardState
from tests.cards.factories import make_user
from tests.cards.note_files import run_import, write_file

ROOT = Path(__file__).resolve().parents[2]
TIPS = ROOT / "notes" / "tips-gradients-numpy-tf.md"

NOTE = """# 张量

## 形状

张量的形状用 `x.shape` 查看，**`x.size()` 返回同样的结果**。

```python
torch.ones(2, 3).shape
>>>torch.Size([2, 3])
```

## 对照

| NumPy | PyTorch |
| --- | --- |
| `np.concatenate` | `torch.cat` |
| `np.clip` | `torch.clamp` |

## 设备

```python
torch.ones(2).sum()
>>>tensor(2.)
```
"""


def keys_and_ids(slug: str) -> dict[str, int]:
    return {card.front: card.pk for card in Card.objects.filter(note__slug=slug)}


class RenameTests(TestCase):
    def setUp(self) -> None:
        self.dir = Path(self.enterContext(tempfile.TemporaryDirectory()))
        self.note = write_file(self.dir, "tensors.md", NOTE)
        run_import(self.note)
        self.cards = {card.pk: card for card in Card.objects.all()}
        self.user = make_user()

    def rewrite(self, text: str) -> str:
        write_file(self.dir, "tensors.md", text)
        return run_import(self.note, verbosity=2)[0]

    def review(self, card: Card) -> None:
        CardState.objects.create(user=self.user, card=card, due=date(2030, 1, 1), repetitions=3, interval=6)

    def test_it_keeps_every_card_under_a_renamed_heading_with_its_history(self) -> None:
        cloze = Card.objects.get(kind="cloze")
        self.review(cloze)
        output = self.rewrite(NOTE.replace("## 形状", "## 张量的形状"))
        self.assertIn("0 created, 0 updated, 2 moved, 5 unchanged, 0 retired", output)
        self.assertIn("heading renamed: '形状' -> '张量的形状'", output)
        self.assertEqual(set(Card.objects.values_list("pk", flat=True)), set(self.cards))
        cloze.refresh_from_db()
        self.assertEqual((cloze.heading_path, cloze.anchor), ("张量的形状", "张量的形状"))
        self.assertTrue(cloze.front.startswith("张量的形状:"))
        self.assertEqual(CardState.objects.get(card=cloze).repetitions, 3)
        self.assertIn(
            "0 created, 0 updated, 0 moved, 7 unchanged, 0 retired",
            self.rewrite(NOTE.replace("## 形状", "## 张量的形状")),
        )

    def test_it_keeps_a_card_edited_under_a_renamed_heading_after_a_new_one(self) -> None:
        # Renamed, reworded and moved down by a new card: only its identity (the blanked term) is left to match.
        cloze = Card.objects.get(kind="cloze")
        edited = NOTE.replace("## 形状", "## 新的\n\n**新的要点**在这里，别的内容。\n\n## 张量的形状").replace(
            "用 `x.shape` 查看", "可以用 `x.shape` 来查看"
        )
        output = self.rewrite(edited)
        self.assertIn("1 created, 1 updated, 6 moved, 0 unchanged, 0 retired", output)
        cloze.refresh_from_db()
        self.assertTrue(cloze.active)
        self.assertIn("来查看", cloze.front)

    def test_it_keeps_the_cards_of_every_section_under_a_renamed_parent(self) -> None:
        nested = NOTE.replace("## ", "### ").replace("# 张量\n", "# 张量\n\n## 基础\n\n张量是多维数组。\n")
        self.rewrite(nested)
        before = set(Card.objects.values_list("pk", flat=True))
        output = self.rewrite(nested.replace("## 基础", "## 基本概念"))
        self.assertIn("0 created, 0 updated, 7 moved, 0 unchanged, 0 retired", output)
        self.assertEqual(set(Card.objects.values_list("pk", flat=True)), before)
        self.assertEqual(Card.objects.filter(active=True).exclude(heading_path__startswith="基本概念 › ").count(), 0)

    def test_it_updates_an_edited_card_in_place_and_says_the_text_changed(self) -> None:
        mapping = Card.objects.get(kind="mapping", front__contains="np.clip")
        output = self.rewrite(NOTE.replace("| `np.clip` | `torch.clamp` |", "| `np.clip` | `torch.clamp` (min, max) |"))
        # Both directions of the row are edited in place: the reverse one is found by its place in the note.
        self.assertIn("0 created, 2 updated, 0 moved, 5 unchanged, 0 retired", output)
        self.assertIn("note text: text edited: '对照'", output)
        mapping.refresh_from_db()
        self.assertIn("(min, max)", mapping.back)
        self.assertEqual(set(Card.objects.values_list("pk", flat=True)), set(self.cards))

    def test_it_counts_a_card_that_only_moved_apart_from_edits(self) -> None:
        # The table goes before 形状: its cards keep their section and text, only their place in the note changes.
        parts = NOTE.split("## ")
        output = self.rewrite("## ".join([parts[0], parts[2], parts[1], parts[3]]))
        self.assertIn("0 created, 0 updated, 6 moved, 1 unchanged, 0 retired", output)
        self.assertNotIn("note text: text edited", output)
        self.assertEqual(set(Card.objects.values_list("pk", flat=True)), set(self.cards))

    def test_it_keeps_an_output_card_whose_snippet_is_renumbered(self) -> None:
        # A snippet added before the shown one renumbers it in its section (its old key is gone): found by content.
        output_card = Card.objects.get(kind="output", heading_path="设备")
        output = self.rewrite(NOTE.replace("## 设备\n", "## 设备\n\n```python\nx = 1\n```\n"))
        self.assertIn("0 created, 0 updated, 0 moved, 7 unchanged, 0 retired", output)
        output_card.refresh_from_db()
        self.assertEqual(Card.objects.get(kind="output", heading_path="设备").pk, output_card.pk)

    def test_it_retires_the_cards_of_a_deleted_section_and_says_so(self) -> None:
        output = self.rewrite(NOTE.split("## 对照")[0] + "## 设备" + NOTE.split("## 设备")[1])
        self.assertIn("0 created, 0 updated, 1 moved, 2 unchanged, 4 retired", output)
        self.assertIn("note text: section removed: '对照'", output)
        self.assertEqual(Card.objects.filter(kind="mapping", active=True).count(), 0)

    def test_it_warns_when_a_drill_points_at_a_heading_the_note_no_longer_has(self) -> None:
        note = Card.objects.first().note
        Card.objects.create(
            note=note,
            key="drill:shape-drill",
            kind="drill",
            front="写",
            back="答",
            heading_path="形状",
            content_hash="x",
        )
        output = self.rewrite(NOTE.replace("## 形状", "## 张量的形状"))
        self.assertIn("warning: drill 'shape-drill' points at the heading '形状', which the note no longer has", output)
        self.assertNotIn("warning", self.rewrite(NOTE))


class BundledRenameTests(TestCase):
    def test_renaming_numpy_to_pytorch_keeps_every_card_under_it(self) -> None:
        folder = Path(self.enterContext(tempfile.TemporaryDirectory()))
        note, curated = folder / TIPS.name, folder / "cards" / f"{TIPS.stem}.toml"
        curated.parent.mkdir()
        shutil.copyfile(TIPS, note)
        shutil.copyfile(TIPS.parent / "cards" / curated.name, curated)
        run_import(note)
        under = Card.objects.filter(heading_path__startswith="Numpy to PyTorch")
        ids = set(under.values_list("pk", flat=True))
        self.assertGreater(len(ids), 60)
        for path in (note, curated):
            path.write_text(path.read_text(encoding="utf-8").replace("Numpy to PyTorch", "NumPy to PyTorch"))
        output, _ = run_import(note)
        self.assertIn(f" 0 created, 0 updated, {len(ids)} moved, ", output)
        self.assertIn(" 0 retired", output)
        renamed = Card.objects.filter(heading_path__startswith="NumPy to PyTorch")
        self.assertEqual(set(renamed.values_list("pk", flat=True)), ids)


class NoteEditsTests(SimpleTestCase):
    def test_it_lists_renames_edits_additions_and_removals(self) -> None:
        old = "# T\n\n## A\n\na\n\n## B\n\nb\n\n## C\n\nsome text\n\n## F\n\nf\n"
        new = "# T\n\n## A2\n\na\n\n## B\n\nb changed\n\n## New\n\nnew\n\n## D\n\nsome text, more\n\n### E\n\ne\n"
        edits = note_edits(old, new)
        self.assertEqual(edits.renamed, [("A", "A2"), ("C", "D")])
        self.assertEqual(edits.edited, ["B", "D"])
        self.assertEqual(edits.added, ["New", "D › E"])
        self.assertEqual(edits.removed, ["F"])

    def test_it_finds_nothing_in_the_same_text(self) -> None:
        self.assertEqual(note_edits(NOTE, NOTE).lines(), [])
