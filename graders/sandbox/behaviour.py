"""What a call does besides what it returns: the behaviour record a drill's contract is judged on.

Runs where the learner's code runs (the sandbox runner; ``LocalRunner`` for trusted code in tests),
before anything is detached, converted or moved to the CPU, because that is where the mistakes PyTorch
learners make are still visible: an argument changed in place, a ``.grad`` left on the caller's tensor,
a result that still carries a graph, a numpy array where a tensor was asked, a tensor left on the wrong
device, state kept between calls, graphs or activations kept alive across a loop, a Python loop where one
tensor operation would do. The record is plain data (ints, short strings, lists); the parent compares it
with the reference's record (``graders.drills.contract``).

Everything here is cheap on the happy path (a copy of the inputs, one comparison per input, the call
made twice); the costly look at *where* a mistake happened (``locate``) runs only after one was seen.
"""

from __future__ import annotations

import contextlib
import functools
import math
import sys
import time
import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

TYPE_CHARS = 200  # a result's type signature is cut here: a record stays small whatever was returned
GRAPH_WALK_CAP = 20_000  # nodes visited per graph; a bigger graph counts as this many
MAX_OPS_WATCHED = 5_000  # ``locate`` stops looking after this many torch calls


def fresh(value: Any) -> Any:
    """A deep copy of a case's arguments: new tensors (same requires_grad), arrays and containers."""
    if isinstance(value, torch.Tensor):
        with torch._C.DisableTorchFunctionSubclass():
            copy = torch.Tensor.clone(torch.Tensor.detach(value))
        return copy.requires_grad_(True) if value.requires_grad and value.is_leaf else copy
    if isinstance(value, np.ndarray):
        return np.array(value, copy=True)
    if isinstance(value, list):
        return [fresh(v) for v in value]
    if isinstance(value, tuple):
        return tuple(fresh(v) for v in value)
    if isinstance(value, dict):
        return {k: fresh(v) for k, v in value.items()}
    return value


def same(a: Any, b: Any) -> bool:
    """Structural equality where NaN equals NaN: the same answer twice, or an argument left alone."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        with torch._C.DisableTorchFunctionSubclass():
            if a.shape != b.shape or a.dtype != b.dtype or a.layout != b.layout or a.layout != torch.strided:
                return a.shape == b.shape and a.dtype == b.dtype and a.layout == b.layout
            if torch.equal(a, b):  # the usual answer, in one kernel (False where a NaN sits)
                return True
            if not (a.dtype.is_floating_point or a.dtype.is_complex) or a.device != b.device:
                return False
            return bool(((a == b) | (a.isnan() & b.isnan())).all())
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b)) if a.dtype.kind in "biub" else True
    if type(a) is not type(b):
        return False
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an object that cannot say: not the same
        return False


def type_signature(value: Any, depth: int = 0) -> str:
    """``Tensor``, ``float``, ``numpy.ndarray``, ``tuple[Tensor, Tensor]``...: the exact kind of a result."""
    if depth > 4:
        return "..."
    if isinstance(value, torch.Tensor):
        return "Tensor" if type(value) is torch.Tensor or isinstance(value, torch.nn.Parameter) else "Tensor subclass"
    if isinstance(value, np.ndarray | np.generic):
        return f"numpy.{type(value).__name__}"
    if isinstance(value, list | tuple):
        name = type(value).__name__ if type(value) in (list, tuple) else "sequence subclass"
        inner = [type_signature(v, depth + 1) for v in value[:8]]
        if len(set(inner)) == 1 and len(value) > 1:
            return f"{name}[{inner[0]} x{len(value)}]"
        return f"{name}[{', '.join(inner)}{', ...' if len(value) > 8 else ''}]"
    if isinstance(value, dict):
        inner = [type_signature(v, depth + 1) for v in list(value.values())[:8]]
        return f"dict[{', '.join(inner)}]"
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def tensors_in(value: Any, depth: int = 0) -> list[Any]:
    if depth > 8:
        return []
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for v in value for t in tensors_in(v, depth + 1)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_in(v, depth + 1)]
    return []


def _storage(value: Any) -> int | None:
    """The address of a tensor's or array's memory (None for anything else, or a tensor without storage)."""
    try:
        if isinstance(value, torch.Tensor):
            with torch._C.DisableTorchFunctionSubclass():
                return int(torch.Tensor.untyped_storage(value).data_ptr()) or None
        if isinstance(value, np.ndarray):
            base = value
            while isinstance(base.base, np.ndarray):
                base = base.base
            return int(base.__array_interface__["data"][0]) or None
    except (RuntimeError, TypeError, ValueError):
        return None
    return None


def _buffers_in(value: Any) -> list[Any]:
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, list | tuple):
        return [a for v in value for a in _buffers_in(v)]
    if isinstance(value, dict):
        return [a for v in value.values() for a in _buffers_in(v)]
    return tensors_in(value)


def _autograd_state(tensors: list[Any]) -> tuple[str, str]:
    """``none`` (no result carries autograd), ``grad_fn`` (one is the output of a graph) or ``leaf``."""
    graph = [t for t in tensors if t.grad_fn is not None]
    if graph:
        return "grad_fn", type(graph[0].grad_fn).__name__[:60]
    if any(t.requires_grad for t in tensors):
        return "leaf", ""
    return "none", ""


# torch's process-wide settings a call may leave changed (``torch.set_grad_enabled(False)`` called as a
# function, not as a ``with`` block): name -> (read it, set it). Each call's are put back as they were.
def _set_deterministic(on: bool) -> None:
    torch.use_deterministic_algorithms(on, warn_only=torch.is_deterministic_algorithms_warn_only_enabled())


GLOBAL_STATE: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
    "grad_mode": (torch.is_grad_enabled, torch.set_grad_enabled),
    "default_dtype": (torch.get_default_dtype, torch.set_default_dtype),
    "deterministic": (torch.are_deterministic_algorithms_enabled, _set_deterministic),
    "anomaly": (torch.is_anomaly_enabled, torch.set_anomaly_enabled),
}


def global_state() -> dict[str, Any]:
    """torch's global settings now (``GLOBAL_STATE``): cheap enough to read around every call."""
    return {name: read() for name, (read, _write) in GLOBAL_STATE.items()}


def restore_global_state(saved: dict[str, Any]) -> list[str]:
    """Put torch's global settings back as ``saved`` says; the names that had changed."""
    changed = []
    for name, (read, write) in GLOBAL_STATE.items():
        if read() != saved[name]:
            write(saved[name])
            changed.append(name)
    return changed


class _Meta:
    """What the call may change on an argument besides its values: its memory, and ``requires_grad`` and
    ``.grad`` of the argument or of any tensor nested in it (a list of tensors, a dict of parameters)."""

    def __init__(self, value: Any) -> None:
        self.tensor = isinstance(value, torch.Tensor)
        self.storage = _storage(value)
        self.parts = tensors_in(value)
        self.requires_grad = [bool(t.requires_grad) for t in self.parts]
        self.had_grad = [_grad_of(t) is not None for t in self.parts]

    def grad_left(self) -> bool:
        return any(not had and _grad_of(t) is not None for t, had in zip(self.parts, self.had_grad, strict=True))

    def requires_grad_changed(self) -> bool:
        return any(bool(t.requires_grad) != was for t, was in zip(self.parts, self.requires_grad, strict=True))


def _grad_of(tensor: Any) -> Any:
    """``.grad`` without torch's warning for a non-leaf (whose ``.grad`` is never filled in)."""
    return tensor.grad if tensor.is_leaf or tensor.retains_grad else None


def observe(
    target: Any,
    args: tuple[Any, ...],
    call: Callable[[], Any],
    *,
    grad: bool,
    before: tuple[Any, ...],
    count_graph: bool = False,
    count_steps: str = "",
) -> tuple[Any, dict[str, Any]]:
    """Run ``call`` (which calls ``target(*args)``) and describe what it did to ``args`` and what it returned.

    The record: ``changed`` (arguments whose value changed), ``moved`` (of those, the ones whose memory was
    replaced rather than written in place), ``grad_left`` / ``requires_grad_set`` (arguments given a
    ``.grad`` or a new ``requires_grad``), ``alias`` (arguments the result shares memory with), ``type``,
    ``devices``, ``autograd`` and ``grad_fn`` of the result, ``global_state`` (torch's global settings the call
    left changed, ``GLOBAL_STATE``; put back at once), the call's CPU time (``cpu_us``, this thread's:
    a loaded machine barely moves it), and with ``count_graph`` (a drill with a resource budget) the largest
    autograd graph alive during the call (``graph_nodes``: every graph still referenced, counted together), the
    graph it left alive outside its result (``graph_kept``: a module-level list, a list argument) and the most
    tensor memory it held (``peak_bytes``); with ``count_steps`` (the learner's file name: a drill with a time
    budget) how many lines of that file ran (``steps``) and the busiest one (``busiest``, ``StepCounter``).
    """
    meta = [_Meta(a) for a in args]
    graphs, memory = (GraphCounter(), MemoryCounter()) if count_graph else (None, None)
    steps = StepCounter(count_steps) if count_steps else None
    settings = global_state()
    try:
        with graphs or contextlib.nullcontext(), memory or contextlib.nullcontext():
            started = time.thread_time_ns()
            with steps or contextlib.nullcontext():
                value = call()
            cpu_ns = time.thread_time_ns() - started
    finally:
        left = restore_global_state(settings)  # whatever happens: the next call (and the grader) starts clean
    record: dict[str, Any] = {"cpu_us": cpu_ns // 1000, "global_state": left}
    if steps is not None:
        record["steps"], record["busiest"] = steps.steps, steps.busiest()
    changed = [i for i, (a, b) in enumerate(zip(args, before, strict=True)) if not same(a, b)]
    record["changed"] = changed
    record["moved"] = [i for i in changed if meta[i].storage is not None and _storage(args[i]) != meta[i].storage]
    if not grad:  # a gradient drill's inputs are made leaves that require grad by the grader itself
        record["grad_left"] = [i for i, m in enumerate(meta) if m.grad_left()]
        record["requires_grad_set"] = [i for i, m in enumerate(meta) if m.requires_grad_changed()]
    result = value["output"] if grad and isinstance(value, dict) and "output" in value else value
    owned = {s for s in (_storage(t) for t in _buffers_in(result)) if s is not None}
    record["alias"] = [i for i, a in enumerate(args) if owned & {_storage(x) for x in _buffers_in(a)} - {None}]
    record["type"] = type_signature(value)[:TYPE_CHARS]
    tensors = tensors_in(result)
    record["devices"] = sorted({t.device.type for t in tensors})
    record["autograd"], record["grad_fn"] = _autograd_state(tensors)
    if graphs is not None and memory is not None:
        record["graph_nodes"], record["peak_bytes"] = graphs.peak, memory.peak
        record["graph_kept"] = graphs.kept(tensors_in(value))
    return value, record


def graphs_size(tensors: list[Any], cap: int = GRAPH_WALK_CAP, seen: set[Any] | None = None) -> int:
    """How many autograd nodes the graphs behind ``tensors`` hold together, each node once (at most ``cap``);
    ``seen``: nodes not to count (and where the walk's nodes are added)."""
    seen = set() if seen is None else seen
    start = len(seen)
    stack = [t.grad_fn for t in tensors if t.grad_fn is not None]
    while stack and len(seen) - start < cap:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack.extend(n for n, _ in node.next_functions if n is not None and n not in seen)
    return len(seen) - start


class GraphCounter:
    """How much autograd graph the call kept alive: ``peak``, the most nodes alive at once in all the graphs
    any torch call made while active (a list of losses holds one small graph per step, counted together),
    and ``kept(result)``, the nodes still alive after the call outside its result (held past the call).

    Counted in the runner (its word). Each torch call that returns a tensor with a graph walks every graph
    still referenced (tensors followed by weak reference): a step's few nodes for a right solution, the
    whole history for one that keeps it (at most ``GRAPH_WALK_CAP`` nodes a walk).
    """

    def __init__(self) -> None:
        from torch.overrides import TorchFunctionMode

        counter = self

        class _Mode(TorchFunctionMode):
            def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                out = func(*args, **(kwargs or {}))
                made = [t for t in tensors_in(out) if t.grad_fn is not None]
                if made:
                    counter._roots.extend(weakref.ref(t) for t in made)
                    counter.peak = max(counter.peak, graphs_size(counter.alive()))
                return out

        self.peak = 0
        self._roots: list[weakref.ref[Any]] = []  # every tensor with a graph made while active
        self._mode: Any = _Mode()  # torch's modes are not annotated

    def alive(self) -> list[Any]:
        """The tensors with a graph made while active that something still references (the dead ones go)."""
        live = [(ref, t) for ref in self._roots if (t := ref()) is not None]
        self._roots = [ref for ref, _ in live]
        return [t for _, t in live]

    def kept(self, result: list[Any]) -> int:
        """The nodes still alive that the result's graph does not hold: kept past the call by something else."""
        return graphs_size(self.alive(), seen={*_nodes_of(result)})

    def __enter__(self) -> GraphCounter:
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._mode.__exit__(*exc)


def _nodes_of(tensors: list[Any]) -> set[Any]:
    seen: set[Any] = set()
    graphs_size(tensors, seen=seen)
    return seen


class StepCounter:
    """How many lines of one file ran while active (``steps``), and which line ran most (``busiest``).

    The measure of a Python loop that does not depend on the machine: a loop over 40,000 elements runs its
    lines 40,000 times however fast or loaded the host is, where its CPU time in a sandbox runner sits
    under any floor a loaded machine's noise allows. ``sys.settrace`` sees every new frame and
    traces only the learner's (its file name), so torch's and the grader's own Python cost a check each; a
    traced line costs more under the guards than unguarded, paid only by drills with a time budget. Counted
    in the runner: its word.
    """

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.lines: dict[int, int] = {}
        self._saved: Any = None

    @property
    def steps(self) -> int:
        """Summed once at the end: the trace function, run on every line, keeps one count per line only."""
        return sum(self.lines.values())

    def _call(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        return self._line if frame.f_code.co_filename == self.filename else None

    def _line(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            lines, line = self.lines, frame.f_lineno
            lines[line] = lines.get(line, 0) + 1
        return self._line

    def busiest(self) -> list[int]:
        """``[line, times]`` of the line run most often (``[]`` when none ran)."""
        if not self.lines:
            return []
        line = max(self.lines, key=self.lines.__getitem__)
        return [line, self.lines[line]]

    def __enter__(self) -> StepCounter:
        self._saved = sys.gettrace()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(self._saved)


class MemoryCounter:
    """The most tensor memory the call held at once (``peak``, bytes): every storage a torch operation
    allocated while active counts from then until it is freed, however it is kept alive (a variable, a list,
    a graph's saved activations). The arguments' own memory and views of it count nothing.

    A dispatch mode sees every ATen operation, backward's too, on any device; a storage's Python object
    lives as long as the storage does, so a weak reference to it says when the memory goes. Its cost per
    operation (most of it torch's own way into Python) is paid only by drills with a graph or memory budget.
    """

    def __init__(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        counter = self

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                out = func(*args, **(kwargs or {}))
                counter.allocated(out, () if func is _LIFT_FRESH else (args, kwargs))
                return out

        self.now = self.peak = 0
        self._live: dict[int, Any] = {}  # id of a storage -> the weak reference that frees its count
        mode: Any = _Mode
        self._mode: Any = mode()  # torch's modes are not annotated

    def allocated(self, out: Any, inputs: Any) -> None:
        """Count the storages in ``out`` that no tensor in ``inputs`` has: the operation made them."""
        unseen = [s for s in map(_storage_object, tensors_in(out)) if s is not None and id(s) not in self._live]
        if not unseen:  # an in-place or view operation on memory the call made: already counted
            return
        known = {id(s) for s in map(_storage_object, tensors_in(inputs))}
        for storage in unseen:
            key = id(storage)
            if key in known or key in self._live:
                continue
            size = int(storage.nbytes())
            self._live[key] = weakref.ref(storage, functools.partial(self._freed, key, size))
            self.now += size
            self.peak = max(self.peak, self.now)

    def _freed(self, key: int, size: int, _ref: object = None) -> None:
        self._live.pop(key, None)
        self.now -= size

    def __enter__(self) -> MemoryCounter:
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._mode.__exit__(*exc)


_LIFT_FRESH = torch.ops.aten.lift_fresh.default  # ``torch.tensor(data)``: a new tensor made outside the mode


def _storage_object(tensor: Any) -> Any:
    try:  # below the dispatcher every tensor is a plain one
        return torch.Tensor.untyped_storage(tensor)
    except (RuntimeError, TypeError, NotImplementedError):  # sparse, nested: no plain storage to count
        return None


def difference(a: Any, b: Any, depth: int = 0) -> tuple[float, float] | None:
    """Two answers that differ only in floating-point values: the largest absolute and relative difference
    (relative to ``a``); None where anything else differs (structure, shape, dtype, a non-float value, a NaN
    or an infinity in one place and not the other)."""
    if depth > 8:
        return None
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        with torch._C.DisableTorchFunctionSubclass():
            if a.shape != b.shape or a.dtype != b.dtype or a.layout != torch.strided or b.layout != torch.strided:
                return None
            if not (a.dtype.is_floating_point or a.dtype.is_complex) or a.device != b.device:
                return (0.0, 0.0) if same(a, b) else None
            x, y = torch.Tensor.detach(a).double(), torch.Tensor.detach(b).double()
            finite = x.isfinite()
            if not bool((finite == y.isfinite()).all()) or not same(x[~finite], y[~finite]):
                return None
            if not bool(finite.any()):
                return (0.0, 0.0)
            gap = (x[finite] - y[finite]).abs()
            scale = x[finite].abs()
            rel = torch.where(gap == 0, torch.zeros_like(gap), gap / scale)
            return float(gap.max()), float(rel.max())
    if isinstance(a, float) and isinstance(b, float):
        if not (math.isfinite(a) and math.isfinite(b)):
            return (0.0, 0.0) if same(a, b) else None
        moved = abs(a - b)
        return moved, (0.0 if moved == 0 else moved / abs(a) if a else math.inf)
    if isinstance(a, list | tuple) and type(a) is type(b):
        if len(a) != len(b):
            return None
        parts = [difference(x, y, depth + 1) for x, y in zip(a, b, strict=True)]
        if any(p is None for p in parts):
            return None
        found = [p for p in parts if p is not None]
        return (max((p[0] for p in found), default=0.0), max((p[1] for p in found), default=0.0))
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return None
        return difference(list(a.values()), list(b.values()), depth + 1)
    return (0.0, 0.0) if same(a, b) else None


def repeat_differs(
    call: Callable[[], Any], first: Any, original: Any = None, args: tuple[Any, ...] | None = None
) -> str:
    """'' when calling again (on fresh copies, by ``call``) gives ``first`` again, else what differed:
    ``same object`` where the second answer shares memory with the first call's own answer (``original``: a
    result kept from call to call); ``changed I,J`` where the second call changed its arguments ``args`` (by
    index, then ``; `` and the answer's own finding: the parent allows a drill's in-place arguments);
    ``near ABS REL`` where only floating-point values moved (a sum in another order: the parent judges it
    within the drill's tolerance); else ``differs``."""
    settings = global_state()
    before = fresh(args) if args is not None else None
    try:
        second = call()
    except Exception as exc:  # noqa: BLE001 - the learner's code: its error is the finding
        return f"raised {type(exc).__name__}"
    finally:
        restore_global_state(settings)
    if original is not None:
        kept = {s for s in (_storage(t) for t in _buffers_in(original)) if s is not None}
        if kept & {_storage(t) for t in _buffers_in(second)}:
            return "same object"
    answer = ""
    if not same(first, second):
        near = difference(first, second)
        answer = "differs" if near is None else f"near {near[0]:.3e} {near[1]:.3e}"
    if args is not None and before is not None:
        changed = [str(i) for i, (a, b) in enumerate(zip(args, before, strict=True)) if not same(a, b)]
        if changed:  # ``changed 0; near ...``: an in-place drill's arguments change on every call
            return "changed " + ",".join(changed[:16]) + (f"; {answer}" if answer else "")
    return answer


def locate(
    call: Callable[[], Any], args: tuple[Any, ...], filename: str, source_lines: list[str]
) -> dict[str, Any] | None:
    """Call again while watching every torch call; the first one after which an argument changed (its
    values, ``requires_grad`` or ``.grad``), with the learner's line: ``{"arg", "what", "op", "line", "code"}``.

    Only for the teacher's message, after ``observe`` saw such a change; numpy changes are not seen here.
    """
    from torch.overrides import TorchFunctionMode

    before = [fresh(a) for a in args]
    meta = [_Meta(a) for a in args]
    found: dict[str, Any] = {}
    ops = [0]

    def first_change() -> tuple[int, str] | None:
        for i, (a, b, m) in enumerate(zip(args, before, meta, strict=True)):
            if m.grad_left():
                return i, "grad"
            if m.requires_grad_changed():
                return i, "requires_grad"
            if not same(a, b):
                return i, "changed"
        return None

    class _Watch(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, a: Any = (), kwargs: Any = None) -> Any:
            out = func(*a, **(kwargs or {}))
            ops[0] += 1
            if not found and ops[0] <= MAX_OPS_WATCHED:
                change = first_change()
                if change is not None:
                    line = learner_line(filename)
                    code = source_lines[line - 1].strip()[:120] if 0 < line <= len(source_lines) else ""
                    name = getattr(func, "__name__", "") or type(func).__name__
                    found.update(arg=change[0], what=change[1], op=str(name)[:40], line=line, code=code)
            return out

    settings = global_state()
    try:
        with contextlib.suppress(Exception), _Watch():
            call()
    finally:
        restore_global_state(settings)
    return found or None


def learner_line(filename: str) -> int:
    """The line of the innermost frame that runs the learner's code (0 if none)."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == filename:
            return frame.f_lineno
        frame = frame.f_back
    return 0
