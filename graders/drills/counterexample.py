"""A counterexample that leaks nothing: an input the learner's code gets wrong, found on fresh seeds and shrunk.

Pure Python (torch, no Django): the ``counterexample`` job kind (``graders.kinds.counterexamples``) calls ``find``
on a worker's sandbox pool after a verdict whose examples all passed and whose hidden cases did not. Steps:

1. **Search.** The drill's seeded hidden generators (a ``fixed`` case is the same for every seed, so it is never
   drawn) are evaluated in a runner (``Runner.make_cases``) under case seeds drawn from ``secrets``: never the
   submission's hidden seed nor anything derived from it. The reference runs on them, then the learner's code,
   and each input is judged as a visible case is (``_judge_case``: the contract, then ``compare``). Batches
   double while nothing fails.
2. **Shrink**, as hypothesis shrinks: candidates that are strictly simpler (fewer list items, fewer and smaller
   dims, then values made zero, integer, halved or rounded), each kept only where the reference still runs on it
   and the learner's code still gets it wrong; greedy, smallest first, until nothing simpler fails.
3. **Show.** The input written as case-language text (``torch.tensor([...], dtype=...)``), the text the learner
   pastes into "Run", and run through ``own_input.run_on_input`` exactly as "Run" runs it: the stored report is
   what "Run" will show, and an input that does not fail there is not offered.

Whatever it draws, an input equal to one of the submission's hidden inputs is never kept (``avoid``): those stay
hidden even where a generator has few values. All of it is bounded by ``seconds`` of wall time (default 2 s; the
search and the shrink stop at ``SEARCH_SHARE`` of it, the confirming run takes the rest), off the verdict's clock:
the verdict is final before this job is queued.
"""

from __future__ import annotations

import dataclasses
import math
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any, NotRequired, TypedDict

import torch

from graders.drills.cases import Case, instances, make_cases
from graders.drills.grading import Runner, _checks, _judge_case, runner_device, sandbox_limits
from graders.drills.own_input import RunFailure, RunReport, run_on_input
from graders.drills.schema import ARGUMENTS_CHARS, CaseSpec, Drill, ExpressionError, call_arguments

SECONDS = 2.0  # the whole job's wall time, per failed submission
SEARCH_SHARE = 0.85  # of it, for the search and the shrink; the confirming run takes the rest
FLOOR_SECONDS = 0.5  # the least CPU and wall time a search's runner job gets, however little of the budget is left
FIRST_BATCH = 4  # fresh inputs per seeded generator in the first batch; doubled while none fails
MOST_BATCH = 32
ROUND = 24  # shrink candidates tried per runner job


class Counterexample(TypedDict):
    """What the page shows: the input (case-language text for "Run") and "Run"'s own report on it, or why none."""

    found: bool
    arguments: str  # the input, as the learner would type it into "Run"
    reason: str  # when none was found: "no_seeded_cases", "none_failed", "not_reproduced"
    tried: int  # fresh inputs judged
    shrinks: int  # simplifications kept
    search_ms: float
    run: NotRequired[RunReport]


def seeded_specs(drill: Drill) -> list[CaseSpec]:
    """The hidden generators a fresh seed changes: a ``fixed`` one would draw the hidden case itself."""
    return [spec for spec in drill.hidden if not spec.fixed]


def fresh_case_seed() -> int:
    return secrets.randbits(63)


class _Search:
    def __init__(self, drill: Drill, code: str, runner: Runner, avoid: list[tuple[Any, ...]], deadline: float) -> None:
        self.drill, self.code, self.runner, self.avoid, self.deadline = drill, code, runner, avoid, deadline
        self.limits = sandbox_limits(drill.limits)
        self.options = {"limits": self.limits, "grad": drill.grad, **_checks(drill)}
        self.tried = 0

    def left(self) -> bool:
        return time.monotonic() < self.deadline

    def capped(self) -> dict[str, Any]:
        """The run options with the drill's CPU and wall limits cut to the time left (at least ``FLOOR_SECONDS``),
        so one slow runner job cannot carry the search far past its budget. A learner's run that hits the cut
        counts as failing here; the confirming "Run" (under the drill's own limits) decides."""
        left = max(FLOOR_SECONDS, self.deadline - time.monotonic())
        limits: Any = self.limits  # the sandbox's Limits (or the drill's own, where the sandbox is absent)
        cut = {"cpu_seconds": min(limits.cpu_seconds, left), "wall_seconds": min(limits.wall_seconds, left)}
        limits = dataclasses.replace(limits, **cut)
        return {**self.options, "limits": limits}

    def hidden_input(self, args: tuple[Any, ...]) -> bool:
        return any(same_value(args, hidden) for hidden in self.avoid)

    def first_failing(self, candidates: list[tuple[Any, ...]]) -> int | None:
        """The index of the first candidate the reference runs on and the learner's code gets wrong, or None."""
        if not candidates:
            return None
        options = self.capped()
        reference = self.runner.run(self.drill.reference, self.drill.entry_point, candidates, reference=True, **options)
        if reference.status == "internal_error":
            raise RunFailure(reference.message)
        if reference.status != "ok" or len(reference.cases) != len(candidates):
            return self._one_by_one(candidates) if len(candidates) > 1 else None
        valid = [i for i, outcome in enumerate(reference.cases) if outcome.ok]
        if not valid:
            return None
        mine = self.runner.run(self.code, self.drill.entry_point, [candidates[i] for i in valid], **options)
        if mine.status == "internal_error":
            raise RunFailure(mine.message)
        self.tried += len(valid)
        if mine.status != "ok" or len(mine.cases) != len(valid):  # a limit, or code that never got to the cases
            if len(valid) == 1:
                return valid[0]
            found = self._one_by_one([candidates[i] for i in valid], valid)
            # Out of time before one alone was tried: the first, provisionally (the confirming "Run" decides).
            return valid[0] if found is None and not self.left() else found
        for index, outcome in zip(valid, mine.cases, strict=True):
            expected = reference.cases[index]
            case = Case("counterexample", candidates[index], hidden=False)
            test, _status, _mismatch = _judge_case(case, outcome, expected.value, expected.behaviour, self.drill)
            if not test["passed"]:
                return index
        return None

    def _one_by_one(self, candidates: list[tuple[Any, ...]], indices: list[int] | None = None) -> int | None:
        """A batch that ended early (a limit): each candidate alone, while time is left."""
        for position, candidate in enumerate(candidates):
            if not self.left():
                return None
            if self.first_failing([candidate]) is not None:
                return indices[position] if indices is not None else position
        return None

    def search(self, specs: list[CaseSpec], new_seed: Callable[[], int]) -> tuple[Any, ...] | None:
        device = runner_device(self.drill, self.runner)
        batch = FIRST_BATCH
        while self.left():
            made_specs = [
                (new_seed(), [list(pair) for pair in spec.let], list(spec.args), device)
                for _ in range(batch)
                for spec in specs
            ]
            made = self.runner.make_cases(made_specs, limits=self.capped()["limits"])
            if made.status == "internal_error":
                raise RunFailure(f"making fresh cases: {made.message}")
            candidates = [
                outcome.value
                for outcome in (made.cases if made.status == "ok" else [])
                if outcome.ok and isinstance(outcome.value, tuple) and not self.hidden_input(outcome.value)
            ]
            found = self.first_failing(candidates)
            if found is not None:
                return candidates[found]
            batch = min(batch * 2, MOST_BATCH)
        return None

    def shrink(self, args: tuple[Any, ...]) -> tuple[tuple[Any, ...], int]:
        """Greedy: the first (simplest) candidate that still fails replaces the input, until none does."""
        steps = 0
        while self.left():
            key = size_key(args)
            candidates: list[tuple[Any, ...]] = []
            for candidate in shrink_candidates(args):
                if size_key(candidate) < key and not self.hidden_input(candidate):
                    if not any(same_value(candidate, seen) for seen in candidates):
                        candidates.append(candidate)
            kept = None
            for start in range(0, len(candidates), ROUND):
                if not self.left():
                    break
                chunk = candidates[start : start + ROUND]
                found = self.first_failing(chunk)
                if found is not None:
                    kept = chunk[found]
                    break
            if kept is None:
                break
            args, steps = kept, steps + 1
        return args, steps


def find(
    drill: Drill,
    code: str,
    runner: Runner,
    format_output: Callable[[Any], str],
    *,
    hidden_seed: int,
    seconds: float = SECONDS,
    new_seed: Callable[[], int] = fresh_case_seed,
) -> Counterexample:
    """Steps 1-3 above. ``hidden_seed`` is the submission's: its inputs are made only to be avoided."""
    started = time.monotonic()
    report: Counterexample = {
        "found": False, "arguments": "", "reason": "", "tried": 0, "shrinks": 0, "search_ms": 0.0,
    }  # fmt: skip
    specs = seeded_specs(drill)
    if not specs:
        return {**report, "reason": "no_seeded_cases"}
    device = runner_device(drill, runner)
    limits = sandbox_limits(drill.limits)
    avoid = [
        case.args
        for case in make_cases(drill, runner, instances(drill.hidden, hidden_seed), device=device, limits=limits)
    ]
    # The search and the shrink stop at SEARCH_SHARE of the budget: the confirming "Run" (three runner jobs) takes
    # the rest, so the whole job ends near ``seconds`` (past it by at most that run).
    search = _Search(drill, code, runner, avoid, started + SEARCH_SHARE * seconds)
    found = search.search(specs, new_seed)
    report["tried"] = search.tried
    if found is None:
        return {**report, "reason": "none_failed", "search_ms": _ms(started)}
    shrunk, report["shrinks"] = search.shrink(found)
    for args in (shrunk, found) if shrunk is not found else (found,):
        text = arguments_text(args)
        if text is None or search.hidden_input(args):
            continue
        try:
            expressions = list(call_arguments(text))
        except ExpressionError:
            continue
        run = run_on_input(drill, code, expressions, runner, format_output)
        if fails(run):
            return {**report, "found": True, "arguments": text, "run": run, "search_ms": _ms(started)}
    return {**report, "reason": "not_reproduced", "search_ms": _ms(started)}


def fails(run: RunReport) -> bool:
    """ "Run" shows the learner's code getting this input wrong: the reference ran, and the code did not match it."""
    if run["input_error"] or run["reference_error"] or run["expected"] is None:
        return False
    return run["same"] is False or run["status"] != "ok"


def _ms(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)


# ------------------------------------------------------------------------------------------------- equality


def same_value(a: Any, b: Any) -> bool:
    """Bit for bit the same input: type, dtype, shape and values (nan equal to nan). Whether a tensor needs grad
    is not the input's: the wire does not carry it (a drill's ``grad`` has the runner set it)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.is_complex() or a.is_floating_point():
            return bool(torch.equal(torch.nan_to_num(a.detach(), nan=0.5), torch.nan_to_num(b.detach(), nan=0.5)))
        return bool(torch.equal(a.detach(), b.detach()))
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


# ------------------------------------------------------------------------------------------------ shrinking


def size_key(value: Any) -> tuple[int, int, int, float]:
    """How complex an input is, compared lexicographically: items (tensor elements and list items), values that
    are not integers, values that are not tenths, and the sum of magnitudes. Every kept shrink lowers it."""
    items, non_integer, non_tenth, magnitude = 0, 0, 0, 0.0
    for leaf in _leaves(value):
        if isinstance(leaf, torch.Tensor):
            data = leaf.detach()
            items += data.numel()
            if data.is_floating_point():
                data = data.double()
                finite = torch.isfinite(data)
                non_integer += int((~finite | (data != data.round())).sum())
                non_tenth += int((~finite | ((data * 10).round() / 10 != data)).sum())
                magnitude += float(data[finite].abs().sum())
            elif data.dtype != torch.bool and not data.is_complex():
                magnitude += float(data.double().abs().sum())
        elif isinstance(leaf, bool) or leaf is None or isinstance(leaf, str):
            items += 1
        elif isinstance(leaf, int):
            items += 1
            magnitude += abs(leaf)
        elif isinstance(leaf, float):
            items += 1
            if not math.isfinite(leaf) or leaf != round(leaf):
                non_integer += 1
            if not math.isfinite(leaf) or round(leaf * 10) / 10 != leaf:
                non_tenth += 1
            magnitude += abs(leaf) if math.isfinite(leaf) else 0.0
        else:
            items += 1
    for sequence in _sequences(value):
        items += len(sequence)
    return items, non_integer, non_tenth, magnitude


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    else:
        yield value


def _sequences(value: Any) -> Iterator[list[Any] | tuple[Any, ...]]:
    if isinstance(value, list | tuple):
        yield value
        for item in value:
            yield from _sequences(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _sequences(item)


Path = tuple[Any, ...]


def _paths(value: Any, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """Every node of an input with its path (indices and keys), the node itself first."""
    yield path, value
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _paths(item, (*path, index))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))


def _replace(value: Any, path: Path, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: (_replace(v, rest, new) if k == head else v) for k, v in value.items()}
    items = [(_replace(v, rest, new) if i == head else v) for i, v in enumerate(value)]
    return tuple(items) if isinstance(value, tuple) else items


def _like(tensor: torch.Tensor, data: torch.Tensor) -> torch.Tensor:
    """``data`` as an input in ``tensor``'s place: detached, with its dtype (and 0.0 for -0.0: simpler to read)."""
    data = data.detach().to(tensor.dtype).clone()
    return data + 0.0 if data.is_floating_point() else data


def _narrowed(value: Any, cuts: list[tuple[Path, int]], size: int, ints: int | None) -> Any:
    for path, dim in cuts:
        tensor = _get(value, path)
        value = _replace(value, path, _like(tensor, tensor.detach().narrow(dim, 0, size)))
    if ints is not None:  # a Python int equal to the cut size (a length argument) follows it
        for path, node in list(_paths(value)):
            if path and type(node) is int and node == ints:
                value = _replace(value, path, size)
    return value


def _get(value: Any, path: Path) -> Any:
    for step in path:
        value = value[step]
    return value


def shrink_candidates(args: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    """Simpler inputs, simplest first (the caller keeps those ``size_key`` ranks lower): fewer list items, fewer
    and smaller dims (a size shared by several tensors cut in all of them at once), then each tensor's values
    made zero, integer, halved and rounded to tenths, and smaller Python numbers."""
    nodes = list(_paths(args))
    for path, node in nodes:
        if path and isinstance(node, list) and len(node) > 1:
            for keep in sorted({1, len(node) // 2, len(node) - 1}):
                yield _replace(args, path, node[:keep])
    dims: dict[int, list[tuple[Path, int]]] = {}
    for path, node in nodes:
        if isinstance(node, torch.Tensor):
            for dim, size in enumerate(node.shape):
                if size > 1:
                    dims.setdefault(size, []).append((path, dim))
    for size in sorted(dims, reverse=True):
        for new in sorted({1, size // 2, size - 1}):
            yield _narrowed(args, dims[size], new, size)
            if len(dims[size]) > 1:
                for cut in dims[size]:
                    yield _narrowed(args, [cut], new, None)
    for path, node in nodes:
        if isinstance(node, torch.Tensor) and node.numel() and node.dtype != torch.bool and not node.is_complex():
            data = node.detach()
            yield _replace(args, path, _like(node, torch.zeros_like(data)))
            if data.is_floating_point():
                yield _replace(args, path, _like(node, data.round()))
                yield _replace(args, path, _like(node, (data / 2).round()))
                yield _replace(args, path, _like(node, (data * 10).round() / 10))
            else:
                yield _replace(args, path, _like(node, torch.div(data, 2, rounding_mode="trunc")))
    for path, node in nodes:
        if path and type(node) is int and node not in (0, 1):
            for new in sorted({0, 1, node // 2, node - 1 if node > 0 else node + 1}, key=abs):
                yield _replace(args, path, new)
        elif path and type(node) is float and math.isfinite(node) and node != 0.0:
            yield _replace(args, path, 0.0)
            yield _replace(args, path, float(round(node)))


# ---------------------------------------------------------------------------------------------- as text


_SHORT = {torch.float32: "float32", torch.float16: "float16"}


def arguments_text(args: tuple[Any, ...]) -> str | None:
    """The input as the arguments of one call in the case language, or None where it cannot be written
    (a type the language has no literal for, or longer than "Run" takes)."""
    try:
        text = ", ".join(_text(arg) for arg in args)
    except ValueError:
        return None
    return text if len(text) <= ARGUMENTS_CHARS else None


def _number(value: Any, dtype: torch.dtype | None = None) -> str:
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "-float('inf')"
        if dtype in _SHORT:
            import numpy as np

            short = str(getattr(np, _SHORT[dtype])(value))  # the shortest text that reads back to the same bits
            return short if "." in short or "e" in short else f"{short}.0"
        return repr(value)
    raise ValueError(f"no literal for {type(value).__name__}")


def _nested(data: Any, dtype: torch.dtype) -> str:
    if isinstance(data, list):
        return "[" + ", ".join(_nested(item, dtype) for item in data) + "]"
    return _number(data, dtype)


def _text(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return _tensor_text(value)
    if value is None or isinstance(value, bool | int | float):
        return "None" if value is None else _number(value)
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_text(item) for item in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_text(item) for item in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict) and all(isinstance(key, str | int) for key in value):
        return "{" + ", ".join(f"{_text(k)}: {_text(v)}" for k, v in value.items()) + "}"
    raise ValueError(f"no literal for {type(value).__name__}")


def _tensor_text(tensor: torch.Tensor) -> str:
    data = tensor.detach().cpu()
    if data.is_complex() or data.layout != torch.strided:
        raise ValueError("no literal for a complex or sparse tensor")
    dtype = f"dtype=torch.{str(data.dtype).removeprefix('torch.')}"
    if data.numel() == 0:
        return f"torch.zeros({tuple(data.shape)!r}, {dtype})"
    order = None
    if data.dim() >= 2 and not data.is_contiguous():
        strides = data.stride()
        order = sorted(range(data.dim()), key=lambda d: (-strides[d], d))
        if not data.permute(order).is_contiguous():
            order = None
    base = data.permute(order) if order is not None else data
    values = base.tolist() if base.dtype != torch.bfloat16 else base.float().tolist()
    text = f"torch.tensor({_nested(values, base.dtype)}, {dtype})"
    if order is None:
        return text
    # A permuted view stays one (the wire keeps it one): the same dims in memory order, permuted back.
    inverse = [order.index(d) for d in range(len(order))]
    return f"{text}.permute({', '.join(map(str, inverse))})"
