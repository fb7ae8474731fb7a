"""Compare a learner's output with the reference output, structurally, and explain the first mismatch.

The values compared here come back from the sandbox; they are data, never code: nothing the
learner returned is called. Tensors are read through ``torch.Tensor``'s own methods with
subclass dispatch disabled and copied into fresh plain tensors before any arithmetic, so a
returned subclass cannot run its ``__torch_function__`` or ``__eq__`` in the grading process.
"""

from __future__ import annotations

import math
import reprlib
from typing import Any, NotRequired, TypedDict

import torch

from graders.drills.schema import CompareRule

_NUMBERS = (bool, int, float)


# The values shown either side of the first difference, and the bound on any value's printed form:
# a verdict stays a few kilobytes whatever the learner returned.
WINDOW = 3
REPR_CHARS = 300


class ValueView(TypedDict):
    """A bounded description of one output: a tensor's shape, dtype and a few values, or a short repr."""

    type: str
    shape: NotRequired[list[int]]
    dtype: NotRequired[str]
    values: NotRequired[str]  # a few flat values, "..." where some are left out
    repr: NotRequired[str]


class Neighbour(TypedDict):
    """One element near the first difference: its index, both values and whether they differ."""

    index: list[int]
    expected: Any
    actual: Any
    differs: bool


class Mismatch(TypedDict):
    kind: str  # "type", "length", "keys", "shape", "dtype", "device", "layout", "value"
    path: str  # where in the returned structure, "" for the top level, else like "[0]['grads'][1]"
    message: str
    index: NotRequired[list[int]]
    expected: NotRequired[Any]
    actual: NotRequired[Any]
    max_abs_error: NotRequired[float | str]  # a string ("inf") where JSON has no number for it
    max_rel_error: NotRequired[float | str]
    rtol: NotRequired[float]
    atol: NotRequired[float]
    expected_view: NotRequired[ValueView]  # what the reference returned there (visible cases only reach a page)
    actual_view: NotRequired[ValueView]  # what the learner returned there
    around: NotRequired[list[Neighbour]]  # the elements around the first difference, in flat order
    nonfinite: NotRequired[bool]  # nan/inf where the reference is finite (graders.drills.teacher)
    # What the inputs say made it (``grading``): "overflow" (an input past exp's range), "underflow" (one far below)
    nonfinite_kind: NotRequired[str]


def _plain(value: torch.Tensor) -> torch.Tensor:
    """A detached, plain ``torch.Tensor`` with the same data, whatever subclass came in (a subclass's data is
    copied; a plain tensor's is shared: nothing here writes to it)."""
    if type(value) is torch.Tensor:
        return value.detach()  # the wire's and the reference cache's tensors: no copy (a third of judging a case)
    with torch._C.DisableTorchFunctionSubclass():
        fresh = torch.Tensor.detach(value)
        if fresh.layout != torch.strided:
            return fresh
        return torch.Tensor.clone(fresh).as_subclass(torch.Tensor)


def _kind(dtype: torch.dtype) -> str:
    if dtype == torch.bool:
        return "bool"
    if dtype.is_complex:
        return "complex"
    return "float" if dtype.is_floating_point else "int"


def _type_name(value: object) -> str:
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _scalar(value: object) -> object:
    """A Python number for a number or a one-element 0-dim tensor (``loose_scalars``), else ``value``."""
    if isinstance(value, torch.Tensor) and _plain(value).dim() == 0:
        return _plain(value).cpu().item()
    return value


def _float(number: int | float) -> float:
    """A number as a float; an int beyond a float's range (a learner may return ``10**400``) is that infinity."""
    try:
        return float(number)
    except OverflowError:
        return math.inf if number > 0 else -math.inf


def compare(expected: object, actual: object, rule: CompareRule, path: str = "") -> Mismatch | None:
    """None when ``actual`` matches ``expected`` under ``rule``, else the first mismatch found."""
    if rule.loose_scalars and (type(expected) in _NUMBERS) != (type(actual) in _NUMBERS):
        expected, actual = _scalar(expected), _scalar(actual)
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, torch.Tensor):
            return _type_mismatch(path, "a tensor", actual)
        return _compare_tensors(_plain(expected), _plain(actual), rule, path)
    if type(expected) in _NUMBERS:
        if type(actual) not in _NUMBERS or (type(expected) is bool) != (type(actual) is bool):
            return _type_mismatch(path, f"a Python {type(expected).__name__}", actual)
        if rule.check_dtype and (type(expected) is float) != (type(actual) is float):
            return _type_mismatch(path, f"a Python {type(expected).__name__}", actual)
        if float not in (type(expected), type(actual)):
            if expected == actual:
                return None
            where = path or "the result"
            message = f"wrong value at {where}: expected {expected!r}, got {actual!r}"
            return {"kind": "value", "path": path, "message": message, "expected": expected, "actual": actual}
        assert isinstance(expected, int | float) and isinstance(actual, int | float)  # both in _NUMBERS (above)
        pair = torch.tensor([_float(expected), _float(actual)], dtype=torch.float64)
        found = _compare_tensors(pair[0], pair[1], rule, path)
        if found is not None:  # the learner returned a Python number: say so, not "a 0-dim tensor"
            found["expected_view"], found["actual_view"] = describe(expected), describe(actual)
        return found
    if expected is None or isinstance(expected, str):
        if type(actual) is not type(expected) or actual != expected:
            return _type_mismatch(path, repr(expected), actual)
        return None
    if isinstance(expected, list | tuple):
        return _compare_sequences(expected, actual, rule, path)
    if isinstance(expected, dict):
        return _compare_dicts(expected, actual, rule, path)
    raise TypeError(f"cannot compare reference outputs of type {_type_name(expected)}")


def _type_mismatch(path: str, wanted: str, actual: object) -> Mismatch:
    where = f" at {path}" if path else ""
    message = f"expected {wanted}{where}, got {_type_name(actual)}"
    return {"kind": "type", "path": path, "message": message, "actual_view": describe(actual)}


def _short_repr() -> reprlib.Repr:
    short = reprlib.Repr()
    short.maxlist = short.maxtuple = short.maxdict = 8
    short.maxstring = short.maxother = 80
    short.maxlevel = 3
    return short


_REPR = _short_repr()


def describe(value: object) -> ValueView:
    """A bounded view of a value: never more than a few hundred characters, whatever its size."""
    if isinstance(value, torch.Tensor):
        plain = _plain(value)
        view: ValueView = {"type": "tensor", "shape": list(plain.shape), "dtype": str(plain.dtype)}
        if plain.layout == torch.strided and plain.device.type != "meta":
            flat = plain.detach().cpu().reshape(-1)
            shown = ", ".join(_format(flat[i].item()) for i in range(min(flat.numel(), 2 * WINDOW + 1)))
            view["values"] = f"[{shown}{', ...' if flat.numel() > 2 * WINDOW + 1 else ''}]"
        return view
    return {"type": _type_name(value), "repr": _REPR.repr(value)[:REPR_CHARS]}


def _format(value: object) -> str:
    return f"{value:.6g}" if isinstance(value, float) else repr(value)[:40]


def _compare_sequences(
    expected: list[Any] | tuple[Any, ...], actual: object, rule: CompareRule, path: str
) -> Mismatch | None:
    if type(actual) is not type(expected):
        return _type_mismatch(path, f"a {type(expected).__name__}", actual)
    assert isinstance(actual, list | tuple)
    if len(actual) != len(expected):
        where = f" at {path}" if path else ""
        message = f"expected a {type(expected).__name__} of length {len(expected)}{where}, got length {len(actual)}"
        return {"kind": "length", "path": path, "message": message}
    for i, (want, got) in enumerate(zip(expected, actual, strict=True)):
        found = compare(want, got, rule, f"{path}[{i}]")
        if found is not None:
            return found
    return None


def _compare_dicts(expected: dict[Any, Any], actual: object, rule: CompareRule, path: str) -> Mismatch | None:
    if type(actual) is not dict:
        return _type_mismatch(path, "a dict", actual)
    missing = [k for k in expected if k not in actual]
    extra = [k for k in actual if k not in expected]
    if missing or extra:
        where = f" at {path}" if path else ""
        message = (
            f"dict keys differ{where}: missing {sorted(map(repr, missing))}, unexpected {sorted(map(repr, extra))}"
        )
        return {"kind": "keys", "path": path, "message": message}
    for key, want in expected.items():
        found = compare(want, actual[key], rule, f"{path}[{key!r}]")
        if found is not None:
            return found
    return None


def _compare_tensors(expected: torch.Tensor, actual: torch.Tensor, rule: CompareRule, path: str) -> Mismatch | None:
    found = _compare_tensor_values(expected, actual, rule, path)
    if found is not None:
        found["expected_view"], found["actual_view"] = describe(expected), describe(actual)
    return found


def _compare_tensor_values(
    expected: torch.Tensor, actual: torch.Tensor, rule: CompareRule, path: str
) -> Mismatch | None:
    where = f" at {path}" if path else ""
    if expected.layout != actual.layout:
        message = f"expected a {expected.layout} tensor{where}, got {actual.layout}"
        return {"kind": "layout", "path": path, "message": message}
    if tuple(expected.shape) != tuple(actual.shape) and (rule.check_shape or expected.numel() != actual.numel()):
        message = f"expected shape {tuple(expected.shape)}{where}, got {tuple(actual.shape)}"
        return {"kind": "shape", "path": path, "message": message}
    wrong_kind = _kind(expected.dtype) != _kind(actual.dtype)
    if expected.dtype != actual.dtype and (rule.check_dtype or wrong_kind):
        message = f"expected dtype {expected.dtype}{where}, got {actual.dtype}"
        return {"kind": "dtype", "path": path, "message": message}
    if rule.check_device and expected.device.type != actual.device.type:
        message = f"expected a tensor on {expected.device.type}{where}, got one on {actual.device.type}"
        return {"kind": "device", "path": path, "message": message}
    return _compare_values(expected.cpu().reshape(-1), actual.cpu().reshape(-1), tuple(expected.shape), rule, path)


def _compare_values(
    expected: torch.Tensor, actual: torch.Tensor, shape: tuple[int, ...], rule: CompareRule, path: str
) -> Mismatch | None:
    """Flat value comparison; NaN matches only where the reference itself is NaN."""
    if expected.numel() == 0:
        return None
    if expected.dtype == actual.dtype and torch.equal(expected, actual):
        return None  # the usual case, in one kernel instead of isclose's several (NaN falls through)
    exact = rule.mode == "exact" or _kind(expected.dtype) in ("bool", "int")
    if exact:
        same = (expected == actual) | (_isnan(expected) & _isnan(actual))
    else:
        dtype = torch.promote_types(expected.dtype, actual.dtype)
        expected, actual = expected.to(dtype), actual.to(dtype)
        same = torch.isclose(actual, expected, rtol=rule.rtol, atol=rule.atol, equal_nan=True)
    if bool(same.all()):
        return None
    first = int((~same).nonzero()[0, 0])
    index = list(_unravel(first, shape))
    want, got = _jsonable(expected[first].item()), _jsonable(actual[first].item())
    mismatch: Mismatch = {"kind": "value", "path": path, "message": "", "index": index, "expected": want}
    mismatch["actual"] = got
    mismatch["around"] = _around(expected, actual, same, first, shape)
    where = f"{path}{index}" if shape else (path or "the result")
    if exact:
        count = int((~same).sum())
        mismatch["message"] = (
            f"wrong value at {where}: expected {want!r}, got {got!r} ({count} of {same.numel()} differ)"
        )
        return mismatch
    abs_err, rel_err = _errors(expected, actual, same)
    mismatch["max_abs_error"], mismatch["max_rel_error"] = _json_float(abs_err), _json_float(rel_err)
    mismatch["rtol"], mismatch["atol"] = rule.rtol, rule.atol
    mismatch["message"] = (
        f"wrong value at {where}: expected {want!r}, got {got!r}; max abs error {abs_err:.3g}, "
        f"max rel error {rel_err:.3g} (allowed: |actual - expected| <= {rule.atol:g} + {rule.rtol:g} * |expected|)"
    )
    if bool((~same & torch.isfinite(expected) & ~torch.isfinite(actual)).any()):
        mismatch["nonfinite"] = True  # the verdict's hint names the overflow or underflow (graders.drills.teacher)
    return mismatch


def _around(
    expected: torch.Tensor, actual: torch.Tensor, same: torch.Tensor, first: int, shape: tuple[int, ...]
) -> list[Neighbour]:
    """The elements from ``WINDOW`` before to ``WINDOW`` after the first difference, in flat order."""
    start, stop = max(0, first - WINDOW), min(expected.numel(), first + WINDOW + 1)
    return [
        {
            "index": list(_unravel(i, shape)),
            "expected": _jsonable(expected[i].item()),
            "actual": _jsonable(actual[i].item()),
            "differs": not bool(same[i]),
        }
        for i in range(start, stop)
    ]


def _isnan(values: torch.Tensor) -> torch.Tensor:
    if values.dtype.is_floating_point or values.dtype.is_complex:
        return torch.isnan(values)
    return torch.zeros_like(values, dtype=torch.bool)


def _errors(expected: torch.Tensor, actual: torch.Tensor, same: torch.Tensor) -> tuple[float, float]:
    """Max abs and rel error over the finite entries; inf when a differing entry is NaN or infinite."""
    both = torch.isfinite(expected) & torch.isfinite(actual)
    if bool((~same & ~both).any()):
        return math.inf, math.inf
    if not bool(both.any()):
        return 0.0, 0.0
    diff = (actual[both].double() - expected[both].double()).abs()
    scale = expected[both].double().abs()
    rel = torch.where(scale > 0, diff / scale.clamp_min(1e-300), torch.where(diff > 0, math.inf, 0.0))
    return float(diff.max()), float(rel.max())


def _jsonable(value: object) -> object:
    """Numbers as JSON can hold them (no NaN/inf literals, no complex): the verdict is stored as JSON."""
    if isinstance(value, complex):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _json_float(value: float) -> float | str:
    """A float as JSON can hold it: "inf" or "nan" as a string."""
    return value if math.isfinite(value) else str(value)


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for size in reversed(shape):
        index.append(flat % size)
        flat //= size
    return tuple(reversed(index))
