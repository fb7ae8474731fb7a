"""Checks a teacher makes on a deck that the size rules cannot: a front that asks two questions, two cards
that ask the same fact, a card whose question holds its own answer or spells its one-name answer, and half-width
punctuation inside Chinese sentences. Pure: no Django; ``manage.py audit_cards`` and the deck's tests use them.

They are measures of text, so they flag what to read, not a verdict. Two cards ask the same fact when, once
their code is normalised (spacing, one-letter variable names, a leading ``torch.``), they ask about the same
code and give the same answer, or their answers are one code with a question that names the same API: what a
teacher compares, rather than how many words the two share.

Every pattern here runs in linear time on any text (no nested or overlapping quantifiers): the audit reads
learners' own imported notes too. ``tests/cards/test_linear_text.py`` times each one on its worst input.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from cards.ingest.mappings import stands_in

_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1\s*$", re.DOTALL | re.MULTILINE)
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
# A question mark that closes a question: two of them, or one asking for two answers at once ("各是", "分别是").
_QUESTION_END = re.compile(r"[^\s?？][?？]")
_TWO_ANSWERS = re.compile(r"各是|各为|各自是|分别是|分别为|分别对应|分别表示")
# The words that make a Chinese clause a question ("是什么", "怎么改", "何时"), and "为什么", whose question
# reaches over the clauses after it ("为什么 A 能，而 B 不能？" asks one thing).
_ASKS = re.compile(r"什么|哪|谁|怎么|怎样|如何|为何|多少|何时|多大|多长|会不会|能不能|是不是|吗")
_WHY = re.compile(r"为什么|为何")
_ASIDE = re.compile(r"[（(][^（）()]*[）)]")  # a parenthesis: a question of its own only when it asks
_CLAUSE = re.compile(r"[，,；;、：:]")
_JOINED = re.compile(r"并且|以及|和|与|并")  # "在什么时候调用和收到什么参数" joins two questions
# A clause that goes on from the one before it rather than asking ("而 B 不能", "还是方差").
_GOES_ON = ("而", "只", "不", "即", "还是")
# "X 和 Y 的形状？": a short ending after 和/与 asks for two things at once; "X 与 Y 有什么区别" asks one.
_BOTH_ENDING = re.compile(r"[和与]([^和与]{1,10})[?？]$")
_COMPARES = re.compile(r"区别|不同|关系|一样|相同|相等|差异|对应|之间|哪个")


@dataclass(frozen=True)
class Face:
    """What the checks read of a card: a name to show, its kind, front and back."""

    name: str
    kind: str
    front: str
    back: str


def prose(markdown: str) -> str:
    """The words of a face around its code: fenced blocks and code spans become one placeholder each."""
    return _CODE_SPAN.sub("C", _FENCE.sub("", markdown))


def asks_two_questions(front: str) -> bool:
    """A front that asks two things: it should be two cards, or one question. Read the Chinese way:

    - two question marks ("会怎样？怎么改？"), or one asking for two answers ("形状各是？");
    - two clauses that each ask ("是什么，有什么限制？", "会怎样，怎么避免？", "什么形式、什么 dtype？"), two
      questions joined by 和/与/并且 ("什么时候调用和收到什么参数？"), or a parenthesis that asks ("（结果是多少）");
    - a clause that asks followed by a bare one ("哪个求和为 1，结果形状？");
    - two things asked at once after 和/与 ("输入和输出形状？", "原因和办法？"), unless the question compares.
    """
    text = "".join(prose(front).split())  # Chinese has no spaces; code is one "C"
    if len(_QUESTION_END.findall(text)) > 1 or _TWO_ANSWERS.search(text):
        return True
    asks = sum(1 for aside in _ASIDE.findall(text) if _ASKS.search(aside))
    body = _ASIDE.sub("", text)
    clauses = [clause.strip() for clause in _CLAUSE.split(body.rstrip("?？ ")) if clause.strip()]
    asks += sum(1 for clause in clauses for part in _JOINED.split(clause) if _ASKS.search(part))
    last = clauses[-1] if clauses else ""
    bare_end = len(clauses) > 1 and not _ASKS.search(last) and not last.startswith(_GOES_ON)
    if asks and bare_end and body.rstrip().endswith(("?", "？")) and not _WHY.search(body):
        asks += 1
    both = _BOTH_ENDING.search(body.rstrip())
    if not asks and both and not _COMPARES.search(last):
        asks = 2
    return asks > 1


_CJK = "\u3400-\u9fff"
_CHINESE = f"{_CJK}\u3000-\u303f\uff00-\uffef"  # characters and full-width marks
# A half-width mark with a Chinese character or mark right before or after it (spaces aside), outside code.
_HALF_WIDTH = re.compile(rf"(?<=[{_CHINESE}])\s*[,;:?!()]|[,;:?!()]\s*(?=[{_CJK}])")


# In a Chinese sentence, a half-width mark with no Chinese beside it: a ";" or ":" glued to what follows (English
# puts a space after them; "8:2" and "://" aside), or a "(" glued to a number or code ("5;16", "`(6, 1)`:32",
# "1(`batch_size=1`)"). English text keeps its own ("RuntimeError: cannot", "U(-1, 1)").
_GLUED = re.compile(r";(?=\S)|(?<!\d):(?=[^\s/])|:(?=[^\s\d/])|(?<=[\d`])\(")
_HAS_CHINESE = re.compile(f"[{_CHINESE}]")


def half_width_marks(markdown: str) -> list[str]:
    """Half-width punctuation inside Chinese sentences ("是什么?", "形状,dtype", "5;16 通道"), each with its
    neighbours.

    Chinese sentences take full-width marks (，；：？！（）), and a question in Chinese ends in "？" even after
    a code name or a number; code, and English text between Chinese, keep theirs.
    """
    text = _CODE_SPAN.sub("`C`", _FENCE.sub("", markdown))
    found = list(_HALF_WIDTH.finditer(text))
    if _HAS_CHINESE.search(text):
        found += [m for m in _GLUED.finditer(text) if not any(f.start() <= m.start() < f.end() for f in found)]
    if re.search(f"[{_CJK}]", text):
        found += [m for m in re.finditer(r"\?", text) if not any(f.start() <= m.start() < f.end() for f in found)]
    return [text[max(0, m.start() - 4) : m.end() + 4] for m in sorted(found, key=lambda m: m.start())]


# Normalising code so that two cards that ask the same thing compare equal: ``d = y.detach()`` is
# ``d = x.detach()``, ``torch.no_grad()`` is ``no_grad``, ``model.eval()`` is ``eval``.
_ONE_LETTER = re.compile(r"(?<![\w.])[a-z](?![\w(])")
_OWNER = re.compile(r"^(?:torch|model|net|self|v)\.")
_HEAD = re.compile(r"[：；。，,;:（(]")
_NOT_WORD = re.compile(r"\W+")
# An answer that is a bare value ("False", "'mean'", "3") is shared by many facts: it counts only beside the
# same question.
_LITERAL = re.compile(r"true|false|none|'\w*'|\"\w*\"|-?[\d.]+(?:e-?\d+)?")
_IDENT = re.compile(r"[a-z_][a-z0-9_]*")
# Names too common to tell two facts apart.
_COMMON = frozenset("v x a b t y p w i n f c nn np tf torch tensor dim true false none model loss self net".split())


def normalised_code(span: str) -> str:
    """One code span as the checks compare it: no spaces, lower case, one-letter names as ``v``, no leading
    ``torch.``/``model.``, no ``with``/trailing colon, and no empty call parentheses."""
    code = _ONE_LETTER.sub("v", "".join(span.split()).lower())
    code = code.removeprefix("with").rstrip(":")
    code = _OWNER.sub("", code.removeprefix("torch."))
    if code.endswith("()") and "(" not in code[:-2]:
        code = code[:-2]
    return code


def _code(markdown: str) -> frozenset[str]:
    spans = (normalised_code(span) for _, span in _CODE_SPAN.findall(_FENCE.sub("", markdown)))
    return frozenset(spans) - {"", "v"}


def answer_of(back: str) -> str:
    """What a back answers, normalised: its leading code when it starts with code, else its first clause."""
    text = _FENCE.sub("", back).strip()
    lead = _CODE_SPAN.match(text)
    if lead:
        return normalised_code(lead.group(2))
    return _NOT_WORD.sub("", _HEAD.split(text, maxsplit=1)[0])


@dataclass(frozen=True)
class _Fact:
    face: Face
    question: frozenset[str]  # the front's code, normalised
    answer: str  # the back's leading answer, normalised
    answers: frozenset[str]  # all of the back's code, normalised
    names: frozenset[str]  # the API names the front shows

    @classmethod
    def of(cls, face: Face) -> _Fact:
        question = _code(face.front)
        names = frozenset(name for code in question for name in _IDENT.findall(code)) - _COMMON
        return cls(face, question, answer_of(face.back), _code(face.back), names)


def same_fact(a: Face, b: Face) -> str:
    """Why two cards ask one fact ("same question", "same answer"), or "" when they do not.

    - Same question: the fronts show the same code, and the backs give the same leading answer or share code
      that is more than a bare value (``d = y.detach()`` / ``d = x.detach()``: both "共享存储",
      ``requires_grad=False``).
    - Same answer: one back's leading code is the other's or a whole part of it, the shorter a call, attribute
      or argument rather than a bare word or value, and the fronts name a common API (``as_tuple=True`` /
      ``torch.nonzero(x, as_tuple=True)``, both about ``nonzero``).
    """
    fa, fb = _Fact.of(a), _Fact.of(b)
    if fa.question and fa.question == fb.question:
        shared = {code for code in fa.answers & fb.answers if not _LITERAL.fullmatch(code)}
        if shared or (fa.answer and fa.answer == fb.answer):
            return "same question"
    shorter, longer = sorted((fa.answer, fb.answer), key=len)
    if not _is_call(shorter) or _LITERAL.fullmatch(shorter) or not fa.names & fb.names:
        return ""
    return "same answer" if stands_in(shorter, longer) else ""


def _is_call(answer: str) -> bool:
    """An answer specific enough to tell a fact by: a call, an attribute or an argument, not a bare word
    (``as_tuple=true``, ``np.argwhere(v)``; not ``step`` or ``cuda``)."""
    return any(mark in answer for mark in "(.=")


def near_duplicates(faces: Iterable[Face]) -> list[tuple[Face, Face, str]]:
    """Pairs of cards that ask one fact (``same_fact``), with why: question cards (``qa``, ``cloze``) with each
    other and with mapping cards (two mapping cards never: the importer makes one card per asked side)."""
    read = [face for face in faces if face.kind in ("qa", "cloze", "mapping")]
    found = []
    for a, b in itertools.combinations(read, 2):
        if a.kind == b.kind == "mapping":
            continue
        why = same_fact(a, b)
        if why:
            found.append((a, b, why))
    return found


# A front that compares codes, or offers choices, shows its answer among them by design.
_CONTRASTS = re.compile(r"区别|不同|差异|关系|哪一个|哪个|还是")
_AFTER_ANSWER = ("", *"：；，。（(,;:")


def contains_own_answer(face: Face) -> bool:
    """A card whose question shows its answer: the code a back starts with stands whole in the front's code,
    spacing aside (``torch.from_numpy(np.load(path))`` asked, ``np.load(path)`` answered; ``x.reshape; x.view``
    asked, ``x.reshape`` answered). A blank's answer, a bare value, a front that only names what it asks about
    (``x.put_`` for ``x.put``), a question that compares or offers the codes it shows, and one that asks why, do
    not count."""
    text = _FENCE.sub("", face.back).strip()
    lead = _CODE_SPAN.match(text)
    asks = prose(face.front)
    if face.kind == "cloze" or lead is None or _CONTRASTS.search(asks) or _WHY.search(asks):
        return False
    if text[lead.end() : lead.end() + 1] not in _AFTER_ANSWER:  # "`w` 成了…": the code is the subject
        return False
    answer = "".join(lead.group(2).split())
    if _LITERAL.fullmatch(answer.lower()):
        return False
    return any(stands_in(answer, "".join(span.split())) for _, span in _CODE_SPAN.findall(face.front))


# A front that compares, or offers a choice, may name what it asks about; "哪个" alone does not make a choice.
_CHOICE = re.compile(r"区别|不同|差异|关系|还是")
_NAME_ANSWER = re.compile(r"[\w.]+(?:\(\w*\))?")  # ``np.stack``, ``a.numpy()``, ``__len__``: one name, no arguments


def names_its_answer(face: Face) -> bool:
    """A question or blank whose answer is one name that its front already spells: nothing to recall
    (``torch.stack`` asked, ``np.stack`` answered; "转成 NumPy 数组" asked, ``a.numpy()`` answered; "供
    ``len(ds)`` 使用" asked, ``__len__`` answered). Only an answer that is a lone call, attribute or dunder
    counts (not a value, a variable or code with arguments), and not beside a question that asks why, compares
    or offers a choice; mapping cards ask a table's rows, where one name on both sides is the fact."""
    text = _FENCE.sub("", face.back).strip()
    lead = _CODE_SPAN.match(text)
    asks = prose(face.front)
    if face.kind not in ("qa", "cloze") or lead is None or _WHY.search(asks) or _CHOICE.search(asks):
        return False
    code = lead.group(2)
    if not _NAME_ANSWER.fullmatch(code) or not ("." in code or "(" in code or code.startswith("__")):
        return False
    names = {name.strip("_") for name in _IDENT.findall(code.lower())} - _COMMON
    names = {name for name in names if len(name) > 1}
    spelled = {word.strip("_") for word in _IDENT.findall(face.front.lower())}
    return len(names) == 1 and names <= spelled
