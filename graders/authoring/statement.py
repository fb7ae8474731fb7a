"""Where a drill's statement contradicts its behaviour contract: a learner reads one and is graded by the other.

A learner trusts the statement ("return a new tensor"); the grader judges the contract (``result =
"may_view"`` accepts a view of the input). When they disagree, a right answer is refused or a wrong one
accepted, and the learner cannot tell why. Publishing a course's drill is refused while any of these holds
(``graders.authoring.drafts``); each rule reads one sentence at a time, in English and in Chinese:

1. a sentence promises a new tensor (or a copy) while the contract lets the result be a view of an argument
   (``result = "may_view"``) or has the function change an argument in place (``in_place``);
2. a sentence says the function changes an argument in place (names it, says "in place" / "原地", and neither
   negates it nor says it stays untouched) while ``in_place`` names none of the arguments it names;
3. a sentence says an argument stays unchanged ("`x` itself unchanged", "`x` 本身不变") while ``in_place``
   names it;
4. a sentence promises a dtype ("keeping the dtype", "dtype 不变", "a float64 tensor") while the comparison
   ignores dtypes (``[compare] check_dtype = false``), so a result of any dtype passes.

A sentence that only describes a trap ("that writes into `tt` in place, which is why the note clones first")
names no argument of the entry point, and one that negates ("never changes `x` in place") promises nothing.

Pure: no Django, no torch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from graders.drills.schema import Contract, Drill

# Sentences end at ". " (not inside `torch.zeros`), at "!", "?", ";" and at their Chinese forms.
_SENTENCES = re.compile(r"(?<=[.!?;])\s+|[。！？；]")
_CODE = re.compile(r"`([^`]*)`")
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_NEW = re.compile(
    r"(?i)\bnew (?:tensor|array|result)s?\b|\bfresh tensor\b|\breturns? a copy\b"
    r"|新张量|新的张量|新的结果|返回.{0,8}(?:副本|拷贝)"
)
_IN_PLACE = re.compile(r"(?i)\bin[- ]?place\b|原地")
_NEGATION = re.compile(r"(?i)\b(?:not|never|no|don't|doesn't|without|instead|rather|avoid)\b|n't\b|[不别勿]|而非|避免")
_KEPT = re.compile(
    r"(?i)\b(?:unchanged|untouched|unmodified|must not change|is not modified)\b|不变|不能被修改|不被修改|不要修改"
)


# A promise about the result's dtype, and a sentence that frees it ("any dtype", "dtype 不限").
_DTYPE = re.compile(
    r"(?i)\bdtype\b|\b(?:float(?:16|32|64)?|double|long|int(?:8|16|32|64)|bool) tensor|数据类型"
    r"|(?:float(?:16|32|64)|int(?:8|16|32|64)|bool|long) ?张量"
)
_DTYPE_FREE = re.compile(r"(?i)\bany dtype\b|dtype (?:does not|doesn't) matter|dtype 不限|任意 ?dtype")


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCES.split(text) if part and part.strip()]


_CALL = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*\(")


def named_arguments(sentence: str, arg_names: Iterable[str], entry_point: str) -> list[str]:
    """The entry point's arguments a sentence names in code (`x`, `solution(x, n)`), in the entry point's order.
    A call of another function (`reset(model, seed)`, `torch.manual_seed(seed)`) names that function's
    parameters, not the entry point's."""
    words: set[str] = set()
    for span in _CODE.findall(sentence):
        call = _CALL.match(span)
        if call is None or call.group(1) == entry_point:
            words.update(_WORD.findall(span))
    return [name for name in arg_names if name in words]


def _quote(sentence: str) -> str:
    text = " ".join(sentence.split())
    return f"“{text[:160]}{'…' if len(text) > 160 else ''}”"


def contradictions(
    statements: Iterable[str],
    contract: Contract,
    arg_names: tuple[str, ...],
    entry_point: str,
    *,
    check_dtype: bool = True,
) -> list[str]:
    """Each place the statement (every language of it) contradicts the contract, in words an author can act on;
    empty when they agree. ``check_dtype`` is the drill's ``[compare] check_dtype``."""
    found: list[str] = []
    for sentence in (s for text in statements for s in sentences(text)):
        named = named_arguments(sentence, arg_names, entry_point)
        found.extend(_sentence_contradictions(sentence, contract, named))
        if not check_dtype and _DTYPE.search(sentence) and not _DTYPE_FREE.search(sentence):
            found.append(
                f"The statement promises a dtype ({_quote(sentence)}), but the comparison says check_dtype = false: "
                "a result of any dtype passes. Set check_dtype = true, or say that any dtype is fine."
            )
    return list(dict.fromkeys(found))


def drill_contradictions(drill: Drill) -> list[str]:
    """``contradictions`` for a loaded drill: both languages of its statement against its contract."""
    return contradictions(
        [drill.prompt_en, drill.prompt_zh],
        drill.contract,
        drill.arg_names,
        drill.entry_point,
        check_dtype=drill.compare.check_dtype,
    )


def _sentence_contradictions(sentence: str, contract: Contract, named: list[str]) -> list[str]:
    found: list[str] = []
    negated = bool(_NEGATION.search(sentence))
    changed = ", ".join(f"`{name}`" for name in contract.in_place)
    if _NEW.search(sentence) and not _IN_PLACE.search(sentence):
        if contract.result == "may_view":
            found.append(
                f'The statement promises a new tensor ({_quote(sentence)}), but the contract says result = "may_view": '
                'a view of an argument passes. Say that a view is fine, or set result = "new".'
            )
        if contract.in_place:
            found.append(
                f"The statement promises a new tensor ({_quote(sentence)}), but the contract has the function change "
                f"{changed} in place. Say what is updated in place, or empty in_place."
            )
    if _IN_PLACE.search(sentence) and named and not negated and not _KEPT.search(sentence):
        if not set(named) & set(contract.in_place):
            which = ", ".join(f"`{name}`" for name in named)
            found.append(
                f"The statement says the function changes {which} in place ({_quote(sentence)}), but the contract's "
                f"in_place {'is empty' if not contract.in_place else 'names ' + changed}: the grader will refuse "
                f"any change to {which}. Add it to in_place, or reword the statement."
            )
    if _KEPT.search(sentence) and not _IN_PLACE.search(sentence):
        for name in (n for n in named if n in contract.in_place):
            found.append(
                f"The statement says `{name}` stays unchanged ({_quote(sentence)}), but the contract's in_place names "
                f"it: the grader requires `{name}` to be updated in place. Remove it from in_place, or reword."
            )
    return found
