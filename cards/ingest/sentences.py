"""Key sentences of a note and the term each one asks for: the cloze and definition rules of the importer.

A card asks one thing with a short answer, so the importer works on sentences, never on passages:

- **cloze**: a sentence with a key term blanked. The author's bold marks key terms (one card per bold
  term); without one, an inline code span is the term (one card per sentence: the last span that is
  not the sentence's subject, or its only one). A bold longer than ``MAX_TERM`` characters is a whole
  statement, not a term; a sentence naming three or more code spans is a list of APIs, not a fact; a
  blank must leave at least ``MIN_CONTEXT`` characters of sentence to recall it from.
- **definition**: a list item or paragraph ``term：explanation`` (the term in code or bold) asks what
  the term does; the explanation is the answer when it is one short fact. ``name：`code` or `code```
  (a short name, then only code) asks what is written for the name.
- no card from a sentence that points elsewhere (a link), leads into an example ("例如…："), or names
  two alternatives of which one would give the other away (```a` or `b```).

Pure: markdown source in, spans out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_TERM = 30  # characters of a bold's visible text: more is a statement to read, not a term to recall
MAX_CODE_TERM = 40
MIN_CONTEXT = 4  # word characters (a CJK character is one) left in the sentence around the blank
MAX_SENTENCE = 200  # characters of prose: a longer sentence is a passage (the front's limit)
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_MATH = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.DOTALL)
# Linear: a link's text stops at the next bracket and its target at the next parenthesis, so a run of
# unclosed ``![a`` is read once rather than once per opening.
_LINK = re.compile(r"!?\[[^\[\]]*\]\([^()]*\)|<https?://[^<>]+>")
_SENTENCE_END = re.compile(r"[。！？；]+|[.!?;](?=\s|$)")
_WORD = re.compile(r"[\w\u3400-\u9fff]")
_CONNECTOR = re.compile(r"\s*(or|and|或者?|和|与|、|,|，|/)?\s*", re.IGNORECASE)
_EXAMPLE = re.compile(r"\s*(例子|例如|比如|如下|举例|e\.g\.|for example)", re.IGNORECASE)
_NAMED_CODE = re.compile(
    r"^\s*(?P<term>[^`*:：\n]+?)\s*[:：]\s*(?P<rest>`[^`\n]+`(?:\s*(?:or|and|或者?|和|、|,|，|/)\s*`[^`\n]+`)*)\s*$",
    re.IGNORECASE,
)
_DEFINITION = re.compile(r"^\s*(?P<term>`[^`\n]+`|\*\*[^*\n]+\*\*)\s*[:：]\s*(?P<rest>\S.*)$", re.DOTALL)


@dataclass(frozen=True)
class Blank:
    """A term to blank out: ``content[start:end]`` is its markdown, ``answer`` the card's back."""

    start: int
    end: int
    answer: str
    term: str  # the term's own text, for the card's identity


@dataclass(frozen=True)
class Definition:
    term: str  # markdown of the term
    explanation: str


def masked(content: str) -> str:
    """The content with code spans, math and links blanked to NULs (same length), so no punctuation
    inside them ends a sentence or looks like markup."""
    for pattern in (_CODE_SPAN, _MATH, _LINK):
        content = pattern.sub(lambda m: "\0" * len(m.group(0)), content)
    return content


def sentence_spans(content: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of a paragraph's markdown, its closing punctuation included."""
    hidden = masked(content)
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(hidden):
        spans.append((start, match.end()))
        start = match.end()
    if start < len(content):
        spans.append((start, len(content)))
    return [(a, b) for a, b in ((_lstrip(content, a), b) for a, b in spans) if content[a:b].strip()]


def _lstrip(content: str, start: int) -> int:
    while start < len(content) and content[start].isspace():
        start += 1
    return start


def visible_length(markdown: str) -> int:
    """Characters a reader sees: markup and whitespace runs left out."""
    text = re.sub(r"[`*_]", "", markdown)
    return len(" ".join(text.split()))


def bold_terms(bolds: list[tuple[int, int, str]], start: int, end: int) -> list[Blank]:
    """The author's bold spans inside one sentence that are short enough to be terms."""
    return [
        Blank(a, b, f"**{inner}**", inner)
        for a, b, inner in bolds
        if start <= a and b <= end and visible_length(inner) <= MAX_TERM
    ]


def code_term(content: str, start: int, end: int) -> list[Blank]:
    """The one code span a sentence asks for, or nothing (see the module docstring)."""
    spans = [m for m in _CODE_SPAN.finditer(content, start, end) if m.end() <= end]
    if not spans or len(spans) > 2:
        return []
    if len(spans) == 2 and _CONNECTOR.fullmatch(content[spans[0].end() : spans[1].start()]):
        return []  # "`a` or `b`": one alternative gives the other away
    termlike = [m for m in spans if _is_code_term(m.group(2))]
    if not termlike:
        return []
    leading = [m for m in termlike if not _WORD.search(masked(content[start : m.start()]))]
    later = [m for m in termlike if m not in leading]
    chosen = later[-1] if later else termlike[0]
    return [Blank(chosen.start(), chosen.end(), chosen.group(0), chosen.group(2).strip())]


def _is_code_term(code: str) -> bool:
    code = code.strip()
    if not 2 <= len(code) <= MAX_CODE_TERM or "\n" in code or re.fullmatch(r"\\\w", code):
        return False  # too short or long, several lines, or an escape such as "\n"
    return bool(re.search(r"[A-Za-z]", code))


def asks_enough(sentence: str, blank_start: int, blank_end: int) -> bool:
    """The sentence around a blank is a fact of its own: enough prose to recall the term from, short
    enough for a card's front, not a pointer elsewhere (a link), not the lead-in to an example, and not
    cut through a bold."""
    rest = sentence[:blank_start] + sentence[blank_end:]
    context = _WORD.findall(masked(rest).replace("\0", ""))
    if len(context) < MIN_CONTEXT or visible_length(sentence) > MAX_SENTENCE:
        return False
    if _LINK.search(sentence) or _EXAMPLE.match(sentence) or masked(sentence).count("**") % 2:
        return False
    return True


def alternatives(content: str) -> Definition | None:
    """``name：`a` or `b``` (a short name, then only code): what is written for that name."""
    match = _NAMED_CODE.match(content)
    if not match or visible_length(match.group("term")) > MAX_TERM:
        return None
    return Definition(term=match.group("term").strip(), explanation=" ".join(match.group("rest").split()))


def definition(content: str) -> Definition | None:
    """``term：explanation`` at the start of a paragraph, the term in code or bold."""
    match = _DEFINITION.match(content)
    if not match:
        return None
    term, rest = match.group("term").strip(), " ".join(match.group("rest").split())
    if visible_length(term) > MAX_TERM or len(_WORD.findall(masked(rest))) < 2:
        return None
    return Definition(term=term, explanation=rest)
