"""The Chinese interface's catalogue and templates (docs/i18n.md).

- The committed ``django.mo`` is what ``django.po`` compiles to, so ``make run`` and ``make test`` on a
  fresh clone need no gettext tools; every message has its translation; every marked string is in the
  catalogue (makemessages, where GNU gettext is installed).
- No template shows an English word outside ``{% translate %}`` / ``{% blocktranslate %}`` (text nodes and
  the attributes people read: title, aria-label, alt, placeholder), a short allowlist of names aside.
- No template can print a template comment: Django's ``{# #}`` is one line, a second line shows as text.
"""

from __future__ import annotations

import gettext
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import polib
import pytest
from django.core.management import call_command
from django.template import Template, engines
from django.template.base import Node, TextNode
from django.templatetags.i18n import BlockTranslateNode, TranslateNode
from django.test import override_settings

REPO = Path(__file__).resolve().parents[1]
PO = REPO / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"
MO = PO.with_suffix(".mo")
TEMPLATE_DIRS = [REPO / "templates", *sorted(REPO.glob("*/templates"))]

# Names and symbols that read the same in both languages (product names, units, code, keys).
ALLOWED_WORDS = {
    "quizsite", "English", "AUC", "XP", "dtype", "rtol", "atol", "CPU", "GPU", "MB", "SM", "FSRS",
}  # fmt: skip
# Text inside these elements is code, keys or data, never prose.
CODE_ELEMENTS = {"code", "kbd", "pre", "script", "style", "samp"}
READ_ATTRIBUTES = {"title", "aria-label", "alt", "placeholder"}
WORD = re.compile(r"[A-Za-z][A-Za-z'’]+")
HOLE = " "  # what stands for a variable, a tag or a translated string in a template's text


def templates() -> list[Path]:
    return sorted(path for folder in TEMPLATE_DIRS for path in folder.rglob("*") if path.suffix in (".html", ".txt"))


def compiled(path: Path) -> Template:
    return engines["django"].engine.from_string(path.read_text())  # type: ignore[attr-defined,no-any-return]


def _children(node: Node) -> list[Node]:
    """A node's nodes in source order: every branch of an if, a for's body and its empty part, a block's body."""
    if hasattr(node, "conditions_nodelists"):
        return [n for _, nodelist in node.conditions_nodelists for n in nodelist]
    found: list[Node] = []
    for attr in node.child_nodelists:
        found += list(getattr(node, attr, None) or [])
    return found


def skeleton(nodes: list[Node]) -> str:
    """The template's own text, with HOLE for every variable, tag and translated string."""
    parts: list[str] = []
    for node in nodes:
        if isinstance(node, TextNode):
            parts.append(node.s)
        elif isinstance(node, TranslateNode | BlockTranslateNode):
            parts.append(HOLE)
        else:
            parts.append(HOLE)
            parts.append(skeleton(_children(node)))
    return "".join(parts)


class _Reader(HTMLParser):
    """The words a person reads in a skeleton: text outside code, and the attributes screen readers say."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.words: list[str] = []
        self.inside: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in CODE_ELEMENTS:
            self.inside.append(tag)
        for name, value in attrs:
            if name in READ_ATTRIBUTES and value:
                self.words += WORD.findall(value)

    def handle_endtag(self, tag: str) -> None:
        if tag in CODE_ELEMENTS and tag in self.inside:
            self.inside.remove(tag)

    def handle_data(self, data: str) -> None:
        if not self.inside:
            self.words += WORD.findall(data)


def unmarked_words(path: Path) -> list[str]:
    text = skeleton(list(compiled(path).nodelist))
    if path.suffix == ".txt":
        words = WORD.findall(text)
    else:
        reader = _Reader()
        reader.feed(text)
        words = reader.words
    return [word for word in words if word not in ALLOWED_WORDS]


@pytest.mark.parametrize("path", templates(), ids=lambda p: str(p.relative_to(REPO)))
def test_it_marks_every_word_a_learner_reads_in_each_template(path: Path) -> None:
    words = unmarked_words(path)
    assert not words, f"{path.relative_to(REPO)}: unmarked {words}: wrap them in translate or blocktranslate"


def test_it_would_notice_an_unmarked_word(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text('{% load i18n %}<p title="Hover me">{% translate "Saved" %} Done <code>x.sum()</code></p>')
    assert unmarked_words(page) == ["Hover", "me", "Done"]


@pytest.mark.parametrize("path", templates(), ids=lambda p: str(p.relative_to(REPO)))
def test_it_never_leaves_a_template_comment_as_text(path: Path) -> None:
    """A ``{#`` that Django did not take as a comment (it spans lines) is printed on the page as it is."""
    text = skeleton(list(compiled(path).nodelist))
    assert "{#" not in text, f"{path.relative_to(REPO)}: a multi-line {{# #}}; use {{% comment %}}"


def catalogue() -> polib.POFile:
    return polib.pofile(str(PO))


def _key(entry: polib.POEntry) -> str:
    return f"{entry.msgctxt}\x04{entry.msgid}" if entry.msgctxt else entry.msgid


def test_it_translates_every_message_of_the_catalogue() -> None:
    po = catalogue()
    untranslated = [e.msgid for e in po if not e.obsolete and (not e.translated() or "fuzzy" in e.flags)]
    assert not untranslated, f"give these a translation in {PO.relative_to(REPO)}: {untranslated[:10]}"
    assert not po.obsolete_entries(), "obsolete entries: run scripts/messages.sh (it drops them)"


def test_it_ships_the_compiled_catalogue_of_the_po_file() -> None:
    """The .mo is committed (a fresh clone needs no msgfmt): it must say exactly what the .po says."""
    with MO.open("rb") as handle:
        compiled_catalog = dict(gettext.GNUTranslations(handle)._catalog)  # type: ignore[attr-defined]
    expected: dict[object, str] = {}
    for entry in catalogue().translated_entries():
        if entry.msgid_plural:
            for index, text in entry.msgstr_plural.items():
                expected[(_key(entry), int(index))] = text
        else:
            expected[_key(entry)] = entry.msgstr
    compiled_catalog.pop("", None)
    assert compiled_catalog == expected, "django.mo is out of date: run scripts/messages.sh"


SOURCES = ("api", "cards", "courses", "graders", "jobs", "outputs", "quizsite", "teams", "templates")


@pytest.mark.skipif(shutil.which("xgettext") is None, reason="makemessages needs GNU gettext's xgettext")
def test_it_has_every_marked_string_in_the_catalogue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """makemessages, run over links to the sources in a scratch folder (so the committed catalogue is never
    touched), finds exactly the msgids of the committed catalogue."""
    for name in SOURCES:
        (tmp_path / name).symlink_to(REPO / name)
    (tmp_path / "locale").mkdir()
    monkeypatch.chdir(tmp_path)
    with override_settings(LOCALE_PATHS=[tmp_path / "locale"]):
        call_command("makemessages", locale=["zh_Hans"], extensions=["html", "txt", "py"], symlinks=True, verbosity=0)
    fresh = {_key(e) for e in polib.pofile(str(tmp_path / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po"))}
    committed = {_key(e) for e in catalogue()}
    assert not fresh - committed, f"new strings: run scripts/messages.sh and translate {sorted(fresh - committed)[:10]}"
    assert not committed - fresh, f"strings no longer used: run scripts/messages.sh {sorted(committed - fresh)[:10]}"
