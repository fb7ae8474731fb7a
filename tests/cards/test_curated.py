"""Hand-written cards (``notes/cards/<stem>.toml``): checked field by field, and imported in place of cut ones."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError
from django.test import TestCase

from cards.importing import load_sources
from cards.ingest import parse_note
from cards.ingest.coverage import main as coverage_main
from cards.ingest.curated import BACK_PROSE_LIMIT, CuratedError, curated_file_path, parse_curated
from cards.ingest.sections import split_sections
from cards.models import Card, CardState, Note
from cards.rendering import render_markdown
from tests.cards.factories import make_user
from tests.cards.note_files import run_import, write_file

ROOT = Path(__file__).resolve().parents[2]
SHOWN = "notes/cards/tensors.toml"

NOTE = """# 张量

## 形状

张量的形状用 `x.shape` 查看，**`x.size()` 返回同样的结果**。

| PyTorch | NumPy |
| --- | --- |
| `x.shape` | `a.shape` |

### 改变形状

`view` 要求张量连续。

```python
torch.ones(2).sum()
>>>tensor(2.)
```

## 设备

用 `.to(device)` 移动张量。
"""

GOOD = """
[[card]]
id = "view-needs-contiguous"
section = "形状 › 改变形状"
kind = "qa"
front = "`x.view(...)` 在什么情况下会报错?"
back = "`x` 不连续时;先 `.contiguous()` 或改用 `reshape`。"
tags = ["view"]

[[card]]
id = "size-is-shape"
section = "形状"
kind = "cloze"
front = "`x.size()` 与 [...] 返回同样的结果。"
back = "`x.shape`"
"""


def card_toml(**fields: Any) -> str:
    """One [[card]] table: a valid card unless ``fields`` change it (``None`` drops a field)."""
    row: dict[str, Any] = {"id": "a-card", "section": "形状", "kind": "qa", "front": "问?", "back": "答。"}
    row.update(fields)
    lines = ["[[card]]"]
    for name, value in row.items():
        if value is None:
            continue
        if isinstance(value, list):
            lines.append(f"{name} = {json.dumps(value, ensure_ascii=False)}")
        elif isinstance(value, str):
            lines.append(f"{name} = {json.dumps(value, ensure_ascii=False)}")
        else:
            lines.append(f"{name} = {value}")
    return "\n".join(lines) + "\n"


def errors_of(toml: str, note: str = NOTE) -> list[str]:
    sections, _ = split_sections(note)
    with pytest.raises(CuratedError) as caught:
        parse_curated(toml, sections, SHOWN)
    return str(caught.value).splitlines()


# --- validation: every mistake names the file, the card and the field -------------------------------------


def test_it_reads_a_good_file_in_file_order_with_sections_and_tags() -> None:
    sections, _ = split_sections(NOTE)
    cards = parse_curated(GOOD, sections, SHOWN)
    assert [(c.id, c.kind, c.section.heading.text if c.section.heading else "") for c in cards] == [
        ("view-needs-contiguous", "qa", "改变形状"),
        ("size-is-shape", "cloze", "形状"),
    ]
    assert cards[0].tags == ("view",)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"colour": "red"}, "card 1 (a-card): unknown field 'colour'"),
        ({"id": None}, "card 1 (no id): id is missing or empty"),
        ({"front": "  "}, "card 1 (a-card): front is missing or empty"),
        ({"back": None}, "card 1 (a-card): back is missing or empty"),
        ({"section": 3}, "card 1 (a-card): section is missing or empty"),
        ({"kind": None}, "card 1 (a-card): kind is missing or empty"),
        ({"id": "View_Card"}, "card 1 (View_Card): id must be lowercase words joined by '-'"),
        ({"section": "形状 › 没有"}, "card 1 (a-card): section '形状 › 没有' is not a heading path of the note"),
        ({"kind": "output"}, "card 1 (a-card): kind must be one of qa, cloze"),
        ({"kind": "cloze", "front": "没有空"}, "card 1 (a-card): a cloze front holds [...] exactly once"),
        ({"kind": "cloze", "front": "[...] 和 [...]"}, "card 1 (a-card): a cloze front holds [...] exactly once"),
        ({"back": "长" * (BACK_PROSE_LIMIT + 1)}, "card 1 (a-card): back has 151 characters of prose; one fact"),
        ({"front": "长" * 201}, "card 1 (a-card): front has 201 characters of prose; at most 200"),
        ({"tags": ["View"]}, "card 1 (a-card): tags must be a list of lowercase words"),
        ({"tags": "view"}, "card 1 (a-card): tags must be a list of lowercase words"),
    ],
)
def test_it_names_the_file_card_and_field_of_each_mistake(fields: dict[str, Any], message: str) -> None:
    errors = errors_of(card_toml(**fields))
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{SHOWN}: {message}"), errors[0]


def test_it_does_not_count_code_blocks_in_a_back_against_its_prose_limit() -> None:
    code = "```python\n" + "x = torch.ones(2)\n" * 20 + "```"
    sections, _ = split_sections(NOTE)
    assert parse_curated(card_toml(back=f"这样写:\n\n{code}"), sections, SHOWN)[0].back.endswith("```")


def test_it_refuses_an_id_used_twice_even_when_the_first_card_has_other_mistakes() -> None:
    errors = errors_of(card_toml(kind="essay") + card_toml(front="另一问?"))
    assert errors == [
        f"{SHOWN}: card 1 (a-card): kind must be one of qa, cloze",
        f"{SHOWN}: card 2 (a-card): id is used by an earlier card",
    ]


def test_it_refuses_a_section_path_that_names_two_sections() -> None:
    note = "# 笔记\n\n## 形状\n\n一句话。\n\n## 形状\n\n另一句。\n"
    assert errors_of(card_toml(), note) == [
        f"{SHOWN}: card 1 (a-card): section '形状' names two sections of the note; rename one heading"
    ]


def test_it_names_the_section_under_a_title_heading_by_the_titles_text() -> None:
    note = "## Pytorch\n\nPyTorch 是**动态图**框架。\n\n### 常用操作\n\n- `x.view`：改变形状\n"
    sections, _ = split_sections(note)
    (card,) = parse_curated(card_toml(section="Pytorch"), sections, SHOWN)
    assert card.section is sections[0] and not sections[0].path
    parsed = parse_note(note, "summary", card_toml(section="Pytorch"), SHOWN)
    assert [c.heading_path for c in parsed.cards] == ["Pytorch"]  # what coverage and the audit look for


def test_a_cloze_blank_inside_code_renders_without_a_backslash() -> None:
    def cloze_front(front: str) -> str:
        toml = card_toml(kind="cloze", front=front, back="`weight - lr * grad`")
        return next(c.front for c in parse_note(NOTE, "tensors", toml, SHOWN).cards if c.kind == "cloze")

    in_code, in_prose = cloze_front("SGD:`weight = [...]`"), cloze_front("SGD 的更新:[...]")
    assert in_code == "SGD:`weight = [...]`" and "<code>weight = [...]</code>" in render_markdown(in_code)
    assert in_prose == r"SGD 的更新:\[...\]" and "\\" not in render_markdown(in_prose)


def test_it_lists_every_mistake_of_the_file_at_once() -> None:
    errors = errors_of(card_toml(kind="essay") + card_toml(id="b-card", section="没有", back=""))
    assert errors == [
        f"{SHOWN}: card 1 (a-card): kind must be one of qa, cloze",
        f"{SHOWN}: card 2 (b-card): back is missing or empty",
    ]


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[[card]\nid = 1", f"{SHOWN}: not valid TOML ("),
        ('title = "x"\n' + GOOD, f"{SHOWN}: expected only [[card]] and [[skip]] tables (found title)."),
        ('card = "x"\n', f"{SHOWN}: expected only [[card]] and [[skip]] tables (found card)."),
    ],
)
def test_it_refuses_a_file_that_is_not_a_list_of_card_tables(toml: str, message: str) -> None:
    assert errors_of(toml)[0].startswith(message)


def test_it_finds_a_notes_curated_file_beside_it_in_a_cards_folder() -> None:
    assert curated_file_path(Path("notes/pytorch-basics.md")) == Path("notes/cards/pytorch-basics.toml")


# --- parsing a note with its curated file ----------------------------------------------------------------


def test_it_replaces_cut_questions_and_clozes_but_keeps_mapping_and_output_cards() -> None:
    cut = parse_note(NOTE, "tensors")
    assert {c.kind for c in cut.cards} == {"cloze", "mapping", "output"}
    curated = parse_note(NOTE, "tensors", GOOD, SHOWN)
    kinds = [(c.kind, c.heading_path) for c in curated.cards]
    assert kinds == [
        ("cloze", "形状"),
        ("mapping", "形状"),
        ("mapping", "形状"),
        ("qa", "形状 › 改变形状"),
        ("output", "形状 › 改变形状"),
    ]
    cloze = curated.cards[0]
    assert cloze.front == "`x.size()` 与 \\[...\\] 返回同样的结果。"
    assert cloze.back == "`x.shape`"
    assert curated.cards[3].tags == ["tensors", "view"]
    kept = ("mapping", "output")
    assert [c.key for c in cut.cards if c.kind in kept] == [c.key for c in curated.cards if c.kind in kept]


SKIP = """
[[skip]]
section = "形状 › 改变形状"
code = "torch.ones(2).sum()"
why = "trivial"
"""


def test_a_skip_leaves_its_output_card_out_and_keeps_the_other_cards() -> None:
    kept = parse_note(NOTE, "tensors", GOOD, SHOWN)
    skipped = parse_note(NOTE, "tensors", GOOD + SKIP, SHOWN)
    assert [c.kind for c in kept.cards if c.kind == "output"] == ["output"]
    assert [c.key for c in skipped.cards] == [c.key for c in kept.cards if c.kind != "output"]


@pytest.mark.parametrize(
    ("skip", "message"),
    [
        (
            SKIP.replace("torch.ones(2).sum()", "x.sum()"),
            f"{SHOWN}: skip 1: no output cards of its section have the code 'x.sum()'",
        ),
        (SKIP.replace("形状 › 改变形状", "形状"), f"{SHOWN}: skip 1: no output cards of its section have the code"),
        (SKIP.replace('why = "trivial"', ""), f"{SHOWN}: skip 1: why is missing or empty"),
        (SKIP.replace("形状 › 改变形状", "设备 › 没有"), f"{SHOWN}: skip 1: section '设备 › 没有' is not one heading"),
    ],
)
def test_a_skip_that_matches_no_output_card_or_lacks_a_reason_is_a_mistake(skip: str, message: str) -> None:
    with pytest.raises(CuratedError) as caught:
        parse_note(NOTE, "tensors", GOOD + skip, SHOWN)
    assert str(caught.value).startswith(message)


def test_an_empty_curated_file_means_no_questions_for_the_note() -> None:
    parsed = parse_note(NOTE, "tensors", "", SHOWN)
    assert {c.kind for c in parsed.cards} == {"mapping", "output"}


def test_a_curated_cards_key_depends_on_the_note_and_id_only() -> None:
    before = parse_note(NOTE, "tensors", GOOD, SHOWN).cards
    moved = GOOD.replace('section = "形状 › 改变形状"', 'section = "设备"').replace("在什么情况下会报错", "何时报错")
    after = parse_note(NOTE, "tensors", moved, SHOWN).cards
    key = {c.front: c.key for c in before}["`x.view(...)` 在什么情况下会报错?"]
    edited = next(c for c in after if c.front == "`x.view(...)` 何时报错?")
    assert edited.key == key
    assert edited.heading_path == "设备"
    assert parse_note(NOTE, "other", GOOD, SHOWN).cards[0].key != before[0].key


def test_a_curated_files_edit_changes_the_notes_hash() -> None:
    assert parse_note(NOTE, "t", GOOD, SHOWN).content_hash != parse_note(NOTE, "t", GOOD + "\n#\n", SHOWN).content_hash


# --- importing ---------------------------------------------------------------------------------------------


class CuratedImportTests(TestCase):
    def setUp(self) -> None:
        self.dir = Path(self.enterContext(tempfile.TemporaryDirectory()))
        self.note = self.write("tensors.md", NOTE)
        self.cards_file = self.write("cards/tensors.toml", GOOD)

    def write(self, name: str, content: str | bytes) -> Path:
        return write_file(self.dir, name, content)

    def test_it_imports_the_curated_cards_instead_of_the_cut_ones(self) -> None:
        output, _ = run_import(self.dir)
        self.assertIn("(tensors): 5 created, 0 updated, 0 moved, 0 unchanged, 0 retired", output)
        card = Card.objects.get(kind="qa")
        self.assertEqual(card.heading_path, "形状 › 改变形状")
        self.assertEqual(card.anchor, "改变形状")
        self.assertIn("<code>.contiguous()</code>", card.back_html)
        self.assertEqual(Note.objects.get().path, str(self.note))
        self.assertNotIn("x.size()` 返回同样", Card.objects.get(kind="cloze").front)

    def test_it_keeps_a_cards_key_and_history_when_its_text_is_edited(self) -> None:
        run_import(self.note)
        card = Card.objects.get(kind="qa")
        user = make_user()
        CardState.objects.create(user=user, card=card, due=date(2030, 1, 1), repetitions=3, interval=6)
        self.write("cards/tensors.toml", GOOD.replace("在什么情况下会报错", "什么时候会报错"))
        output, _ = run_import(self.note)
        self.assertIn("0 created, 1 updated, 0 moved, 4 unchanged, 0 retired", output)
        edited = Card.objects.get(kind="qa")
        self.assertEqual((edited.pk, edited.key), (card.pk, card.key))
        self.assertEqual(edited.front, "`x.view(...)` 什么时候会报错?")
        self.assertEqual(CardState.objects.get(card=edited).repetitions, 3)

    def test_it_retires_cut_clozes_when_a_curated_file_appears_and_revives_them_when_it_goes(self) -> None:
        self.cards_file.unlink()
        run_import(self.note)
        cut = Card.objects.get(kind="cloze", heading_path="形状")
        self.assertEqual(Card.objects.filter(kind="cloze").count(), 3)
        self.write("cards/tensors.toml", GOOD)
        output, _ = run_import(self.note)
        self.assertIn("2 created, 0 updated, 0 moved, 3 unchanged, 3 retired", output)
        cut.refresh_from_db()
        self.assertFalse(cut.active)
        self.cards_file.unlink()
        output, _ = run_import(self.note)
        self.assertIn("0 created, 0 updated, 0 moved, 3 unchanged, 2 retired, 3 back in review", output)
        cut.refresh_from_db()
        self.assertTrue(cut.active)

    def test_a_broken_curated_file_imports_nothing_at_all(self) -> None:
        other = self.write("other.md", "# 其他\n\n## 一节\n\n**要记住的** 一句话在这里。\n")
        self.write("cards/tensors.toml", GOOD + card_toml(section="没有这一节"))
        with self.assertRaises(CommandError) as caught:
            run_import(self.dir)
        message = str(caught.exception)
        self.assertIn("Nothing was imported", message)
        self.assertIn("cards/tensors.toml: card 3 (a-card): section '没有这一节' is not a heading path", message)
        self.assertFalse(Note.objects.exists())
        self.assertFalse(Card.objects.exists())
        self.assertTrue(other.exists())

    def test_a_broken_curated_file_leaves_an_imported_note_as_it_was(self) -> None:
        run_import(self.note)
        before = list(Card.objects.order_by("pk").values_list("pk", "front", "content_hash", "active"))
        self.write("cards/tensors.toml", GOOD.replace('kind = "qa"', 'kind = "essay"'))
        with self.assertRaises(CommandError):
            run_import(self.note)
        self.assertEqual(list(Card.objects.order_by("pk").values_list("pk", "front", "content_hash", "active")), before)

    def test_a_curated_file_that_is_not_text_is_a_clear_error(self) -> None:
        self.write("cards/tensors.toml", b"\x00\x01binary")
        with self.assertRaises(CommandError) as caught:
            run_import(self.note)
        self.assertIn("cards/tensors.toml: looks like a binary file", str(caught.exception))
        self.assertFalse(Note.objects.exists())

    def test_it_never_reads_curated_files_or_drills_as_notes(self) -> None:
        self.write("cards/extra.md", "# 不是笔记\n\n## 一节\n\n**要记住的** 一句话。\n")
        self.write("drills/tensors/reverse.toml", 'slug = "reverse"\n')
        sources, _ = load_sources([str(self.dir)])
        self.assertEqual([s.slug for s in sources], ["tensors"])
        self.assertEqual(sources[0].curated_path, str(self.cards_file))

    def test_it_reports_a_note_that_yields_no_cards(self) -> None:
        self.write("plain.md", "# 随笔\n\n## 一节\n\n这一节只是一段叙述，没有可以单独回忆的事实。\n")
        output, _ = run_import(self.dir / "plain.md", self.note)
        self.assertIn(
            f"  {self.dir / 'plain.md'} yields no cards: no sentence has a key term (bold or inline code) to blank, "
            "no list item defines a term, no table pairs terms and no code block shows its output. "
            f"Write the questions in {self.dir / 'cards' / 'plain.toml'}.",
            output,
        )
        self.assertEqual(output.count("yields no cards"), 1)
        self.assertIn("output cards: 0 verified", output)  # tensors.md has one
        output, _ = run_import(self.write("plain2.md", "# 随笔\n\n## 一节\n\n`x.t()` 把二维张量转置。\n"))
        self.assertNotIn("output cards", output)  # a note without code says nothing about them


def test_the_bundled_notes_are_all_the_notes_the_notes_folder_gives() -> None:
    """``notes/cards/*.toml`` and ``notes/drills/**`` sit under notes/ but are not notes."""
    from django.conf import settings

    assert settings.BASE_DIR  # settings are configured (load_sources stores paths relative to the project)
    sources, _ = load_sources([str(ROOT / "notes")])
    assert sorted(s.display_path for s in sources) == sorted(f"notes/{p.name}" for p in (ROOT / "notes").glob("*.md"))


# --- the coverage report -------------------------------------------------------------------------------------


def test_the_coverage_report_counts_cards_and_lists_headings_without_one(tmp_path: Path, capsys: Any) -> None:
    note = tmp_path / "tensors.md"
    note.write_text(NOTE, encoding="utf-8")
    (tmp_path / "cards").mkdir()
    (tmp_path / "cards" / "tensors.toml").write_text(GOOD, encoding="utf-8")
    assert coverage_main([str(note)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"{note}: 5 cards, cloze 1, mapping 2, output 1, qa 1",
        f"  questions: curated ({tmp_path / 'cards' / 'tensors.toml'})",
        "  headings with substance and no card: 1",
        "    - 设备",
    ]


def test_the_coverage_report_fails_on_a_broken_curated_file_or_a_missing_note(tmp_path: Path, capsys: Any) -> None:
    note = tmp_path / "tensors.md"
    note.write_text(NOTE, encoding="utf-8")
    (tmp_path / "cards").mkdir()
    (tmp_path / "cards" / "tensors.toml").write_text(card_toml(kind="essay"), encoding="utf-8")
    assert coverage_main([str(note), str(tmp_path / "missing.md")]) == 1
    out = capsys.readouterr().out
    assert f"{note}: the curated file has mistakes:" in out
    assert "card 1 (a-card): kind must be one of qa, cloze" in out
    assert f"{tmp_path / 'missing.md'}: cannot be read (" in out


def test_the_coverage_report_runs_as_a_module_without_django(tmp_path: Path) -> None:
    note = tmp_path / "plain.md"
    note.write_text(NOTE, encoding="utf-8")
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['coverage', sys.argv[1]]\n"
        "try:\n    runpy.run_module('cards.ingest.coverage', run_name='__main__')\n"
        "except SystemExit as done:\n    code = done.code\n"
        "print('django imported' if 'django' in sys.modules else 'no django')\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(note)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{note}: 6 cards, cloze 3, mapping 2, output 1")
    assert "questions: cut from the note (no curated file)" in done.stdout
    assert "headings with substance and no card: 0" in done.stdout
    assert done.stdout.rstrip().endswith("no django")
    usage = subprocess.run([sys.executable, "-m", "cards.ingest.coverage"], capture_output=True, text=True, cwd=ROOT)
    assert usage.returncode == 2
    assert "python -m cards.ingest.coverage NOTE.md" in usage.stderr
