"""Layers 1 and 2: the restricted compile and the runtime guards a submission runs under.

Static (compile time), on top of RestrictedPython's defaults:
- names and attributes starting with ``_`` are refused, except: defining the dunder methods in
  ``allowlist.DEFINABLE_DUNDERS`` directly in a class body, and the attribute ``__init__`` on a
  ``super()`` / ``super(C, self)`` call, so ``super().__init__()`` works in nn.Module code;
- imports only of modules in ``allowlist.IMPORTABLE`` (absolute, no ``*``);
- augmented assignment to items and attributes (``out[i] += v``) is allowed (RestrictedPython refuses it);
- ``eval``/``exec``/``compile``/``open``/``globals``/``vars``/``dir``/``type``... are simply not builtins.

Runtime: ``_getattr_`` refuses underscore names and ``allowlist.DENIED_ATTRIBUTES`` on every object and
never returns a real module; ``_write_`` refuses writes to modules, proxies and classes the submission did
not define; classes are built by ``_build_class`` which re-checks the namespace; ``print`` goes to a capped
collector; ``import`` returns proxies only.
"""

from __future__ import annotations

import ast
import builtins
import operator
import types
from collections.abc import Callable
from typing import Any

from RestrictedPython import compile_restricted_exec
from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence
from RestrictedPython.transformer import RestrictingNodeTransformer

from graders.sandbox import allowlist
from graders.sandbox.proxies import ModuleProxy

FILENAME = "<submission>"


class Rejected(Exception):
    """The source uses a construct the sandbox forbids; the message names it."""


class OutputLimitExceeded(BaseException):
    """Raised by print once the cap is hit (a BaseException the submission cannot name)."""


class SandboxPolicy(RestrictingNodeTransformer):
    """RestrictedPython's transformer with the exceptions torch code needs (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.class_depth: list[bool] = []  # True while directly inside a class body

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self.class_depth.append(True)
        try:
            return super().visit_ClassDef(node)
        finally:
            self.class_depth.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        in_class_body = bool(self.class_depth) and self.class_depth[-1]
        name = node.name
        if name.startswith("_") and name != "_":
            if not (in_class_body and name in allowlist.DEFINABLE_DUNDERS):
                self.error(node, f'defining "{name}" is not allowed (only {_dunder_list()} in a class body)')
            node.name = "init_placeholder"  # let the stock check pass; restored below
        self.class_depth.append(False)
        try:
            new = super().visit_FunctionDef(node)
        finally:
            self.class_depth.pop()
            node.name = name
        return new

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        self.error(node, "async functions are not allowed")
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        self.class_depth.append(False)
        try:
            return super().visit_Lambda(node)
        finally:
            self.class_depth.pop()

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if node.attr == "__init__" and isinstance(node.ctx, ast.Load) and _is_super_call(node.value):
            value = self.visit(node.value)
            func = ast.copy_location(ast.Name("_getattr_", ast.Load()), node)
            attr = ast.copy_location(ast.Constant("__init__"), node)
            return ast.copy_location(ast.Call(func=func, args=[value, attr], keywords=[]), node)
        return super().visit_Attribute(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        if isinstance(node.target, ast.Attribute | ast.Subscript):
            return self.node_contents_visit(node)
        return super().visit_AugAssign(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        """``x: int = 1`` becomes ``x = 1`` (annotations are dropped, never evaluated)."""
        if node.value is None:
            return ast.copy_location(ast.Pass(), node)
        assign = ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)
        return self.visit(assign)

    def visit_Import(self, node: ast.Import) -> ast.AST:
        for alias in node.names:
            self._check_module(node, alias.name)
        return super().visit_Import(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST:
        if node.level:
            self.error(node, "relative imports are not allowed")
        else:
            self._check_module(node, node.module or "")
        return super().visit_ImportFrom(node)

    def visit_Global(self, node: ast.Global) -> ast.AST:
        return self.node_contents_visit(node)

    def _check_module(self, node: ast.AST, name: str) -> None:
        if name not in allowlist.IMPORTABLE:
            self.error(node, f'"import {name}": only {_module_list()} may be imported')


def _is_super_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _dunder_list() -> str:
    return ", ".join(sorted(allowlist.DEFINABLE_DUNDERS))


def _module_list() -> str:
    return "torch, torch.nn, torch.nn.functional, numpy and math (and other torch/numpy submodules we list)"


def compile_submission(source: str, max_source_bytes: int) -> types.CodeType:
    """Compile under the policy or raise Rejected with every error found (line numbers are the learner's)."""
    size = len(source.encode("utf-8", "surrogatepass"))
    if size > max_source_bytes:
        raise Rejected(f"rejected: the source is {size} bytes; the limit is {max_source_bytes}")
    if "\x00" in source:
        raise Rejected("rejected: the source contains a NUL byte")
    try:
        result = compile_restricted_exec(source, filename=FILENAME, policy=SandboxPolicy)
    except (RecursionError, MemoryError):  # the parser's or the transformer's depth limit
        raise Rejected(
            "rejected: the code is nested too deeply to compile; split it into smaller expressions"
        ) from None
    except (SyntaxError, ValueError) as exc:
        raise Rejected(f"rejected: {type(exc).__name__}: {exc}") from None
    if result.errors or result.code is None:
        raise Rejected("rejected: " + "; ".join(result.errors or ("the source did not compile",)))
    return result.code


# ---------------------------------------------------------------------------------------------------------
# Runtime guards


class SandboxViolation(AttributeError):
    """Raised when the guards refuse an access; an AttributeError so hasattr() answers False."""


_MODULE_TYPES = (types.ModuleType, ModuleProxy)
_NO_DEFAULT = object()


class Guards:
    """The guard functions for one submission; remembers which classes the submission defined."""

    def __init__(self, modules: dict[str, ModuleProxy], output: PrintSink) -> None:
        self.modules = modules
        self.output = output
        self.own_classes: set[type] = set()

    def getattr(self, obj: Any, name: str, default: Any = _NO_DEFAULT) -> Any:
        try:
            return self._getattr(obj, name)
        except AttributeError:
            if default is _NO_DEFAULT:
                raise
            return default

    def _getattr(self, obj: Any, name: str) -> Any:
        if not isinstance(name, str):
            raise TypeError("attribute name must be a string")
        if name.startswith("_"):
            if name == "__init__" and type(obj) is super:
                return obj.__init__
            raise SandboxViolation(f'access to "{name}" is not allowed in the sandbox')
        if name in allowlist.DENIED_ATTRIBUTES:
            raise SandboxViolation(f'access to ".{name}" is not allowed in the sandbox')
        if isinstance(obj, types.ModuleType):
            raise SandboxViolation("modules are not reachable in the sandbox")
        value = getattr(obj, name)
        if isinstance(value, types.ModuleType | types.FrameType | types.CodeType | types.TracebackType):
            raise SandboxViolation(f'".{name}" leads outside the sandbox')
        if name == "type" and _is_tensor(obj):
            return _no_string_types(value)
        return value

    def hasattr(self, obj: Any, name: str) -> bool:
        try:
            self._getattr(obj, name)
        except AttributeError:
            return False
        return True

    def write(self, obj: Any) -> Any:
        if isinstance(obj, _MODULE_TYPES):
            raise SandboxViolation("modules are read-only in the sandbox")
        if isinstance(obj, type) and obj not in self.own_classes:
            raise SandboxViolation(f"the class {obj.__name__} is read-only in the sandbox")
        if isinstance(obj, types.FunctionType | types.BuiltinFunctionType | types.MethodType | MappingProxyTypes):
            raise SandboxViolation("functions are read-only in the sandbox")
        return obj

    def setattr(self, obj: Any, name: str, value: Any) -> None:
        if not isinstance(name, str) or name.startswith("_"):
            raise SandboxViolation("setting underscore attributes is not allowed in the sandbox")
        setattr(self.write(obj), name, value)

    def getitem(self, obj: Any, key: Any) -> Any:
        if isinstance(obj, _MODULE_TYPES):
            raise SandboxViolation("modules are not subscriptable")
        return obj[key]

    def build_class(self, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kw: Any) -> type:
        for key in namespace:
            if not isinstance(key, str):
                raise SandboxViolation("class namespaces need string keys")
            if key.startswith("_") and key not in allowlist.DEFINABLE_DUNDERS | allowlist.CLASS_NAMESPACE_DUNDERS:
                raise SandboxViolation(f'defining "{key}" is not allowed')
        meta: type = type
        for base in bases:
            if isinstance(base, _MODULE_TYPES) or not isinstance(base, type):
                raise SandboxViolation("classes may only derive from classes")
            if isinstance(base, type) and issubclass(type(base), meta):
                meta = type(base)
        cls = meta(name, bases, namespace, **kw)
        self.own_classes.add(cls)
        return cls

    def do_import(
        self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> ModuleProxy:
        if type(fromlist) is list and not fromlist and level == 0:
            # PyImport_Import (torch's C++ side) calls __import__(name, g, g, [], 0) with the builtins of
            # the submission's frame, then reads sys.modules itself and discards our answer.  Import
            # statements pass None or a tuple, and submission code cannot name __import__ directly.
            return None  # type: ignore[return-value]
        if level != 0 or name not in allowlist.IMPORTABLE:
            raise ImportError(f'"import {name}": only {_module_list()} may be imported')
        if fromlist:
            return self.modules[name]
        return self.modules[name.split(".")[0]]


MappingProxyTypes = types.MappingProxyType


def _is_tensor(obj: Any) -> bool:
    import torch

    return isinstance(obj, torch.Tensor)


def _no_string_types(method: Callable[..., Any]) -> Callable[..., Any]:
    """Tensor.type('a.b') imports a.b by name; only dtypes and no argument are allowed."""

    def type_(*args: Any, **kwargs: Any) -> Any:
        if any(isinstance(a, str) for a in (*args, *kwargs.values())):
            raise SandboxViolation("Tensor.type() with a string is not allowed; use .to(dtype)")
        return method(*args, **kwargs)

    return type_


class PrintSink:
    """All print output of one submission, capped; going over the cap ends the submission.

    While ``silent`` (a hidden test runs) prints are counted but dropped, so a hidden test's inputs can
    never come back through ``print``: the only copy of them is discarded inside the child.
    """

    def __init__(self, limit: int, on_overflow: Callable[[], None] | None = None) -> None:
        self.limit = limit
        self.silent = False
        self.parts: list[str] = []
        self.size = 0
        self.overflowed = False
        self.on_overflow = on_overflow

    def write(self, text: str) -> None:
        text = str(text)
        room = self.limit - self.size
        if self.silent:  # a hidden test's print: it counts against the cap, and nothing of it is kept
            self.size += min(len(text), max(room, 0))
            if len(text) > room:
                self._overflow()
            return
        if len(text) > room:
            self.parts.append(text[: max(room, 0)])
            self._overflow()
        self.parts.append(text)
        self.size += len(text)

    def _overflow(self) -> None:
        self.size = self.limit
        self.overflowed = True
        if self.on_overflow is not None:
            self.on_overflow()
        raise OutputLimitExceeded(f"output exceeded {self.limit} bytes")

    def text(self) -> str:
        return "".join(self.parts)


class _PrintCollector:
    """What RestrictedPython's ``_print_`` returns: print() calls land in the shared sink."""

    def __init__(self, sink: PrintSink) -> None:
        self.sink = sink

    def _call_print(
        self, *objects: Any, sep: Any = " ", end: Any = "\n", file: Any = None, flush: bool = False
    ) -> None:
        sep = " " if sep is None else str(sep)
        end = "\n" if end is None else str(end)
        self.sink.write(sep.join(str(o) for o in objects) + end)

    def __call__(self) -> str:
        return ""


_INPLACE: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "@=": operator.imatmul,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "&=": operator.iand,
    "|=": operator.ior,
    "^=": operator.ixor,
}


def _inplacevar(op: str, x: Any, y: Any) -> Any:
    return _INPLACE[op](x, y)


_BUILTIN_NAMES = allowlist.words(
    """
    None False True Ellipsis NotImplemented abs all any ascii bin bool bytes callable chr complex dict divmod
    enumerate filter float frozenset hash hex int isinstance issubclass iter len list map max min next object
    oct ord pow range repr reversed round set slice sorted str sum tuple zip super staticmethod classmethod
    property ArithmeticError AssertionError AttributeError Exception FloatingPointError IndexError KeyError
    LookupError NameError NotImplementedError OverflowError RuntimeError StopIteration TypeError ValueError
    ZeroDivisionError UserWarning Warning
    """
)


def make_globals(modules: dict[str, ModuleProxy], sink: PrintSink) -> tuple[dict[str, Any], Guards]:
    """The globals a submission's module body runs in (a fresh dict per submission)."""
    guards = Guards(modules, sink)
    safe_builtins: dict[str, Any] = {name: getattr(builtins, name) for name in _BUILTIN_NAMES}
    safe_builtins.update(
        {
            "__build_class__": builtins.__build_class__,
            "__import__": guards.do_import,
            "getattr": guards.getattr,
            "hasattr": guards.hasattr,
            "setattr": guards.setattr,
        }
    )
    glb: dict[str, Any] = {
        "__builtins__": safe_builtins,
        "__name__": "submission",
        "__metaclass__": guards.build_class,
        "_getattr_": guards.getattr,
        "_getitem_": guards.getitem,
        "_write_": guards.write,
        "_getiter_": iter,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_inplacevar_": _inplacevar,
        "_apply_": lambda f, *a, **kw: f(*a, **kw),
        "_print_": lambda _getattr=None: _PrintCollector(sink),
    }
    return glb, guards
