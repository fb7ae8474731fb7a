""" "What does this print?" cards, graded: a runnable program from the card, and a tolerant comparison.

Pure (no Django, no torch): the web process builds programs and compares answers, a worker runs the
programs in the sandbox (``outputs.runs``).

An ``output`` card (``cards.ingest.outputs``) shows code that runs alone (prompts and shown outputs
stripped, its set-up included) as a fenced block in its front; its back is the note's output until the
sandbox has run it, then what the sandbox printed (``outputs.verify``). ``snippet_from_card`` reads the
code as *cells* (older cards hold whole transcripts: the code between two shown outputs). ``build_program``
then writes a module the sandbox accepts:

1. a prelude with the aliases the notes assume (``torch``, ``nn``, ``F``, ``np``, ``math``, ``t``) and a
   fixed seed (the seed is an argument: running twice with two seeds tells random output apart);
2. every cell but the last inside ``try`` (a REPL keeps going after an error), its errors printed
   behind a marker so the parent can tell "needs an earlier block" (NameError) from the rest;
3. a marker, then the last cell, whose final expression is printed with ``repr`` as a REPL would.

What the last cell printed (plus the error line when it raised) is the real output; ``verdict`` says
whether it makes a card.
"""

from __future__ import annotations

import ast
import hashlib
import math
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from cards.ingest.outputs import answer_in_code, transcript_cells

# Bump when build_program changes, so every cached run is redone (it is part of the cache key).
ADAPTER_VERSION = "2"
ENTRY_POINT = "snippet_done"
# Private-use characters, not control characters: the sandbox's parent replaces every control character
# but newline and tab in what a runner sends (``graders.sandbox.wire.clean_text``), as it must for verdicts.
CELL_MARKER = "\ue000quizsite-last-cell\ue000"
ERROR_MARKER = "\ue000quizsite-cell-error\ue000"
SEEDS = (0, 1)
# torch names a snippet may use that the sandbox does not offer: a NameError for them is "unsupported".
WITHHELD_NAMES = ("DataLoader", "SummaryWriter", "DistributedSampler")

_FENCE = re.compile(r"^(?P<fence>`{3,})[^\n`]*\n(?P<body>.*?)\n?(?P=fence)[ \t]*$", re.DOTALL | re.MULTILINE)
_ERROR_LINE = re.compile(r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Warning|Interrupt|Exit))\b:?\s*(?P<msg>.*)$")
_USES_T = re.compile(r"(?<![\w.])t\.[A-Za-z]")
_BINDS_T = re.compile(r"(?<![\w.])t\s*=(?!=)|\bas\s+t\b|\bfor\s+t\b|\bdef\s+\w+\([^)]*\bt\b")

PRELUDE = """\
import math
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, IterableDataset, TensorDataset

torch.manual_seed({seed})
np.random.seed({seed})


def repl_show(value):
    if value is not None:
        print(repr(value))


def {entry}():
    return 0

"""


@dataclass(frozen=True)
class Snippet:
    """The runnable cells of one output card and the output the note shows for the last one."""

    cells: tuple[str, ...]
    shown: str

    @property
    def code(self) -> str:
        return "\n\n".join(self.cells)

    @property
    def content_hash(self) -> str:
        """The cache key of a run: what runs (cells and adapter), not the card text around it."""
        payload = "\x1f".join([ADAPTER_VERSION, *self.cells])
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def fenced_blocks(markdown: str) -> list[str]:
    """The bodies of the fenced code blocks of a card face, in order."""
    return [m.group("body") for m in _FENCE.finditer(markdown)]


def snippet_from_card(front: str, back: str) -> Snippet | None:
    """The snippet of an output card (its front holds the transcript, its back the shown output)."""
    code_blocks, output_blocks = fenced_blocks(front), fenced_blocks(back)
    if not code_blocks or not output_blocks:
        return None
    cells = split_cells(code_blocks[0])
    if not cells:
        return None
    return Snippet(cells=tuple(cells), shown=output_blocks[0].strip("\n"))


def split_cells(transcript: str) -> list[str]:
    """Code between shown outputs, prompts stripped; outputs shown inside the transcript dropped.

    A card the importer wrote shows plain code (one cell); older transcripts are read the same way the
    importer reads them (``cards.ingest.outputs``), so both halves agree on what a cell is.
    """
    return [cell.code for cell in transcript_cells(transcript) if cell.code.strip()]


# ---------------------------------------------------------------------------------------------------------
# The program


def build_program(snippet: Snippet, seed: int, context: tuple[str, ...] = ()) -> str:
    """The module the sandbox runs for one seed (see the module docstring for its parts).

    ``context`` (the notes check only): code from earlier in the note, run first and silently, so a
    snippet that uses a name defined in an earlier block can still be checked.
    """
    parts = [PRELUDE.format(seed=int(seed), entry=ENTRY_POINT)]
    if _USES_T.search(snippet.code) and not _BINDS_T.search(snippet.code):
        parts.append("t = torch\n")
    for cell in context:
        parts.append(f"try:\n{textwrap.indent(cell, '    ')}\n    pass\nexcept Exception:\n    pass\n")
    for cell in snippet.cells[:-1]:
        body = textwrap.indent(show_last_expression(cell), "    ")
        parts.append(f"try:\n{body}\n    pass\nexcept Exception as error:\n    print({ERROR_MARKER!r}, repr(error))\n")
    parts.append(f"print({CELL_MARKER!r})\n")
    parts.append(show_last_expression(snippet.cells[-1]) + "\n")
    return "\n".join(parts)


def show_last_expression(cell: str) -> str:
    """The cell with its final expression statement printed as the REPL would (``repr``, None silent)."""
    try:
        tree = ast.parse(cell)
    except SyntaxError:
        return cell  # the sandbox's compiler reports it
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        return cell
    node = tree.body[-1]
    value = node.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "print":
        return cell
    lines = cell.split("\n")
    start, end = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    segment = ast.get_source_segment(cell, value)
    if segment is None or node.col_offset != 0:
        return cell
    # Parenthesised over several lines, so the continuation lines keep their own indentation.
    return "\n".join([*lines[:start], f"repl_show(\n{segment}\n)", *lines[end + 1 :]])


RunKind = Literal["ok", "raised", "random", "needs_context", "unsupported", "failed"]
GRADABLE_KINDS = ("ok", "raised")


@dataclass(frozen=True)
class RunOutcome:
    """What one sandbox run of a program means for the card."""

    kind: RunKind
    output: str  # what the last cell printed, plus "ExcType: message" when it raised
    error: str  # why, for anything but ok


def interpret_run(status: str, stdout: str, message: str) -> RunOutcome:
    """Read a sandbox ``RunResult`` (status, stdout, message) of a ``build_program`` module."""
    before, marker, last = stdout.partition(CELL_MARKER + "\n")
    printed = last if marker else ""
    earlier = [line.split(" ", 1)[-1] for line in before.split("\n") if line.startswith(ERROR_MARKER)]
    if status == "rejected" or any(_is_violation(e) for e in earlier):
        return RunOutcome("unsupported", "", message or "; ".join(earlier))
    if any(e.startswith("NameError(") for e in earlier):
        return RunOutcome("needs_context", "", next(e for e in earlier if e.startswith("NameError(")))
    if status == "ok":
        return RunOutcome("ok", printed.rstrip("\n"), "")
    if status != "runtime_error":
        return RunOutcome("failed", printed.rstrip("\n"), message)
    error = message.removeprefix("the module body raised: ").split("\n", 1)[0]
    if error.startswith("NameError"):
        withheld = any(f"'{name}'" in error for name in WITHHELD_NAMES)
        return RunOutcome("unsupported" if withheld else "needs_context", "", error)
    if _is_violation(error) or error.startswith(("ImportError", "ModuleNotFoundError")):
        return RunOutcome("unsupported", "", error)
    if not marker:
        return RunOutcome("failed", "", message)
    return RunOutcome("raised", (printed + error).strip("\n"), error)


def evaluate(snippet: Snippet, run: Callable[[str], tuple[str, str, str]], context: tuple[str, ...] = ()) -> RunOutcome:
    """Run the snippet under two seeds (``run`` takes a program, returns status, stdout, message).

    Output that changes with the seed is random and cannot be graded; the second run is skipped when
    the first already shows the snippet is not gradable.
    """
    first = interpret_run(*run(build_program(snippet, SEEDS[0], context)))
    if first.kind not in GRADABLE_KINDS:
        return first
    second = interpret_run(*run(build_program(snippet, SEEDS[1], context)))
    if second != first:
        return RunOutcome("random", first.output, "the output changes with the random seed")
    return first


def _is_violation(error: str) -> bool:
    return "not allowed in the sandbox" in error or "only torch, torch.nn" in error or "ImportError" in error


# ---------------------------------------------------------------------------------------------------------
# Comparing outputs

ABS_TOL = 6e-5  # torch prints 4 decimals: a value rounded there is off by at most 5e-5
REL_TOL = 1e-4

Token = tuple[str, object]
_TOKEN = re.compile(
    r"(?P<num>(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w.]))"
    r"|(?P<special>(?<![\w.])-?(?:nan|inf)(?!\w))"
    r"|(?P<word>[A-Za-z_]\w*)"
    r"|(?P<other>\S)"
)
_GRAD_FN = re.compile(r",?\s*grad_fn=<\w+>")
_ANSWER_PROMPT = re.compile(r"^(?:Out\[\d+\]:|>>>)\s?", re.MULTILINE)


def normalize_text(text: str) -> str:
    """Lines stripped and inner runs of whitespace collapsed; blank lines dropped."""
    lines = (" ".join(line.split()) for line in text.strip().split("\n"))
    return "\n".join(line for line in lines if line)


def clean_answer(text: str) -> str:
    """A typed answer without fences or prompts the learner may have copied along."""
    blocks = fenced_blocks(text)
    text = blocks[0] if blocks else text
    return _ANSWER_PROMPT.sub("", text.replace("\r\n", "\n")).strip()


def error_of(output: str) -> tuple[str, str] | None:
    """("RuntimeError", "message") when the output ends in an exception line, else None."""
    lines = [line for line in output.strip().split("\n") if line.strip()]
    if not lines:
        return None
    match = _ERROR_LINE.match(lines[-1].strip())
    if not match:
        return None
    return match.group("type").rsplit(".", 1)[-1], normalize_text(match.group("msg"))


def outputs_match(expected: str, actual: str, *, strict_errors: bool = False) -> bool:
    """Whether two printed outputs show the same values.

    Equal when the token streams agree: tensors by shape, dtype, device and values (within ABS_TOL/REL_TOL),
    other numbers by value, everything else exactly, whitespace ignored. ``grad_fn`` is ignored (its class
    names change between torch versions). An error is matched by its exception type, and with
    ``strict_errors`` (the notes check) by its message too.
    """
    expected_error, actual_error = error_of(expected), error_of(actual)
    if expected_error or actual_error:
        if not expected_error or not actual_error or expected_error[0] != actual_error[0]:
            return False
        return not strict_errors or expected_error[1] == actual_error[1]
    left, right = tokens(expected), tokens(actual)
    if left is None or right is None:
        return normalize_text(expected) == normalize_text(actual)
    return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right, strict=True))


def tokens(text: str) -> list[Token] | None:
    """The output as values: ("tensor", TensorValue), ("num", float), ("text", str). None if unparsable."""
    text = _GRAD_FN.sub("", text)
    result: list[Token] = []
    position = 0
    for match in re.finditer(r"\btensor\(", text):
        if match.start() < position:
            continue
        result.extend(_plain_tokens(text[position : match.start()]))
        end = _closing(text, match.end() - 1)
        parsed = parse_tensor(text[match.end() : end]) if end is not None else None
        if parsed is None:
            return None
        result.append(("tensor", parsed))
        position = end + 1
    result.extend(_plain_tokens(text[position:]))
    return result


def _plain_tokens(text: str) -> list[Token]:
    out: list[Token] = []
    for match in _TOKEN.finditer(text):
        if match.group("num") or match.group("special"):
            out.append(("num", float(match.group(0))))
        else:
            out.append(("text", match.group(0)))
    return out


def _closing(text: str, open_at: int) -> int | None:
    depth = 0
    for index in range(open_at, len(text)):
        if text[index] in "([{":
            depth += 1
        elif text[index] in ")]}":
            depth -= 1
            if depth == 0:
                return index
    return None


@dataclass(frozen=True)
class TensorValue:
    shape: tuple[int, ...]
    dtype: str
    device: str
    values: tuple[float, ...]
    requires_grad: bool


_KWARG = re.compile(r",\s*(?P<key>dtype|device|requires_grad|size)\s*=\s*(?P<value>torch\.\w+|'[^']*'|\w+)")
_ELEMENT = re.compile(r"^(?:[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|-?nan|-?inf|True|False)$")


def parse_tensor(inner: str) -> TensorValue | None:
    """The inside of ``tensor(...)`` as a value; None for summarised (``...``) or unknown forms."""
    kwargs = {m.group("key"): m.group("value").strip("'") for m in _KWARG.finditer(inner)}
    data = _KWARG.sub("", inner).strip().rstrip(",").strip()
    if "..." in data or "size" in kwargs:
        return None
    try:
        shape, elements = _nested(data)
    except ValueError:
        return None
    if not all(_ELEMENT.match(e) for e in elements):
        return None
    if any(e in ("True", "False") for e in elements):
        inferred, values = "bool", tuple(1.0 if e == "True" else 0.0 for e in elements)
    else:
        floaty = any(re.search(r"[.eEn]", e) for e in elements)
        inferred, values = ("float32" if floaty else "int64"), tuple(float(e) for e in elements)
    dtype = kwargs.get("dtype", "torch." + inferred).removeprefix("torch.")
    dtype = {"float": "float32", "double": "float64", "long": "int64", "int": "int32", "half": "float16"}.get(
        dtype, dtype
    )
    device = kwargs.get("device", "cpu").split(":")[0]
    return TensorValue(shape, dtype, device, values, kwargs.get("requires_grad") == "True")


def _nested(data: str) -> tuple[tuple[int, ...], list[str]]:
    """(shape, flat elements) of a printed nested list, or of a scalar."""
    data = data.strip()
    if not data.startswith("["):
        if not data or "," in data or "[" in data or "]" in data:
            raise ValueError("not a scalar")
        return (), [data]
    items = _split_top(data[1:-1] if data.endswith("]") else "x")
    if items == [""]:
        return (0,), []
    parsed = [_nested(item) for item in items]
    shapes = {shape for shape, _ in parsed}
    if len(shapes) != 1:
        raise ValueError("ragged")
    return (len(items), *shapes.pop()), [e for _, elements in parsed for e in elements]


def _split_top(text: str) -> list[str]:
    items, depth, current = [], 0, []
    for char in text:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise ValueError("unbalanced")
        if char == "," and depth == 0:
            items.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    items.append("".join(current).strip())
    if items and items[-1] == "" and len(items) > 1:
        items.pop()  # a trailing comma
    return items


def _same(a: Token, b: Token) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "num":
        return _close(float(a[1]), float(b[1]))
    if a[0] == "tensor":
        x, y = a[1], b[1]
        assert isinstance(x, TensorValue) and isinstance(y, TensorValue)
        return (
            (x.shape, x.dtype, x.device, x.requires_grad) == (y.shape, y.dtype, y.device, y.requires_grad)
            and len(x.values) == len(y.values)
            and all(_close(p, q) for p, q in zip(x.values, y.values, strict=True))
        )
    return a[1] == b[1]


def _close(p: float, q: float) -> bool:
    if math.isnan(p) or math.isnan(q):
        return math.isnan(p) and math.isnan(q)
    return math.isclose(p, q, rel_tol=REL_TOL, abs_tol=ABS_TOL)


# ---------------------------------------------------------------------------------------------------------
# The notes check

_OPEN_FENCE = re.compile(r"^(?P<indent>[ \t]*(?:(?:[-*+]|\d+[.)])[ \t]+)?)(?P<fence>`{3,})(?P<info>[^`\n]*)$")
_CODE_INFOS = {"", "python", "py", "python3", "ipython", "pycon"}


def note_code_blocks(markdown: str) -> list[tuple[str, str]]:
    """``(info, dedented body)`` of every fenced block of a note, nested ones (in list items) too."""
    lines = markdown.replace("\r\n", "\n").split("\n")
    blocks: list[tuple[str, str]] = []
    index = 0
    while index < len(lines):
        match = _OPEN_FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        closing = re.compile(rf"^[ \t]*{match.group('fence')}`*[ \t]*$")
        end = index + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        body = textwrap.dedent("\n".join(lines[index + 1 : end]))
        blocks.append((match.group("info").strip().lower(), body))
        index = end + 1
    return blocks


def note_context(markdown: str, snippet: Snippet) -> tuple[str, ...]:
    """The code cells of the note's blocks before the snippet's own block (syntax errors left out)."""
    blocks = note_code_blocks(markdown)
    wanted = [cell.strip() for cell in snippet.cells]
    context: list[str] = []
    for info, body in blocks:
        cells = split_cells(body)
        if [c.strip() for c in cells[: len(wanted)]] == wanted:
            return tuple(context)
        if info.split(" ")[0] in _CODE_INFOS:
            context.extend(cell for cell in cells if _parses(cell))
    return ()  # the snippet's block was not found: no context is safer than the wrong one


def _parses(cell: str) -> bool:
    try:
        ast.parse(cell)
    except SyntaxError:
        return False
    return True


Severity = Literal["error", "warning"]
SILENT = "silent"


@dataclass(frozen=True)
class Verdict:
    """Whether a snippet may be an output card, from its run: it runs alone, prints the same under two
    seeds, prints something on a CPU, and the answer is not already in its code. ``output`` is then the
    card's back; otherwise ``problem`` and ``detail`` tell the author why the card is kept out of review."""

    qualifies: bool
    problem: str  # fails | undefined | random | unsupported | silent | answer_in_front
    detail: str
    output: str


def verdict(code: str, kind: str, output: str, error: str, context_kind: str = "", context_output: str = "") -> Verdict:
    """Judge one run of the card's code (``interpret_run``'s kind, output, error; ``context_*`` from the
    diagnostic run after the note's earlier code, for a snippet that does not run alone)."""
    if kind in GRADABLE_KINDS:
        if not output.strip():
            where = " (the note's output needs a GPU)" if "cuda" in code else ""
            return Verdict(False, SILENT, f"prints nothing on a CPU{where}", output)
        if answer_in_code(code, output):
            return Verdict(False, "answer_in_front", "the code shows what it prints", output)
        return Verdict(True, "", "", output)
    if kind == "needs_context":
        detail = f"does not run alone: {error}"
        if context_kind in GRADABLE_KINDS and context_output.strip():
            detail += "; after the note's earlier code it runs: put the set-up it needs in its code block"
        return Verdict(False, "undefined", detail, "")
    if kind == "random":
        detail = "prints something else with another seed: seed it, or print no random values"
        return Verdict(False, "random", detail, output)
    if kind == "unsupported":
        return Verdict(False, "unsupported", f"uses what the sandbox withholds: {error}", "")
    return Verdict(False, "fails", f"does not run: {error.split(chr(10), 1)[0]}", output)


def note_is_stale(shown: str, output: str) -> bool:
    """The note shows another output than torch prints now (the card asks what torch prints)."""
    return not outputs_match(shown, output, strict_errors=True)
