"""Module proxies: what ``import torch`` gives a submission.

A proxy holds only the names listed in ``allowlist.MODULES``, resolved once against the real module; the
real module object is never reachable from it (the proxy stores no reference to it).  Writes are refused,
so ``torch.allclose = ...`` cannot patch anything even inside the child.
"""

from __future__ import annotations

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

    class DataLoader(data.DataLoader):  # type: ignore[type-arg]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            bound = signature.bind(self, *args, **kwargs)  # positional num_workers included
            params = dict(bound.arguments)
            params.pop("self")
            params.update({k: v for k, v in forced.items() if k in signature.parameters})
            super().__init__(**params)

    DataLoader.__module__ = "torch.utils.data"
    return DataLoader


def _extras(name: str) -> dict[str, Any]:
    if name == "torch.utils.data":
        return {"DataLoader": _data_loader_class()}
    return {}


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
    return proxies
