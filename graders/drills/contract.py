"""Judge a case's behaviour record against the drill's contract, and say what went wrong like a teacher.

A record is the runner's word (a runner that owns its process can say anything): what it says is believed
when it convicts the runner, and a budget that would pass on its word alone is judged otherwise. The time
budget is judged on two of the runner's words, its CPU time and the lines of the learner's code it ran
(``_steps``: a loop over 40,000 elements runs 40,000 lines however loaded the machine is), and again on the
runner's CPU time as its warden measured it (``judge_run_time``): a forger passes the first two, never the
third. The graph and memory budgets, which nothing outside the runner can measure, only advise
(``budget_advice``).

The runner records what each call did besides returning (``graders.sandbox.behaviour``); the records
come back as plain data and are read here field by field, never trusted to have the right shape. The
contract is the drill's declaration (``schema.Contract``) plus what only the reference can say: the exact
type of the result, its device and how large its autograd graph may grow.

Pure Python: no torch, no Django.
"""

from __future__ import annotations

import math
import re
from typing import Any

from graders.drills.schema import Contract

MESSAGE_CHARS = 600
# A time budget never allows less than this much CPU time: a call of microseconds varies by more than any
# factor (a first call's lazy set-up, the cache), and a loop that the budget is for takes far longer.
TIME_FLOOR_US = 50_000
# The whole run's time budget (``judge_run_time``), measured outside the runner: each case may be called up to
# this many times (the call, the repeat on fresh copies, the call that locates a changed argument), and the job's
# own work beside the calls counts too (decoding, the module body, encoding, the exit: this is several times what
# index-to-mask's reference measured, room for a slower host and a longer module body).
CALLS_PER_CASE = 3
RUN_OVERHEAD_US = 50_000
# A time budget never allows fewer lines of the learner's code per call than this (``_steps``), nor fewer than
# the budget times the reference's lines on the same input: a loop over 40,000 elements runs 40,000-80,000
# lines (the ``for`` and its body), its CPU time (guarded) under ``TIME_FLOOR_US``; a loop over a
# model's layers, a sequence's time steps or a short list stays far below. Lines are counted, not timed: the same
# number on any machine, however loaded, so the verdict cannot flicker.
STEP_FLOOR = 10_000


def _indices(record: dict[str, Any], key: str, n_args: int) -> list[int]:
    """A record's list of argument indices, cleaned: ints in range only, in order, at most one of each."""
    raw = record.get(key)
    if not isinstance(raw, list):
        return []
    return sorted({i for i in raw[:64] if type(i) is int and 0 <= i < n_args})


def _new(expected: dict[str, Any], actual: dict[str, Any], key: str, n_args: int) -> list[int]:
    """Indices in the submission's record that the reference's record for the same case does not have."""
    return [i for i in _indices(actual, key, n_args) if i not in _indices(expected, key, n_args)]


def _text(record: dict[str, Any], key: str, limit: int = 200) -> str:
    value = record.get(key)
    return value[:limit] if isinstance(value, str) else ""


def _names(indices: list[int], arg_names: tuple[str, ...]) -> str:
    shown = [f"`{arg_names[i]}`" if i < len(arg_names) else f"argument {i + 1}" for i in indices]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _where(record: dict[str, Any], arg: int, what: str) -> str:
    """`` (line 3: `x.copy_(...)`)`` where the runner located the change, else ''."""
    where = record.get("where")
    if not isinstance(where, dict) or where.get("arg") != arg or where.get("what") != what:
        return ""
    line = where.get("line")
    code = where.get("code") if isinstance(where.get("code"), str) else ""
    if type(line) is not int or line <= 0:
        return ""
    return f" (line {line}: `{code[:120]}`)" if code else f" (line {line})"


def _plain_signature(signature: str) -> str:
    return re.sub(r" x\d+", "", signature)


def _type_hint(expected: str, actual: str) -> str:
    if actual.startswith("numpy.ndarray") and expected.startswith("Tensor"):
        return ": convert with `torch.from_numpy(...)` or compute with torch from the start"
    if actual.startswith("numpy.") and expected in ("float", "int", "bool"):
        return f": convert it with `{expected}(...)`"
    if actual.startswith("Tensor") and expected in ("float", "int", "bool"):
        return ": take the number out with `.item()`"
    if expected.startswith("Tensor") and actual in ("float", "int", "bool"):
        return ": wrap it with `torch.tensor(...)`"
    return ""


def judge(
    contract: Contract,
    expected: dict[str, Any] | None,
    actual: dict[str, Any] | None,
    arg_names: tuple[str, ...],
    n_args: int,
    tolerance: tuple[float, float] | None = None,
    may_clone: bool = True,
    updates: bool | None = None,
) -> str | None:
    """None when the call kept the contract, else the first broken promise in a learner's words.

    ``may_clone``: False where the drill's constraints refuse ``.clone()`` (a puzzle's allowed calls): the fix
    named is then one the drill allows (``NO_CLONE``). ``updates``: whether the drill's lesson is an update done
    in place (its reference updates under ``torch.no_grad()``); None: where the contract names in-place arguments.

    ``tolerance`` (rtol, atol): the drill's comparison, within which a second call's answer may move (a sum in
    another order); None: it must be the same to the bit.

    ``expected`` is the reference's record for the same case; ``actual`` the submission's. A missing
    record (a runner that sent none) is a broken contract: the runner always sends one. The result's exact
    type is judged apart (``judge_type``), after the values: a wrong type that the comparison sees is
    better shown with the values beside it.
    """
    if not isinstance(actual, dict):
        return "the grader could not observe what your function did (no behaviour record came back)"
    expected = expected if isinstance(expected, dict) else {}
    for check in (_inputs, _global_state, _autograd, _device, _alias, _steps, _time):
        message = check(contract, expected, actual, arg_names, n_args)
        if updates is False or (updates is None and not contract.in_place):
            message = message.replace(*UPDATE)
        for advice, instead in () if may_clone else NO_CLONE.items():
            message = message.replace(advice, instead)
        if message:
            return message[:MESSAGE_CHARS]
    message = _repeat(contract, expected, actual, tolerance, arg_names, n_args)
    if message:
        return message[:MESSAGE_CHARS]
    return None


# The fix for a result that keeps its graph, said on a drill without an update: "the update" is not there.
UPDATE = ("do the update inside `torch.no_grad()`", "compute it under `torch.no_grad()`")
# A fix that names ``.clone()``, and the one said instead where the drill does not allow it.
NO_CLONE = {
    "work on a copy (`.clone()`) or use an out-of-place operation": "use an out-of-place operation (this drill "
    "does not allow `.clone()`)",
    "Return a copy (`.clone()`) or build a new tensor": "Build a new tensor with an operation that makes one (this "
    "drill does not allow `.clone()`)",
}


def budget_advice(contract: Contract, expected: dict[str, Any] | None, actual: dict[str, Any] | None) -> str | None:
    """The graph or memory budget a call broke, as advice on an accepted solution, never as a rejection.

    ``graph_nodes`` and ``peak_bytes`` are counted inside the runner, and nothing outside it can count them
    (a process's resident memory moves by more than one batch's activations): they are the runner's word,
    and a runner that owns its process passes any budget judged on them. A budget only honest runners
    face is no budget, so these say what they saw and reject nothing (issue 36, item 5).
    """
    if not isinstance(expected, dict) or not isinstance(actual, dict):
        return None
    for check in (_graph, _memory):
        message = check(contract, expected, actual)
        if message:
            return message[:MESSAGE_CHARS]
    return None


def judge_type(expected: dict[str, Any] | None, actual: dict[str, Any] | None) -> str | None:
    """None when the result's exact type is the reference's, else why not.

    For a value that already matched: the wire turns a numpy array into a tensor and a numpy number into a
    Python one, so only the runner's record still knows what the function really returned.
    """
    if not isinstance(expected, dict) or not isinstance(actual, dict):
        return None
    want, got = _text(expected, "type"), _text(actual, "type")
    if not want or _plain_signature(want) == _plain_signature(got):
        return None
    got = got or "value of another type"
    return f"the result should be {_a(want)}, but your function returned {_a(got)}" + _type_hint(want, got)


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _device(contract: Contract, expected: dict[str, Any], actual: dict[str, Any], *_: Any) -> str:
    want, got = expected.get("devices"), actual.get("devices")
    if not isinstance(want, list) or not want or not isinstance(got, list) or not got or got == want:
        return ""
    shown = ", ".join(str(d)[:10] for d in got[:4]) or "no device"
    return f"the result should be on {', '.join(map(str, want))}, but it is on {shown}: move it with `.to(...)`"


def _inputs(
    contract: Contract, expected: dict[str, Any], actual: dict[str, Any], arg_names: tuple[str, ...], n: int
) -> str:
    in_place = [arg_names.index(name) for name in contract.in_place if name in arg_names]
    changed = _indices(actual, "changed", n)
    untouched = [i for i in changed if i not in in_place]
    missing = [i for i in in_place if i not in changed]
    if missing:
        return (
            f"{_names(missing, arg_names)} should be updated in place, but the caller's tensor did not change: "
            "`w = w - ...` makes a new tensor; write `w -= ...` or `w.sub_(...)` (inside `torch.no_grad()`)"
        )
    moved = [i for i in _indices(actual, "moved", n) if i in in_place]
    if moved:
        return (
            f"{_names(moved, arg_names)} was given new memory (`.data = ...` or `.set_()`) instead of being updated "
            "in place: use an in-place operation such as `.sub_(...)` or `.copy_(...)`"
        )
    problems = {
        "grad": _new(expected, actual, "grad_left", n),
        "requires_grad": _new(expected, actual, "requires_grad_set", n),
        "changed": untouched,
    }
    kind, i = _first_problem(problems, actual.get("where"))
    if kind == "changed":
        return (
            f"your function changed its argument {_names([i], arg_names)}{_where(actual, i, 'changed')}; the caller's "
            "value must stay as it was: work on a copy (`.clone()`) or use an out-of-place operation"
        )
    if kind == "grad":
        return (
            f"your function left a `.grad` on its argument {_names([i], arg_names)}{_where(actual, i, 'grad')}: the "
            "caller's tensor is not yours to change, and a second call would add to that `.grad`. Differentiate a "
            "copy (`x.detach().requires_grad_()`) or use `torch.autograd.grad`"
        )
    if kind == "requires_grad":
        return (
            f"your function changed `requires_grad` on its argument {_names([i], arg_names)}"
            f"{_where(actual, i, 'requires_grad')}: do that on a copy (`.detach().clone().requires_grad_()`), "
            "not on the caller's tensor"
        )
    return ""


# torch's global settings a call may leave changed (``graders.sandbox.behaviour.GLOBAL_STATE``), by name.
GLOBAL_SETTINGS = {
    "grad_mode": "torch.set_grad_enabled",
    "default_dtype": "torch.set_default_dtype",
    "deterministic": "torch.use_deterministic_algorithms",
    "anomaly": "torch.autograd.set_detect_anomaly",
}


def _global_state(contract: Contract, expected: dict[str, Any], actual: dict[str, Any], *_: Any) -> str:
    """torch's process-wide settings the call left changed (the runner put them back at once)."""

    def names(record: dict[str, Any]) -> list[str]:
        raw = record.get("global_state")
        return [n for n in raw[:8] if isinstance(n, str) and n in GLOBAL_SETTINGS] if isinstance(raw, list) else []

    left = [n for n in names(actual) if n not in names(expected)]
    if not left:
        return ""
    if left[0] == "grad_mode":
        return (
            "your function left autograd switched off (`torch.set_grad_enabled(False)` with nothing to switch it "
            "back on): the caller's code after it records no graph and gets no gradients. Use `with "
            "torch.no_grad():` around the part that needs it: autograd comes back on when the block ends"
        )
    return (
        f"your function left torch's global setting `{GLOBAL_SETTINGS[left[0]]}` changed: the caller's code after "
        "it runs under your setting. Change it inside a `with` block, or set it back before returning"
    )


def _first_problem(problems: dict[str, list[int]], where: object) -> tuple[str, int]:
    """The change the runner saw happen first (it located it), else the first kind found: (kind, argument)."""
    if isinstance(where, dict) and where.get("arg") in problems.get(str(where.get("what")), []):
        return str(where["what"]), int(where["arg"])
    return next(((kind, found[0]) for kind, found in problems.items() if found), ("", -1))


def _alias(
    contract: Contract, expected: dict[str, Any], actual: dict[str, Any], arg_names: tuple[str, ...], n: int
) -> str:
    if contract.result == "may_view":
        return ""
    shared = _new(expected, actual, "alias", n)
    if not shared:
        return ""
    return (
        f"the result shares memory with the argument {_names(shared, arg_names)}: the statement asks for a new "
        "tensor, so changing one would change the other. Return a copy (`.clone()`) or build a new tensor"
    )


def _autograd(contract: Contract, expected: dict[str, Any], actual: dict[str, Any], *_: Any) -> str:
    state, grad_fn = _text(actual, "autograd", 20), _text(actual, "grad_fn", 60)
    if contract.result_grad == "graph":
        if state == "grad_fn":
            return ""
        return (
            "the result carries no autograd graph, so gradients cannot flow back through it: was it detached, "
            "or computed under `torch.no_grad()`?"
        )
    if state == "grad_fn":
        return (
            f"the result still carries an autograd graph (grad_fn={grad_fn or '...'}): do the update inside "
            "`torch.no_grad()`, or return `.detach()`ed tensors"
        )
    if state == "leaf":
        return "the result still requires grad: return a `.detach()`ed tensor"
    return ""


def _graph(contract: Contract, expected: dict[str, Any], actual: dict[str, Any], *_: Any) -> str:
    """The graphs a call kept alive: past the call outside its result (``graph_kept``: where the reference keeps
    none, any), or during it, every graph still referenced counted together (``graph_nodes``: a list of losses
    holds one small graph per step), against the reference's times the budget."""
    if contract.graph_budget <= 0:
        return ""
    reference, kept = expected.get("graph_kept"), actual.get("graph_kept")
    if type(reference) is int and type(kept) is int and kept > max(0, reference) * contract.graph_budget:
        return (
            f"your function left {kept} autograd operations alive after it returned, held by something other "
            "than its result (a list at module level or an argument it appends to): each step's graph lives as "
            "long as that list. Keep `loss.item()` (a Python float) or `loss.detach()` instead"
        )
    reference, peak = expected.get("graph_nodes"), actual.get("graph_nodes")
    if type(reference) is not int or type(peak) is not int:
        return ""
    allowed = max(1, reference) * contract.graph_budget
    if peak <= allowed:
        return ""
    return (
        f"your function kept the autograd graphs of earlier steps alive: at its peak its graphs held {peak} "
        f"operations, where each step needs about {max(1, reference)}. Record a loss with `loss.item()` "
        "(a Python float) or `.detach()` so each step's graph can be freed"
    )


def _size(n: int) -> str:
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def _memory(contract: Contract, expected: dict[str, Any], actual: dict[str, Any], *_: Any) -> str:
    reference, peak = expected.get("peak_bytes"), actual.get("peak_bytes")
    if contract.memory_budget <= 0 or type(reference) is not int or type(peak) is not int:
        return ""
    if peak <= max(1024, reference) * contract.memory_budget:
        return ""
    return (
        f"your function kept too much alive at once: its tensors peaked at {_size(peak)}, where the reference "
        f"needs {_size(max(0, reference))}. A running total that is still a tensor, or outputs kept in a list, "
        "keeps every batch's graph and the activations it saved (and one batch of everything holds them all at "
        "once): compute under `torch.no_grad()`, a batch at a time, and keep plain numbers (`.item()`) or "
        "`.detach()`ed tensors"
    )


def _time(contract: Contract, expected: dict[str, Any], actual: dict[str, Any], *_: Any) -> str:
    reference, spent = expected.get("cpu_us"), actual.get("cpu_us")
    if contract.time_budget <= 0 or type(reference) is not int or type(spent) is not int:
        return ""
    if spent <= max(TIME_FLOOR_US, reference * contract.time_budget):
        return ""
    return (
        f"your function took {spent / 1000:.0f} ms of CPU time, where the reference takes "
        f"{max(0, reference) / 1000:.1f} ms: a Python loop over a tensor's elements is the usual cause. One tensor "
        "operation (indexing with the whole index tensor, broadcasting) does the same work in C"
    )


def _steps(contract: Contract, expected: dict[str, Any], actual: dict[str, Any], *_: Any) -> str:
    """The lines of the learner's code one call ran (``behaviour.StepCounter``, the runner's word: believed when
    it convicts), against the reference's on the same input times the budget, never under ``STEP_FLOOR``."""
    reference, ran = expected.get("steps"), actual.get("steps")
    if contract.time_budget <= 0 or type(reference) is not int or type(ran) is not int:
        return ""
    if ran <= max(STEP_FLOOR, reference * contract.time_budget):
        return ""
    busiest, where = actual.get("busiest"), ""
    if isinstance(busiest, list) and len(busiest) >= 2 and all(type(n) is int and n > 0 for n in busiest[:2]):
        code = busiest[2][:120] if len(busiest) > 2 and isinstance(busiest[2], str) else ""
        where = f" (line {busiest[0]}: `{code}`, {busiest[1]} times)" if code else f" (line {busiest[0]})"
    return (
        f"your function ran {ran} lines of Python in one call{where}, where the reference runs {max(0, reference)}: "
        "a Python loop over a tensor's elements (or over its `.tolist()`) is the usual cause. One tensor operation "
        "(indexing with the whole index tensor, broadcasting) does the same work in C"
    )


def judge_run_time(
    contract: Contract, expected: list[dict[str, Any] | None], runner_cpu_ms: float | None
) -> str | None:
    """None when the whole run kept the drill's time budget as measured outside the runner, else why not.

    A case's ``cpu_us`` is the runner's word, and a runner that owns its process can say anything: ``_time``
    believes it only when it convicts. This is the budget a forged record cannot pass: the runner's CPU time
    since its job was armed, counted by the kernel and reported by its warden (``RunResult.runner_cpu_ms``),
    against the reference's calls for every case the run was given (``expected``, the reference's records,
    our own code's word), each call allowed the budget, and the run at least the floor (once, not per call)
    plus the job's overhead. A forger gains at most the floor and the overhead over the reference's calls. An
    unmeasured run (no warden report) fails: the measure is what the budget rests on (``grade`` makes that an
    internal error, ours, not the learner's).
    """
    if contract.time_budget <= 0:
        return None
    reference_us = sum(r["cpu_us"] for r in expected if isinstance(r, dict) and type(r.get("cpu_us")) is int)
    allowed_us = RUN_OVERHEAD_US + max(TIME_FLOOR_US, contract.time_budget * CALLS_PER_CASE * reference_us)
    if runner_cpu_ms is None or not 0 <= runner_cpu_ms < 86_400_000:  # a day: the record's own bound
        return "the grader could not measure your function's CPU time; submit it again"
    if runner_cpu_ms * 1000 <= allowed_us:
        return None
    return (
        f"your function took {runner_cpu_ms:.0f} ms of CPU time over all the tests, where the reference's calls "
        f"take {reference_us / 1000:.1f} ms: a Python loop over a tensor's elements is the usual cause. One tensor "
        "operation (indexing with the whole index tensor, broadcasting) does the same work in C"
    )[:MESSAGE_CHARS]


def _within(again: str, tolerance: tuple[float, float] | None) -> bool:
    """``near ABS REL`` (``behaviour.repeat_differs``) inside the drill's tolerance: every element moved by at
    most atol, or by at most rtol of its value (either bound alone keeps |a - b| <= atol + rtol * |a|)."""
    parts = again.split()
    if tolerance is None or len(parts) != 3 or parts[0] != "near":
        return False
    try:
        gap, rel = float(parts[1]), float(parts[2])
    except ValueError:
        return False
    rtol, atol = tolerance
    return math.isfinite(gap) and (gap <= atol or (math.isfinite(rel) and rel <= rtol))


def _repeat(
    contract: Contract,
    expected: dict[str, Any],
    actual: dict[str, Any],
    tolerance: tuple[float, float] | None,
    arg_names: tuple[str, ...],
    n: int,
) -> str:
    again = _text(actual, "repeat", 160)
    if not contract.repeatable or not again or _text(expected, "repeat", 160):
        return ""
    if again == "same object":
        return (
            "called twice, your function returned the same tensor both times (kept from the first call, a cache): "
            "a caller that changes one answer changes the other. Compute a new tensor on every call"
        )
    if again.startswith("changed "):
        head, _, again = again.partition("; ")
        in_place = {arg_names.index(name) for name in contract.in_place if name in arg_names}
        raw = [p for p in head.removeprefix("changed ").split(",")[:16] if p.isdigit()]
        changed = sorted({int(p) for p in raw if int(p) < n} - in_place)
        if changed:
            return (
                f"called a second time with fresh copies of the same inputs, your function changed its argument "
                f"{_names(changed[:1], arg_names)}, which the first call left alone: it keeps state between calls "
                "(a module-level variable, a mutable default argument, a flag set by the first call)"
            )
    if not again or _within(again, tolerance):
        return ""
    if again.startswith("raised"):
        return (
            f"called a second time with the same inputs, your function {again}: it keeps state between calls "
            "(a module-level variable, a mutable default argument, or a `.grad` that keeps growing)"
        )
    return (
        "called twice with the same inputs, your function gave two different answers: it keeps state between "
        "calls (a module-level variable, a mutable default argument, or a `.grad` that keeps growing)"
    )


def describe(contract: Contract, arg_names: tuple[str, ...]) -> dict[str, str]:
    """The contract in one sentence, English and Chinese, for the drill page: one clause per promise."""
    others = [f"`{n}`" for n in arg_names if n not in contract.in_place]
    changed = ", ".join(f"`{n}`" for n in contract.in_place)
    kept = ("、".join(others) + " ") if others else ""
    # (the promise holds, its clause (en, zh), the clause otherwise or None)
    clauses: list[tuple[object, tuple[str, str], tuple[str, str] | None]] = [
        (
            contract.in_place,
            (f"updates {changed} in place and leaves {', '.join(others) or 'nothing else'} untouched",
             f"原地更新 {changed}，{kept}保持不变"),
            ("leaves every argument untouched (no in-place change, no `.grad`, `requires_grad` as it was)",
             "不改动任何参数（不原地修改、不留下 `.grad`、不改 `requires_grad`）"),
        ),
        (
            contract.result == "may_view",
            ("may return a view of its input", "结果可以是输入的视图"),
            ("returns a new result that shares no memory with the arguments", "返回不与参数共享内存的新结果"),
        ),
        (
            contract.result_grad == "graph",
            ("the result keeps the autograd graph back to the inputs", "结果保留通往输入的计算图"),
            ("the result carries no autograd graph", "结果不带计算图"),
        ),
        (
            contract.graph_budget,
            ("no step's graph is kept alive after that step (advised, not judged)",
             "每一步的计算图在该步之后不再被引用（只作建议、不判错）"),
            None,
        ),
        (
            contract.memory_budget,
            ("no batch's tensors are kept alive after that batch (advised, not judged)",
             "每个 batch 的张量在该 batch 之后不再被引用（只作建议、不判错）"),
            None,
        ),
        (
            contract.time_budget,
            ("it works on whole tensors instead of looping over their elements in Python",
             "整体运算张量而不用 Python 循环逐个处理元素"),
            None,
        ),
        (contract.repeatable, ("and calling it twice gives the same answer", "同样的输入调用两次结果相同"), None),
    ]  # fmt: skip
    picked = [yes if holds else no for holds, yes, no in clauses]
    en, zh = zip(*(clause for clause in picked if clause), strict=True)
    return {"en": "The function " + ", ".join(en) + ".", "zh": "函数" + "，".join(zh) + "。"}
