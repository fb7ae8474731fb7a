"""Layer 2's rule for values: what may come into a submission's hands, whichever way it comes.

Attribute names alone do not close a sandbox: a public callable can return ``vars(obj)`` (the LR
schedulers' ``state_dict`` does, for any object), a compiled function can carry its module's globals in
a public attribute (Cython's ``func_globals``), and a dictionary lookup returns whatever the dictionary
holds. So ``policy.Guards`` passes every value that enters the submission's code through ``check``:
results of attribute reads, subscripts, calls and iteration, ``with ... as`` targets, augmented
assignments, decorators, and the arguments library code passes to the submission's own functions.

What ``check`` refuses, by kind rather than by name:

1. modules, frames, code objects, tracebacks, cells, class namespaces (``mappingproxy``), raw buffers
   (``memoryview``), capsules and ctypes objects, file and import machinery, and the classes that make
   such objects (``type``, ``FunctionType``, ``CodeType`` ...);
2. namespaces: any dict with a ``__dunder__`` key (a module's globals, a copy of a class's namespace);
3. arrays that are not plain data: numpy arrays whose dtype holds Python objects (their memory is a
   list of pointers) or whose memory belongs to a ``bytes``/buffer object rather than to an array;
4. library methods taken off their class (``LRScheduler.state_dict`` would run on any object: it is
   ``vars``); they are reachable bound to an instance only;
5. callables named like a dunder or a denied attribute (``str.format`` out of a namespace is still
   ``format``), builtins outside the sandbox's own list, C functions of modules other than math, torch
   and numpy;
6. containers holding any of the above (lists, tuples, sets, dicts and their subclasses are scanned).

Library methods that store attributes under names taken from data (``self.__dict__.update(state)``)
are handed out wrapped, so that a private name can never be planted on an object that way: numpy reads
``__array_interface__`` from an instance's dictionary, and that is raw memory access.
"""

from __future__ import annotations

import builtins
import types
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from graders.sandbox import allowlist

# Kinds a type is sorted into once (``_classify``); the check for a value then depends on its kind.
SAFE, ARRAY, CONTAINER, MAPPING, REFUSED, CLASS, PYFUNC, METHOD, CFUNC, NAMED, DECOR, OTHER = range(12)

MAX_DEPTH = 64  # containers nested deeper than this are refused (tensor.tolist() of a 10-d tensor is 10)
ALLOWED_C_MODULES = frozenset(("math", "cmath", "torch", "numpy"))  # C functions may come from these roots
# Types whose instances are never handed to a submission, named by the module that defines them.
REFUSED_TYPE_MODULES = frozenset(
    """_io io _frozen_importlib _frozen_importlib_external importlib _ctypes ctypes socket _socket subprocess
    os posix nt mmap _pickle pickle marshal gc inspect code codeop sys signal _signal multiprocessing
    _multiprocessing zipimport runpy pathlib shutil tempfile""".split()
)


class Refused(AttributeError):
    """A value the sandbox does not hand out; an AttributeError so ``hasattr`` answers False."""


def is_dunder(name: object) -> bool:
    return isinstance(name, str) and len(name) > 4 and name[:2] == "__" and name[-2:] == "__"


def bad_name(name: object) -> bool:
    """A callable with this ``__name__`` is refused wherever it comes from."""
    return not isinstance(name, str) or is_dunder(name) or name in allowlist.DENIED_ATTRIBUTES


# The type tables, as data: dotted names resolved once per process (``_types``). A "?" name is computed
# (``_COMPUTED``): a type that no module exports under a name.
SAFE_TYPES = """types.NoneType bool int float complex str bytes range slice types.EllipsisType types.NotImplementedType
    torch.Tensor torch.nn.Parameter torch.Size torch.dtype torch.device torch.layout torch.memory_format
    torch.finfo torch.iinfo numpy.dtype graders.sandbox.proxies.ModuleProxy"""
# Objects never handed to a submission: code, frames, namespaces, raw memory.
REFUSED_TYPES = """types.ModuleType types.FrameType types.CodeType types.TracebackType types.CellType
    types.MappingProxyType memoryview bytearray ?capsule"""
# Classes whose instances are code or namespaces: calling one would make such an object.
REFUSED_CLASSES = """type types.FunctionType types.MethodType types.BuiltinFunctionType types.CodeType
    types.CellType types.ModuleType types.FrameType types.TracebackType types.MappingProxyType
    types.SimpleNamespace ?cython_function memoryview bytearray super"""
# Callables judged by their name (descriptors, method wrappers, numpy's dispatchers and ufuncs).
NAMED_TYPES = """types.MethodWrapperType types.WrapperDescriptorType types.MethodDescriptorType
    types.ClassMethodDescriptorType types.MemberDescriptorType types.GetSetDescriptorType ?cython_function
    ?numpy_dispatcher numpy.ufunc"""
_COMPUTED: dict[str, Callable[[Any], type]] = {
    "?capsule": lambda np: type(np.random.default_rng(0).bit_generator.capsule),
    "?cython_function": lambda np: type(np.random.default_rng),  # cython_function_or_method
    "?numpy_dispatcher": lambda np: type(np.sum),  # numpy's array-function dispatcher
}


def _types(names: str) -> frozenset[type]:
    import importlib

    import numpy as np

    found: set[type] = set()
    for name in names.split():
        if name in _COMPUTED:
            found.add(_COMPUTED[name](np))
            continue
        module, _, attr = name.rpartition(".")
        owner: Any = importlib.import_module(module or "builtins")
        if module == "torch.nn":  # torch.nn.Parameter: the attribute of a package, not a module of its own
            owner = importlib.import_module("torch").nn
        found.add(getattr(owner, attr))
    return frozenset(found)


class Tables:
    """Type tables built once per process (torch and numpy are imported lazily, never by the web side)."""

    def __init__(self) -> None:
        import numpy as np
        import torch

        self.np = np
        self.torch = torch
        self.safe: set[type] = set(_types(SAFE_TYPES))
        self.safe.update(t for t in vars(np).values() if isinstance(t, type) and issubclass(t, np.number | np.bool_))
        self.kinds: dict[type, int] = dict.fromkeys(self.safe, SAFE)
        self.refused_types = _types(REFUSED_TYPES)
        self.refused_classes = _types(REFUSED_CLASSES)
        self.pyfunc_like = {types.FunctionType: PYFUNC, types.MethodType: METHOD, types.BuiltinFunctionType: CFUNC}
        self.named = _types(NAMED_TYPES)
        # Verdicts that hold for the life of the process: library functions found allowed (kept alive here,
        # so an id is never reused), and the names of allowed methods of safe types (tensors, numbers).
        self.prewarmed = False
        self.allowed: dict[int, Any] = {}
        self.good_names: set[str] = set()
        self._builtins_key: tuple[int, ...] = ()
        self._builtin_ids: frozenset[int] = frozenset()
        self.owners: dict[types.FunctionType, bool] = {}  # library function -> is an unbound method

    def builtin_ids(self, given: Iterable[Any]) -> frozenset[int]:
        """The ids of the builtins a submission was given (the same objects every time: computed once)."""
        given = tuple(given)
        if self._builtins_key != tuple(map(id, given)):
            self._builtins_key = tuple(map(id, given))
            self._builtin_ids = frozenset(self._builtins_key)
        return self._builtin_ids

    def classify(self, t: type) -> int:
        kind = self.kinds.get(t)
        if kind is None:
            kind = self.kinds[t] = self._classify(t)
        return kind

    def _classify(self, t: type) -> int:
        np, torch = self.np, self.torch
        if issubclass(t, torch.Tensor):
            return SAFE
        if t in self.pyfunc_like:
            return self.pyfunc_like[t]
        if t in self.refused_types or issubclass(t, types.ModuleType):
            return REFUSED
        module = str(getattr(t, "__module__", "") or "")
        if module in REFUSED_TYPE_MODULES or module.split(".")[0] in REFUSED_TYPE_MODULES:
            return REFUSED
        if issubclass(t, type):
            return CLASS
        if issubclass(t, np.ndarray | np.void):
            return ARRAY
        if issubclass(t, dict):
            return MAPPING
        if issubclass(t, list | tuple | set | frozenset) or t in _DICT_VIEWS:
            return CONTAINER
        if t in self.named or issubclass(t, np.ufunc):
            return NAMED
        if issubclass(t, staticmethod | classmethod | property):
            return DECOR
        return OTHER


_DICT_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.values()), type({}.items()))
_TABLES: list[Tables] = []


def tables() -> Tables:
    if not _TABLES:
        _TABLES.append(Tables())
    return _TABLES[0]


class ValueGuard:
    """``check`` for one submission: knows the submission's globals (its own functions pass as they are),
    the builtins it was given, and the library methods that write attributes named by data."""

    def __init__(
        self,
        own_globals: dict[str, Any],
        safe_builtins: Iterable[Any],
        writers: frozenset[types.FunctionType],
        wrap_writer: Callable[[Any], Any],
    ) -> None:
        self.t = tables()
        self.own_id = id(own_globals)  # an id, not a reference: no cycle between the globals and their guard
        self.safe_builtins = self.t.builtin_ids(safe_builtins)
        self.writers = writers
        self.wrap_writer = wrap_writer
        self.safe = self.t.safe  # shared, read-only here: the fast path is one set lookup
        self._by_kind: dict[int, Callable[[Any, int, set[int] | None, bool], Any]] = {
            REFUSED: self._refused,
            ARRAY: self._array,
            CONTAINER: self._container,
            MAPPING: self._container,
            CLASS: self._class_value,
            PYFUNC: self._pyfunc,
            METHOD: self._method_value,
            CFUNC: self._cfunc_value,
            NAMED: self._named_value,
            DECOR: self._decor_value,
        }

    def prewarm(self, roots: Iterable[Any]) -> None:
        """Check every value of ``roots`` (the proxies, a tensor, an array) and their public attributes once,
        so the verdicts are made in the fork server and each runner starts with them (in a fresh fork,
        every first verdict is also a copy-on-write fault on the cache it lands in)."""
        if self.t.prewarmed:
            return
        self.t.prewarmed = True
        with warnings.catch_warnings():  # some attributes warn when read (a tensor's .T)
            warnings.simplefilter("ignore")
            for root in roots:
                for name in dir(root):
                    if name.startswith("_"):
                        continue
                    try:
                        self._check(getattr(root, name), 0, None, top=True)
                    except Exception:  # noqa: BLE001 - refused, or a property that raises: no verdict kept
                        continue

    def check(self, value: Any) -> Any:
        """The value itself (a writer method comes back wrapped), or ``Refused``."""
        if type(value) in self.safe:
            return value
        return self._check(value, 0, None, top=True)

    def _check(self, value: Any, depth: int, seen: set[int] | None, top: bool = False) -> Any:
        kind = self.t.classify(type(value))
        if kind == SAFE or kind == OTHER:
            return value
        if (kind == CFUNC or kind == NAMED or kind == PYFUNC) and self.t.allowed.get(id(value)) is value:
            return value  # seen before: library functions live on
        return self._by_kind[kind](value, depth, seen, top)

    # One rule per kind (``_by_kind``): each returns the value to hand out, or raises ``Refused``.

    def _refused(self, value: Any, *_: Any) -> Any:
        raise Refused(f"a {type(value).__name__} object is not available in the sandbox")

    def _class_value(self, value: type, *_: Any) -> Any:
        if value in self.t.refused_classes or issubclass(value, type | types.ModuleType):
            raise Refused(f"the class {value.__name__} is not available in the sandbox")
        return value

    def _method_value(self, value: types.MethodType, depth: int, seen: set[int] | None, top: bool) -> Any:
        func = value.__func__
        if type(func) is types.FunctionType and id(func.__globals__) == self.own_id:
            return value
        if func in self.writers:
            if not top:
                raise Refused(f"the method {func.__name__} is not available inside a container")
            return self.wrap_writer(value)
        self._named(value)
        self._check(value.__self__, depth + 1, seen)
        return value

    def _cfunc_value(self, value: types.BuiltinFunctionType, *_: Any) -> Any:
        if type(value.__self__) in self.safe:  # a tensor's or a number's method
            if value.__name__ in self.t.good_names:
                return value
            self._cfunc(value)
            self.t.good_names.add(value.__name__)
            return value
        self._cfunc(value)
        if value.__self__ is None or isinstance(value.__self__, types.ModuleType | type):
            self.t.allowed[id(value)] = value
        return value

    def _named_value(self, value: Any, *_: Any) -> Any:
        self._named(value)
        if not isinstance(value, types.MethodWrapperType):  # a method-wrapper is bound: made per access
            self.t.allowed[id(value)] = value
        return value

    def _decor_value(self, value: Any, depth: int, seen: set[int] | None, _top: bool) -> Any:
        """What a staticmethod, classmethod or property wraps is checked as itself."""
        for inner in (value.fget, value.fset, value.fdel) if isinstance(value, property) else (value.__func__,):
            if inner is not None:
                self._check(inner, depth + 1, seen)
        return value

    def _array(self, value: Any, *_: Any) -> Any:
        if value.dtype.hasobject:
            raise Refused("arrays of Python objects (dtype=object) are not available in the sandbox")
        base = value.base
        while base is not None and type(base) is not self.t.torch.Tensor:
            if not isinstance(base, self.t.np.ndarray):
                raise Refused("arrays over another object's memory (buffer=) are not available in the sandbox")
            if base.dtype.hasobject:  # an int64 view over an object array reads and writes its pointers
                raise Refused("views over an array of Python objects are not available in the sandbox")
            base = base.base
        return value

    def _container(self, value: Any, depth: int, seen: set[int] | None, _top: bool = False) -> Any:
        if depth > MAX_DEPTH:
            raise Refused("the value is nested too deeply")
        seen = set() if seen is None else seen
        if id(value) in seen:
            return value
        seen.add(id(value))
        safe = self.safe
        if isinstance(value, dict):
            for key in dict.keys(value):
                if is_dunder(key):
                    raise Refused(f"a namespace ({key!r} ...) is not available in the sandbox")
                if type(key) not in safe:
                    self._check(key, depth + 1, seen)
            items: Iterable[Any] = dict.values(value)
        else:
            items = value
        for item in items:
            if type(item) not in safe:
                self._check(item, depth + 1, seen)
        return value

    def owns(self, value: types.FunctionType) -> bool:
        """The submission's own function, or a library decorator's wrapper around one."""
        return id(value.__globals__) == self.own_id or self._wraps_own(value)

    def _pyfunc(self, value: types.FunctionType, *_: Any) -> Any:
        """A refused function raises; the submission's own passes as it is, a library one is remembered."""
        if self.owns(value):
            return value
        if is_dunder(value.__name__):
            raise Refused(f"the function {value.__name__} is not available in the sandbox")
        unbound = self.t.owners.get(value)
        if unbound is None:
            unbound = self.t.owners[value] = _is_unbound_method(value)
        if unbound:
            raise Refused(f"{value.__qualname__} taken off its class would run on any object: call it on an instance")
        self.t.allowed[id(value)] = value
        return value

    def _wraps_own(self, value: Any) -> bool:
        """A library decorator's wrapper around the submission's own function (``@torch.no_grad()``)."""
        for _ in range(8):
            value = getattr(value, "__wrapped__", None)
            if type(value) is types.FunctionType and id(value.__globals__) == self.own_id:
                return True
            if value is None:
                return False
        return False

    def _cfunc(self, value: types.BuiltinFunctionType) -> None:
        owner = value.__self__
        if owner is builtins:
            if id(value) not in self.safe_builtins:
                raise Refused(f"the builtin {value.__name__} is not available in the sandbox")
            return
        if isinstance(owner, types.ModuleType):
            root = str(getattr(owner, "__name__", "")).split(".")[0]
            if root not in ALLOWED_C_MODULES:
                raise Refused(f"functions of {owner.__name__} are not available in the sandbox")
        elif owner is not None and type(owner) not in self.safe:
            self._check(owner, 1, None)
        self._named(value)

    def _named(self, value: Any) -> None:
        name = getattr(value, "__name__", None)
        if bad_name(name):
            raise Refused(f"the callable {name!s} is not available in the sandbox")


def _is_unbound_method(func: types.FunctionType) -> bool:
    """True for a function defined directly in a class body (not a staticmethod).

    Read from the code's own qualified name (``functools.wraps`` copies ``__qualname__``, not
    ``co_qualname``), so a closure a method returns, or a wrapper a library made, is not a method. The
    owner is looked up in the function's globals; a dotted name that does not resolve to a class counts
    as a method (refused: better a refusal than ``vars`` of anything).
    """
    *owner_path, name = func.__code__.co_qualname.split(".")
    if not owner_path or "<locals>" in owner_path:
        return False
    owner: Any = func.__globals__.get(owner_path[0])
    for part in owner_path[1:]:
        owner = getattr(owner, part, None)
    if not isinstance(owner, type):
        return True
    return not isinstance(owner.__dict__.get(name), staticmethod)


def static_lookup(cls: type, name: str) -> Any:
    """The attribute as stored in the class hierarchy, before any descriptor runs."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None
