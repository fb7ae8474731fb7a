"""Explore what a submission can reach through layer 2's guards: attributes, items, iteration and calls.

``python -m tests.graders.reachability`` prints a JSON report: how many values, calls and items it
explored, and every path that reached something dangerous. Each step goes through the same guard a
submission's code would (``_getattr_``, ``_getitem_``, ``_getiter_``, ``_call_``); what it calls, it
calls with a few probe arguments (nothing, a number, a string, a tensor, the submission's own object, a
foreign class, a dict), and the results are explored in turn, so the report covers what is reachable
under calling and subscripting, not only by attribute access.

It runs in a process of its own: it calls library functions with odd arguments, and some of them change
process-wide state (grad mode, seeds) or block (a lock acquired twice; every call has a time limit).
"""

from __future__ import annotations

import builtins
import ctypes
import importlib
import io
import json
import os
import pickle
import signal
import subprocess
import sys
import time
import types
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

ROOTS_SOURCE = """
import torch
import numpy as np
from torch import nn
from torch.optim import lr_scheduler

class Probe:
    pass

def own(a):
    return a

probe = Probe()
t = torch.ones(2, 3, requires_grad=True) * 2
a = np.ones((2, 2))
lin = nn.Linear(2, 2)
opt = torch.optim.SGD(lin.parameters(), lr=0.1)
sched = lr_scheduler.StepLR(opt, 1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(4, 2)), batch_size=2)
pd = nn.ParameterDict({"w": nn.Parameter(torch.ones(1))})
rng = np.random.default_rng(0)
gen = (i for i in [1])
try:
    1 / 0
except Exception as e:
    err = e
"""


@dataclass
class Report:
    values: int = 0
    calls: int = 0
    items: int = 0
    reached: list[str] = field(default_factory=list)


class Timeout(BaseException):
    """Raised by the alarm inside a call that takes too long (a lock acquired twice, a big loop)."""


def _alarm(signum: int, frame: Any) -> None:
    raise Timeout


def dangerous_objects() -> dict[int, str]:
    """Objects that must never be reached, by identity."""
    import numpy as np
    import torch

    named = {
        "open": builtins.open,
        "eval": builtins.eval,
        "exec": builtins.exec,
        "compile": builtins.compile,
        "__import__": builtins.__import__,
        "getattr": builtins.getattr,
        "setattr": builtins.setattr,
        "vars": builtins.vars,
        "globals": builtins.globals,
        "type": builtins.type,
        "breakpoint": builtins.breakpoint,
        "os.system": os.system,
        "os.popen": os.popen,
        "os.fork": os.fork,
        "os.execv": os.execv,
        "subprocess.Popen": subprocess.Popen,
        "pickle.loads": pickle.loads,
        "io.open": io.open,
        "torch.load": torch.load,
        "torch.save": torch.save,
        "torch.from_file": torch.from_file,
        "np.load": np.load,
        "np.save": np.save,
        "np.fromfile": np.fromfile,
        "np.frombuffer": np.frombuffer,
        "importlib.import_module": importlib.import_module,
        "ctypes.CDLL": ctypes.CDLL,
        "str.format": str.format,
        "str.format_map": str.format_map,
        "object.__subclasses__": type.__subclasses__,
        "types.FunctionType": types.FunctionType,
        "types.CodeType": types.CodeType,
    }
    return {id(v): k for k, v in named.items()}


def why_dangerous(value: Any, known: dict[int, str]) -> str | None:
    """A reason if the value is a capability layer 2 must never hand out (independent of values.py)."""
    import numpy as np

    if id(value) in known:
        return known[id(value)]
    kinds = (
        types.ModuleType,
        types.FrameType,
        types.CodeType,
        types.TracebackType,
        types.CellType,
        types.MappingProxyType,
        memoryview,
    )
    if isinstance(value, kinds):
        return type(value).__name__
    if type(value).__name__ == "PyCapsule" or type(value).__module__ in ("ctypes", "_ctypes"):
        return type(value).__name__
    if isinstance(value, dict) and any(isinstance(k, str) and k.startswith("__") and k.endswith("__") for k in value):
        return "a namespace"
    if isinstance(value, np.ndarray) and value.dtype.hasobject:
        return "an object array"
    if isinstance(value, type) and issubclass(value, type):
        return "a metaclass"
    if isinstance(value, types.FunctionType) and _is_unbound(value):
        return "a library method taken off its class"
    if isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType):
        names = set(value.__func__.__code__.co_names)
        if {"__dict__", "update"} <= names and value.__func__.__globals__.get("__name__") != "submission":
            return "an unguarded method that writes attributes named by its data"
    return None


def _is_unbound(func: types.FunctionType) -> bool:
    if func.__globals__.get("__name__") == "submission":
        return False
    *owner_path, name = func.__code__.co_qualname.split(".")
    if not owner_path or "<locals>" in owner_path:
        return False
    owner: Any = func.__globals__.get(owner_path[0])
    for part in owner_path[1:]:
        owner = getattr(owner, part, None)
    return isinstance(owner, type) and not isinstance(owner.__dict__.get(name), staticmethod)


class Explorer:
    """Breadth first, through the guards of one real submission's globals."""

    def __init__(self, depth: int, call_depth: int, max_items: int, time_limit: float) -> None:
        from graders.sandbox import policy
        from graders.sandbox.proxies import build_modules

        self.modules = build_modules()
        code = policy.compile_submission(ROOTS_SOURCE, 20_000)
        self.glb, self.guards = policy.make_globals(self.modules, policy.PrintSink(1 << 20))
        exec(code, self.glb)
        # A sandbox without call and iteration guards (before them) calls and iterates plainly.
        self.call = getattr(self.guards, "call", lambda func, *args: func(*args))
        self.iter = getattr(self.guards, "iter", iter)
        self.depth, self.call_depth, self.max_items = depth, call_depth, max_items
        self.deadline = time.monotonic() + time_limit
        self.known = dangerous_objects()
        self.report = Report()
        self.seen: set[int] = set()
        self.called: set[tuple[int, type]] = set()
        self.keep: list[Any] = []  # what was seen stays alive, so an id is never reused
        g = self.glb
        self.probes: list[tuple[Any, ...]] = [
            (),
            (1,),
            ("x",),
            (g["t"],),
            (g["probe"],),
            (str,),
            (g["probe"], {"k": 1}),
        ]

    def roots(self) -> Iterator[tuple[Any, str]]:
        for name, proxy in self.modules.items():
            yield proxy, name
        for name in ("probe", "t", "a", "lin", "opt", "sched", "loader", "pd", "rng", "gen", "err", "own", "Probe"):
            yield self.glb[name], name

    def run(self) -> Report:
        frontier = list(self.roots())
        for depth in range(self.depth + 1):
            following: list[tuple[Any, str]] = []
            for value, path in frontier:
                if time.monotonic() > self.deadline:
                    self.report.reached.append(f"(time limit hit at depth {depth}: the exploration is incomplete)")
                    return self.report
                following.extend(self.expand(value, path, depth))
            frontier = following
        for value, path in frontier:  # the last step's results are checked, not explored further
            reason = why_dangerous(value, self.known)
            if reason:
                self.report.reached.append(f"{path}: {reason}")
        return self.report

    def expand(self, value: Any, path: str, depth: int) -> list[tuple[Any, str]]:
        if id(value) in self.seen or isinstance(value, int | float | str | bytes | bool | type(None)):
            return []
        self.seen.add(id(value))
        self.keep.append(value)
        self.report.values += 1
        reason = why_dangerous(value, self.known)
        if reason:
            self.report.reached.append(f"{path}: {reason}")
            return []
        found = list(self.attributes(value, path))
        found += self.items(value, path)
        if depth <= self.call_depth and callable(value):
            found += self.calls(value, path)
        return found

    def attributes(self, value: Any, path: str) -> Iterator[tuple[Any, str]]:
        try:
            names = dir(value)
        except Exception:
            return
        for name in names:
            try:
                yield self.guarded(self.guards.getattr, value, name), f"{path}.{name}"
            except BaseException:  # refused, or a property that raises on this object
                continue

    def items(self, value: Any, path: str) -> list[tuple[Any, str]]:
        found: list[tuple[Any, str]] = []
        try:
            if isinstance(value, dict):
                keys: list[Any] = list(value)[: self.max_items]
            elif isinstance(value, list | tuple):
                keys = list(range(min(len(value), self.max_items)))
            else:
                keys = []
            for key in keys:
                self.report.items += 1
                found.append((self.guarded(self.guards.getitem, value, key), f"{path}[{key!r}]"))
        except BaseException:
            pass
        if not isinstance(value, dict | list | tuple | str | bytes) and hasattr(type(value), "__iter__"):
            try:
                iterator = self.guarded(self.iter, value)
                for index in range(self.max_items):
                    self.report.items += 1
                    found.append((self.guarded(next, iterator), f"{path}<iter {index}>"))
            except BaseException:
                pass
        return found

    def calls(self, value: Any, path: str) -> list[tuple[Any, str]]:
        key = (id(getattr(value, "__func__", value)), type(getattr(value, "__self__", None)))
        if key in self.called:
            return []
        self.called.add(key)
        found = []
        for args in self.probes:
            self.report.calls += 1
            try:
                found.append((self.guarded(self.call, value, *args), f"{path}({_describe(args)})"))
            except BaseException:
                continue
        return found

    def guarded(self, func: Any, *args: Any) -> Any:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return func(*args)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)


def _describe(args: tuple[Any, ...]) -> str:
    return ", ".join(type(a).__name__ if not isinstance(a, int | str) else repr(a) for a in args)


def main() -> None:
    """``python -m tests.graders.reachability [DEPTH CALL_DEPTH SECONDS] [--without-value-checks]``; the flag
    turns ``values.ValueGuard`` off, to show the exploration finds what it is there to find."""
    signal.signal(signal.SIGALRM, _alarm)
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    depth, call_depth, time_limit = (int(args[0]), int(args[1]), float(args[2])) if args else (3, 2, 600.0)
    if "--without-value-checks" in sys.argv:
        from graders.sandbox import values

        values.ValueGuard._check = lambda self, value, *rest, **kw: value
    sys.setrecursionlimit(10_000)
    report = Explorer(depth, call_depth, max_items=20, time_limit=time_limit).run()
    sys.stdout.write(json.dumps(report.__dict__) + "\n")


if __name__ == "__main__":
    main()
