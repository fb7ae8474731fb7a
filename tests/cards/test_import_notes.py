"""``manage.py import_notes``: idempotent, keeps history, and changes nothing on bad input."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from django.core.management import CommandError
from django.test import TestCase

from cards.importing import MAX_NOTE_BYTES
from cards.models import Card, Note
from cards.rendering import render_markdown
from tests.cards.note_files import run_import, write_file

ROOT = Path(__file__).resolve().parents[2]
NOTES_DIR = ROOT / "notes"

NOTE = """# 张量

## 形状

张量的形状用 `x.shape` 查看，**`x.size()` 返回同样的结果**。

## 设备

张量可以在设备之间移动。

```python
torch.ones(2).sum()
>>>tensor(2.)
```
"""


def db_state() -> list[tuple[Any, ...]]:
    """Everything an import may change, to compare before and after."""
    notes = list(Note.objects.order_by("pk").values_list("slug", "content_hash", "imported_at"))
    cards = list(Card.objects.order_by("pk").values_list("pk", "key", "content_hash", "active", "updated_at"))
    return notes + cards


class BundledNotesTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        cls.output, _ = run_import(NOTES_DIR)

    def test_it_shows_its_progress_note_by_note(self) -> None:
        lines = [line for line in self.output.splitlines() if line.startswith("[")]  # not a note's warning
        self.assertEqual(len(lines), 5)
        self.assertTrue(lines[0].startswith("[####----------------] 1/5 "), lines[0])
        self.assertTrue(lines[4].startswith("[####################] 5/5 "), lines[4])

    def test_it_imports_at_least_150_active_cards_of_every_kind(self) -> None:
        active = Card.objects.active()
        self.assertEqual(Note.objects.count(), 5)
        self.assertGreaterEqual(active.count(), 150)
        kinds = set(active.values_list("kind", flat=True))
        self.assertLessEqual({"qa", "mapping", "cloze"}, kinds)
        self.assertIn("notes/pytorch-basics.md (pytorch-basics): ", self.output)

    def test_it_keeps_output_cards_out_of_review_until_the_sandbox_has_run_them(self) -> None:
        outputs = Card.objects.filter(kind="output")
        self.assertGreaterEqual(outputs.count(), 25)  # the notes' snippets less the trivial ones the curated files skip
        self.assertFalse(outputs.filter(active=True).exists())
        self.assertIn(
            f"output cards: 0 verified by the sandbox, 0 kept out of review (see manage.py check_notes), "
            f"{outputs.count()} waiting for a sandbox run\n",
            self.output,
        )

    def test_it_stores_unique_nonempty_fronts_and_rendered_html(self) -> None:
        fronts = list(Card.objects.values_list("front", flat=True))
        self.assertEqual(len(fronts), len(set(fronts)))
        self.assertFalse(Card.objects.filter(front="").exists())
        self.assertFalse(Card.objects.filter(front_html="").exists())
        self.assertFalse(Card.objects.filter(back_html="").exists())

    def test_it_links_every_card_to_a_heading_on_its_rendered_note(self) -> None:
        for note in Note.objects.all():
            html = render_markdown(note.content)
            for anchor in note.cards.values_list("anchor", flat=True):
                self.assertIn(f'id="{anchor}"', html, (note.slug, anchor))

    def test_it_does_not_read_the_drills_folder(self) -> None:
        self.assertFalse(Note.objects.filter(path__contains="drills").exists())

    def test_it_writes_nothing_when_nothing_changed(self) -> None:
        before = db_state()
        with self.assertNumQueries(2):
            output, _ = run_import(NOTES_DIR)
        self.assertEqual(db_state(), before)
        self.assertEqual(output.count(" 0 created, 0 updated, "), 5)
        self.assertEqual(output.count(" unchanged, 0 retired\n"), 5)


class ImportNotesTests(TestCase):
    def setUp(self) -> None:
        self.dir = Path(self.enterContext(tempfile.TemporaryDirectory()))
        self.note = self.write("tensors.md", NOTE)

    def write(self, name: str, content: str | bytes) -> Path:
        return write_file(self.dir, name, content)

    def card(self, heading: str, kind: str = "cloze") -> Card:
        return Card.objects.get(note__slug="tensors", heading_path=heading, kind=kind)

    def test_it_creates_one_card_per_section_statement_and_output(self) -> None:
        output, _ = run_import(self.note)
        kinds = sorted(Card.objects.values_list("kind", flat=True))
        # No card for a whole section ("设备" has one sentence and no key term): its atomic parts only.
        self.assertEqual(kinds, ["cloze", "output"])
        self.assertIn("(tensors): 2 created, 0 updated, 0 moved, 0 unchanged, 0 retired", output)
        card = self.card("形状")
        self.assertIn("\\[...\\]", card.front)
        self.assertEqual(card.anchor, "形状")
        self.assertIn("<code>x.size()</code>", card.back_html)

    def test_it_updates_an_edited_section_in_place(self) -> None:
        run_import(self.note)
        card = self.card("形状")
        self.write("tensors.md", NOTE.replace("用 `x.shape` 查看", "用 `x.shape` 或 `x.size()` 查看"))
        output, _ = run_import(self.note)
        self.assertIn("0 created, 1 updated, 0 moved, 1 unchanged, 0 retired", output)
        updated = self.card("形状")
        self.assertEqual((updated.pk, updated.uuid), (card.pk, card.uuid))
        self.assertIn("x.size()</code> 查看", updated.front_html)
        self.assertNotEqual(updated.content_hash, card.content_hash)

    def test_it_retires_a_card_whose_section_is_gone_and_revives_it_when_it_returns(self) -> None:
        run_import(self.note)
        card = self.card("形状")
        without = NOTE.split("## 形状")[0] + "## 设备" + NOTE.split("## 设备")[1]
        self.write("tensors.md", without)
        output, _ = run_import(self.note)
        self.assertIn("0 created, 0 updated, 1 moved, 0 unchanged, 1 retired", output)  # the output card moved up
        card.refresh_from_db()
        self.assertFalse(card.active)
        self.write("tensors.md", NOTE)
        output, _ = run_import(self.note)
        self.assertIn("0 created, 0 updated, 1 moved, 0 unchanged, 0 retired, 1 back in review", output)
        card.refresh_from_db()
        self.assertTrue(card.active)
        self.assertEqual(Card.objects.count(), 2)

    def test_it_never_activates_an_output_card_itself(self) -> None:
        run_import(self.note)
        card = self.card("设备", "output")
        self.assertFalse(card.active)
        self.write("tensors.md", NOTE.split("## 设备")[0])
        output, _ = run_import(self.note)
        self.assertIn("0 created, 0 updated, 0 moved, 1 unchanged, 0 retired", output)  # it was not in review
        self.write("tensors.md", NOTE)
        output, _ = run_import(self.note)
        self.assertIn("0 created, 0 updated, 0 moved, 2 unchanged, 0 retired", output)
        card.refresh_from_db()
        self.assertFalse(card.active)

    def test_it_leaves_drill_cards_on_the_same_note_alone(self) -> None:
        run_import(self.note)
        note = Note.objects.get(slug="tensors")
        drill = Card.objects.create(
            note=note, key="drill:x", kind="drill", front="写一个函数", back="答", content_hash="x"
        )
        self.write("tensors.md", NOTE + "\n## 新小节\n\n新的内容在这里。\n")
        run_import(self.note)
        drill.refresh_from_db()
        self.assertTrue(drill.active)

    def test_it_writes_nothing_in_a_dry_run(self) -> None:
        output, _ = run_import(self.note, dry_run=True)
        self.assertIn("[dry run]: 2 created", output)
        self.assertEqual(db_state(), [])
        run_import(self.note)
        before = db_state()
        self.write("tensors.md", "## 只剩这一节\n\n张量类似于 **ndarray**。\n")
        output, _ = run_import(self.note, dry_run=True)
        self.assertIn(
            "1 created, 0 updated, 0 moved, 0 unchanged, 1 retired", output
        )  # the output card was not in review
        self.assertEqual(db_state(), before)

    def test_it_prints_nothing_at_verbosity_zero_and_each_card_at_two(self) -> None:
        output, _ = run_import(self.note, verbosity=0)
        self.assertEqual(output, "")
        self.write("tensors.md", NOTE.replace("## 形状", "## 形状和大小"))
        output, _ = run_import(self.note, verbosity=2)
        # A renamed heading keeps its card: moved, never created and retired.
        self.assertIn("  > 形状和大小: 张量的形状用 `x.shape` 查看，\\[...\\]。", output)
        self.assertIn("  note text: heading renamed: '形状' -> '形状和大小'", output)
        self.assertNotIn("  - ", output)

    def test_it_reads_markdown_files_in_a_folder_without_recursing(self) -> None:
        self.write("drills/drill.md", "## 不该导入\n\n这一节在子文件夹里。\n")
        self.write("readme.txt", "## 也不该导入\n\n不是 markdown 文件。\n")
        run_import(self.dir)
        self.assertEqual(list(Note.objects.values_list("slug", flat=True)), ["tensors"])

    def test_it_skips_an_empty_file_with_a_warning(self) -> None:
        empty = self.write("empty.md", "  \n\n")
        output, err = run_import(empty, self.note)
        self.assertIn("empty.md: the file is empty, skipped.", err)
        self.assertEqual(list(Note.objects.values_list("slug", flat=True)), ["tensors"])

    def test_it_rejects_bad_input_with_the_path_and_reason_and_changes_nothing(self) -> None:
        cases = {
            "missing": (self.dir / "nope.md", "no such file or folder"),
            "not utf-8": (self.write("latin1.md", "## Café\n".encode("latin-1")), "is not valid UTF-8"),
            "binary": (self.write("model.md", b"PK\x03\x04\x00\x00binary"), "contains NUL bytes"),
            "too big": (self.write("huge.md", b"a" * (MAX_NOTE_BYTES + 1)), "over the 2097152 byte limit"),
        }
        for label, (path, reason) in cases.items():
            for paths in ([path], [self.note, path], [path, self.note]):
                with self.subTest(label, paths=paths), self.assertRaises(CommandError) as raised:
                    run_import(*paths)
                self.assertIn(f"{path}: ", str(raised.exception))
                self.assertIn(reason, str(raised.exception))
                self.assertEqual(db_state(), [])

    def test_it_rejects_two_files_with_the_same_slug(self) -> None:
        other = self.write("copy/tensors.md", NOTE)
        with self.assertRaisesMessage(CommandError, "has the same note slug 'tensors'"):
            run_import(self.note, other)
        self.assertEqual(db_state(), [])
