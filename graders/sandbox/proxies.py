"""Module proxies: what ``import torch`` gives a submission.

A proxy holds only the names listed in ``allowlist.MODULES``, resolved once against the real module; the
real module object is never reachable from it (the proxy stores no reference to it).  Writes are refused,
so ``torch.allclose = ...`` cannot patch anything even inside the child.

A few names are replaced by narrower versions (``_extras``): ``DataLoader`` without worker processes,
``ParameterDict`` without private keys (its keys become attribute names), ``torch.asarray`` that never
aliases a ``bytes`` object's memory.
"""

from __future__ import annotations

import functools
import importlib
import types
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from graders.sandbox import allowlist


class ModuleProxy:
    """A read-only namespace standing in for a module."""

    __slots__ = ("_sandbox_name", "_sandbox_attrs")

    def __init__(self, name: str, attrs: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_sandbox_name", name)
        object.__setattr__(self, "_sandbox_attrs", MappingProxyType(dict(attrs)))

    def __getattr__(self, name: str) -> Any:
        attrs = object.__getattribute__(self, "_sandbox_attrs")
        if name.startswith("_") or name not in attrs:
            modname = object.__getattribute__(self, "_sandbox_name")
            raise AttributeError(f"'{modname}' has no attribute '{name}' in the sandbox")
        return attrs[name]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("modules are read-only in the sandbox")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("modules are read-only in the sandbox")

    def __repr__(self) -> str:
        return f"<module '{object.__getattribute__(self, '_sandbox_name')}' (sandbox)>"

    def __dir__(self) -> list[str]:
        return sorted(object.__getattribute__(self, "_sandbox_attrs"))


def _data_loader_class() -> type:
    """DataLoader with worker processes and pinned memory switched off whatever the caller asks."""
    import inspect

    from torch.utils import data

    signature = inspect.signature(data.DataLoader.__init__)
    forced = {
        "num_workers": 0,
        "pin_memory": False,
        "timeout": 0,
        "multiprocessing_context": None,
        "prefetch_factor": None,
        "persistent_workers": False,
    }

    class DataLoader(data.DataLoader[Any]):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            bound = signature.bind(self, *args, **kwargs)  # positional num_workers included
            params = dict(bound.arguments)
            params.pop("self")
            params.update({k: v for k, v in forced.items() if k in signature.parameters})
            super().__init__(**params)

    DataLoader.__module__ = "torch.utils.data"
    return DataLoader


def _parameter_dict_class() -> type:
    """ParameterDict stores each value as an attribute named by its key (``setattr(self, key, value)``):
    a key like ``__array_interface__`` would plant a protocol attribute numpy reads as raw memory."""
    from torch import nn

    class ParameterDict(nn.ParameterDict):
        def _key_to_attr(self, key: str) -> str:
            if not isinstance(key, str) or key.startswith("_"):
                raise KeyError(f"ParameterDict keys must be public names in the sandbox, not {key!r}")
            return super()._key_to_attr(key)

    ParameterDict.__module__ = "torch.nn"
    ParameterDict.__qualname__ = "ParameterDict"
    return ParameterDict


def _asarray() -> Any:
    """torch.asarray over a ``bytes`` object shares (and lets the submission write) immutable memory."""
    import torch

    @functools.wraps(torch.asarray)
    def asarray(obj: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(obj, bytes | bytearray | memoryview):
            raise TypeError("torch.asarray over raw bytes is not allowed in the sandbox; use torch.tensor(list(b))")
        return torch.asarray(obj, *args, **kwargs)

    asarray.__qualname__ = "asarray"
    return asarray


def _extras(name: str) -> dict[str, Any]:
    if name == "torch.utils.data":
        return {"DataLoader": _data_loader_class()}
    if name == "torch.nn":
        return {"ParameterDict": _parameter_dict_class()}
    if name == "torch":
        return {"asarray": _asarray()}
    return {}


_WRITERS: list[frozenset[types.FunctionType]] = []  # found once per process, by build_modules


def attribute_writers() -> frozenset[types.FunctionType]:
    """Library methods that store attributes under names taken from their data.

    Found, not listed: every Python function in the class hierarchy of a class a proxy hands out whose
    code updates ``__dict__`` (``self.__dict__.update(state)``, the LR schedulers' ``load_state_dict``).
    ``values.ValueGuard`` hands these out only wrapped, so their data cannot carry dunder names.
    """
    if not _WRITERS:
        build_modules()
    return _WRITERS[0]


def _find_writers(proxies: Mapping[str, ModuleProxy]) -> frozenset[types.FunctionType]:
    found: set[types.FunctionType] = set()
    for cls in reachable_classes(proxies):
        for raw in vars(cls).values():
            func = raw.__func__ if isinstance(raw, staticmethod | classmethod) else raw
            if isinstance(func, types.FunctionType) and {"__dict__", "update"} <= set(func.__code__.co_names):
                found.add(func)
    return frozenset(found)


def reachable_classes(proxies: Mapping[str, ModuleProxy]) -> set[type]:
    """Every class a proxy hands out, with its bases."""
    classes: set[type] = set()
    for proxy in proxies.values():
        for value in object.__getattribute__(proxy, "_sandbox_attrs").values():
            if isinstance(value, type):
                classes.update(value.__mro__)
    return classes


def build_modules() -> dict[str, ModuleProxy]:
    """Resolve every allowlisted name once; returns dotted name -> proxy (children wired in)."""
    proxies: dict[str, ModuleProxy] = {}
    # Children first, so a parent proxy can hold them: sort by depth, deepest first.
    for dotted in sorted(allowlist.MODULES, key=lambda n: -n.count(".")):
        real_name, names, children = allowlist.MODULES[dotted]
        real = importlib.import_module(real_name)
        attrs: dict[str, Any] = {}
        for attr in names:
            if attr.startswith("_") or not hasattr(real, attr):
                continue
            value = getattr(real, attr)
            if isinstance(value, types.ModuleType):  # `from torch import x` bypasses _getattr_
                raise ValueError(f"allowlist entry {dotted}.{attr} is a module; list it in MODULES instead")
            attrs[attr] = value
        attrs.update(_extras(dotted))
        for child in children:
            attrs[child] = proxies[f"{dotted}.{child}"]
        proxies[dotted] = ModuleProxy(dotted, attrs)
    if not _WRITERS:
        _WRITERS.append(_find_writers(proxies))
    return proxies
