"""Find what a code block printed, and write it as a program that runs alone: a "what does this print?" card.

The notes show output three ways: IPython transcripts (``In [3]:`` / ``Out[3]:``), ``>>>`` lines
(used both the standard way, as the prompt, and the notes' own way, marking the output), and a
separate fence right after the code (optionally after an "输出：" line).

A card's code is what a learner can run and reason about, so the transcript is not shown as it is:
1. prompts and every shown output are stripped (an output shown above the question may be its answer);
2. earlier cells that only raised, or only echoed a value, are left out; ``b = torch.randint(...)``
   whose value the transcript echoes becomes ``b = torch.tensor(<that value>)``, so the set-up is
   visible and the output deterministic;
3. names the block uses but never binds are looked up in the note's earlier blocks, nearest first, and
   those blocks are put in front (``with_setup``).

Whether the result really runs, prints the same twice, and what it prints is for the sandbox to say
(the ``outputs`` app); a card's back becomes what the sandbox printed. The parsing here is
conservative: a block that does not clearly show output makes no card.
"""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
from dataclasses import dataclass

_OUT = re.compile(r"^Out\[\d+\]:\s?(.*)$")
_IN = re.compile(r"^In \[\d+\]:\s?(.*)$")
_IN_CONTINUATION = re.compile(r"^\s+\.\.\.:\s?(.*)$")
_PROMPT = re.compile(r"^>>>\s?(.*)$")
_PROMPT_CONTINUATION = re.compile(r"^\.\.\.(?: (.*))?$")
# What a printed value starts with (as opposed to code typed at a ``>>>`` prompt).
_OUTPUTISH = re.compile(
    r"^(tensor\(|Traceback\b|torch\.Size|array\(|Parameter|[-+]?\d|\[|\{|\(|True\b|False\b|None\b|['\"<])"
)
_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Warning|Interrupt|Exit)\b")
_MAGIC = re.compile(r"^\s*(%|!|from\s+__future__\s+import\b)")
_RANDOM_CALL = re.compile(r"\b(randn|rand|randint|randperm|normal|random|uniform|multinomial|bernoulli)\b")
_OUTPUT_LABEL = re.compile(r"^\s*(输出|输出结果|结果|打印结果|运行结果|output|out)\s*[:：]?\s*$", re.IGNORECASE)
_OUTPUT_INFOS = {"", "text", "output", "console", "plaintext", "none", "txt"}
CODE_INFOS = {"", "python", "py", "python3", "ipython", "pycon"}
_MAX_OUTPUT_LINES = 200
# The names a snippet may use without binding them: what the notes assume is imported (the sandbox's
# prelude binds the same), and Python's builtins.
# (``t`` as torch, which some notes use, is left out: a block that binds ``t`` is set-up, not an alias.)
ASSUMED_NAMES = frozenset({"torch", "nn", "F", "np", "math", "Dataset", "IterableDataset", "TensorDataset"})
_KNOWN = ASSUMED_NAMES | frozenset(dir(builtins))
# Calls that change state even when a transcript shows their value: such an echo stays in the set-up.
_MUTATING = re.compile(
    r"(_|\b(backward|step|zero_grad|append|extend|insert|pop|update|add_module|apply|manual_seed|seed))\($"
)
_SEEDS = re.compile(r"\b(manual_seed|seed)\(")
_MAX_SETUP_BLOCKS = 3
_MIN_ANSWER = 6  # shorter outputs ("2", "True") occur in code by chance; longer ones only as the answer


@dataclass(frozen=True)
class Exchange:
    """One shown output: the code that runs alone up to the line that printed it, and what the note shows."""

    code: str
    output: str


@dataclass(frozen=True)
class Cell:
    """The code between two shown outputs (prompts stripped), and the output the transcript shows after it."""

    code: str
    shown: str

    @property
    def raised(self) -> bool:
        return self.shown.startswith("Traceback") or bool(_ERROR_LINE.match(self.shown.strip().split("\n")[-1]))


def is_output_label(text: str) -> bool:
    return bool(_OUTPUT_LABEL.match(text))


def is_output_fence(info: str) -> bool:
    """A fence without a language (or an explicit text one) right after code is printed output."""
    return info.strip().lower() in _OUTPUT_INFOS


def split_session(block: str) -> list[Exchange]:
    """Every output shown inside one code block, each with the code that prints it, runnable alone."""
    cells = transcript_cells(block)
    values = echoed_values(cells)
    exchanges = []
    for index, cell in enumerate(cells):
        if not cell.shown.strip() or not cell.code.strip():
            continue
        asked = _materialized(cell.code, values)
        code = "\n".join([*needed_setup(setup_code(cells[:index], values), asked), asked])
        if not answer_in_code(code, cell.shown):
            exchanges.append(Exchange(code=code, output=cell.shown))
    return exchanges


def block_code(block: str) -> list[str]:
    """A whole block as set-up for a later one: its cells, cleaned as for a card."""
    cells = transcript_cells(block)
    return setup_code(cells, echoed_values(cells))


def transcript_cells(block: str) -> list[Cell]:
    """The block's cells: code between shown outputs, prompts stripped, each with what it showed."""
    lines = block.rstrip("\n").split("\n")
    first = next((line for line in lines if line.strip()), "")
    repl_mode = bool(_PROMPT.match(first))
    cells: list[Cell] = []
    current: list[str] = []
    index = 0
    after_prompt = False
    while index < len(lines):
        line = lines[index]
        kind, code = _classify(line, repl_mode, after_prompt)
        if kind == "output":
            index, shown = _read_output(lines, index, line)
            cells.append(Cell(_dedent(current), shown.rstrip()))
            current, after_prompt = [], False
            continue
        if current and (kind == "ipython" or (kind == "prompt" and repl_mode)):
            cells.append(Cell(_dedent(current), ""))  # every prompt starts a cell of its own
            current = []
        if code is not None and not _MAGIC.match(code):
            current.append(code)
        after_prompt = kind in ("prompt", "continuation") or (after_prompt and not line.strip())
        index += 1
    if current:
        cells.append(Cell(_dedent(current), ""))
    return [cell for cell in cells if cell.code.strip() or cell.shown.strip()]


def _dedent(lines: list[str]) -> str:
    return textwrap.dedent("\n".join(lines)).strip("\n")


def _classify(line: str, repl_mode: bool, after_prompt: bool) -> tuple[str, str | None]:
    """("output" | "prompt" | "continuation" | "ipython" | "code", the code on the line)."""
    if _OUT.match(line) or line.startswith("Traceback (most recent call last)"):
        return "output", None
    prompt = _PROMPT.match(line)
    if prompt:
        if not line.startswith(">>> ") and _OUTPUTISH.match(prompt.group(1)):
            return "output", None  # the notes' own ">>>tensor(...)": what was printed
        return "prompt", prompt.group(1)
    match = _IN.match(line)
    if match:
        return "ipython", match.group(1)
    match = _IN_CONTINUATION.match(line)
    if match:
        return "code", match.group(1)
    if repl_mode:
        continuation = _PROMPT_CONTINUATION.match(line)
        if continuation:
            return "continuation", continuation.group(1) or ""
        if after_prompt and line.strip():
            return "output", None  # a standard REPL: unprompted lines after a prompt were printed
    return "code", line


def _read_output(lines: list[str], index: int, line: str) -> tuple[int, str]:
    """(the index after one shown output, its text): a traceback to its error line, else until brackets balance."""
    out = _OUT.match(line)
    prompt = _PROMPT.match(line)
    first = out.group(1) if out else prompt.group(1) if prompt else line
    index += 1
    if not first.strip() and index < len(lines):
        first = lines[index]
        index += 1
    collected = [first]
    if first.startswith("Traceback"):
        while index < len(lines) and len(collected) < _MAX_OUTPUT_LINES:
            collected.append(lines[index])
            index += 1
            if _ERROR_LINE.match(collected[-1]):
                break
        return index, "\n".join(collected)
    if not out and not prompt:  # a standard REPL's printed lines: up to the next prompt
        while index < len(lines) and lines[index].strip() and not _PROMPT.match(lines[index]):
            collected.append(lines[index])
            index += 1
        return index, "\n".join(collected)
    depth = _depth(first)
    while depth > 0 and index < len(lines) and len(collected) < _MAX_OUTPUT_LINES:
        collected.append(lines[index])
        depth += _depth(lines[index])
        index += 1
    return index, "\n".join(collected)


def _depth(text: str) -> int:
    return sum(text.count(c) for c in "([{") - sum(text.count(c) for c in ")]}")


# ------------------------------------------------------------------------------------------------ set-up


def setup_code(cells: list[Cell], values: dict[str, str]) -> list[str]:
    """Earlier cells as set-up for a later one, silent: a cell that only raised is left out, so are the
    value a cell echoed and its top-level ``print`` calls (only the asked cell prints), and random
    values that the transcript echoes (``values``, anywhere in it) are written out as shown."""
    kept = []
    for cell in cells:
        if cell.raised and cell.shown:
            continue
        code = _without_echo(cell.code) if cell.shown else cell.code
        kept.append(_materialized(_without_prints(code), values))
    return [code for code in kept if code.strip()]


def echoed_values(cells: list[Cell]) -> dict[str, str]:
    """``{name: "tensor(...)"}`` for each bare name whose echo the transcript shows as a whole tensor."""
    values = {}
    for cell in cells:
        name = cell.code.strip().split("\n")[-1].strip()
        if re.fullmatch(r"[A-Za-z_]\w*", name) and _is_literal_tensor(cell.shown):
            values[name] = cell.shown
    return values


def _is_literal_tensor(shown: str) -> bool:
    """Printed whole (no ``...`` elision), on the CPU, and not the result of a graph: ``torch.`` + it rebuilds it."""
    text = shown.strip()
    if not text.startswith("tensor(") or "..." in text or "grad_fn" in text or "device=" in text:
        return False
    return _parse(text) is not None


def _materialized(code: str, values: dict[str, str]) -> str:
    """``b = torch.randint(...)`` -> ``b = torch.tensor(<the value shown>)`` when the transcript shows ``b``."""
    lines = code.split("\n")
    for number, line in enumerate(lines):
        match = re.match(r"^([A-Za-z_]\w*)\s*=(?!=)(.*)$", line)
        if match and match.group(1) in values and _RANDOM_CALL.search(match.group(2)):
            lines[number] = f"{match.group(1)} = torch.{values[match.group(1)]}"
    return "\n".join(lines)


def _without_echo(code: str) -> str:
    """The cell without its last statement when that is a value it only echoed (not ``x.add_(1)``)."""
    tree = _parse(code)
    if tree is None or not tree.body or not _is_echo(code, tree.body[-1]):
        return code
    return "\n".join(code.split("\n")[: tree.body[-1].lineno - 1]).rstrip()


def _without_prints(code: str) -> str:
    tree = _parse(code)
    if tree is None:
        return code
    lines = code.split("\n")
    for statement in reversed(tree.body):
        value = statement.value if isinstance(statement, ast.Expr) else None
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "print":
            del lines[statement.lineno - 1 : statement.end_lineno or statement.lineno]
    return "\n".join(lines).strip("\n")


def _is_echo(code: str, statement: ast.stmt) -> bool:
    if not isinstance(statement, ast.Expr):
        return False
    for node in ast.walk(statement):
        if isinstance(node, ast.Call):
            callee = ast.get_source_segment(code, node.func) or ""
            if _MUTATING.search(callee + "(") or callee == "print":
                return False
    return True


def answer_in_code(code: str, output: str) -> bool:
    """Whether the code shows its own answer (an echo of a value written out above, a transcript line)."""
    answer = " ".join(output.split())
    return len(answer) >= _MIN_ANSWER and answer in " ".join(code.split())


def needed_setup(units: list[str], code: str) -> list[str]:
    """The units (cells of the same block, in order) that ``code`` needs: each binds or changes a name
    that the code, or a unit kept after it, reads (a backward slice); a unit that seeds is always kept."""
    needed = unbound_names(code)
    kept: list[int] = []
    for index in range(len(units) - 1, -1, -1):
        unit = units[index]
        if _SEEDS.search(unit) or defined_names(unit) & needed:
            kept.append(index)
            needed = (needed - bound_names(unit)) | unbound_names(unit)
    return [units[i] for i in sorted(kept)]


def with_setup(code: str, earlier: list[list[str]]) -> str:
    """``code`` preceded by what it needs from the note's earlier blocks (each a list of cells), nearest first.

    A block is used only when it binds a name the code reads and never binds, needs nothing else the
    code lacks, and imports nothing but torch, numpy and math. Without one, the code stays as it is:
    the sandbox will say it does not run alone, and the notes check names the missing name.
    """
    needed = unbound_names(code)
    chosen: list[tuple[int, list[str]]] = []
    for index in range(len(earlier) - 1, -1, -1):
        if not needed or len(chosen) == _MAX_SETUP_BLOCKS:
            break
        units = earlier[index]
        if not _imports_only_known(units) or not any(defined_names(unit) & needed for unit in units):
            continue
        used = needed_setup(units, "\n".join(sorted(needed)))
        after = unbound_names("\n".join([*used, code]))
        if not (after - needed) and len(after) < len(needed):
            chosen.append((index, used))
            needed = after
    if not chosen:
        return code
    return "\n".join([*(line for _, used in sorted(chosen) for line in used), code])


def bound_names(code: str) -> set[str]:
    """Names bound at the top level of the code (what a later block could use)."""
    tree = _parse(code)
    if tree is None:
        return set()
    names: set[str] = set()
    for statement in _top_level(tree.body):
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(statement.name)
            continue
        if isinstance(statement, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in statement.names)
            continue
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def defined_names(code: str) -> set[str]:
    """Names the code binds or changes in place (``x[0] = 1``, ``x.grad = None``, ``x.add_(1)``)."""
    tree = _parse(code)
    if tree is None:
        return set()
    names = bound_names(code)
    for node in ast.walk(tree):
        target = None
        if isinstance(node, ast.Subscript | ast.Attribute) and isinstance(node.ctx, ast.Store):
            target = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if _MUTATING.search(node.func.attr + "("):
                target = node.func.value
        while isinstance(target, ast.Subscript | ast.Attribute):
            target = target.value
        if isinstance(target, ast.Name):
            names.add(target.id)
    return names


def unbound_names(code: str) -> set[str]:
    """Names the code reads before (or without) binding them, the assumed imports and builtins aside.

    In statement order, so ``dist = dist + dist.T`` needs ``dist``; a function's body is read against
    everything the code binds (it runs later), and names local to a function or comprehension are its own.
    """
    tree = _parse(code)
    if tree is None:
        return set()
    bound: set[str] = set()
    free: set[str] = set()
    later: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            later |= _reads(statement) - _binds(statement)
            bound.add(statement.name)
            continue
        reads = _reads(statement) - _binds(statement, nested_only=True)
        if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
            reads.add(statement.target.id)
        if not isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Expr):
            reads -= _binds(statement)  # for/with/if: the loop variable is bound before the body reads it
        free |= reads - bound
        bound |= _binds(statement)
    return (free | (later - bound)) - _KNOWN


def _reads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _binds(node: ast.AST, nested_only: bool = False) -> set[str]:
    """Names a statement binds; with ``nested_only``, those local to its lambdas, comprehensions and defs."""
    names: set[str] = set()
    scopes = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.FunctionDef, ast.ClassDef)
    roots = [n for n in ast.walk(node) if isinstance(n, scopes)] if nested_only else [node]
    for root in roots:
        for inner in ast.walk(root):
            if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store | ast.Del):
                names.add(inner.id)
            elif isinstance(inner, ast.arg):
                names.add(inner.arg)
            elif isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(inner.name)
            elif isinstance(inner, ast.Import | ast.ImportFrom):
                names.update((alias.asname or alias.name).split(".")[0] for alias in inner.names)
    return names


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements that run at the top level: into if/for/while/with/try bodies, not into functions."""
    found: list[ast.stmt] = []
    for statement in body:
        found.append(statement)
        if isinstance(statement, ast.If | ast.For | ast.While | ast.With | ast.Try):
            for name in ("body", "orelse", "finalbody"):
                found += _top_level(getattr(statement, name, []))
            for handler in getattr(statement, "handlers", []):
                found += _top_level(handler.body)
    return found


def _imports_only_known(units: list[str]) -> bool:
    for unit in units:
        tree = _parse(unit)
        for node in ast.walk(tree) if tree is not None else []:
            modules = []
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            if any(m.split(".")[0] not in ("torch", "numpy", "math") for m in modules):
                return False
    return True


def _parse(code: str) -> ast.Module | None:
    try:
        return ast.parse(code)
    except SyntaxError:
        return None


def ends_in_expression(code: str) -> bool:
    """The last statement is a bare expression (not ``print``): its value is what a REPL would show."""
    tree = _parse(code)
    if tree is None or not tree.body or not isinstance(tree.body[-1], ast.Expr):
        return False
    value = tree.body[-1].value
    return not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "print")
