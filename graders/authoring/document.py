"""A drill file as the editor page's form holds it ("the document"), and the one writer of drill files.

The editor page offers a form and an "edit as TOML" view of one text. So that switching between them never
changes a drill behind its author's back, the form and the TOML meet here: ``read_document`` turns a drill
file into the document (every field the form has, defaults filled in), ``write_drill`` turns a document
into TOML in one fixed layout (the fields in the bundled files' order, defaults left out). Then
document -> TOML -> document is the identity, and a text this module wrote is written again byte for byte.

A hand-written file may hold what the form cannot show (an unknown field, an expression over two lines):
``read_document`` says so (``Unfit``) and the author keeps editing that text as TOML. Its comments and
layout are not data: saving it through the form writes the form's layout (``in_form_layout`` says whether
a text already is in it, so the page can say so first).
Whether the drill is right (an entry point the reference defines, known names in the cases...) is
``graders.drills.schema``'s question, asked of the text either way.

Pure: no Django, no torch. The writer is ``tomli_w`` (its one known loss, a carriage return before a
newline in a multi-line string, cannot happen here: the form turns every line break into "\n").
"""

from __future__ import annotations

import dataclasses
import tomllib
from typing import Any

import tomli_w

from graders.drills.schema import CompareRule, Constraints, Contract, DrillLimits

Document = dict[str, Any]

# Top-level fields in the order the bundled drill files write them; tables and arrays of tables follow.
SCALARS = (
    "slug",
    "title",
    "entry_point",
    "device",
    "difficulty",
    "tags",
    "track",
    "position",
    "prompt_zh",
    "prompt_en",
    "starter",
    "reference",
)
TABLES = ("source", "compare", "constraints", "limits", "contract")
LISTS = ("examples", "hidden", "wrong", "alternative", "hints")
# Written even when empty: a drill file without them is not a drill file.
ALWAYS = frozenset({"slug", "title", "entry_point", "device", "difficulty", "starter", "reference", "source"})
TOP_DEFAULTS: dict[str, Any] = {
    "slug": "",
    "title": "",
    "entry_point": "solution",
    "device": "cpu",
    "difficulty": "medium",
    "tags": [],
    "track": "",
    "position": 0,
    "prompt_zh": "",
    "prompt_en": "",
    "starter": "",
    "reference": "",
}


def _defaults(rule: object) -> dict[str, Any]:
    """A schema dataclass's defaults, tuples as lists (what TOML reads back): the schema stays the one source."""
    return {f.name: list(v) if isinstance(v, tuple) else v for f, v in _values(rule)}


def _values(rule: object) -> list[tuple[dataclasses.Field[Any], Any]]:
    return [(f, getattr(rule, f.name)) for f in dataclasses.fields(rule)]  # type: ignore[arg-type]


TABLE_DEFAULTS: dict[str, dict[str, Any]] = {
    "source": {"note": "", "heading": ""},
    "compare": _defaults(CompareRule()),
    "constraints": _defaults(Constraints()),
    "limits": _defaults(DrillLimits()),
    "contract": _defaults(Contract()),
}
ITEM_DEFAULTS: dict[str, dict[str, Any]] = {
    "examples": {"name": "", "let": {}, "args": []},
    "hidden": {"name": "", "repeat": 1, "fixed": False, "let": {}, "args": []},
    "wrong": {"why": "", "expect": "wrong_answer", "says": "", "code": ""},
    "alternative": {"why": "", "code": ""},
    "hints": {"en": "", "zh": ""},
}
ITEM_ALWAYS = {"examples": ("name", "args"), "hidden": ("name", "args"), "wrong": ("why", "expect", "code")}
ITEM_ALWAYS["alternative"] = ("code",)
ITEM_ALWAYS["hints"] = ("en", "zh")
# Lists of names the form edits as one line each ("a, b"): they never hold a line break or a comma.
NAME_LISTS = {("", "tags"), ("constraints", "forbid"), ("constraints", "allow"), ("contract", "in_place")}


class Unfit(ValueError):
    """The text is not something the form can show without losing part of it; each reason names the field."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__("; ".join(reasons))
        self.reasons = reasons


def blank() -> Document:
    """A document with every field at its default (a new drill's form starts from ``starter_document``)."""
    document: Document = {key: _copy(value) for key, value in TOP_DEFAULTS.items()}
    document.update({name: _copy(values) for name, values in TABLE_DEFAULTS.items()})
    document.update({name: [] for name in LISTS})
    return document


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return list(value) if isinstance(value, list) else value


def write_drill(document: Document) -> str:
    """The drill file of ``document``: fields in the fixed order, defaults left out, strings with line breaks
    as multi-line strings. ``read_document`` of the result gives ``document`` back."""
    out: dict[str, Any] = {}
    for key in SCALARS:
        value = document.get(key, TOP_DEFAULTS[key])
        if key in ALWAYS or value != TOP_DEFAULTS[key]:
            out[key] = value
    for name in TABLES:
        values = document.get(name, {})
        table = {k: values.get(k, d) for k, d in TABLE_DEFAULTS[name].items()}
        kept = {k: v for k, v in table.items() if name in ALWAYS or v != TABLE_DEFAULTS[name][k]}
        if kept:
            out[name] = kept
    for name in LISTS:
        items = [_item(name, item) for item in document.get(name, [])]
        if items:
            out[name] = items
    return tomli_w.dumps(out, multiline_strings=True)


def _item(name: str, item: dict[str, Any]) -> dict[str, Any]:
    defaults = ITEM_DEFAULTS[name]
    full = {k: item.get(k, d) for k, d in defaults.items()}
    return {k: v for k, v in full.items() if k in ITEM_ALWAYS[name] or v != defaults[k]}


def read_document(text: str) -> Document:
    """The document of a drill file's text, every field present; ``Unfit`` when the form could not hold it all."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise Unfit([f"not valid TOML: {exc}"]) from None
    reasons: list[str] = []
    document = blank()
    _unknown(data, set(SCALARS) | set(TABLES) | set(LISTS), "", reasons)
    for key in SCALARS:
        if key in data:
            document[key] = _typed(data[key], TOP_DEFAULTS[key], key, reasons)
    _name_list(document, "", "tags", reasons)
    for name in TABLES:
        table = data.get(name, {})
        if not isinstance(table, dict):
            reasons.append(f"{name}: must be a table")
            continue
        _unknown(table, set(TABLE_DEFAULTS[name]), f"{name}.", reasons)
        for key, default in TABLE_DEFAULTS[name].items():
            if key in table:
                document[name][key] = _typed(table[key], default, f"{name}.{key}", reasons)
        for key in ("forbid", "allow", "in_place"):
            if key in document[name]:
                _name_list(document[name], name, key, reasons)
    for name in LISTS:
        document[name] = _items(data.get(name, []), name, reasons)
    if reasons:
        raise Unfit(reasons)
    return document


def in_form_layout(text: str) -> bool:
    """Is ``text`` exactly what the form would write for it (no comment, no other layout to lose)?"""
    try:
        return write_drill(read_document(text)) == text
    except Unfit:
        return False


def _unknown(data: dict[str, Any], known: set[str], prefix: str, reasons: list[str]) -> None:
    reasons.extend(f"{prefix}{key}: not a field of a drill file" for key in sorted(set(data) - known))


def _typed(value: Any, default: Any, name: str, reasons: list[str]) -> Any:
    """``value`` when it has the default's type (an integer where a float goes is that float), else a reason."""
    if isinstance(default, float) and type(value) is int:
        return float(value)
    if type(value) is not type(default):
        reasons.append(f"{name}: must be {type(default).__name__}, not {type(value).__name__}")
        return default
    if isinstance(value, list) and not all(isinstance(v, str) for v in value):
        reasons.append(f"{name}: must be a list of strings")
        return default
    if isinstance(value, str) and "\r" in value:
        reasons.append(f"{name}: holds a carriage return")
    return value


def _name_list(holder: dict[str, Any], table: str, key: str, reasons: list[str]) -> None:
    if any(not item or set(item) & set(", \t\n") for item in holder[key]):
        reasons.append(f"{table + '.' if table else ''}{key}: each item must be one word (no spaces or commas)")


def _items(items: Any, name: str, reasons: list[str]) -> list[dict[str, Any]]:
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        reasons.append(f"{name}: must be an array of tables ([[{name}]])")
        return []
    defaults = ITEM_DEFAULTS[name]
    found = []
    for index, item in enumerate(items):
        where = f"{name}[{index}]"
        extra = set(item) - set(defaults) - ({"repeat"} if name == "examples" else set())
        _unknown({k: None for k in extra}, set(), f"{where}.", reasons)
        if name == "examples" and item.get("repeat", 1) != 1:
            reasons.append(f"{where}.repeat: an example runs once")
        full = {key: _copy(default) for key, default in defaults.items()}
        for key, default in defaults.items():
            if key in item:
                full[key] = _typed(item[key], default, f"{where}.{key}", reasons)
        _case_lines(full, where, reasons)
        found.append(full)
    return found


def _case_lines(case: dict[str, Any], where: str, reasons: list[str]) -> None:
    """The form edits a case's arguments and ``let`` one line each: every expression must be one line, stripped,
    and every ``let`` a name bound to a string."""
    for index, expr in enumerate(case.get("args", [])):
        if not expr.strip() or "\n" in expr or expr != expr.strip():
            reasons.append(f"{where}.args[{index}]: the form holds one stripped expression per line")
    for key, expr in case.get("let", {}).items():
        if not isinstance(expr, str) or not key.isidentifier() or "\n" in expr or not expr.strip():
            reasons.append(f"{where}.let.{key}: the form holds one 'name = expression' per line")
        elif expr != expr.strip():
            reasons.append(f"{where}.let.{key}: the form holds one stripped expression per line")
