"""What runs inside the child for one job: compile, run the module body, call the entry point per case.

Calling convention (also used by drills to compute references, see ``invoke``):
- a function entry point is called as ``entry(*case)``;
- a class entry point (an nn.Module drill) takes cases shaped ``(init_args, call_args)``: the class is
  instantiated with ``*init_args`` and the instance called with ``*call_args``;
- before every call ``seed_everything(CASE_SEED)`` seeds torch's, NumPy's global and Python's ``random``
  generators, so parameter initialisation and random ops are the same in the reference and the submission,
  in a repeated call and in a re-grade with the same seed (``np.random.default_rng()`` without a seed asks
  the OS for entropy on purpose and stays unseeded).
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import operator
import traceback
import types
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from graders.sandbox import behaviour, policy
from graders.sandbox.proxies import ModuleProxy

CASE_SEED = 0
_RANDOM_STATES: dict[int, Any] = {}  # seed -> Python's ``random`` state right after ``random.seed(seed)``
MAX_TRACEBACK_FRAMES = 8


class EntryPointError(Exception):
    """The entry point is missing or not callable."""


def invoke(entry: Any, case: tuple[Any, ...], grad: bool) -> Any:
    """Call one case the way every drill is graded; with grad=True, return output and input gradients."""
    target, args = prepare(entry, case, grad)
    return finish(target(*args), args, grad)


def prepare(entry: Any, case: tuple[Any, ...], grad: bool) -> tuple[Any, tuple[Any, ...]]:
    """Seed, build the callable (a class entry point is instantiated) and its arguments."""
    import torch

    seed_everything(CASE_SEED)
    if isinstance(entry, type):
        if len(case) != 2 or not isinstance(case[0], tuple | list) or not isinstance(case[1], tuple | list):
            raise EntryPointError("a class entry point needs cases shaped (init_args, call_args)")
        init_args, args = tuple(case[0]), tuple(case[1])
        target: Any = entry(*init_args)
    else:
        args, target = tuple(case), entry
    if grad:
        for a in args:
            if isinstance(a, torch.Tensor) and a.is_floating_point():
                a.requires_grad_(True)
    return target, args


def finish(out: Any, args: tuple[Any, ...], grad: bool) -> Any:
    """The case's value: the output, or with grad=True the output and d(sum of outputs)/d(each input)."""
    return {"output": out, "grads": _input_grads(out, args)} if grad else out


def run_case(
    entry: Any,
    case: tuple[Any, ...],
    *,
    grad: bool,
    count_graph: bool,
    lines: list[str],
    quiet: Callable[[], AbstractContextManager[Any]],
    filename: str = policy.FILENAME,
    repeat: bool = True,
    count_steps: bool = False,
) -> tuple[Any, dict[str, Any]]:
    """One case: its value and its behaviour record (``graders.sandbox.behaviour``), the learner's errors raised.

    With ``repeat`` the call is made twice, the second time on fresh copies of the case under ``quiet``
    (prints dropped): a different answer means state kept between calls. Where the arguments changed,
    another call finds the line that changed them. With ``count_steps`` (a drill with a time budget) the record
    counts the lines of ``filename`` the first call ran, its busiest line quoted from ``lines``.
    """
    pristine = behaviour.fresh(case)
    target, args = prepare(entry, case, grad)
    before = tuple(pristine[1]) if isinstance(entry, type) else tuple(pristine)  # a class's call arguments
    value, record = behaviour.observe(
        target, args, lambda: finish(target(*args), args, grad), grad=grad, before=before, count_graph=count_graph,
        count_steps=filename if count_steps else "",
    )  # fmt: skip
    busiest = record.get("busiest")
    if busiest and 0 < busiest[0] <= len(lines):
        record["busiest"] = [*busiest, lines[busiest[0] - 1].strip()[:120]]
    first = behaviour.fresh(value) if repeat else None
    with quiet():
        if record["changed"] or record.get("grad_left") or record.get("requires_grad_set"):
            again, again_args = prepare(entry, behaviour.fresh(pristine), grad)
            where = behaviour.locate(lambda: again(*again_args), again_args, filename, lines)
            if where:
                record["where"] = where
        # The copy is used up by this last call: a second call on the arguments as they were.
        plain = None if isinstance(entry, type) else tuple(pristine)  # a class's arguments: (init, call)
        record["repeat"] = (
            behaviour.repeat_differs(lambda: invoke(entry, pristine, grad), first, value, plain) if repeat else ""
        )
    return value, record


def seed_everything(seed: int) -> None:
    """torch.manual_seed without its CUDA side-effect on CPU hosts, and NumPy's and Python's generators.

    torch.manual_seed queues a lazy CUDA seeding call with a formatted stack trace when CUDA is not
    initialised (milliseconds, and it reads source files); seed the CPU generator directly instead and
    CUDA only where it is already initialised. ``np.random.rand()`` and friends draw from NumPy's global
    generator: unseeded, a re-grade with the same seed (or the repeat call) could see other numbers.
    """
    import random

    import numpy as np
    import torch

    torch.default_generator.manual_seed(seed)
    np.random.seed(seed)  # restoring a saved state is slower
    state = _RANDOM_STATES.get(seed)
    if state is None:
        random.seed(seed)
        _RANDOM_STATES[seed] = random.getstate()
    else:
        random.setstate(state)  # cheaper than random.seed
    if torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(seed)


def _input_grads(out: Any, args: tuple[Any, ...]) -> list[Any]:
    import torch

    leaves = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    parts = [t for t in behaviour.tensors_in(out) if t.requires_grad]
    if not leaves or not parts:
        return [None for _ in args]
    total = functools.reduce(operator.add, [torch.Tensor.sum(t) for t in parts])  # sum(), without its int start
    found = torch.autograd.grad(total, leaves, allow_unused=True)
    by_id = {id(leaf): g for leaf, g in zip(leaves, found, strict=True)}
    return [by_id.get(id(a)) if isinstance(a, torch.Tensor) else None for a in args]


def describe_error(exc: BaseException, source_lines: list[str]) -> str:
    """'ExcType: message' plus the traceback frames that are in the learner's own source."""
    try:
        message = f"{type(exc).__name__}: {exc}"
    except Exception:
        message = type(exc).__name__
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == policy.FILENAME]
    lines = []
    for frame in frames[-MAX_TRACEBACK_FRAMES:]:
        lineno = frame.lineno or 0
        text = source_lines[lineno - 1].strip() if 0 < lineno <= len(source_lines) else ""
        lines.append(f"  line {lineno}, in {frame.name}: {text}".rstrip(": "))
    if not lines:
        return message[:2000]
    return (message[:2000] + "\nTraceback (your code, most recent call last):\n" + "\n".join(lines))[:4000]


def is_memory_error(exc: BaseException) -> bool:
    """Python's MemoryError, torch's allocation failures, and the kernel's ENOMEM (an ``mmap`` past the cap)."""
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
        return True
    text = str(exc) if isinstance(exc, RuntimeError) else ""
    return isinstance(exc, MemoryError) or "can't allocate memory" in text or "out of memory" in text


@dataclasses.dataclass(frozen=True)
class Loaded:
    """A submission whose module body ran: its entry point and its source lines (for tracebacks)."""

    entry: Any
    lines: list[str]


def load(
    job: dict[str, Any], modules: dict[str, ModuleProxy], sink: policy.PrintSink, code: types.CodeType | None = None
) -> Loaded | dict[str, Any]:
    """Steps: 1. compile (unless the pool compiled it); 2. run the module body; 3. find the entry point.
    The loaded submission, or the failure as a result."""
    source: str = job["code"]
    lines = source.splitlines()
    if code is None:
        try:
            code = policy.compile_here(source, int(job["max_source_bytes"]))
        except policy.Rejected as exc:
            return {"status": "rejected", "message": str(exc)}
    glb, _guards = policy.make_globals(modules, sink)
    try:
        exec(code, glb)
    except BaseException as exc:  # noqa: BLE001 - SystemExit and friends too
        return _failure(exc, lines, sink, "the module body raised: ")
    entry = glb.get(job["entry_point"])
    if entry is None or not callable(entry):
        msg = f"the entry point {job['entry_point']!r} is not defined (or not callable)"
        return {"status": "runtime_error", "message": msg}
    return Loaded(entry, lines)


def recall(entry: Any, case: tuple[Any, ...], grad: bool, first: Any, original: Any = None) -> str:
    """After every other call: the first case again, on a fresh copy ('' when the answer is the same)."""
    plain = None if isinstance(entry, type) else tuple(case)
    return behaviour.repeat_differs(lambda: invoke(entry, case, grad), first, original, plain)


# A twin case's error where an example raised before it (``run_cases``): it was not called.
TWIN_NOT_RUN = "not run: an example raised an error first"


def run_cases(
    loaded: Loaded,
    cases: list[tuple[Any, ...]],
    job: dict[str, Any],
    device: str,
    sink: policy.PrintSink,
    *,
    each: bool = True,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every case in order: per case ``ok``, ``error`` and ``behaviour``, the values apart (by index).

    State kept between calls: with ``each`` every case is called a second time on fresh copies (the visible
    phase, where the message names the case), but the last ``job["called_once"]`` (a twin pair of one shape on
    two sets of values: a second call already); otherwise the first case alone is called again after all the
    others, where state kept over the whole phase shows, for one call instead of one per case (the hidden
    phase). A drill's reference (``job["reference"]``) is not called again at all.

    The twin pair is not called once an example raised (``TWIN_NOT_RUN`` in its place): the example's error is
    the verdict, and a pair that can only fail with it would cost two calls for nothing.
    """
    results: list[dict[str, Any]] = []
    values: dict[str, Any] = {}
    reference = bool(job.get("reference"))
    again_case = None if reference or each or not cases else behaviour.fresh(cases[0])
    once = job.get("called_once")
    repeated = len(cases) - (once if each and type(once) is int and 0 < once <= len(cases) else 0)
    for index, case in enumerate(cases):
        if index >= repeated and not all(result["ok"] for result in results[:repeated]):
            results.append({"ok": False, "error": TWIN_NOT_RUN})
            continue
        repeat = each and not reference and index < repeated
        outcome = _run_case(loaded.entry, case, job, device, loaded.lines, sink, repeat=repeat)
        if "status" in outcome:
            return outcome, {}
        if outcome["ok"]:
            values[str(index)] = outcome.pop("value")
            if index == 0 and again_case is not None:
                first = behaviour.fresh(values["0"])
        results.append(outcome)
    if again_case is not None and results[0]["ok"]:
        with sink.quieted():
            moved = tuple(_to_device(a, device) for a in again_case)
            again = recall(loaded.entry, moved, bool(job.get("grad")), first, values["0"])
        results[0]["behaviour"]["repeat"] = again
    return {"status": "ok", "message": "", "cases": results}, values


def run_job(
    job: dict[str, Any],
    cases: list[tuple[Any, ...]],
    modules: dict[str, ModuleProxy],
    sink: policy.PrintSink,
    device: str,
    code: types.CodeType | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Load the submission and run every case (the warm-ups' path; a job's runner calls the two apart)."""
    loaded = load(job, modules, sink, code)
    if isinstance(loaded, dict):
        return loaded, {}
    return run_cases(loaded, cases, job, device, sink)


def _run_case(
    entry: Any,
    case: tuple[Any, ...],
    job: dict[str, Any],
    device: str,
    lines: list[str],
    sink: policy.PrintSink,
    *,
    repeat: bool,
) -> dict[str, Any]:
    from graders.sandbox import wire

    try:
        args = tuple(_to_device(a, device) for a in case)
        value, record = run_case(
            entry,
            args,
            grad=bool(job.get("grad")),
            count_graph=bool(job.get("count_graph")),
            count_steps=bool(job.get("count_steps")),
            lines=lines,
            quiet=sink.quieted,
            repeat=repeat,
        )
        wire._Encoder().encode(value)  # refuse unsupported return types here, as this case's error
        return {"ok": True, "error": None, "value": value, "behaviour": record}
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, policy.OutputLimitExceeded) or sink.overflowed or is_memory_error(exc):
            return _failure(exc, lines, sink, "")
        return {"ok": False, "error": describe_error(exc, lines)}


def _failure(exc: BaseException, lines: list[str], sink: policy.PrintSink, prefix: str) -> dict[str, Any]:
    if isinstance(exc, policy.OutputLimitExceeded) or sink.overflowed:
        return {"status": "output_limit", "message": f"output limit: more than {sink.limit} bytes printed"}
    if is_memory_error(exc):
        return {"status": "memory_limit", "message": "memory limit: " + describe_error(exc, lines)[:500]}
    return {"status": "runtime_error", "message": prefix + describe_error(exc, lines)}


def _to_device(value: Any, device: str) -> Any:
    import torch

    if device == "cpu":
        return value
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, list):
        return [_to_device(v, device) for v in value]
    if isinstance(value, tuple):
        return tuple(_to_device(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    return value
