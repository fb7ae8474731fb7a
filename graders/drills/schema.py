"""Drill files: one TOML file per drill, validated when loaded.

The drill files are written by the team, not by learners, but a typo in one of them must fail
loudly at load time (naming the file and the field) rather than turn into a confusing verdict
for a learner later. Nothing here imports torch: loading and validating drills is cheap.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

COMPARE_MODES = ("allclose", "exact", "gradients")
DEVICES = ("cpu", "cuda")
DIFFICULTIES = ("easy", "medium", "hard")
# Names the case expressions may use; anything else is a typo or something a drill must not do.
CASE_NAMES = frozenset(
    {"torch", "g", "rng", "math", "device", "range", "len", "list", "tuple", "dict", "int", "float", "bool"}
    | {"min", "max", "abs", "sum", "sorted", "zip", "True", "False", "None"}
)


class DrillError(ValueError):
    """A drill file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class CaseSpec:
    """One fixed example or one hidden generator (expanded ``repeat`` times).

    ``fixed``: a hidden case whose inputs are the same for every seed on purpose (an edge case, an empty
    tensor), so a learner may learn its pass/fail; an unmarked hidden case must draw from ``g`` or ``rng``.
    """

    name: str
    args: tuple[str, ...]
    let: tuple[tuple[str, str], ...] = ()
    repeat: int = 1
    hidden: bool = False
    fixed: bool = False


@dataclass(frozen=True)
class CompareRule:
    """How one case's output is compared with the reference output."""

    mode: str = "allclose"
    rtol: float = 1e-5
    atol: float = 1e-6
    check_dtype: bool = True
    check_shape: bool = True
    check_device: bool = True
    loose_scalars: bool = False


@dataclass(frozen=True)
class Constraints:
    """Checks on the source before anything runs (see ``graders.drills.constraints``)."""

    no_loops: bool = False
    forbid: tuple[str, ...] = ()
    max_source_bytes: int = 20_000
    allow: tuple[str, ...] = ()  # when set, the only callables the code may call (plus its own functions)
    single_expression: bool = False  # every function body is one ``return <expression>``


RESULT_KINDS = ("new", "may_view")
RESULT_GRAD = ("none", "graph")


@dataclass(frozen=True)
class Contract:
    """What a call must do besides returning the right value (``graders.drills.contract`` judges it).

    The defaults fit most drills: every argument left untouched, a result that shares no memory with
    them and carries no autograd graph, the same answer on a second call.
    """

    in_place: tuple[str, ...] = ()  # arguments the function must update in place (the others stay untouched)
    result: str = "new"  # "may_view": the result may be a view of an argument (reshaping drills)
    result_grad: str = "none"  # "graph": the result must carry the autograd graph back to the inputs
    repeatable: bool = True  # a second call on fresh copies of the arguments gives the same answer
    graph_budget: float = 0.0  # > 0: the graphs alive (all together; past the call), times the reference's
    memory_budget: float = 0.0  # > 0: the most tensor memory held at once, times the reference's
    time_budget: float = 0.0  # > 0: the call's CPU time and lines run, times the reference's (floors: ``contract.py``)


@dataclass(frozen=True)
class DrillLimits:
    cpu_seconds: float = 2.0
    wall_seconds: float = 5.0
    memory_mb: int = 1024


# What a known-wrong solution may expect its verdict to be: a rejection the learner can cause, never
# "accepted" (that is an alternative) nor "internal_error" (ours, never the code's).
EXPECTABLE = ("wrong_answer", "runtime_error", "rejected", "time_limit", "memory_limit", "output_limit")


@dataclass(frozen=True)
class Solution:
    """An author's check, kept in the drill file: a known-wrong solution (``[[wrong]]``: the verdict class it
    must get, ``expect``, and words its message must contain, ``says``) or an ``[[alternative]]`` (accepted).
    The grader never reads them; "Check" on a course's drill page (``graders.authoring``) runs them."""

    code: str
    why: str = ""
    expect: str = "accepted"
    says: str = ""


# A drill offers at most this many hints: each one opened lowers the best rating the review can get
# (``graders.rating.quality``), so a fourth would only say the answer.
MAX_HINTS = 3


@dataclass(frozen=True)
class Hint:
    """A nudge toward the idea (which function, which dim, what to watch for), never the answer's code;
    in both languages, because the learner opens it in whichever the page shows."""

    en: str
    zh: str


@dataclass(frozen=True)
class Source:
    """The note section the drill comes from (note file name + heading text)."""

    note: str
    heading: str


@dataclass(frozen=True)
class Drill:
    slug: str
    title: str
    prompt_zh: str
    prompt_en: str
    entry_point: str
    starter: str
    reference: str
    source: Source
    examples: tuple[CaseSpec, ...]
    hidden: tuple[CaseSpec, ...]
    wrong: tuple[Solution, ...] = ()  # the author's known-wrong solutions (``Solution``)
    alternatives: tuple[Solution, ...] = ()  # the author's other right solutions
    hints: tuple[Hint, ...] = ()  # at most ``MAX_HINTS``, opened one at a time on the drill page
    compare: CompareRule = field(default_factory=CompareRule)
    constraints: Constraints = field(default_factory=Constraints)
    limits: DrillLimits = field(default_factory=DrillLimits)
    contract: Contract = field(default_factory=Contract)
    device: str = "cpu"
    difficulty: str = "medium"
    tags: tuple[str, ...] = ()
    track: str = ""  # a named sequence of drills, e.g. "tensor-puzzles"
    position: int = 0  # the drill's place in its track (easy first)
    path: str = ""
    version: str = ""

    @property
    def grad(self) -> bool:
        return self.compare.mode == "gradients"

    @property
    def arg_names(self) -> tuple[str, ...]:
        """The entry point's parameter names (a class entry point's ``forward``), for messages."""
        return entry_arg_names(self.reference, self.entry_point)


@functools.lru_cache(maxsize=512)
def entry_arg_names(source: str, entry_point: str) -> tuple[str, ...]:
    """Parameter names of ``def entry_point`` (or of ``forward`` in ``class entry_point``) in ``source``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == entry_point:
            methods = [n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "forward"]
            return tuple(a.arg for a in methods[0].args.args[1:]) if methods else ()
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            return tuple(a.arg for a in node.args.args)
    return ()


class _Reader:
    """Typed access to one TOML table, with errors that name the file and the dotted field."""

    def __init__(self, path: str, data: Mapping[str, Any], prefix: str = "") -> None:
        self.path, self.data, self.prefix = path, data, prefix

    def fail(self, name: str, why: str) -> DrillError:
        return DrillError(f"{self.path}: field '{self.prefix}{name}': {why}")

    def get(self, name: str, kind: type | tuple[type, ...], default: Any = ..., *, required: bool = False) -> Any:
        if name not in self.data:
            if required or default is ...:
                raise self.fail(name, "is required")
            return default
        value = self.data[name]
        if kind in (float, (float,)) and type(value) is int:
            value = float(value)
        if not isinstance(value, kind) or (type(value) is bool and kind not in (bool, (bool,))):
            want = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise self.fail(name, f"must be {want}, not {type(value).__name__}")
        return value

    def text(self, name: str) -> str:
        value: str = self.get(name, str, required=True)
        if not value.strip():
            raise self.fail(name, "must not be empty")
        return value

    def table(self, name: str) -> _Reader:
        return _Reader(self.path, self.get(name, dict, {}), f"{self.prefix}{name}.")

    def check_known(self, known: set[str]) -> None:
        unknown = sorted(set(self.data) - known)
        if unknown:
            raise self.fail(unknown[0], f"is not a known field (known: {', '.join(sorted(known))})")


class ExpressionError(ValueError):
    """A case expression outside the case language; the message says why, in a phrase after its name."""


def expression_names(expr: str, known: frozenset[str] = frozenset()) -> frozenset[str]:
    """The free names a case expression reads (those a comprehension binds are its own), or ExpressionError.

    Case expressions (a drill's, or a learner's "Run" arguments) run in a runner's jail; this tiny vocabulary
    with no dunders keeps honest mistakes out and names them before anything is queued.
    """
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"is not a valid expression ({exc.msg}): {expr!r}") from None
    return _checked_names(tree, known)


def _check_expression(reader: _Reader, name: str, expr: str, known: frozenset[str] = frozenset()) -> frozenset[str]:
    """``expression_names`` with the error naming the drill file and the field."""
    try:
        return expression_names(expr, known)
    except ExpressionError as exc:
        raise reader.fail(name, str(exc)) from None


def _checked_names(tree: ast.AST, known: frozenset[str]) -> frozenset[str]:
    bound = {
        n.id
        for c in ast.walk(tree)
        if isinstance(c, ast.comprehension)
        for n in ast.walk(c.target)
        if isinstance(n, ast.Name) and not n.id.startswith("_")
    }
    known = known | bound
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            raise ExpressionError(f"uses the private attribute {node.attr!r}")
        if isinstance(node, ast.Name) and node.id not in CASE_NAMES | known:
            raise ExpressionError(f"uses the unknown name {node.id!r}")
        if isinstance(node, ast.Lambda | ast.NamedExpr):
            raise ExpressionError("must be a plain expression (no lambda, no ':=')")
    return frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)) - bound


ARGUMENTS_CHARS = 2000  # a "Run"'s arguments text: a few tensors' expressions, never data


def call_arguments(text: str) -> tuple[str, ...]:
    """The argument expressions of a call written as the drill page shows one, ``a, b`` of ``f(a, b)``.

    Each must be a case expression (``expression_names``); no keywords, no ``*``: the entry point is called
    with positional arguments, like every case. Raises ExpressionError saying which argument is wrong.
    """
    try:
        call = ast.parse(f"f(\n{text}\n)", mode="eval").body
    except SyntaxError as exc:
        raise ExpressionError(f"they are not valid Python arguments ({exc.msg})") from None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.func.id != "f":
        raise ExpressionError("they must be the arguments of one call, separated by commas")
    if call.keywords or any(isinstance(arg, ast.Starred) for arg in call.args):
        raise ExpressionError("they must be positional (no name=value, no *)")
    source = f"f(\n{text}\n)"
    exprs = []
    for index, arg in enumerate(call.args):
        expr = (ast.get_source_segment(source, arg) or "").strip()
        try:
            _checked_names(ast.Expression(arg), frozenset())
        except ExpressionError as exc:
            raise ExpressionError(f"argument {index + 1} ({expr}) {exc}") from None
        exprs.append(expr if "\n" not in expr else f"({expr})")  # a line break is valid in a call, not alone
    return tuple(exprs)


# The names through which a case's inputs can differ from one seed to the next (``graders.drills.cases``).
SEEDED = frozenset({"g", "rng"})


def _case_specs(reader: _Reader, name: str, hidden: bool) -> tuple[CaseSpec, ...]:
    items = reader.get(name, list, [])
    specs = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise reader.fail(f"{name}[{i}]", "must be a table")
        sub = _Reader(reader.path, item, f"{name}[{i}].")
        sub.check_known({"name", "args", "let", "repeat", "fixed"})
        case_name = sub.text("name")
        args = sub.get("args", list, required=True)
        let = sub.get("let", dict, {})
        repeat = sub.get("repeat", int, 1)
        if repeat < 1 or (not hidden and repeat != 1):
            raise sub.fail("repeat", "must be 1 for examples and >= 1 for hidden cases")
        fixed = sub.get("fixed", bool, False)
        if fixed and not hidden:
            raise sub.fail("fixed", "is for hidden cases only (an example is the same for every seed anyway)")
        known: frozenset[str] = frozenset()
        seeded = SEEDED  # the names whose value changes with the seed: g, rng and the ``let`` names drawn from them
        for key, expr in let.items():
            if not key.isidentifier() or key.startswith("_") or key in CASE_NAMES or not isinstance(expr, str):
                raise sub.fail(f"let.{key}", 'must be <new name> = "<expression>"')
            if _check_expression(sub, f"let.{key}", expr, known) & seeded:
                seeded |= {key}
            known |= {key}
        varies = False
        for j, expr in enumerate(args):
            if not isinstance(expr, str):
                raise sub.fail(f"args[{j}]", "must be a string expression")
            varies |= bool(_check_expression(sub, f"args[{j}]", expr, known) & seeded)
        if hidden and not fixed and not varies:
            raise sub.fail(
                "args",
                f"the hidden case {case_name!r} draws nothing from g or rng (not even through a let name), so its "
                "inputs are the same for every seed and a learner would learn its answer from its verdicts: draw "
                "them from g or rng, or mark an edge case whose pass/fail a learner may learn with fixed = true",
            )
        specs.append(CaseSpec(case_name, tuple(args), tuple(let.items()), repeat, hidden, fixed))
    return tuple(specs)


def _compare(reader: _Reader) -> CompareRule:
    sub = reader.table("compare")
    sub.check_known({"mode", "rtol", "atol", "check_dtype", "check_shape", "check_device", "loose_scalars"})
    mode = sub.get("mode", str, "allclose")
    if mode not in COMPARE_MODES:
        raise sub.fail("mode", f"must be one of {', '.join(COMPARE_MODES)}, not {mode!r}")
    rtol, atol = sub.get("rtol", float, 1e-5), sub.get("atol", float, 1e-6)
    if rtol < 0 or atol < 0:
        raise sub.fail("rtol", "tolerances must be >= 0")
    flags = {k: sub.get(k, bool, True) for k in ("check_dtype", "check_shape", "check_device")}
    return CompareRule(mode, rtol, atol, loose_scalars=sub.get("loose_scalars", bool, False), **flags)


def _constraints(reader: _Reader) -> Constraints:
    sub = reader.table("constraints")
    sub.check_known({"no_loops", "forbid", "max_source_bytes", "allow", "single_expression"})
    names = {}
    for field_name in ("forbid", "allow"):
        names[field_name] = sub.get(field_name, list, [])
        for i, item in enumerate(names[field_name]):
            if not isinstance(item, str) or not all(p.isidentifier() for p in item.lstrip(".").split(".")):
                raise sub.fail(f"{field_name}[{i}]", "must be a dotted name like 'F.nll_loss' or a method like '.flip'")
    return Constraints(
        no_loops=sub.get("no_loops", bool, False),
        forbid=tuple(names["forbid"]),
        max_source_bytes=sub.get("max_source_bytes", int, 20_000),
        allow=tuple(names["allow"]),
        single_expression=sub.get("single_expression", bool, False),
    )


def _contract(reader: _Reader, arg_names: tuple[str, ...]) -> Contract:
    sub = reader.table("contract")
    sub.check_known({"in_place", "result", "result_grad", "repeatable", *BUDGETS})
    in_place = sub.get("in_place", list, [])
    for i, name in enumerate(in_place):
        if name not in arg_names:
            raise sub.fail(f"in_place[{i}]", f"must name an argument of the entry point ({', '.join(arg_names)})")
    result, result_grad = sub.get("result", str, "new"), sub.get("result_grad", str, "none")
    if result not in RESULT_KINDS:
        raise sub.fail("result", f"must be one of {', '.join(RESULT_KINDS)}, not {result!r}")
    if result_grad not in RESULT_GRAD:
        raise sub.fail("result_grad", f"must be one of {', '.join(RESULT_GRAD)}, not {result_grad!r}")
    budgets = {name: _budget(sub, name, what) for name, what in BUDGETS.items()}
    return Contract(tuple(in_place), result, result_grad, sub.get("repeatable", bool, True), **budgets)


# A resource budget in ``[contract]``: its key and what it multiplies.
BUDGETS = {
    "graph_budget": "the reference's graphs alive",
    "memory_budget": "the most tensor memory the reference holds at once",
    "time_budget": "the reference's CPU time and lines of Python run",
}


def _budget(sub: _Reader, name: str, what: str) -> float:
    budget: float = sub.get(name, float, 0.0)
    if budget < 0 or 0 < budget < 1:
        raise sub.fail(name, f"must be 0 (no budget) or >= 1 (times {what})")
    return budget


def _limits(reader: _Reader) -> DrillLimits:
    sub = reader.table("limits")
    sub.check_known({"cpu_seconds", "wall_seconds", "memory_mb"})
    cpu, wall = sub.get("cpu_seconds", float, 2.0), sub.get("wall_seconds", float, 5.0)
    limits = DrillLimits(cpu, wall, sub.get("memory_mb", int, 1024))
    if min(limits.cpu_seconds, limits.wall_seconds, limits.memory_mb) <= 0:
        raise sub.fail("cpu_seconds", "limits must be positive")
    return limits


def _metadata(top: _Reader) -> tuple[str, tuple[str, ...], str, int]:
    """Difficulty, topic tags, track and position: how the drill hub files and orders the drill."""
    difficulty = top.get("difficulty", str, "medium")
    if difficulty not in DIFFICULTIES:
        raise top.fail("difficulty", f"must be one of {', '.join(DIFFICULTIES)}, not {difficulty!r}")
    tags = top.get("tags", list, [])
    for i, tag in enumerate(tags):
        if not isinstance(tag, str) or not tag or not all(part.isalnum() for part in tag.split("-")):
            raise top.fail(f"tags[{i}]", "must be a lowercase word or words joined by '-'")
    track = top.get("track", str, "")
    position = top.get("position", int, 0)
    if position < 0:
        raise top.fail("position", "must be >= 0")
    return difficulty, tuple(tag.lower() for tag in tags), track, position


def _prompts(top: _Reader) -> tuple[str, str]:
    """The statement in Chinese and in English: a course may write one language only, never neither."""
    zh, en = top.get("prompt_zh", str, ""), top.get("prompt_en", str, "")
    if not zh.strip() and not en.strip():
        raise top.fail("prompt_en", "is required (or prompt_zh): the statement in at least one language")
    return zh, en


def _solutions(top: _Reader, name: str) -> tuple[Solution, ...]:
    """``[[wrong]]`` or ``[[alternative]]`` tables: code, why (required for a wrong one), and for
    a wrong one the verdict class it expects (``EXPECTABLE``) and optional words its message must contain."""
    wrong = name == "wrong"
    found = []
    for i, item in enumerate(top.get(name, list, [])):
        if not isinstance(item, dict):
            raise top.fail(f"{name}[{i}]", "must be a table")
        sub = _Reader(top.path, item, f"{name}[{i}].")
        sub.check_known({"code", "why", "expect", "says"} if wrong else {"code", "why"})
        code = sub.text("code")  # not parsed here: a wrong solution may be wrong in any way, a syntax error too
        why = sub.text("why") if wrong else sub.get("why", str, "")
        if not wrong:
            found.append(Solution(code, why))
            continue
        expect = sub.get("expect", str, required=True)
        if expect not in EXPECTABLE:
            raise sub.fail("expect", f"must be one of {', '.join(EXPECTABLE)}, not {expect!r}")
        found.append(Solution(code, why, expect, sub.get("says", str, "")))
    return tuple(found)


def _hints(top: _Reader) -> tuple[Hint, ...]:
    """``[[hints]]`` tables, each with ``en`` and ``zh``: at most ``MAX_HINTS``, each in both languages."""
    items = top.get("hints", list, [])
    if len(items) > MAX_HINTS:
        raise top.fail("hints", f"at most {MAX_HINTS} hints, not {len(items)}")
    found = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise top.fail(f"hints[{i}]", "must be a table")
        sub = _Reader(top.path, item, f"hints[{i}].")
        sub.check_known({"en", "zh"})
        found.append(Hint(en=sub.text("en"), zh=sub.text("zh")))
    return tuple(found)


def parse_drill(text: str, path: str = "<drill>") -> Drill:
    """Parse and validate one drill file's text; ``version`` is a hash of exactly this text."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DrillError(f"{path}: not valid TOML: {exc}") from None
    top = _Reader(path, data)
    top.check_known(
        {"slug", "title", "prompt_zh", "prompt_en", "entry_point", "starter", "reference", "device"}
        | {"source", "examples", "hidden", "compare", "constraints", "limits", "contract"}
        | {"difficulty", "tags", "track", "position"}
        | {"wrong", "alternative"}  # the author's checks (``Solution``)
        | {"hints"}
    )
    slug, entry = top.text("slug"), top.text("entry_point")
    if not all(part.isalnum() for part in slug.split("-")) or slug != slug.lower():
        raise top.fail("slug", f"must be lowercase words joined by '-', not {slug!r}")
    if not entry.isidentifier() or entry.startswith("_"):
        raise top.fail("entry_point", f"must be a public Python name, not {entry!r}")
    for name in ("starter", "reference"):
        try:
            ast.parse(top.text(name))
        except SyntaxError as exc:
            raise top.fail(name, f"is not valid Python: {exc.msg} (line {exc.lineno})") from None
    if f"def {entry}(" not in top.text("reference") and f"class {entry}" not in top.text("reference"):
        raise top.fail("reference", f"must define the entry point {entry!r}")
    device = top.get("device", str, "cpu")
    if device not in DEVICES:
        raise top.fail("device", f"must be one of {', '.join(DEVICES)}")
    difficulty, tags, track, position = _metadata(top)
    source = top.table("source")
    source.check_known({"note", "heading"})
    prompts = _prompts(top)
    examples, hidden = _case_specs(top, "examples", False), _case_specs(top, "hidden", True)
    if not examples or not hidden:
        raise top.fail("examples" if not examples else "hidden", "needs at least one case")
    names = [spec.name for spec in examples + hidden]
    if len(set(names)) != len(names):
        raise top.fail("hidden", "case names must be unique")
    return Drill(
        slug=slug,
        title=top.text("title"),
        prompt_zh=prompts[0],
        prompt_en=prompts[1],
        entry_point=entry,
        starter=top.text("starter"),
        reference=top.text("reference"),
        source=Source(source.text("note"), source.text("heading")),
        examples=examples,
        hidden=hidden,
        wrong=_solutions(top, "wrong"),
        alternatives=_solutions(top, "alternative"),
        hints=_hints(top),
        compare=_compare(top),
        constraints=_constraints(top),
        limits=_limits(top),
        contract=_contract(top, entry_arg_names(top.text("reference"), entry)),
        device=device,
        difficulty=difficulty,
        tags=tags,
        track=track,
        position=position,
        path=path,
        version=hashlib.sha256(text.encode()).hexdigest()[:16],
    )


def load_drill(path: Path) -> Drill:
    return parse_drill(path.read_text(encoding="utf-8"), str(path))


def load_drills(folder: Path | str) -> dict[str, Drill]:
    """Every ``*.toml`` under ``folder`` (recursively), keyed by slug; duplicate slugs are an error."""
    drills: dict[str, Drill] = {}
    for path in sorted(Path(folder).rglob("*.toml")):
        drill = load_drill(path)
        if path.stem != drill.slug:
            raise DrillError(f"{path}: field 'slug': {drill.slug!r} must match the file name {path.stem!r}")
        if drill.slug in drills:
            raise DrillError(f"{path}: field 'slug': {drill.slug!r} is also used by {drills[drill.slug].path}")
        drills[drill.slug] = drill
    return drills
