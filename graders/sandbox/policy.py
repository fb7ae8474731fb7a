"""Layers 1 and 2: the restricted compile and the runtime guards a submission runs under.

Static (compile time), on top of RestrictedPython's defaults:
- names and attributes starting with ``_`` are refused, except: defining the dunder methods in
  ``allowlist.DEFINABLE_DUNDERS`` directly in a class body, and the attribute ``__init__`` on a
  ``super()`` / ``super(C, self)`` call, so ``super().__init__()`` works in nn.Module code;
- imports only of modules in ``allowlist.IMPORTABLE`` (absolute, no ``*``);
- augmented assignment to items and attributes (``out[i] += v``) is allowed (RestrictedPython refuses it);
- ``eval``/``exec``/``compile``/``open``/``globals``/``vars``/``dir``/``type``... are simply not builtins.

Runtime: ``_getattr_`` refuses underscore names and ``allowlist.DENIED_ATTRIBUTES`` on every object; every
value that enters the submission's code passes ``values.ValueGuard.check`` (attribute reads, subscripts,
the result of every call, iteration, ``with ... as``, augmented assignment, decorators, and the arguments
library code passes to the submission's functions), so what a submission can reach is closed under
calling and subscripting, not only under attribute access; ``_write_`` refuses writes to modules, proxies,
functions and classes the submission did not define; classes are built by ``_build_class`` which re-checks
the namespace; ``print`` goes to a capped collector; ``import`` returns proxies only.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import operator
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from RestrictedPython.compile import compile_restricted_exec
from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence
from RestrictedPython.transformer import RestrictingNodeTransformer

from graders.sandbox import allowlist, values
from graders.sandbox.mainblocks import without_main_blocks
from graders.sandbox.proxies import ModuleProxy, attribute_writers

Visited = ast.AST | Iterable[ast.AST] | None  # what a NodeTransformer's visit_* may return

FILENAME = "<submission>"


class Rejected(Exception):
    """The source uses a construct the sandbox forbids; the message names it."""


class OutputLimitExceeded(BaseException):
    """Raised by print once the cap is hit (a BaseException the submission cannot name)."""


def underscore_rule(name: str) -> str:
    """Why a name of the learner's own that starts with ``_`` is refused, and what to call it instead.

    The sandbox's guards are names in the submission's globals that start with ``_`` (``_getattr_``,
    ``_call_``, ``_write_``...): a submission free to bind such names could replace a guard, so none may,
    a ``_private`` helper included (the rule the drill page states beside the editor).
    """
    plain = name.strip("_") or "value"
    rule = 'names that start with "_" are kept for the sandbox\'s own checks (the drill page says so)'
    return f'{rule}: call it "{plain}"'


class SandboxPolicy(RestrictingNodeTransformer):
    """RestrictedPython's transformer with the exceptions torch code needs (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.class_depth: list[bool] = []  # True while directly inside a class body

    def visit_Module(self, node: ast.Module) -> Visited:
        """``if __name__ == "__main__":`` blocks go before anything is checked: they would never run (the
        module's ``__name__`` is ``"submission"``), and a script's test run is no reason to refuse the code."""
        node.body = without_main_blocks(node.body)
        return super().visit_Module(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> Visited:
        self.class_depth.append(True)
        try:
            new = super().visit_ClassDef(node)
        finally:
            self.class_depth.pop()
        if isinstance(new, ast.ClassDef):
            new.decorator_list = [_guard_call("_decorate_", d, where=d) for d in new.decorator_list]
        return new

    def check_name(self, node: Any, name: str | None, allow_magic_methods: bool = False) -> None:
        """RestrictedPython's check, in a teacher's words where a name of the learner's own starts with ``_``."""
        before = len(self.errors)
        super().check_name(node, name, allow_magic_methods)
        raw = f'"{name}" is an invalid variable name because it starts with "_"'
        if name and len(self.errors) > before and self.errors[-1].endswith(raw):
            self.errors[-1] = self.errors[-1].replace(raw, f'"{name}": {underscore_rule(name)}')

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Visited:
        in_class_body = bool(self.class_depth) and self.class_depth[-1]
        name = node.name
        if name.startswith("_") and name != "_":
            if not (name.startswith("__") and name.endswith("__")):
                self.error(node, f'defining "{name}": {underscore_rule(name)}')
            elif not (in_class_body and name in allowlist.DEFINABLE_DUNDERS):
                self.error(node, f'defining "{name}" is not allowed (only {_dunder_list()} in a class body)')
            node.name = "init_placeholder"  # let the stock check pass; restored below
        self.class_depth.append(False)
        try:
            new = super().visit_FunctionDef(node)
        finally:
            self.class_depth.pop()
            node.name = name
        if isinstance(new, ast.FunctionDef):
            new.decorator_list = [_guard_call("_decorate_", d, where=d) for d in new.decorator_list]
            params = _parameter_names(new.args)
            if params:  # what library code passes to a callback passes the same check as any other value
                prologue = ast.If(
                    test=_unchecked(params, new), body=[_at(ast.Expr(_args(params, new)), new)], orelse=[]
                )
                new.body.insert(0, _at(prologue, new))
        return new

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> Visited:
        self.error(node, "async functions are not allowed")
        return node

    def visit_Lambda(self, node: ast.Lambda) -> Visited:
        self.class_depth.append(False)
        try:
            new = super().visit_Lambda(node)
        finally:
            self.class_depth.pop()
        if not isinstance(new, ast.Lambda):
            return new
        params = _parameter_names(new.args)
        if params:  # ``lambda a: body`` becomes ``lambda a: (_args_(a) if <a needs a look> else None) or body``
            none = _at(ast.Constant(None), new)
            check = _at(ast.IfExp(test=_unchecked(params, new), body=_args(params, new), orelse=none), new)
            new.body = _at(ast.BoolOp(op=ast.Or(), values=[check, new.body]), new.body)
        return new

    def visit_Call(self, node: ast.Call) -> Visited:
        """Every call goes through ``_call_``, which checks what it returns (``super()`` excepted: it reads
        its caller's frame)."""
        new = super().visit_Call(node)
        if not isinstance(new, ast.Call) or not isinstance(new.func, ast.expr):
            return new
        if isinstance(new.func, ast.Name) and new.func.id in ("super", "_apply_"):
            return new  # _apply_ (calls with * or **) is the same guard
        name = "_callk_" if new.keywords else "_call_"  # no keyword dict to build for most calls
        return _guard_call(name, new.func, *new.args, where=new, keywords=new.keywords)

    def visit_With(self, node: ast.With) -> Visited:
        new = super().visit_With(node)
        for item in getattr(new, "items", ()):
            if item.optional_vars is not None:  # ``with cm as x``: x is what cm.__enter__ returned, checked
                item.context_expr = _guard_call("_enter_", item.context_expr, where=item.context_expr)
        return new

    def visit_Attribute(self, node: ast.Attribute) -> Visited:
        if node.attr == "__init__" and isinstance(node.ctx, ast.Load) and _is_super_call(node.value):
            value = self.visit(node.value)
            func = ast.copy_location(ast.Name("_getattr_", ast.Load()), node)
            attr = ast.copy_location(ast.Constant("__init__"), node)
            return ast.copy_location(ast.Call(func=func, args=[value, attr], keywords=[]), node)
        return super().visit_Attribute(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> Visited:
        """``a.b += v`` and ``a[k] += v`` read and write through the same guards as ``a.b`` and ``a[k]``
        (``_augattr_`` / ``_augitem_``); left to Python, the read would bypass ``_getattr_``."""
        target = node.target
        if not isinstance(target, ast.Attribute | ast.Subscript):
            return super().visit_AugAssign(node)
        op = _at(ast.Constant(_AUG_SYMBOLS[type(node.op)] + "="), node)
        value = self.visit(node.value)
        if isinstance(target, ast.Attribute):
            if target.attr.startswith("_"):
                self.error(node, f'"{target.attr}" is an invalid attribute name because it starts with "_".')
            name = _at(ast.Constant(target.attr), node)
            call = _guard_call("_augattr_", self.visit(target.value), name, op, value, where=node)
        else:
            call = _guard_call("_augitem_", self.visit(target.value), self.visit(target.slice), op, value, where=node)
        return _at(ast.Expr(call), node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> Visited:
        """``x: int = 1`` becomes ``x = 1`` (annotations are dropped, never evaluated)."""
        if node.value is None:
            return ast.copy_location(ast.Pass(), node)
        assign = ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)
        visited: Visited = self.visit(assign)
        return visited

    def visit_Import(self, node: ast.Import) -> Visited:
        for alias in node.names:
            self._check_module(node, alias.name)
        return super().visit_Import(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> Visited:
        if node.level:
            self.error(node, "relative imports are not allowed")
        else:
            self._check_module(node, node.module or "")
        return super().visit_ImportFrom(node)

    def visit_Global(self, node: ast.Global) -> Visited:
        return self.node_contents_visit(node)

    def _check_module(self, node: ast.AST, name: str) -> None:
        if name not in allowlist.IMPORTABLE:
            self.error(node, f'"import {name}": only {_module_list()} may be imported')


def _guard_call(name: str, *args: ast.expr, where: ast.AST, keywords: list[ast.keyword] | None = None) -> ast.Call:
    """``name(*args)`` placed where ``where`` is (the arguments keep their own places)."""
    return _at(ast.Call(func=_at(ast.Name(name, ast.Load()), where), args=list(args), keywords=keywords or []), where)


_T = TypeVar("_T", bound=ast.AST)


def _args(params: list[str], where: ast.AST) -> ast.Call:
    return _guard_call("_args_", *(_at(ast.Name(p, ast.Load()), where) for p in params), where=where)


def _unchecked(params: list[str], where: ast.AST) -> ast.expr:
    """``_type_(a) not in _fast_ or ...``: the prologue's test, inline, so a tensor or an int costs no call."""
    tests: list[ast.expr] = []
    for p in params:
        kind = _guard_call("_type_", _at(ast.Name(p, ast.Load()), where), where=where)
        fast = _at(ast.Name("_fast_", ast.Load()), where)
        tests.append(_at(ast.Compare(left=kind, ops=[ast.NotIn()], comparators=[fast]), where))
    return tests[0] if len(tests) == 1 else _at(ast.BoolOp(op=ast.Or(), values=tests), where)


def _at(node: _T, where: ast.AST) -> _T:
    """One new node's location, copied without walking a subtree (compile time is the hot path too)."""
    return ast.copy_location(node, where)


def _parameter_names(args: ast.arguments) -> list[str]:
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return names


_AUG_SYMBOLS: dict[type, str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
}


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


def compile_plain(source: str, max_source_bytes: int) -> types.CodeType:
    """Layer 1 off: plain Python bytecode (``SandboxPool(unguarded=True)``, the attack suite's jail runs)."""
    try:
        return compile(source, FILENAME, "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise Rejected(f"rejected: {type(exc).__name__}: {exc}") from None


# ---------------------------------------------------------------------------------------------------------
# Runtime guards


class SandboxViolation(AttributeError):
    """Raised when the guards refuse an access; an AttributeError so hasattr() answers False."""


_MODULE_TYPES = (types.ModuleType, ModuleProxy)
_NO_DEFAULT = object()


class Guards:
    """The guard functions for one submission; remembers which classes the submission defined.

    ``bind`` ties it to the submission's globals (its own functions pass the value check as they are);
    until then ``check`` is the identity, which only the unit tests of single guards rely on.
    """

    def __init__(self, modules: dict[str, ModuleProxy], output: PrintSink) -> None:
        self.modules = modules
        self.output = output
        self.own_classes: set[type] = set()
        self.values: values.ValueGuard | None = None
        self.fast: set[type] = set()  # types passed without a look: filled by bind, own classes added
        self.call, self.call_positional = _make_calls(self.fast, self._check_slow)

    def bind(self, glb: dict[str, Any], safe_builtins: list[Any]) -> None:
        self.values = values.ValueGuard(glb, safe_builtins, attribute_writers(), _public_names_only)
        self.fast.update(self.values.safe)  # in place: ``call`` and the prologues hold this set
        self.fast.update(self.own_classes)
        if not self.values.t.prewarmed:  # once per process: in the fork server, before any runner
            import numpy as np
            import torch

            self.values.prewarm([*self.modules.values(), torch.ones(2, 2), np.ones((2, 2)), torch.nn.Linear(1, 1)])

    def _check_slow(self, value: Any) -> Any:
        if self.values is None:
            return value
        return self.values._check(value, 0, None, top=True)

    # -- every value that enters the submission's code -------------------------------------------------

    def check(self, value: Any) -> Any:
        if type(value) in self.fast or self.values is None:
            return value
        return self.values._check(value, 0, None, top=True)

    def args(self, *received: Any) -> None:
        """A function's prologue: what it was called with (by library code too) passes the check."""
        fast = self.fast
        for value in received:
            if type(value) not in fast and self.values is not None:
                self.values._check(value, 0, None)

    def iter(self, obj: Any) -> Iterator[Any]:
        it: Iterator[Any] = iter(obj)
        if type(obj) in _PLAIN_ITERABLES:  # holding only what already passed the check
            return it
        return self._checked(it)

    def _checked(self, it: Iterator[Any]) -> Iterator[Any]:
        check = self.check
        for value in it:
            yield check(value)

    def enter(self, manager: Any) -> _CheckedContext:
        return _CheckedContext(manager, self.check)

    def decorate(self, decorator: Any) -> Callable[[Any], Any]:
        return functools.partial(self.call, decorator)

    # -- attributes and items --------------------------------------------------------------------------

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
                # a super() object's __init__ is the next class's, bound by super itself: what the learner meant
                return obj.__init__  # type: ignore[misc]  # obj is a super object here
            raise SandboxViolation(f'access to "{name}" is not allowed in the sandbox')
        if name == "format" and type(obj) is str:
            return CheckedFormat(obj)
        if name in allowlist.DENIED_ATTRIBUTES:
            raise SandboxViolation(f'access to ".{name}" is not allowed in the sandbox')
        if isinstance(obj, types.ModuleType):
            raise SandboxViolation("modules are not reachable in the sandbox")
        value = getattr(obj, name)
        if isinstance(value, types.ModuleType | types.FrameType | types.CodeType | types.TracebackType):
            raise SandboxViolation(f'".{name}" leads outside the sandbox')
        if name == "type" and _is_tensor(obj):
            return _no_string_types(value)
        if type(value) in self.fast or self.values is None:
            return value
        if type(value) is types.FunctionType and isinstance(obj, type) and not self.values.owns(value):
            # A library function found on a class is a method unless stored as a staticmethod: taken off
            # its class it runs on any object (LRScheduler.state_dict(str) is vars(str)).
            if not isinstance(values.static_lookup(obj, name), staticmethod):
                raise SandboxViolation(f'"{obj.__name__}.{name}" is a method: call it on an instance')
        try:
            return self.values._check(value, 0, None, top=True)
        except values.Refused as exc:
            raise SandboxViolation(f'".{name}": {exc}') from None

    def hasattr(self, obj: Any, name: str) -> bool:
        try:
            self._getattr(obj, name)
        except AttributeError:
            return False
        return True

    def getitem(self, obj: Any, key: Any) -> Any:
        if isinstance(obj, _MODULE_TYPES):
            raise SandboxViolation("modules are not subscriptable")
        return self.check(obj[key])

    def augattr(self, obj: Any, name: str, op: str, value: Any) -> None:
        """``obj.name op= value``: read through ``getattr``'s checks, written through ``setattr``'s."""
        self.setattr(obj, name, _INPLACE[op](self._getattr(obj, name), value))

    def augitem(self, obj: Any, key: Any, op: str, value: Any) -> None:
        self.write(obj)[key] = _INPLACE[op](self.getitem(obj, key), value)

    # -- writes and classes --------------------------------------------------------------------------

    def write(self, obj: Any) -> Any:
        if isinstance(obj, _MODULE_TYPES):
            raise SandboxViolation("modules are read-only in the sandbox")
        if isinstance(obj, type):
            if obj not in self.own_classes:
                raise SandboxViolation(f"the class {obj.__name__} is read-only in the sandbox")
            return obj
        if type(obj) in self.fast:
            return obj
        kind = values.tables().classify(type(obj))
        if kind in _READ_ONLY_KINDS:
            raise SandboxViolation("functions are read-only in the sandbox")
        if kind == values.REFUSED:
            raise SandboxViolation(f"a {type(obj).__name__} object is read-only in the sandbox")
        return obj

    def setattr(self, obj: Any, name: str, value: Any) -> None:
        if not isinstance(name, str) or name.startswith("_"):
            raise SandboxViolation("setting underscore attributes is not allowed in the sandbox")
        setattr(self.write(obj), name, value)

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
        cls: type = meta(name, bases, namespace, **kw)
        self.own_classes.add(cls)
        self.fast.add(cls)  # its instances are the submission's own objects
        return cls

    def do_import(
        self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0
    ) -> ModuleProxy:
        if type(fromlist) is list and not fromlist and level == 0:
            # PyImport_Import (torch's C++ side) calls __import__(name, g, g, [], 0) with the builtins of
            # the submission's frame, then reads sys.modules itself and discards our answer.  Import
            # statements pass None or a tuple, and submission code cannot name __import__ directly.
            return None  # type: ignore[return-value]  # the one caller that reads no answer (above)
        if level != 0 or name not in allowlist.IMPORTABLE:
            raise ImportError(f'"import {name}": only {_module_list()} may be imported')
        if fromlist:
            return self.modules[name]
        return self.modules[name.split(".")[0]]

    # -- builtins that call what they are given: each call is a call of the submission's -------------

    def builtins(self) -> dict[str, Any]:
        call = self.call
        return {
            "map": functools.partial(_map, call),
            "filter": functools.partial(_filter, call),
            "sorted": functools.partial(_keyed, call, sorted),
            "min": functools.partial(_keyed, call, min),
            "max": functools.partial(_keyed, call, max),
            "iter": functools.partial(_iter, call),
        }


class CheckedFormat:
    """``"...".format`` for a submission: fields name arguments only (``{}``, ``{0}``, ``{name:>8.3f}``).

    ``str.format`` reads a field's attributes and items itself, past the guards (``"{0.__class__}"``), so
    the method stays denied on every other object; on a ``str`` this stands in for it and refuses a field
    with ``.`` or ``[`` (a nested field in a format spec too) before formatting.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __call__(self, *args: Any, **kwargs: Any) -> str:
        _plain_fields(self.text, 0)
        return self.text.format(*args, **kwargs)


def _plain_fields(text: str, depth: int) -> None:
    import string

    for _literal, field, spec, _conversion in string.Formatter().parse(text):
        if field is not None and ("." in field or "[" in field):
            raise SandboxViolation(
                f"str.format: the field {{{field[:40]}}} reads an attribute or an item; in the sandbox a field "
                "names an argument only ({}, {0}, {name}): pass the value itself, or use an f-string"
            )
        if spec and depth < 2:
            _plain_fields(spec, depth + 1)


def _map(call: Callable[..., Any], func: Any, /, *iterables: Any) -> Any:
    return map(functools.partial(call, func), *iterables)


def _filter(call: Callable[..., Any], func: Any, iterable: Any, /) -> Any:
    return filter(None if func is None else functools.partial(call, func), iterable)


def _keyed(call: Callable[..., Any], builtin: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    if kwargs.get("key") is not None:
        kwargs["key"] = functools.partial(call, kwargs["key"])
    return builtin(*args, **kwargs)


def _iter(call: Callable[..., Any], obj: Any, /, *sentinel: Any) -> Any:
    return iter(functools.partial(call, obj), *sentinel) if sentinel else iter(obj)


def _make_calls(fast: set[type], slow: Callable[[Any], Any]) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``f(...)`` in the submission: private keyword names are refused and the result checked.

    Closures rather than methods, and one without keywords (``_call_``, no keyword dict to build) beside
    the general one (``_callk_``, ``_apply_``): they run for every call a submission makes.
    """

    def call(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            for key in kwargs:
                if key[:1] == "_":
                    raise SandboxViolation(f'the keyword argument "{key}" is not allowed in the sandbox')
        result = func(*args, **kwargs)
        return result if type(result) in fast else slow(result)

    def call_positional(func: Any, /, *args: Any) -> Any:
        result = func(*args)
        return result if type(result) in fast else slow(result)

    return call, call_positional


class _CheckedContext:
    """``with cm as x``: x is checked like any other value; the exit is cm's own."""

    __slots__ = ("manager", "check")

    def __init__(self, manager: Any, check: Callable[[Any], Any]) -> None:
        self.manager = manager
        self.check = check

    def __enter__(self) -> Any:
        return self.check(self.manager.__enter__())

    def __exit__(self, *exc: Any) -> Any:
        return self.manager.__exit__(*exc)


def _public_names_only(method: Callable[..., Any]) -> Callable[..., Any]:
    """A library method that stores attributes named by its data (``self.__dict__.update(state)``):
    its arguments must be dicts of plain data whose keys, at any depth, are not dunder names, so that
    no ``__array_interface__`` or other protocol attribute can be planted on an object through it."""

    def guarded(*args: Any, **kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            if not isinstance(value, dict):  # dict.update would take any iterable of pairs
                raise SandboxViolation(f"{guarded.__name__} takes a dict in the sandbox")
            _refuse_dunder_keys(value, 0)
        return method(*args, **kwargs)

    guarded.__name__ = getattr(method, "__name__", "guarded")
    return guarded


def _refuse_dunder_keys(value: Any, depth: int) -> None:
    if depth > values.MAX_DEPTH:
        raise SandboxViolation("the state is nested too deeply")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str) or values.is_dunder(key):
                raise SandboxViolation(f"a state key {key!r} is not allowed in the sandbox")
            _refuse_dunder_keys(item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            _refuse_dunder_keys(item, depth + 1)
    elif not isinstance(value, int | float | str | bool | type(None)) and not _is_tensor(value):
        raise SandboxViolation(f"a state may hold plain data only, not {type(value).__name__}")


_READ_ONLY_KINDS = frozenset((values.PYFUNC, values.METHOD, values.CFUNC, values.NAMED, values.DECOR))
_PLAIN_ITERABLES = frozenset((list, tuple, dict, set, frozenset, range, str, bytes))
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

    @contextlib.contextmanager
    def quieted(self) -> Iterator[None]:
        """Prints dropped (still counted against the cap) while active: a call repeated by the grader."""
        previous, self.silent = self.silent, True
        try:
            yield
        finally:
            self.silent = previous


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


_UNGUARDED: list[bool] = []  # set once in a fork server of the attack suite's unguarded pools, never else


def switch_off_guards() -> None:
    """Layer 2 off in this process for good: ``make_globals`` hands out the real builtins.

    Only ``zygote.prepare`` calls it, in the fork server of a ``SandboxPool(unguarded=True)``: the attack
    suite's way to test the jail with code that owns its runner from its first line (DESIGN.md: layer 2
    is a speed bump, the jail is the boundary). Such a pool reports itself ``degraded``.
    """
    _UNGUARDED.append(True)


def compile_here(source: str, max_source_bytes: int) -> types.CodeType:
    """The compile that matches ``make_globals`` in this process: layer 1's, or plain where the guards are
    off (a GPU runner of an unguarded pool warms up after its fork, so it compiles its warm-up itself)."""
    return (compile_plain if _UNGUARDED else compile_submission)(source, max_source_bytes)


def make_globals(modules: dict[str, ModuleProxy], sink: PrintSink) -> tuple[dict[str, Any], Guards]:
    """The globals a submission's module body runs in (a fresh dict per submission)."""
    guards = Guards(modules, sink)
    if _UNGUARDED:
        return _unguarded_globals(sink), guards
    safe_builtins: dict[str, Any] = {name: getattr(builtins, name) for name in _BUILTIN_NAMES}
    given = list(safe_builtins.values())
    safe_builtins.update(guards.builtins())
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
        "_getiter_": guards.iter,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_inplacevar_": _inplacevar,
        "_apply_": guards.call,
        "_call_": guards.call_positional,
        "_callk_": guards.call,
        "_args_": guards.args,
        "_type_": type,
        "_fast_": guards.fast,
        "_enter_": guards.enter,
        "_decorate_": guards.decorate,
        "_augattr_": guards.augattr,
        "_augitem_": guards.augitem,
        "_print_": lambda _getattr=None: _PrintCollector(sink),
    }
    guards.bind(glb, given)
    return glb, guards


def _unguarded_globals(sink: PrintSink) -> dict[str, Any]:
    """The real builtins, with ``print`` going to the sink (fd 1 is a pipe nobody reads)."""

    def to_sink(
        *args: Any, sep: str | None = " ", end: str | None = "\n", file: Any = None, flush: bool = False
    ) -> None:
        sink.write((" " if sep is None else sep).join(str(a) for a in args) + ("\n" if end is None else end))

    return {"__builtins__": {**vars(builtins), "print": to_sink}, "__name__": "submission"}
