"""Markdown -> sanitised HTML for card faces and note pages. Pure: no Django import.

Notes are written by people outside the project and may contain raw HTML, so everything the
markdown renderer emits goes through an nh3 allowlist. Code is highlighted server side with
Pygments (CSS classes, see ``pygments_css``), math is left as ``\\(...\\)`` / ``\\[...\\]`` inside
``.math`` elements for KaTeX's auto-render script, and remote images become links: a page that
shows a note must never make the learner's browser fetch from a third party.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token
from markdown_it.utils import OptionsDict
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound

from cards.ingest.corrections import Correction, find_passage
from cards.ingest.markdown import make_markdown, normalize_newlines, split_front_matter
from cards.ingest.slugs import heading_anchor

__all__ = ["browser_url", "heading_anchor", "is_remote_url", "pygments_css", "render_markdown", "render_note"]

_FORMATTER = HtmlFormatter(nowrap=True)
_LANG = re.compile(r"[^\w+-]")
# nh3 serialises attribute values in double quotes with ``"`` escaped but ``<`` and ``>`` left
# as they are, so a tag ends at the first ``>`` outside a quoted value, not at the first ``>``.
_IMG = re.compile(r'<img\b((?:\s+[\w-]+(?:="[^"]*")?)*)\s*/?>')
_ATTR = re.compile(r'([\w-]+)="([^"]*)"')
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)
# What a browser does to a URL before it reads it (the WHATWG URL standard): C0 controls and spaces at
# either end are stripped, ASCII tabs and newlines anywhere are removed, and on an http(s) page a
# backslash counts as a slash. ``\\host``, ``/\host`` and `` //host`` all mean ``//host`` to it.
_URL_EDGES = re.compile(r"^[\x00-\x20]+|[\x00-\x20]+$")
_URL_TABS_NEWLINES = re.compile(r"[\t\n\r]")

_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p", "pre", "s", "span",
    "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
}  # fmt: skip
_ATTRIBUTES = {
    "*": {"class", "title"},
    "a": {"href"},
    "img": {"src", "alt"},
    "ol": {"start"},
    "td": {"style"},
    "th": {"style"},
    **{f"h{n}": {"id"} for n in range(1, 7)},
}
_CLEANER = nh3.Cleaner(
    tags=_TAGS,
    attributes=_ATTRIBUTES,
    url_schemes={"http", "https", "mailto"},
    link_rel="noopener noreferrer nofollow",
    filter_style_properties={"text-align"},
)


def render_markdown(text: str) -> str:
    """Sanitised HTML for a note or a card face; headings get the ids cards store as anchors."""
    _, body = split_front_matter(normalize_newlines(text))
    md = _renderer()
    rendered = md.renderer.render(_tokens(md, body), md.options, {})
    # Cleaned twice: the image rewrite works on sanitised markup, and its own output is checked too.
    return _CLEANER.clean(_link_remote_images(_CLEANER.clean(rendered)))


# Link targets may take this many characters per character of text (percent-encoding triples a byte, a
# CJK character is three) plus a little; past it, reference links are what multiplied them.
_LINK_CHARS_PER_CHAR = 10
_LINK_CHARS_SLACK = 4096


def _tokens(md: MarkdownIt, body: str) -> list[Token]:
    """``body`` parsed; reference links are expanded only while their targets stay in proportion to the text.

    Why: a reference's target is repeated at each use, so one ``[a]: <30 KB URL>`` and ten thousand
    ``[a]`` render 300 MB from 40 KB (issue 36: two 1 MB CSV imports stored 242 MB). An inline link
    carries its target in the text, so only references can pass the bound; then they are read as text."""
    tokens = md.parse(body)
    targets = sum(
        len(str(child.attrs.get("href") or child.attrs.get("src") or ""))
        for token in tokens
        for child in token.children or []
        if child.type in ("link_open", "image")
    )
    if targets <= _LINK_CHARS_PER_CHAR * len(body) + _LINK_CHARS_SLACK:
        return tokens
    return _renderer_without_references().parse(body)


# Blocks a passage can sit in; the callout goes after the innermost one that holds its last line.
_PASSAGE_BLOCKS = {"paragraph_open", "fence", "code_block", "table_open", "heading_open", "html_block", "math_block"}


def render_note(text: str, corrections: Sequence[Correction] = ()) -> str:
    """A note page's HTML: ``render_markdown`` plus each correction as a marked callout right after the block
    that holds its passage (the block itself marked ``corrected``). A passage found other than once is left out
    here; ``tests/cards/test_corrections.py`` holds the bundled notes to exactly once."""
    _, body = split_front_matter(normalize_newlines(text))
    md = _renderer()
    tokens = _tokens(md, body)
    lines = body.split("\n")
    for correction in corrections:
        found = find_passage(lines, correction.passage)
        if len(found) == 1:
            _insert_callout(tokens, found[0], md.render(correction.correction))
    rendered = md.renderer.render(tokens, md.options, {})
    return _CLEANER.clean(_link_remote_images(_CLEANER.clean(rendered)))


def _insert_callout(tokens: list[Token], line: int, correction_html: str) -> None:
    holding = [
        index
        for index, token in enumerate(tokens)
        if token.type in _PASSAGE_BLOCKS and token.map is not None and token.map[0] <= line < token.map[1]
    ]
    if not holding:
        return
    start = max(holding, key=lambda index: tokens[index].level)
    opened = tokens[start]
    end = start
    if opened.nesting == 1:
        end = next(
            i for i in range(start + 1, len(tokens)) if tokens[i].level == opened.level and tokens[i].nesting == -1
        )
        opened.attrJoin("class", "corrected")
    callout = Token("html_block", "", 0, level=opened.level, block=True)
    callout.content = (
        '<div class="correction"><p class="correction-label"><strong>更正 · Correction</strong></p>'
        f"{correction_html}</div>\n"
    )
    tokens.insert(end + 1, callout)


def pygments_css(selector: str = ".highlight") -> str:
    """The stylesheet for the highlighted code ``render_markdown`` emits."""
    return HtmlFormatter().get_style_defs(selector)


@lru_cache(maxsize=1)
def _renderer() -> MarkdownIt:
    md = make_markdown()
    md.add_render_rule("fence", _render_fence)
    md.add_render_rule("code_block", _render_code_block)
    md.add_render_rule("math_inline", _render_math_inline)
    md.add_render_rule("math_inline_double", _render_math_display_inline)
    md.add_render_rule("math_block", _render_math_block)
    md.add_render_rule("math_block_label", _render_math_block)
    return md


@lru_cache(maxsize=1)
def _renderer_without_references() -> MarkdownIt:
    """Parses only: ``[label]: target`` lines stay text, so no link repeats a target (see ``_tokens``)."""
    return make_markdown().disable("reference")


def _render_fence(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: dict[str, Any]) -> str:
    token = tokens[idx]
    lang = _LANG.sub("", (token.info.split() or [""])[0])
    return _highlighted(token.content, lang)


def _render_code_block(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: dict[str, Any]) -> str:
    return _highlighted(tokens[idx].content, "")


def _highlighted(code: str, lang: str) -> str:
    spans = highlight(code, _lexer(lang.lower()), _FORMATTER)
    css_lang = f' class="language-{lang}"' if lang else ""
    return f'<div class="highlight"><pre><code{css_lang}>{spans}</code></pre></div>\n'


@lru_cache(maxsize=64)
def _lexer(lang: str) -> Lexer:
    """Lexer by the fence's language name only: guessing is slow and often wrong on snippets."""
    if not lang:
        return TextLexer()
    try:
        return get_lexer_by_name(lang)
    except ClassNotFound:
        return TextLexer()


def _render_math_inline(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: dict[str, Any]) -> str:
    return f'<span class="math inline">\\({html.escape(tokens[idx].content)}\\)</span>'


def _render_math_display_inline(
    self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: dict[str, Any]
) -> str:
    return f'<span class="math display">\\[{html.escape(tokens[idx].content)}\\]</span>'


def _render_math_block(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: dict[str, Any]) -> str:
    return f'<div class="math display">\\[{html.escape(tokens[idx].content.strip())}\\]</div>\n'


def browser_url(url: str) -> str:
    """``url`` as a browser on an http(s) page reads it, before resolving it (see ``_URL_EDGES``)."""
    return _URL_TABS_NEWLINES.sub("", _URL_EDGES.sub("", url)).replace("\\", "/")


def is_remote_url(url: str) -> bool:
    """Whether a browser would fetch ``url`` from another host: it names a scheme or starts with ``//``.

    Judged on the URL as the browser reads it, never on the text as written: ``\\\\evil.example/a.png``
    has neither a scheme nor ``//`` as written, yet the browser fetches it from evil.example.
    """
    return bool(_REMOTE.match(browser_url(url)))


def _link_remote_images(cleaned: str) -> str:
    """``<img src="https://...">`` -> a link to the image; local (relative) images stay.

    Runs on nh3's output, whose attributes are always double-quoted and escaped, so the values
    read here are already safe to put back; they are re-escaped for the text node anyway.
    """

    def replace(match: re.Match[str]) -> str:
        attrs = {name.lower(): html.unescape(value) for name, value in _ATTR.findall(match.group(1))}
        src = attrs.get("src", "")
        if not src or not is_remote_url(src):
            return match.group(0)
        label = html.escape(attrs.get("alt") or "图片")
        href = html.escape(browser_url(src), quote=True)
        return f'<a href="{href}" class="remote-image" rel="noopener noreferrer nofollow">[{label}]</a>'

    return _IMG.sub(replace, cleaned)
