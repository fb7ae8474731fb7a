"""Layer 2 closed under calling and subscripting: each boundary a value crosses into a submission's code,
each kind of value the check refuses, the narrowed numpy/torch surface, and an exploration of everything
reachable through attributes, items, iteration and calls (``tests/graders/reachability.py``)."""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
import types
from typing import Any

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from graders.sandbox import policy  # noqa: E402
from graders.sandbox.forkserver import PROJECT_ROOT  # noqa: E402
from graders.sandbox.proxies import ModuleProxy, attribute_writers, build_modules  # noqa: E402


@pytest.fixture(scope="module")
def modules() -> dict[str, ModuleProxy]:
    return build_modules()


def run(source: str, modules: dict[str, ModuleProxy], **names: Any) -> dict[str, Any]:
    """Run a submission's module body; ``names`` are placed in its globals first (as library code would
    hand them over: they have not crossed any guard)."""
    code = policy.compile_submission(source, 20_000)
    glb, _ = policy.make_globals(modules, policy.PrintSink(10_000))
    glb.update(names)
    exec(code, glb)
    return glb


def refused(source: str, modules: dict[str, ModuleProxy], **names: Any) -> str:
    with pytest.raises(AttributeError) as info:  # SandboxViolation and values.Refused are AttributeErrors
        run(source, modules, **names)
    return str(info.value)


class Holder:
    pass


# --- every boundary -----------------------------------------------------------------------------------


def test_it_checks_what_a_call_returns(modules: dict[str, ModuleProxy]) -> None:
    assert "module" in refused("m = give()\n", modules, give=lambda: os)
    refused("f = give()\n", modules, give=lambda: builtins.open)


def test_it_checks_what_a_subscript_returns(modules: dict[str, ModuleProxy]) -> None:
    assert run("first = items[0]\n", modules, items=[1, os])["first"] == 1
    assert "module" in refused("m = items[1]\n", modules, items=[1, os])
    refused("f = table['open']\n", modules, table={"open": builtins.open})


def test_it_checks_what_iteration_yields(modules: dict[str, ModuleProxy]) -> None:
    refused("for m in give():\n    pass\n", modules, give=lambda: iter([1, os]))
    refused("a, b = give()\n", modules, give=lambda: iter([1, os]))
    assert run("out = [v for v in give()]\n", modules, give=lambda: iter([1, 2]))["out"] == [1, 2]


def test_it_checks_what_library_code_passes_to_the_submissions_functions(modules: dict[str, ModuleProxy]) -> None:
    glb = run("def hook(a, *rest, **kw):\n    return a\nlam = lambda a: a\n", modules)
    assert glb["hook"](1, 2, k=3) == 1
    for callback in (glb["hook"], glb["lam"]):
        with pytest.raises(AttributeError):
            callback(os)
    with pytest.raises(AttributeError):
        glb["hook"](1, {"__builtins__": builtins.__dict__})


def test_it_checks_what_a_with_statement_binds(modules: dict[str, ModuleProxy]) -> None:
    class Leaky:
        def __enter__(self) -> Any:
            return os

        def __exit__(self, *exc: Any) -> None:
            return None

    refused("with cm as m:\n    pass\n", modules, cm=Leaky())
    run("import torch\nwith torch.no_grad():\n    y = torch.ones(1) * 2\n", modules)


def test_it_checks_what_a_decorator_returns(modules: dict[str, ModuleProxy]) -> None:
    refused("@deco\ndef f():\n    pass\n", modules, deco=lambda func: os)
    glb = run("import torch\n@torch.no_grad()\ndef f(x):\n    return x * 2\ny = f(torch.ones(1))\n", modules)
    assert not glb["y"].requires_grad


def test_it_reads_and_writes_augmented_attributes_through_the_guards(modules: dict[str, ModuleProxy]) -> None:
    box = Holder()
    box.storage = [1]  # a denied attribute name
    assert "storage" in refused("box.storage += [2]\n", modules, box=box)
    assert box.storage == [1]
    box.globals = {"__builtins__": {}}
    refused("box.globals |= {}\n", modules, box=box)
    with pytest.raises(policy.Rejected, match="starts with"):
        policy.compile_submission("x.__class__ += 1\n", 20_000)
    glb = run("class C:\n    pass\nc = C()\nc.n = 1\nc.n += 2\nd = {'k': [1]}\nd['k'] += [2]\n", modules)
    assert glb["c"].n == 3 and glb["d"] == {"k": [1, 2]}


def test_it_routes_the_callbacks_of_map_filter_sorted_min_max_and_iter_through_the_call_check(
    modules: dict[str, ModuleProxy],
) -> None:
    for expr in (
        "list(map(give, [1]))",
        "list(filter(give, [1]))",
        "sorted([1, 2], key=give)",
        "min([1, 2], key=give)",
        "max([1, 2], key=give)",
        "next(iter(give, None))",
    ):
        refused(f"out = {expr}\n", modules, give=lambda *a: os)
    glb = run("out = sorted(map(abs, [-3, 1]), key=lambda v: -v)\nlo = min([3, 1], key=abs)\n", modules)
    assert glb["out"] == [3, 1] and glb["lo"] == 1


def test_it_refuses_private_keyword_names(modules: dict[str, ModuleProxy]) -> None:
    assert "keyword" in refused("import torch\ntorch.ones(1, **{'__x__': 1})\n", modules)


# --- what the check refuses ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        os,
        sys._getframe(),
        test_it_checks_what_a_call_returns.__code__,
        types.MappingProxyType({}),
        memoryview(b"x"),
        {"__builtins__": {}},
        [1, [2, (3, {"k": os})]],
        builtins.open,
        builtins.eval,
        builtins.__import__,
        os.getpid,
        str.format,
        "".format,
        object.__subclasses__,
        type,
        types.FunctionType,
        types.CodeType,
        np.array([1, None], dtype=object),
        np.ndarray((1,), np.uint8, b"x"),
        torch.optim.lr_scheduler.LRScheduler.state_dict,
        torch.nn.RNN.all_weights,
    ],
    ids=lambda v: type(v).__name__,
)
def test_it_refuses_values_of_dangerous_kinds(modules: dict[str, ModuleProxy], value: Any) -> None:
    refused("v = give()\n", modules, give=lambda: value)


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.ones(2),
        lambda: torch.nn.Parameter(torch.ones(1)),
        lambda: np.ones(3),
        lambda: np.broadcast_to(np.ones(2), (3, 2)),
        lambda: torch.ones(3).numpy()[1:],
        lambda: np.float32(1.5),
        lambda: {"lr": 0.1, "params": [torch.ones(1)]},
        lambda: torch.nn.Linear(1, 1),
        lambda: torch.nn.Linear(1, 1).forward,
        lambda: torch.nn.functional.relu,
        lambda: np.sum,
        lambda: np.add,
        lambda: np.random.default_rng,
        lambda: abs,
        lambda: torch.float32,
        lambda: torch.Size([2]),
        lambda: (i for i in [1]),
        lambda: str,
        lambda: len,
    ],
)
def test_it_hands_out_data_and_ordinary_callables(modules: dict[str, ModuleProxy], make: Any) -> None:
    value = make()
    assert run("v = give()\n", modules, give=lambda: value)["v"] is value


def test_it_hands_out_every_value_of_every_proxy(modules: dict[str, ModuleProxy]) -> None:
    _, guards = policy.make_globals(modules, policy.PrintSink(100))
    for proxy in modules.values():
        for attr in dir(proxy):
            guards.getattr(proxy, attr)  # raises if an allowlisted value were refused: a broken allowlist


def test_it_hands_out_a_method_only_bound_to_an_instance(modules: dict[str, ModuleProxy]) -> None:
    assert "call it on an instance" in refused(
        "import torch\nf = torch.optim.lr_scheduler.LRScheduler.state_dict\n", modules
    )
    assert "call it on an instance" in refused(
        "import torch\nclass S(torch.optim.lr_scheduler.StepLR):\n    pass\nf = S.state_dict\n", modules
    )
    glb = run(
        "import torch\nclass Square(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
        "        return x * x\nclass Own:\n    def twice(self, v):\n        return 2 * v\n"
        "f = Own.twice\ny = f(Own(), 3)\nz = Square.apply(torch.ones(2))\n",
        modules,
    )
    assert glb["y"] == 6 and glb["z"].tolist() == [1.0, 1.0]


def test_it_lets_an_optimizer_step_patched_by_a_scheduler_through(modules: dict[str, ModuleProxy]) -> None:
    """A scheduler replaces opt.step with a functools.wraps wrapper named Adam.step: not a method."""
    glb = run(
        "import torch\nw = torch.nn.Parameter(torch.ones(1))\nopt = torch.optim.Adam([w])\n"
        "sched = torch.optim.lr_scheduler.StepLR(opt, 1)\nstep = opt.step\n",
        modules,
    )
    assert callable(glb["step"])


# --- attributes planted from data -----------------------------------------------------------------------


def test_it_finds_the_methods_that_write_attributes_named_by_their_data() -> None:
    names = {f.__qualname__ for f in attribute_writers()}
    for cls in ("LRScheduler", "ReduceLROnPlateau", "LambdaLR", "ChainedScheduler", "SequentialLR"):
        assert f"{cls}.load_state_dict" in names
    assert all(types.FunctionType is type(f) for f in attribute_writers())


# Every method of a class the proxies hand out that calls setattr, each read and judged: it either stores
# under fixed or digit-only names, takes modules or tensors only, is the attribute-store hook the guards
# already stand in front of, or is replaced by the proxy. A new one fails the test until it is read too.
SETATTR_CALLERS = {
    "DataLoader.__setattr__": "the attribute-store hook: names come from the submission's own stores",
    "Module.__init__": "fixed names (training, _parameters, ...)",
    "Module.__setattr__": "the attribute-store hook",
    "Module._load_from_state_dict": "only names of parameters and buffers that already exist",
    "Module.set_submodule": "an nn.Module value only, kept in _modules (never a protocol attribute's dict)",
    "ModuleList.__setitem__": "digit-only names",
    "ParameterDict.__setitem__": "replaced by the proxy's ParameterDict: private keys refused",
    "ParameterList.__setitem__": "digit-only names",
    "RNNBase.__init__": "fixed weight names",
    "RNNBase.__setattr__": "the attribute-store hook",
    "Sequential.__setitem__": "the name of a module already there",
    "Tensor.__deepcopy__": "private: copies a tensor's own dict",
}


def test_it_accounts_for_every_method_that_sets_attributes_by_name() -> None:
    from graders.sandbox.proxies import reachable_classes

    found = set()
    for cls in reachable_classes(build_modules()):
        for raw in vars(cls).values():
            func = raw.__func__ if isinstance(raw, staticmethod | classmethod) else raw
            func = func.fset if isinstance(func, property) else func
            if isinstance(func, types.FunctionType) and {"setattr", "__setattr__"} & set(func.__code__.co_names):
                if func.__module__.startswith(("torch", "numpy")):
                    found.add(func.__qualname__)
    assert found == set(SETATTR_CALLERS)


def test_it_hands_out_a_writer_that_takes_plain_dicts_with_public_names(modules: dict[str, ModuleProxy]) -> None:
    prelude = (
        "import torch\nopt = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1)\n"
        "s = torch.optim.lr_scheduler.StepLR(opt, 2)\n"
    )
    glb = run(prelude + "opt.step()\ns.step()\nstate = s.state_dict()\ns.load_state_dict(state)\n", modules)
    assert glb["s"].last_epoch == 1
    assert "state key" in refused(prelude + "s.load_state_dict({'__array_interface__': {}})\n", modules)
    assert "takes a dict" in refused(prelude + "s.load_state_dict([('__array_interface__', {})])\n", modules)
    assert "state key" in refused(prelude + "s.load_state_dict({'x': [{'__class__': 1}]})\n", modules)


def test_it_keeps_parameter_dict_keys_public(modules: dict[str, ModuleProxy]) -> None:
    glb = run("import torch\npd = torch.nn.ParameterDict({'w': torch.nn.Parameter(torch.ones(1))})\n", modules)
    assert list(glb["pd"].keys()) == ["w"]
    with pytest.raises(KeyError, match="public names"):
        run("import torch\npd = torch.nn.ParameterDict()\npd['__array_interface__'] = {}\n", modules)


def test_it_never_lets_torch_asarray_alias_bytes(modules: dict[str, ModuleProxy]) -> None:
    with pytest.raises(TypeError, match="raw bytes"):
        run("import torch\nt = torch.asarray(bytes(8), dtype=torch.uint8)\n", modules)
    glb = run("import torch\nimport numpy as np\nt = torch.asarray(np.ones(2))\nu = torch.asarray([1, 2])\n", modules)
    assert glb["t"].tolist() == [1.0, 1.0] and glb["u"].tolist() == [1, 2]


# --- the exploration ------------------------------------------------------------------------------------


def explore(*flags: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.graders.reachability", "2", "2", "240", *flags],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.sandbox
def test_it_reaches_nothing_dangerous_through_attributes_items_iteration_or_calls() -> None:
    report = explore()
    assert report["values"] > 5_000 and report["calls"] > 20_000 and report["items"] > 1_000, report
    assert report["reached"] == []


@pytest.mark.sandbox
def test_the_exploration_finds_namespaces_object_arrays_and_raw_buffers_without_the_value_check() -> None:
    reached = explore("--without-value-checks")["reached"]
    reasons = {line.rsplit(": ", 1)[-1] for line in reached}
    assert {"a namespace", "an object array", "memoryview"} <= reasons, reached[:20]
