"""An in-process runner with the sandbox pool's ``run`` signature, for TRUSTED code only.

It exists so the drills (their references, known-wrong and alternative solutions written by the
team) can be checked quickly in one process, and so the grading logic can be tested without
child processes. It has no limits and no isolation: never hand it a learner's code.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from graders.sandbox import wire
from graders.sandbox.child import TWIN_NOT_RUN, run_case
from graders.sandbox.results import CaseResult, RunResult

SUBMISSION_FILE = "<submission>"


def trim_traceback(exc: BaseException) -> str:
    """Only the frames in the submitted code, then the exception line."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == SUBMISSION_FILE]
    lines = [f"  line {f.lineno}, in {f.name}\n" for f in frames]
    return "".join(lines + traceback.format_exception_only(type(exc), exc)).strip()


def _moved(value: Any, device: str) -> Any:
    """Like the sandbox: tensor inputs go to the runner's device, returned tensors come back to the CPU."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, list | tuple):
        return type(value)(_moved(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _moved(v, device) for k, v in value.items()}
    return value


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """torch on one thread while the cases run, as in a sandbox runner: CPU times (a drill's time budget) are
    then the same kind of figure, not a parallel kernel's work plus its threads' spinning."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


class LocalRunner:
    """Runs trusted code in this process; ``device`` is reported like the sandbox pool reports it."""

    def __init__(self, device: str = "cpu") -> None:
        self.device = device

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """The pool's refill hold: nothing to hold here."""
        yield

    def run(
        self,
        code: str,
        entry_point: str,
        cases: list[tuple[Any, ...]],
        *,
        limits: object = None,
        grad: bool = False,
        hidden: list[tuple[Any, ...]] | None = None,
        count_graph: bool = False,
        reference: bool = False,
        go_on: Callable[[RunResult], bool] | None = None,
        background: bool = False,
        measure_cpu: bool = False,
        count_steps: bool = False,
        called_once: int = 0,
    ) -> RunResult:
        """Trusted code only: the visible cases, then ``hidden`` ones as the pool's second phase returns them
        (each visible case called twice, the first hidden one too; a reference never twice), unless ``go_on``
        says no to the visible phase's result."""
        started, cpu_started = time.perf_counter(), time.process_time()
        namespace: dict[str, Any] = {"torch": torch, "nn": nn, "F": F, "np": np, "math": math}
        try:
            exec(compile(code, SUBMISSION_FILE, "exec"), namespace)  # noqa: S102 - trusted code only
        except BaseException as exc:  # noqa: BLE001 - any failure of the code is its result
            return RunResult("runtime_error", message=trim_traceback(exc))
        fn = namespace.get(entry_point)
        if not callable(fn):
            return RunResult("runtime_error", message=f"the code does not define {entry_point!r}")
        with warnings.catch_warnings(), one_thread():  # like the sandbox: a warning is not an error, one thread
            warnings.simplefilter("ignore")
            lines = code.splitlines()
            repeated = len(cases) - called_once
            results: list[CaseResult] = []
            for index, args in enumerate(cases):  # the twin pair not called once an example raised, as there
                if index >= repeated and not all(result.ok for result in results[:repeated]):
                    results.append(CaseResult(ok=False, value=None, error=TWIN_NOT_RUN))
                    continue
                results.append(
                    self._case(fn, args, grad, (count_graph, count_steps), lines, not reference and index < repeated)
                )
            # The visible phase's timings, like the sandbox's: the hidden phase's are never shown.
            wall_ms, cpu_ms = (time.perf_counter() - started) * 1000, (time.process_time() - cpu_started) * 1000
            visible = RunResult("ok", results, device=self.device, cpu_ms=cpu_ms, wall_ms=wall_ms)
            if not hidden or (go_on is not None and not go_on(visible)):
                hidden = []
            # The sandbox calls its first hidden case again after the others; here, trusted code, right away.
            secret = [
                self._case(fn, args, grad, (count_graph, count_steps), lines, index == 0 and not reference)
                for index, args in enumerate(hidden)
            ]
        # In process, the grader's own clock is the outside measure (``RunResult.runner_cpu_ms``).
        spent = (time.process_time() - cpu_started) * 1000 if measure_cpu else None
        return dataclasses.replace(visible, hidden=secret, hidden_status="ok" if hidden else "", runner_cpu_ms=spent)

    def make_cases(self, specs: list[tuple[Any, ...]], *, limits: object = None, background: bool = False) -> RunResult:
        """A drill's case specs evaluated here (the pool evaluates them in a runner): trusted drills only."""
        from graders.sandbox import casemaker

        header, values = casemaker.make(specs)
        returned = wire.unpack(wire.pack({}, values))[1]
        cases = [
            CaseResult(ok=raw["ok"], value=returned.get(str(i)), error=raw["error"])
            for i, raw in enumerate(header["cases"])
        ]
        return RunResult("ok", cases, device=self.device)

    def _case(
        self, fn: Any, args: tuple[Any, ...], grad: bool, counts: tuple[bool, bool], lines: list[str], repeat: bool
    ) -> CaseResult:
        """One case as the sandbox runs it (``child.run_case``), its value rebuilt as the wire rebuilds it."""
        try:
            args = _moved(copy.deepcopy(args), self.device)
            value, record = run_case(
                fn, args, grad=grad, count_graph=counts[0], count_steps=counts[1], lines=lines,
                quiet=contextlib.nullcontext, filename=SUBMISSION_FILE, repeat=repeat,
            )  # fmt: skip
            returned = wire.unpack(wire.pack({}, {"value": value}))[1]["value"]
            return CaseResult(ok=True, value=returned, error=None, behaviour=record)
        except Exception as exc:  # noqa: BLE001
            return CaseResult(ok=False, value=None, error=trim_traceback(exc))
