"""Notes that agree with their cards: each passage a card corrects shows the correction on the note page."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.test import SimpleTestCase, TestCase, override_settings
from django.urls import reverse

from cards.ingest.corrections import Correction, CorrectionError, find_passage, parse_corrections
from cards.ingest.markdown import normalize_newlines, split_front_matter
from cards.ingest.slugs import note_slug
from cards.rendering import render_markdown, render_note
from tests.cards.factories import make_note, make_user

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "notes" / "corrections.toml"

NOTE = """# 笔记

## 累加 loss

正确的做法：用 `item()`

```python
total_loss += loss
```

下一段。
"""

ROW = 'note = "n.md"\npassage = "total_loss += loss"\ncorrection = "应写 `loss.item()`。"\n'


def correction(passage: str, text: str = "应写 `total_loss += loss.item()`。") -> Correction:
    return Correction("n", tuple(passage.splitlines()), text)


class BundledCorrectionsTests(SimpleTestCase):
    def test_every_passage_is_found_once_in_its_note(self) -> None:
        corrections = parse_corrections(BUNDLED.read_text(encoding="utf-8"), str(BUNDLED))
        self.assertGreaterEqual(len(corrections), 20)
        notes = {note_slug(p): p for p in (ROOT / "notes").glob("*.md")}
        for item in corrections:
            with self.subTest(item.quoted):
                self.assertIn(item.note, notes)
                body = split_front_matter(normalize_newlines(notes[item.note].read_text(encoding="utf-8")))[1]
                self.assertEqual(len(find_passage(body.split("\n"), item.passage)), 1)
                html = render_note(notes[item.note].read_text(encoding="utf-8"), [item])
                self.assertEqual(html.count('class="correction"'), 1)

    def test_every_correction_is_listed_in_the_notes_check(self) -> None:
        check = (ROOT / "docs" / "notes-check.md").read_text(encoding="utf-8")
        corrections = parse_corrections(BUNDLED.read_text(encoding="utf-8"), str(BUNDLED))
        for item in corrections:
            with self.subTest(item.quoted):
                self.assertIn(item.passage[-1].replace("|", "\\|"), check)


class RenderNoteTests(SimpleTestCase):
    def test_it_puts_the_callout_after_the_block_and_keeps_the_original(self) -> None:
        html = render_note(NOTE, [correction("total_loss += loss")])
        code, callout, after = html.index("total_loss"), html.index('class="correction"'), html.index("下一段")
        self.assertLess(code, callout)
        self.assertLess(callout, after)
        self.assertIn("<code>total_loss += loss.item()</code>", html)
        self.assertIn("更正 · Correction", html)
        self.assertEqual(render_note(NOTE), render_markdown(NOTE))

    def test_it_marks_a_corrected_paragraph(self) -> None:
        html = render_note(NOTE, [correction("正确的做法：用 `item()`")])
        self.assertIn('<p class="corrected">正确的做法', html)
        self.assertLess(html.index('class="correction"'), html.index("<pre>"))

    def test_it_finds_a_passage_inside_a_list_item_by_its_lines_in_a_row(self) -> None:
        note = "- 一项\n\n    正确的做法：\n    ```python\n    a = 1\n    total = a\n    ```\n\n- 二项\n"
        html = render_note(note, [correction("正确的做法：\n```python\na = 1")])
        self.assertLess(html.index("total"), html.index('class="correction"'))
        self.assertLess(html.index('class="correction"'), html.index("二项"))

    def test_it_leaves_out_a_passage_found_twice_or_never(self) -> None:
        twice = NOTE + "\n```python\ntotal_loss += loss\n```\n"
        self.assertNotIn('class="correction"', render_note(twice, [correction("total_loss += loss")]))
        self.assertNotIn('class="correction"', render_note(NOTE, [correction("not in the note")]))

    def test_it_cleans_the_correction_like_any_note_text(self) -> None:
        html = render_note(NOTE, [correction("total_loss", "**注意** <script>alert(1)</script>")])
        self.assertNotIn("<script", html)
        self.assertIn("<strong>注意</strong>", html)


class ParseCorrectionsTests(SimpleTestCase):
    def test_it_reads_the_rows(self) -> None:
        [item] = parse_corrections(f"[[correction]]\n{ROW}", "c.toml")
        self.assertEqual(item, Correction("n", ("total_loss += loss",), "应写 `loss.item()`。"))

    def test_it_rejects_bad_input_naming_every_problem(self) -> None:
        cases = {
            "not toml": ("[[correction]\n", "not valid TOML"),
            "other table": ("[[card]]\nid = 'x'\n", "expected only [[correction]] tables"),
            "unknown field": (f"[[correction]]\n{ROW}card = 'x'\n", "correction 1: unknown field 'card'"),
            "missing field": ('[[correction]]\nnote = "n.md"\npassage = "x"\n', "correction 1: correction is missing"),
            "empty passage": (
                f"[[correction]]\n{ROW.replace('total_loss += loss', '  ')}",
                "passage is missing or empty",
            ),
            "not a string": ("[[correction]]\n" + ROW.replace('"n.md"', "3"), "note is missing or empty"),
        }
        for name, (text, message) in cases.items():
            with self.subTest(name), self.assertRaisesMessage(CorrectionError, message):
                parse_corrections(text, "c.toml")


class NotePageTests(TestCase):
    def test_the_note_page_shows_the_correction(self) -> None:
        note = make_note("pytorch-basics", content=(ROOT / "notes" / "pytorch-basics.md").read_text(encoding="utf-8"))
        self.client.force_login(make_user())
        response = self.client.get(reverse("cards:note", args=[note.slug]))
        self.assertContains(response, 'class="correction"', count=18)
        self.assertContains(response, "total_loss += loss.item()")

    @override_settings(NOTE_CORRECTIONS_FILE=Path(settings.BASE_DIR) / "no-such-file.toml")
    def test_the_note_page_works_without_a_corrections_file(self) -> None:
        note = make_note("pytorch-basics", content=NOTE)
        self.client.force_login(make_user())
        response = self.client.get(reverse("cards:note", args=[note.slug]))
        self.assertNotContains(response, 'class="correction"')
        self.assertContains(response, "下一段")
