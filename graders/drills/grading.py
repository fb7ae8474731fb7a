"""Grade one submission for one drill: constraints, cases, reference outputs, run, compare, verdict.

Pure Python (torch, no Django): the Celery task and the CLI both call ``grade``. The reference
solution runs through the same runner as the learner's code, so a drill file with a broken or
hostile reference can hurt a sandbox child at worst, never the worker; its outputs are cached
per (drill version, seed, visible_only, device) because they are the same for every learner.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, NotRequired, Protocol, TypedDict

from graders.drills.advice import advice_for
from graders.drills.cases import Case, generate_cases, hidden_cases
from graders.drills.compare import Mismatch, compare
from graders.drills.constraints import check_constraints
from graders.drills.contract import budget_advice, judge, judge_run_time, judge_type
from graders.drills.schema import Drill, DrillError, DrillLimits
from graders.drills.teacher import hint_for
from graders.sandbox.results import RunResult
from jobs.status import VERDICTS

MESSAGE_CHARS = 4000


class Runner(Protocol):
    """What runs code for grading: the sandbox pool, or ``LocalRunner`` for trusted code in tests."""

    device: str

    def make_cases(self, specs: list[tuple[Any, ...]], *, limits: Any = None, background: bool = False) -> RunResult:
        """A drill's case specs evaluated (``graders.sandbox.casemaker``): one result case per spec."""
        ...

    def run(
        self,
        code: str,
        entry_point: str,
        cases: list[tuple[Any, ...]],
        *,
        limits: Any = None,
        grad: bool = False,
        hidden: list[tuple[Any, ...]] | None = None,
        count_graph: bool = False,
        reference: bool = False,
        go_on: Callable[[RunResult], bool] | None = None,
        background: bool = False,
        measure_cpu: bool = False,
        count_steps: bool = False,
        called_once: int = 0,
    ) -> RunResult: ...

    def busy(self) -> AbstractContextManager[None]: ...


class TestResult(TypedDict):
    name: str
    hidden: bool
    passed: bool
    message: str
    mismatch: NotRequired[Mismatch]  # a failing visible case's: its output beside the expected one (bounded)


class Verdict(TypedDict):
    drill: str
    drill_version: str
    seed: int | None  # the hidden cases' seed; None where none was sent (an example failed first)
    status: str
    message: str
    tests: list[TestResult]
    passed: int
    total: int
    hidden_passed: int
    hidden_total: int
    device: str
    cpu_ms: float
    wall_ms: float
    memory_mb: float  # the runner's peak resident memory, torch included (0 where the runner cannot say)
    stdout: str
    mismatch: NotRequired[Mismatch]  # the first failing visible case's details, never a hidden one's
    violations: NotRequired[list[str]]
    advice: NotRequired[list[str]]  # an accepted solution's torch habits worth changing (never a failure)
    hint: NotRequired[str]  # a failed one's common mistake named, with its fix (graders.drills.teacher)


class ReferenceFailure(RuntimeError):
    """The drill's own reference did not run cleanly: our fault, never the learner's."""


@dataclasses.dataclass(frozen=True)
class Expected:
    """Cases with the reference's output and behaviour record for each, and their args as handed to the runner.

    ``args`` is one list object, never rebuilt or changed, so the sandbox pool encodes it once.
    """

    cases: list[Case]
    outputs: list[object]
    records: list[dict[str, Any] | None]
    args: list[tuple[Any, ...]]


NOTHING = Expected([], [], [], [])


class ReferenceCache:
    """A small thread-safe LRU of (visible, hidden) ``Expected`` per (version, seed, visible_only, device, twins)."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, int, bool, str, bool], tuple[Expected, Expected]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, int, bool, str, bool]) -> tuple[Expected, Expected] | None:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
            return None

    def put(self, key: tuple[str, int, bool, str, bool], value: tuple[Expected, Expected]) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


DEFAULT_CACHE = ReferenceCache()


def fresh_seed() -> int:
    """48 random bits: a fresh instance of the hidden cases (fits a JSON number and a bigint)."""
    return int.from_bytes(os.urandom(6), "big")


class SeedReservoir:
    """Fresh seeds with their hidden cases' reference outputs ready, per (drill version, runner device).

    Every attempt whose hidden cases are sent gets cases no other submission saw, so what one verdict reveals
    (a bit per hidden case) never adds up over attempts. A new seed's reference outputs need a run of the
    reference; made many seeds at a time, in one run of the hidden cases alone (the examples are the same for
    every seed), a fresh seed costs a fraction of a runner. A drill version's batches grow with its use, from
    ``first`` seeds to ``batch`` (doubling each time): each batch takes a warm runner from the learners' pool,
    so a busy drill wants few large batches, and a drill attempted twice a day should not pay for 64 seeds
    (each worker process keeps its own reservoir). A batch is one runner's job under the drill's limits, so
    it is planned to fit a share of them and halved when it does not (``_make``). A seed whose cases never
    left the grader (an example failed first) is handed back, unseen, for the next attempt.
    """

    def __init__(
        self, batch: int = 64, new_seed: Callable[[], int] = fresh_seed, background: bool = True, first: int = 8
    ) -> None:
        self.batch, self.new_seed, self.background, self.first = batch, new_seed, background, min(first, batch)
        self._ready: dict[tuple[str, str], collections.deque[tuple[int, Expected]]] = {}
        self._sizes: dict[tuple[str, str], int] = {}  # the size of each key's last batch
        self._seed_ms: dict[tuple[str, str], float] = {}  # the reference's CPU per seed in that batch
        self._ceilings: dict[tuple[str, str], int] = {}  # half the smallest batch that failed on a limit
        self._filling: set[tuple[str, str]] = set()  # keys whose next batch is being made
        self._lock = threading.Lock()

    def take(self, drill: Drill, runner: Runner) -> tuple[int, Expected]:
        """A fresh seed and its hidden cases with their references; the next batch is made in the background
        while a quarter of this one is left, so no verdict waits for it (only the very first of a drill version):
        a batch of 64 seeds takes well under the time it takes to hand out a quarter of the last one (16 attempts
        of one drill), and a later trigger wastes less when attempts stop."""
        key = _reservoir_key(drill, runner)
        with self._lock:
            ready = self._ready.setdefault(key, collections.deque())
            found = ready.popleft() if ready else None
            refill = found is not None and self.background and len(ready) <= self._sizes.get(key, 0) // 4
            refill = refill and key not in self._filling
            if refill:
                self._filling.add(key)
        if refill:
            threading.Thread(target=self._fill, args=(key, drill, runner), daemon=True, name="seed-reservoir").start()
        if found is not None:
            return found
        made = self._make(key, drill, runner)
        with self._lock:
            self._ready[key].extend(made[1:])
        return made[0]

    def give_back(self, drill: Drill, runner: Runner, seed: int, hidden: Expected) -> None:
        """A taken seed whose hidden cases were never sent to a runner (nor its number to anyone): next in line."""
        with self._lock:
            self._ready.setdefault(_reservoir_key(drill, runner), collections.deque()).appendleft((seed, hidden))

    def _fill(self, key: tuple[str, str], drill: Drill, runner: Runner) -> None:
        try:
            made = self._make(key, drill, runner, background=True)
        except Exception:  # noqa: BLE001 - a take() that finds nothing makes its own, and says why
            made = []
        with self._lock:
            self._ready[key].extend(made)
            self._filling.discard(key)

    def _make(
        self, key: tuple[str, str], drill: Drill, runner: Runner, *, background: bool = False
    ) -> list[tuple[int, Expected]]:
        """A batch of fresh seeds with their references, sized to fit one runner's limits: a batch that still
        fails on a limit is made again at half the size, down to one seed, so one learner's resubmissions of a
        heavy drill never leave it (or anyone's attempt at it) failing; only a single seed's failure is the
        drill's own (a ReferenceFailure for this attempt, the next one tries again)."""
        size = self._next_size(key, drill)
        while True:
            try:
                made, cpu_ms = self._batch(drill, runner, size, background)
            except (ReferenceFailure, DrillError):
                with self._lock:  # this size is past the runner's limits: never again for this drill version
                    self._seed_ms.pop(key, None)
                    self._sizes[key] = self._ceilings[key] = max(1, size // 2)
                if size == 1:
                    raise
                size = max(1, size // 2)
                continue
            with self._lock:
                self._sizes[key], self._seed_ms[key] = size, cpu_ms / size
            return made

    def _next_size(self, key: tuple[str, str], drill: Drill) -> int:
        """Double the last batch (``first`` for a new key) up to ``batch``, never past half a batch that failed,
        nor past what fits in ``BATCH_SHARE`` of the drill's CPU limit at the CPU a seed took last time."""
        with self._lock:
            last, per_seed = self._sizes.get(key), self._seed_ms.get(key)
            ceiling = self._ceilings.get(key, self.batch)
        size = min(ceiling, self.first if last is None else min(self.batch, last * 2))
        if per_seed:
            size = min(size, max(1, int(BATCH_SHARE * drill.limits.cpu_seconds * 1000 / per_seed)))
        return size

    def _batch(
        self, drill: Drill, runner: Runner, size: int, background: bool
    ) -> tuple[list[tuple[int, Expected]], float]:
        """``size`` fresh seeds' hidden cases (one runner job) and references (one more): the batch and its CPU."""
        seeds = [self.new_seed() for _ in range(size)]
        device = runner_device(drill, runner)
        per_seed = hidden_cases(
            drill, seeds, runner=runner, device=device, limits=sandbox_limits(drill.limits), background=background
        )
        every = [case for cases in per_seed for case in cases]
        result = _run_reference(drill, runner, every, [case.args for case in every], [], background=background)
        outcomes = result.cases + result.hidden
        made: list[tuple[int, Expected]] = []
        for seed, cases in zip(seeds, per_seed, strict=True):
            mine, outcomes = outcomes[: len(cases)], outcomes[len(cases) :]
            entry = Expected(cases, [o.value for o in mine], [o.behaviour for o in mine], [c.args for c in cases])
            made.append((seed, entry))
        return made, result.cpu_ms


def _reservoir_key(drill: Drill, runner: Runner) -> tuple[str, str]:
    return drill.version, str(getattr(runner, "device", "cpu"))


DEFAULT_RESERVOIR = SeedReservoir()
BATCH_SHARE = 0.25  # of a drill's CPU limit, the most a batch of references is planned to take


def runner_device(drill: Drill, runner: Runner) -> str:
    """``cuda`` only for a cuda drill on a runner that has a GPU; everything else grades on the CPU."""
    device = str(getattr(runner, "device", "cpu"))
    return "cuda" if drill.device == "cuda" and device.startswith("cuda") else "cpu"


def sandbox_limits(limits: DrillLimits) -> Any:
    """The sandbox's ``Limits`` for a drill's limits (the drill's own dataclass where it is absent)."""
    try:
        from graders.sandbox import Limits
    except ImportError:
        return limits
    return Limits(cpu_seconds=limits.cpu_seconds, wall_seconds=limits.wall_seconds, memory_mb=limits.memory_mb)


def reference_outputs(
    drill: Drill, seed: int, visible_only: bool, runner: Runner, cache: ReferenceCache = DEFAULT_CACHE
) -> tuple[list[Case], list[object], str]:
    """The cases for ``seed``, the reference output for each (cached) and the device they ran on."""
    visible, hidden = _reference(drill, seed, visible_only, runner, cache)
    return visible.cases + hidden.cases, visible.outputs + hidden.outputs, runner_device(drill, runner)


def _reference(
    drill: Drill, seed: int, visible_only: bool, runner: Runner, cache: ReferenceCache, *, twins: bool = False
) -> tuple[Expected, Expected]:
    """The visible and the hidden cases for ``seed`` with the reference's output and record for each (cached).

    The cache key holds the runner's own device: a GPU pool moves every input to the GPU, so even a
    CPU drill's reference outputs there may differ in the last bits from a CPU pool's.
    """
    key = (drill.version, seed, visible_only, str(getattr(runner, "device", "cpu")), twins)
    cached = cache.get(key)
    if cached is not None:
        return cached
    device = runner_device(drill, runner)
    limits = sandbox_limits(drill.limits)
    cases = generate_cases(drill, seed, visible_only, runner=runner, device=device, twins=twins, limits=limits)
    shown = [case for case in cases if not case.hidden]
    secret = [case for case in cases if case.hidden]
    shown_args, secret_args = [c.args for c in shown], [c.args for c in secret]
    ran = _run_reference(drill, runner, cases, shown_args, secret_args)
    outcomes = ran.cases + ran.hidden
    values, records = [o.value for o in outcomes], [o.behaviour for o in outcomes]
    n = len(shown)
    visible = Expected(shown, values[:n], records[:n], shown_args)
    hidden = Expected(secret, values[n:], records[n:], secret_args) if secret else NOTHING
    cache.put(key, (visible, hidden))
    return visible, hidden


def _run_reference(
    drill: Drill,
    runner: Runner,
    cases: list[Case],
    visible: list[tuple[Any, ...]],
    hidden: list[tuple[Any, ...]],
    *,
    background: bool = False,
) -> RunResult:
    """The reference's run, each case (visible, then hidden) run cleanly, or ReferenceFailure: ours to fix."""
    result = runner.run(
        drill.reference,
        drill.entry_point,
        visible,
        limits=sandbox_limits(drill.limits),
        grad=drill.grad,
        hidden=hidden or None,
        reference=True,
        background=background,
        **_checks(drill),
    )
    outcomes = result.cases + result.hidden
    if result.status != "ok" or result.hidden_status not in ("", "ok") or len(outcomes) != len(cases):
        status = result.status if result.status != "ok" else result.hidden_status
        raise ReferenceFailure(f"{drill.slug}: the reference ended with {status}: {result.message}")
    for case, outcome in zip(cases, outcomes, strict=True):
        if not outcome.ok:
            raise ReferenceFailure(f"{drill.slug}: the reference failed case {case.name}: {outcome.error}")
    return result


def _tensor_params(drill: Drill, cases: list[Case]) -> frozenset[str]:
    """The entry point's parameters that are tensors in the first case (for advice on tensor habits)."""
    import torch

    args = cases[0].args if cases else ()
    if args and f"class {drill.entry_point}" in drill.reference:
        args = tuple(args[1]) if len(args) == 2 and isinstance(args[1], tuple | list) else ()
    return frozenset(name for name, arg in zip(drill.arg_names, args, strict=False) if isinstance(arg, torch.Tensor))


def _checks(drill: Drill) -> dict[str, Any]:
    """The runner options a drill's contract needs beyond the defaults: ``count_graph`` makes the runner record
    the autograd graphs and the most tensor memory alive, ``count_steps`` the lines of Python each call ran
    (costly, so only for the budgets that read them)."""
    checks = {"count_graph": True} if drill.contract.graph_budget > 0 or drill.contract.memory_budget > 0 else {}
    return checks | ({"count_steps": True} if drill.contract.time_budget > 0 else {})


@functools.lru_cache(maxsize=512)
def updates_in_place(reference: str) -> bool:
    """Whether a drill's reference updates a tensor in place under ``torch.no_grad()`` (an SGD step, an init):
    only there is "do the update inside `torch.no_grad()`" the fix (issue 36 item 6, messages that fit)."""
    try:
        tree = ast.parse(reference)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    for node in ast.walk(tree):
        guarded = isinstance(node, ast.With) and any(
            isinstance(item.context_expr, ast.Call) and ast.unparse(item.context_expr.func).endswith("no_grad")
            for item in node.items
        )
        if guarded and any(_in_place(inner) for inner in ast.walk(node)):
            return True
    return False


def _in_place(node: ast.AST) -> bool:
    """``w -= lr * w.grad`` or ``w.grad *= c``, or a call of a method or function whose name ends in ``_`` (``w.sub_``,
    ``init.zeros_``); ``total += loss.item()`` sums numbers, no tensor updated."""
    if isinstance(node, ast.AugAssign):
        return "grad" in ast.unparse(node)  # ``w -= lr * w.grad``, ``w.grad *= c``
    name = node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else ""
    return name.endswith("_") and not name.startswith("_")


def _may_clone(drill: Drill) -> bool:
    """Whether the drill's constraints let the learner call ``.clone()`` (a puzzle's allowed calls may not)."""
    rules = drill.constraints
    if any(item.rsplit(".", 1)[-1] == "clone" for item in rules.forbid):
        return False
    return not rules.allow or bool({".clone", "torch.clone"} & set(rules.allow))


def _tolerance(drill: Drill) -> tuple[float, float] | None:
    """How far a second call's answer may move from the first: the drill's own comparison (exact: not at all)."""
    return None if drill.compare.mode == "exact" else (drill.compare.rtol, drill.compare.atol)


def _verdict(drill: Drill, seed: int | None, status: str, message: str, device: str, **extra: Any) -> Verdict:
    verdict: Verdict = {
        "drill": drill.slug,
        "drill_version": drill.version,
        "seed": seed,
        "status": status,
        "message": message[:MESSAGE_CHARS],
        "tests": [],
        "passed": 0,
        "total": 0,
        "hidden_passed": 0,
        "hidden_total": 0,
        "device": device,
        "cpu_ms": 0.0,
        "wall_ms": 0.0,
        "memory_mb": 0.0,
        "stdout": "",
    }
    verdict.update(extra)  # type: ignore[typeddict-item]  # the callers pass Verdict keys by name
    hint = hint_for(status, verdict["tests"], verdict.get("mismatch"), updates=updates_in_place(drill.reference))
    if hint:
        verdict["hint"] = hint
    return verdict


def _judge_case(
    case: Case, outcome: Any, expected: object, record: dict[str, Any] | None, drill: Drill
) -> tuple[TestResult, str, Mismatch | None]:
    """One visible test's result, the status it would give the submission, and the mismatch.

    The contract (what the call did to its arguments, the result's autograd state and device, a second
    call) is judged before the value: a right value reached by changing the caller's tensor is still wrong.
    """

    def failed(message: str, status: str = "wrong_answer") -> tuple[TestResult, str, Mismatch | None]:
        return {"name": case.name, "hidden": False, "passed": False, "message": message}, status, None

    if not outcome.ok:
        return failed(outcome.error or "raised an error", "runtime_error")
    args = (drill.contract, record, outcome.behaviour, drill.arg_names, len(case.args), _tolerance(drill))
    broken = judge(*args, may_clone=_may_clone(drill), updates=updates_in_place(drill.reference))
    mismatch = compare(expected, outcome.value, drill.compare)
    if broken is not None and (mismatch is None or mismatch["kind"] not in ("shape", "length")):
        return failed(broken)  # a wrong shape or length is the first thing to fix: it is shown instead
    wrong_type = judge_type(record, outcome.behaviour) if mismatch is None else None
    if wrong_type is not None:
        return failed(wrong_type)
    if mismatch is None:
        return {"name": case.name, "hidden": False, "passed": True, "message": "passed"}, "accepted", None
    if mismatch.get("nonfinite"):
        mismatch["nonfinite_kind"] = _out_of_range(case.args)
    test: TestResult = {"name": case.name, "hidden": False, "passed": False, "message": mismatch["message"]}
    test["mismatch"] = mismatch
    return test, "wrong_answer", mismatch


EXP_RANGE = 80.0  # float32's exp overflows past 88.7 and underflows to 0 below about -87 (-103 with subnormals)


def _out_of_range(args: tuple[Any, ...]) -> str:
    """What a case's floating-point inputs say about a non-finite result: ``overflow`` where one is past ``exp``'s
    range, ``underflow`` where one is only far below it, else '' (the teacher names neither)."""
    from graders.sandbox.behaviour import tensors_in

    found = [t.detach() for t in tensors_in(args) if t.is_floating_point() and t.numel()]
    finite = [t[t.isfinite()] for t in found]
    if any(bool((t > EXP_RANGE).any()) for t in finite):
        return "overflow"
    return "underflow" if any(bool((t < -EXP_RANGE).any()) for t in finite) else ""


def grade(
    drill: Drill,
    code: str,
    *,
    seed: int | None,
    runner: Runner,
    visible_only: bool = False,
    cache: ReferenceCache = DEFAULT_CACHE,
    reservoir: SeedReservoir | None = None,
) -> Verdict:
    """Steps: 1. constraints  2. cases + reference outputs  3. run the code  4. compare each case.

    ``seed=None``: the hidden cases of a fresh seed from ``reservoir`` (the verdict's ``seed`` says which,
    or is None where an example failed and no hidden case was sent); a given seed reproduces that seed's
    verdict (re-grading, the CLI, tests).
    """
    device = runner_device(drill, runner)
    violations = check_constraints(code, drill.constraints)
    if violations:
        messages = [v.message for v in violations]
        return _verdict(drill, seed, "rejected", "; ".join(messages), device, violations=messages)
    reservoir = reservoir or DEFAULT_RESERVOIR
    fresh = seed is None and not visible_only
    try:
        if fresh:
            visible, _ = _reference(drill, 0, True, runner, cache, twins=True)  # the same for every seed
            seed, hidden = reservoir.take(drill, runner)
        else:
            # A run of the examples alone (``visible_only``: the drill page's "run", the CLI's flag) shows them
            # alone; a grade adds the twin pair (``cases.pick_twins``).
            visible, hidden = _reference(drill, seed or 0, visible_only, runner, cache, twins=not visible_only)
    except (ReferenceFailure, DrillError) as exc:  # a drill we cannot grade: ours, never the learner's
        return _verdict(drill, seed, "internal_error", str(exc), device)
    judged: list[tuple[TestResult, str, Mismatch | None]] = []

    def examples_pass(shown: RunResult) -> bool:
        """The hidden cases go to the runner only after every example passed (a judge stops at a failed test)."""
        judged[:] = _judge_visible(shown, visible, drill)
        return len(shown.cases) == len(visible.args) and all(test["passed"] for test, _, _ in judged)

    # Of the hidden phase only values, ok flags and behaviour records come back, each case reduced here to
    # passed or failed (one bit).
    result = runner.run(
        code,
        drill.entry_point,
        visible.args,
        limits=sandbox_limits(drill.limits),
        grad=drill.grad,
        hidden=hidden.args or None,
        go_on=examples_pass,
        measure_cpu=drill.contract.time_budget > 0,
        called_once=2 if visible.cases and visible.cases[-1].twin_of else 0,  # a twin pair: its own second call
        **_checks(drill),
    )
    if hidden.args and not result.hidden_status:  # the hidden cases never left this process
        if fresh and seed is not None:
            reservoir.give_back(drill, runner, seed, hidden)
            seed = None
        hidden = dataclasses.replace(hidden, args=[])
    timing = {
        "cpu_ms": float(result.cpu_ms or 0),
        "wall_ms": float(result.wall_ms or 0),
        "memory_mb": float(result.memory_mb or 0),
        "stdout": result.stdout or "",
    }
    device = str(result.device or device)
    names = [case.name for case in hidden.cases]
    counts = {"total": len(visible.cases) + len(names), "hidden_total": len(names)}
    if result.status not in ("ok", "runtime_error") or len(result.cases) != len(visible.args):
        status = result.status if result.status in VERDICTS else "internal_error"
        message = result.message if status == result.status else ""
        message = message or f"the runner returned {len(result.cases)} results for {len(visible.args)} cases"
        # Rejected by the sandbox's own compile: nothing ran, so no test failed and there is nothing to count
        # (the rule is the whole message). Otherwise the examples' phase ended early: no hidden case was sent.
        if status == "rejected":
            return _verdict(drill, seed, status, message, device, **timing)
        tests = [TestResult(name=c.name, hidden=False, passed=False, message=status) for c in visible.cases]
        tests += [_hidden_test(name, False, NOT_RUN) for name in names]
        return _verdict(drill, seed, status, message, device, tests=tests, **counts, **timing)
    judged = judged or _judge_visible(result, visible, drill)
    tests = [test for test, _, _ in judged]
    hidden_phase = _hidden_phase(result, len(hidden.args))
    if not hidden.args:
        tests += [_hidden_test(name, False, NOT_RUN) for name in names]
    else:
        secret = zip(hidden.cases, result.hidden, hidden.outputs, hidden.records, strict=False)
        tests += [
            _judge_hidden(*one, drill) if hidden_phase == "ok" else _hidden_test(one[0].name, False) for one in secret
        ]
        # The phase ended early (out of time, memory or output): the first case it did not finish failed with it,
        # the ones after it were not run (they run in order).
        unreached = hidden.cases[len(result.hidden) :] if hidden_phase != "ok" else []
        tests += [_hidden_test(c.name, False, hidden_phase if i == 0 else NOT_RUN) for i, c in enumerate(unreached)]
    passed = sum(test["passed"] for test in tests)
    hidden_passed = sum(test["passed"] for test in tests if test["hidden"])
    counts.update(passed=passed, hidden_passed=hidden_passed)
    failing = [(test, status, mismatch) for test, status, mismatch in judged if not test["passed"]]
    if failing:
        test, status, mismatch = failing[0]
        extra: dict[str, Any] = {"mismatch": mismatch} if mismatch is not None else {}
        message = f"{test['name']}: {test['message']}"
        return _verdict(drill, seed, status, message, device, tests=tests, **counts, **timing, **extra)
    if hidden_phase != "ok":
        message = f"the hidden tests ended in {hidden_phase.replace('_', ' ')}"
        return _verdict(drill, seed, hidden_phase, message, device, tests=tests, **counts, **timing)
    failed_hidden = [test for test in tests if test["hidden"] and not test["passed"]]
    if failed_hidden:
        message = f"{failed_hidden[0]['name']}: {HIDDEN_FAILED}"
        return _verdict(drill, seed, "wrong_answer", message, device, tests=tests, **counts, **timing)
    slow = _slow_run(drill, visible, hidden, result, tests)
    if slow is not None:
        status = "wrong_answer" if result.runner_cpu_ms is not None else "internal_error"  # unmeasured: ours
        counts.update(passed=sum(test["passed"] for test in tests))
        return _verdict(drill, seed, status, slow, device, tests=tests, **counts, **timing)
    advice = advice_for(code, drill.entry_point, drill.reference, _tensor_params(drill, visible.cases))
    advice += _budget_advice(drill, visible, result)
    extra_advice: dict[str, Any] = {"advice": advice} if advice else {}
    message = f"all {counts['total']} tests passed"
    return _verdict(drill, seed, "accepted", message, device, tests=tests, **counts, **timing, **extra_advice)


def _budget_advice(drill: Drill, visible: Expected, result: RunResult) -> list[str]:
    """The first graph or memory budget an example broke, as advice (``contract.budget_advice``: the runner's
    word, never a rejection). The hidden cases' records are not read: their numbers would tell."""
    found = (
        budget_advice(drill.contract, record, outcome.behaviour)
        for record, outcome in zip(visible.records, result.cases, strict=False)
    )
    return [message for message in found if message][:1]


def _slow_run(
    drill: Drill, visible: Expected, hidden: Expected, result: RunResult, tests: list[TestResult]
) -> str | None:
    """The time budget judged on the warden's measure of the whole run (``contract.judge_run_time``), which a
    runner's forged records cannot pass; when it is broken, the example the reference spends most on fails
    with it (the budget is the run's, the example the likeliest place of the loop), and the message says so."""
    if drill.contract.time_budget <= 0:
        return None
    slow = judge_run_time(drill.contract, visible.records + hidden.records[: len(hidden.args)], result.runner_cpu_ms)
    if slow is None or not visible.records or result.runner_cpu_ms is None:
        return slow
    spent = [r["cpu_us"] if isinstance(r, dict) and type(r.get("cpu_us")) is int else 0 for r in visible.records]
    heaviest = spent.index(max(spent))
    tests[heaviest] = {**tests[heaviest], "passed": False, "message": slow}
    return f"{tests[heaviest]['name']}: {slow}"


def _judge_visible(result: RunResult, visible: Expected, drill: Drill) -> list[tuple[TestResult, str, Mismatch | None]]:
    shown = list(zip(visible.cases, result.cases, visible.outputs, visible.records, strict=False))
    judged = [_judge_case(case, outcome, expected, record, drill) for case, outcome, expected, record in shown]
    passed = {test["name"] for test, _, _ in judged if test["passed"]}
    for (case, *_), (test, _, _) in zip(shown, judged, strict=True):
        if case.twin_of in passed and not test["passed"]:
            test["message"] = f"{STALE % {'test': case.twin_of}}\n{test['message']}"
    twins = {case.name for case in visible.cases if case.twin_of} | {case.twin_of for case in visible.cases}
    failed = [status for test, status, _ in judged if test["name"] not in twins and not test["passed"]]
    if failed:
        # Each fact once: where an example already shows the mistake, a twin failing with it says only that; where
        # an example raised, the runner did not call the pair at all (``child.run_cases``).
        message = NOT_RUN if "runtime_error" in failed else SAME_AS_EXAMPLES
        return [
            (_twin_beside(test, message), status, None) if test["name"] in twins and not test["passed"] else row
            for row in judged
            for test, status, _ in [row]
        ]
    return judged


def _twin_beside(test: TestResult, message: str) -> TestResult:
    return {"name": test["name"], "hidden": False, "passed": False, "message": message}


# A twin case (``cases.pick_twins``) failed where the case of its shape before it passed: state kept per shape.
STALE = (
    "called on new values of the same shape as `%(test)s` (which passed), your function got them wrong: it keeps "
    "state from an earlier call (a mask, a cache or a network made on the first call of a shape and reused). "
    "Compute everything from this call's inputs"
)


# A twin case failing beside a failing example: the example's row holds the details.
SAME_AS_EXAMPLES = "fails too (new values of a hidden case's shape); the failing example above shows what to fix first"

NOT_RUN = "not run"
HIDDEN_FAILED = "failed (a hidden case: its inputs, output and any error or message stay hidden)"
# What the hidden phase's status can say, beside each case's bit (docs/security.md, "What a hidden case reveals").
HIDDEN_STATUSES = ("ok", "time_limit", "memory_limit", "output_limit", "runtime_error", "internal_error")


def _hidden_phase(result: Any, n_hidden: int) -> str:
    """The hidden phase's status, reduced to a fixed word; ``ok`` only with one result per hidden case."""
    if n_hidden == 0:
        return "ok"
    status = str(result.hidden_status)
    if status == "ok" and len(result.hidden) != n_hidden:
        return "runtime_error"
    return status if status in HIDDEN_STATUSES else "runtime_error"


def _hidden_test(name: str, passed: bool, message: str = "") -> TestResult:
    return {"name": name, "hidden": True, "passed": passed, "message": message or ("passed" if passed else "failed")}


def _judge_hidden(
    case: Case, outcome: Any, expected: object, record: dict[str, Any] | None, drill: Drill
) -> TestResult:
    """One bit: the case passed (ran, kept the contract, the right value of the right type) or it did not."""
    passed = (
        outcome.ok
        and judge(drill.contract, record, outcome.behaviour, drill.arg_names, len(case.args), _tolerance(drill)) is None
        and compare(expected, outcome.value, drill.compare) is None
        and judge_type(record, outcome.behaviour) is None
    )
    return _hidden_test(case.name, bool(passed))
