"""Markdown note -> card specs. Pure: no Django, no I/O; the import command persists the result.

Each section (the text under a heading) can give (a note with a curated cards file, ``cards.ingest.curated``,
takes its ``qa`` and ``cloze`` cards from that file instead):
- ``qa``: one card per item of a ``term`` + short explanation list (API cheat sheets), per
  ``term：explanation`` definition and per ``name：`code``` line (``cards.ingest.sentences``); never a
  card for a whole section (a passage is reading material on the note page, not a fact to recall);
- ``cloze``: each key sentence with its key term blanked (an author's bold term, else its inline
  code); the front is that sentence alone, the back the blank alone;
- ``output``: each printed output shown with a code block, its code made to run alone
  (``cards.ingest.outputs``); the ``outputs`` app brings it into review once the sandbox has run it;
- ``mapping``: each filled row of a two-column table and each clear TF -> PyTorch code pair.

A card's ``key`` comes from the note slug, heading path, kind and the card's identity within
its section (never its text), so editing a section updates its cards in place.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

from markdown_it.token import Token

from cards.ingest.blocks import (
    Block,
    block_source,
    is_reference_only,
    is_substantive,
    list_item_source,
    top_level_blocks,
)
from cards.ingest.curated import (
    BACK_PROSE_LIMIT,
    CLOZE_BLANK,
    KINDS,
    CuratedCard,
    CuratedError,
    SkippedOutput,
    parse_curated,
    parse_skips,
    prose_length,
    section_path,
)
from cards.ingest.mappings import Pair, iter_directions, normalized, table_pairs, tf_pairs
from cards.ingest.markdown import normalize_newlines, split_front_matter
from cards.ingest.outputs import (
    CODE_INFOS,
    Exchange,
    answer_in_code,
    block_code,
    ends_in_expression,
    is_output_fence,
    is_output_label,
    split_session,
    with_setup,
)
from cards.ingest.sections import PATH_SEPARATOR, Heading, Section, split_sections
from cards.ingest.sentences import alternatives, asks_enough, bold_terms, code_term, definition, sentence_spans

BLANK = r"\[...\]"
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
# The bold's inner text never holds its own delimiter, so an opening that never closes is scanned up to
# the next delimiter, not to the paragraph's end: linear in the paragraph, however many openings it has.
_STRONG = re.compile(r"(\*\*|__)(?=\S)((?:(?!\1).)+?)(?<=\S)\1", re.DOTALL)
_CJK = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")
_TAG_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{2,}")
_MAX_TAGS = 8
# A paragraph with more bolds than this is emphasis, not key statements; each card would also carry the
# whole paragraph, so an uploaded paragraph of thousands of bolds would cost its square in time and rows.
_MAX_BOLDS = 12
_TERM_MAX = 80
_CURATED = "\x1dcurated:"  # the identity prefix of a hand-written card (no text cut from a note has \x1d)
_BLOCK_START = re.compile(r"^(\d{1,9})?([.)>#+*-])(?=\s)")


@dataclass(frozen=True)
class CardSpec:
    kind: str
    front: str
    back: str
    heading_path: str
    anchor: str
    tags: list[str]
    key: str
    content_hash: str
    position: int
    # What the importer matches a card by when its key changed (a heading renamed, the card moved): its
    # identity within its section (never its heading path; "" for a hand-written card, keyed by its id)
    # and its front without the heading path it starts with.
    identity: str = ""
    body: str = ""


@dataclass(frozen=True)
class ParsedNote:
    slug: str
    title: str
    content_hash: str
    cards: list[CardSpec]
    anchors: list[str] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)  # every heading path, as cards store them


@dataclass
class _Draft:
    kind: str
    identity: str
    front: str
    back: str
    section: Section = field(repr=False)
    tags: tuple[str, ...] = ()  # a curated card's own tags, added to those from its heading path
    code: str = ""  # an output card's snippet, as it runs


@dataclass(frozen=True)
class _Context:
    """How a section is named on its cards: markdown for fronts, plain text for keys and storage."""

    markdown: str
    plain: str


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def parse_note(text: str, slug: str, curated: str | None = None, curated_name: str = "") -> ParsedNote:
    """Every card a note gives, in reading order, with stable keys and unique fronts.

    ``curated`` is the text of the note's hand-written cards file (see ``cards.ingest.curated``):
    given, its cards replace the question and cloze cards cut from the note's sentences.
    Raises ``CuratedError`` when that file has mistakes.
    """
    text = normalize_newlines(text)
    meta, body = split_front_matter(text)
    sections, title_heading = split_sections(body)
    headings = [s.heading for s in sections if s.heading]
    title = meta.get("title") or (title_heading.text if title_heading else "") or _first_text(headings) or slug
    shown = curated_name or f"{slug} cards"
    written = parse_curated(curated, sections, shown) if curated is not None else None
    skips = parse_skips(curated, sections, shown) if curated is not None else []
    drafts: list[_Draft] = []
    earlier: list[list[str]] = []  # the note's code so far, where an output card's missing set-up is found
    for section in sections:
        ctx = _context(section, title_heading, title)
        if written is None:
            drafts.extend(_section_drafts(section, ctx, earlier))
            continue
        drafts += [_curated_draft(card) for card in written if card.section is section]
        drafts += [d for d in _section_drafts(section, ctx, earlier) if d.kind not in KINDS]
    drafts = _without_skipped(drafts, skips, shown)
    cards = _finalize(drafts, slug, title_heading, title)
    return ParsedNote(
        slug=slug,
        title=title[:300],
        content_hash=text_hash(text + (curated or "")),
        cards=cards,
        anchors=[h.anchor for h in headings],
        headings=[section_path(s) for s in sections if s.heading is not None],
    )


def _without_skipped(drafts: list[_Draft], skips: list[SkippedOutput], shown: str) -> list[_Draft]:
    """The drafts less the output cards the curated file leaves out. A skip must match exactly one card of its
    section: one that matches none (the snippet changed or moved) or several is a mistake, never a silent no-op."""
    hits: list[list[int]] = [[] for _ in skips]
    for index, draft in enumerate(drafts):
        for number, skip in enumerate(skips):
            if draft.kind == "output" and skip.matches(draft.section, draft.code):
                hits[number].append(index)
    wrong = [
        f"{shown}: skip {number}: {len(found) or 'no'} output cards of its section have the code {skip.code!r}"
        for number, (skip, found) in enumerate(zip(skips, hits, strict=True), start=1)
        if len(found) != 1
    ]
    if wrong:
        raise CuratedError("\n".join(wrong))
    dropped = {index for found in hits for index in found}
    return [draft for index, draft in enumerate(drafts) if index not in dropped]


def _curated_draft(card: CuratedCard) -> _Draft:
    front = _escaped_blank(card.front) if card.kind == "cloze" else card.front
    return _Draft(card.kind, f"{_CURATED}{card.id}", front, card.back, card.section, card.tags)


_SPAN_OR_BLANK = re.compile(rf"{_CODE_SPAN.pattern}|{re.escape(CLOZE_BLANK)}", re.DOTALL)


def _escaped_blank(front: str) -> str:
    """The blank written as cut clozes write it (escaped, so Markdown never reads it as a link), except
    inside a code span, where an escape would show as a backslash."""
    return _SPAN_OR_BLANK.sub(lambda m: m.group(0) if m.group(1) else BLANK, front)


def _first_text(headings: list[Heading]) -> str:
    return headings[0].text if headings else ""


def _context(section: Section, title_heading: Heading | None, title: str) -> _Context:
    path = section.path or ([title_heading] if title_heading else [])
    if not path:
        return _Context(markdown=title, plain=title)
    return _Context(
        markdown=PATH_SEPARATOR.join(h.markdown for h in path),
        plain=PATH_SEPARATOR.join(h.text for h in path),
    )


def _section_drafts(section: Section, ctx: _Context, earlier: list[list[str]]) -> list[_Draft]:
    tokens = section.tokens
    blocks = top_level_blocks(tokens)
    mapping_drafts, consumed = _mapping_drafts(section, blocks)
    kept = [b for i, b in enumerate(blocks) if i not in consumed]
    drafts = _qa_drafts(section, kept, ctx)
    drafts += _sentence_drafts(section, ctx, skip_lists=bool(drafts))
    drafts += _output_drafts(section, ctx, earlier)
    return drafts + mapping_drafts


def _question(ctx_markdown: str, term: str) -> str:
    return f"{ctx_markdown}{PATH_SEPARATOR}{term}: 作用是什么？"


def _qa_drafts(section: Section, kept: list[Block], ctx: _Context) -> list[_Draft]:
    """One card per item of a "term, then what it does" list, when the explanation is short.

    A section is never one card: a whole passage cannot be recalled from its heading (the minimum
    information principle); it stays reading material on the note page, and its atomic parts reach
    review as cloze, mapping and output cards.
    """
    if not any(is_substantive(section.tokens, block) for block in kept):
        return []
    return [
        _Draft("qa", f"term:{normalized(term)}", _question(ctx.markdown, _as_term(term)), rest, section)
        for term, rest in _term_items(section, kept)
        if prose_length(rest) <= BACK_PROSE_LIMIT
    ]


def _term_items(section: Section, kept: list[Block]) -> list[tuple[str, str]]:
    """``[(term, explanation)]`` when the section is a cheat sheet of "name, then what it does".

    Blocks after a list (the code under the last item, written unindented) belong to the item
    before them. Any item that is not a short term with an explanation keeps the section whole.
    """
    if not kept or kept[0].type != "bullet_list":
        return []
    lines = section.body_lines
    items: list[list[str]] = []
    for block in kept:
        if block.type == "bullet_list":
            for token in section.tokens[block.start : block.end]:
                if token.type == "list_item_open" and token.level == 1:
                    items.append([list_item_source(lines, token)])
        else:
            items[-1].append(block_source(lines, [block]))
    result = []
    for parts in items:
        head, _, rest = "\n\n".join(p for p in parts if p).partition("\n")
        term, rest = head.strip(), rest.strip()
        if not rest or not term or len(term) > _TERM_MAX or term.endswith(("。", "：", "，")):
            return []
        if _CJK.search(term) and (len(term) > 30 or term.endswith(":")):
            return []
        result.append((term, rest))
    return result if len(result) >= 2 else []


def _as_term(term: str) -> str:
    if "`" in term or _CJK.search(term) or not re.search(r"[.(_]", term):
        return term
    return f"`{term}`"


def _mapping_drafts(section: Section, blocks: list[Block]) -> tuple[list[_Draft], set[int]]:
    pairs: list[Pair] = []
    consumed: set[int] = set()
    for index, block in enumerate(blocks):
        token = section.tokens[block.start]
        found: list[Pair] | None = None
        if block.type == "table":
            found = table_pairs(section.tokens, block.start)
        elif block.type == "fence" and "tf." in token.content:
            found = tf_pairs(token.content)
        if found:
            pairs.extend(found)
            consumed.add(index)
    drafts = []
    for identity, shown, answer, from_label, to_label, note in iter_directions(pairs):
        front = f"{from_label} → {to_label}: {shown} 对应什么？"
        back = f"{answer}\n\n{note}" if note else answer
        drafts.append(_Draft("mapping", identity, front, back, section))
    return drafts, consumed


def _sentence_drafts(section: Section, ctx: _Context, skip_lists: bool) -> list[_Draft]:
    """Clozes of key sentences and definition questions (``cards.ingest.sentences``), paragraph by paragraph.

    ``skip_lists``: the section's list is a cheat sheet already asked item by item.
    """
    drafts = []
    seen: dict[str, int] = {}
    tokens = section.tokens
    for index, token in enumerate(tokens):
        if token.type != "inline" or index == 0 or tokens[index - 1].type != "paragraph_open":
            continue
        if (skip_lists and token.level > 1) or is_reference_only(token):
            continue
        content = token.content
        named = alternatives(content)
        if named is not None:
            front = f"{ctx.markdown}{PATH_SEPARATOR}{named.term}: 对应的写法是什么?"
            drafts.append(_Draft("qa", f"name:{normalized(named.term)}", front, named.explanation, section))
            continue
        found = definition(content)
        if found is not None:
            if prose_length(found.explanation) <= BACK_PROSE_LIMIT:
                front = _question(ctx.markdown, found.term)
                drafts.append(_Draft("qa", f"term:{normalized(found.term)}", front, found.explanation, section))
            continue
        bolds = _bold_spans(token)
        for start, end in sentence_spans(content):
            sentence = content[start:end]
            for blank in bold_terms(bolds, start, end) or code_term(content, start, end):
                if not asks_enough(sentence, blank.start - start, blank.end - start):
                    continue
                identity = normalized(blank.term)
                seen[identity] = seen.get(identity, 0) + 1
                if seen[identity] > 1:
                    identity = f"{identity}#{seen[identity]}"
                front = f"{ctx.markdown}:\n\n{content[start : blank.start]}{BLANK}{content[blank.end : end]}"
                drafts.append(_Draft("cloze", identity, front, blank.answer, section))
    return drafts


def _bold_spans(inline: Token) -> list[tuple[int, int, str]]:
    """``(start, end, inner markdown)`` of each key-statement bold in a paragraph's source.

    Spans are found in the source (code spans masked) and trusted only when they agree with the
    parser's count of bolds. Labels ("**疑问点：**") and bolds that are the whole paragraph
    (nothing left to recall them from) are not key statements.
    """
    content = inline.content
    expected = sum(1 for child in inline.children or [] if child.type == "strong_open")
    if not 0 < expected <= _MAX_BOLDS:
        return []
    masked = _CODE_SPAN.sub(lambda m: "\0" * len(m.group(0)), content)
    matches = list(_STRONG.finditer(masked))
    if len(matches) != expected:
        return []
    spans = []
    for match in matches:
        inner = content[match.start(2) : match.end(2)].strip()
        rest = content[: match.start()] + content[match.end() :]
        if not inner or inner.endswith((":", "：")) or len(re.sub(r"[\W_]+", "", rest)) < 4:
            continue
        spans.append((match.start(), match.end(), inner))
    return spans


def _output_drafts(section: Section, ctx: _Context, earlier: list[list[str]]) -> list[_Draft]:
    """One card per shown output, its code runnable alone (see ``cards.ingest.outputs``).

    ``earlier`` is the cleaned code of the note's code blocks so far (this section's are added), where
    a snippet's missing set-up is looked up.
    """
    leaves = _leaves(section.tokens)
    drafts = []
    used: set[int] = set()
    code_number = 0
    for position, token in enumerate(leaves):
        if token.type != "fence" or position in used:
            continue
        code_number += 1
        exchanges = split_session(token.content)
        if not exchanges:
            exchanges, output_at = _following_output(leaves, position, token)
            used.update(output_at)
        lang = (token.info.split() or ["python"])[0]
        for number, exchange in enumerate(exchanges, start=1):
            code = with_setup(exchange.code, earlier)
            if answer_in_code(code, exchange.output):
                continue
            question = "运行下面的代码会输出什么？"
            if ends_in_expression(code):
                question += "（最后一行的值按 Python 交互环境的方式显示）"
            # The question alone: the page shows the card's source line (the same headings) right above it.
            front = f"{question}\n\n{_fenced(code, lang)}"
            back = _fenced(exchange.output, "text")
            drafts.append(_Draft("output", f"code{code_number}:{number}", front, back, section, code=code))
        if lang.lower() in CODE_INFOS:
            earlier.append(block_code(token.content))
    return drafts


def _leaves(tokens: list[Token]) -> list[Token]:
    """Fences and paragraphs at any depth, in order (paragraphs as their inline token)."""
    leaves = []
    for index, token in enumerate(tokens):
        if token.type in {"fence", "code_block", "table_open", "html_block", "math_block", "hr"}:
            leaves.append(token)
        elif token.type == "paragraph_open":
            leaves.append(tokens[index + 1])
    return leaves


def _following_output(leaves: list[Token], position: int, code: Token) -> tuple[list[Exchange], list[int]]:
    """A fence right after the code (or after an "输出：" line) that shows what it printed."""
    nxt = position + 1
    if nxt < len(leaves) and leaves[nxt].type == "inline" and is_output_label(leaves[nxt].content):
        nxt += 1
        labelled = True
    else:
        labelled = False
    if nxt >= len(leaves) or leaves[nxt].type != "fence":
        return [], []
    output = leaves[nxt]
    if not (labelled or is_output_fence(output.info)) or not output.content.strip() or not code.content.strip():
        return [], []
    return [Exchange(code=code.content.strip("\n"), output=output.content.rstrip())], [nxt]


def _fenced(code: str, lang: str) -> str:
    longest = max((len(m.group(0)) for m in re.finditer(r"`{3,}", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{code}\n{fence}"


def _finalize(drafts: list[_Draft], slug: str, title_heading: Heading | None, title: str) -> list[CardSpec]:
    """Keys, unique fronts, positions, tags and hashes, in reading order."""
    path_keys = _path_keys(drafts, title_heading, title)
    keys: set[str] = set()
    fronts: set[str] = set()
    cards: list[CardSpec] = []
    for draft in drafts:
        front, back = _escape_block_start(draft.front.strip()), draft.back.strip()
        if not front or not back:
            continue
        path_key = path_keys[id(draft.section)]
        key, identity = _unique_key(slug, path_key, draft, keys)
        context = _context(draft.section, title_heading, title).markdown
        body = front[len(context) :] if draft.kind != "mapping" and front.startswith(context) else front
        if front in fronts:
            front = f"{front}\n\n（{draft.section.anchor or slug}）"
        number = 2
        base = front
        while front in fronts:
            front, number = f"{base} ({number})", number + 1
        fronts.add(front)
        plain = path_key.split("\x1e")[0]
        tags = list(dict.fromkeys([*_tags(slug, plain), *draft.tags]))
        payload = [draft.kind, front, back, plain, draft.section.anchor, tags, len(cards)]
        content_hash = text_hash(json.dumps(payload, ensure_ascii=False))
        cards.append(
            CardSpec(
                draft.kind,
                front,
                back,
                plain,
                draft.section.anchor,
                tags,
                key,
                content_hash,
                len(cards),
                identity=identity,
                body=body,
            )  # fmt: skip
        )
    return cards


def _escape_block_start(front: str) -> str:
    """A front that starts like a list or quote ("1. 张量: ...") must still render as a sentence."""
    return _BLOCK_START.sub(r"\1\\\2", front, count=1)


def _path_keys(drafts: list[_Draft], title_heading: Heading | None, title: str) -> dict[int, str]:
    """Per section: its plain heading path, plus ``\\x1e<n>`` when the same path occurs again."""
    result: dict[int, str] = {}
    seen: dict[str, int] = {}
    for draft in drafts:
        if id(draft.section) in result:
            continue
        plain = _context(draft.section, title_heading, title).plain
        seen[plain] = seen.get(plain, 0) + 1
        result[id(draft.section)] = plain if seen[plain] == 1 else f"{plain}\x1e{seen[plain]}"
    return result


def _unique_key(slug: str, path_key: str, draft: _Draft, keys: set[str]) -> tuple[str, str]:
    """The card's key and its identity in its section (``""`` for a curated card).

    A curated card's key is its note and id alone (ids are unique per file), so moving it to another
    section or changing its kind keeps its history; other cards are keyed by where they were cut from,
    and the importer finds them again under a renamed heading with ``cut_card_key`` and the identity."""
    if draft.identity.startswith(_CURATED):
        key = text_hash("\x1f".join([slug, draft.identity]))
        keys.add(key)
        return key, ""
    identity, number = draft.identity, 1
    while True:
        key = cut_card_key(slug, path_key, draft.kind, identity)
        if key not in keys:
            keys.add(key)
            return key, identity
        number += 1
        identity = f"{draft.identity}#{number}"


def cut_card_key(slug: str, path_key: str, kind: str, identity: str) -> str:
    """The key of a card cut from a note: its section's heading path (``\\x1e<n>`` for the n-th section with
    that path), kind and identity in the section."""
    return text_hash("\x1f".join([slug, path_key, kind, identity]))


def _tags(slug: str, path: str) -> list[str]:
    words = [w.lower().strip(".") for w in _TAG_WORD.findall(path)]
    return list(dict.fromkeys([slug, *[w for w in words if w]]))[:_MAX_TAGS]
