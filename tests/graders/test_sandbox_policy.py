"""Layers 1 and 2 without processes: what the restricted compile accepts, and what the guards hand out.

What is reachable through attributes, items, iteration and calls is explored in test_sandbox_layer2.py."""

from __future__ import annotations

import types
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from graders.sandbox import policy  # noqa: E402
from graders.sandbox.proxies import ModuleProxy, build_modules  # noqa: E402
from tests.graders.test_constraints import SOURCES  # noqa: E402


@pytest.fixture(scope="module")
def modules() -> dict[str, ModuleProxy]:
    return build_modules()


def run(source: str, modules: dict[str, ModuleProxy], limit: int = 10_000) -> dict[str, Any]:
    code = policy.compile_submission(source, 20_000)
    glb, _ = policy.make_globals(modules, policy.PrintSink(limit))
    exec(code, glb)
    return glb


def test_it_accepts_nn_module_code(modules: dict[str, ModuleProxy]) -> None:
    glb = run(
        "import torch\nfrom torch import nn\nimport torch.nn.functional as F\n"
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(2, 1)\n    def forward(self, x):\n        return F.relu(self.fc(x))\n"
        "out = Net()(torch.ones(3, 2))\n",
        modules,
    )
    assert glb["out"].shape == (3, 1)


def test_it_allows_item_assignment_and_augmented_item_assignment(modules: dict[str, ModuleProxy]) -> None:
    glb = run("import torch\nout = torch.zeros(3)\nout[0] = 5\nout[1] += 2\nd = {}\nd['k'] = 1\nd['k'] += 1\n", modules)
    assert glb["out"].tolist() == [5.0, 2.0, 0.0]
    assert glb["d"] == {"k": 2}


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ("import os\n", '"import os"'),
        ("from subprocess import run\n", '"import subprocess"'),
        ("from . import x\n", "relative imports"),
        ("import torch\nx = torch.ones(1).__class__\n", '"__class__"'),
        ("class A:\n    def __eq__(self, o):\n        return True\n", 'defining "__eq__"'),
        ("def __init__(self):\n    pass\n", 'defining "__init__"'),
        ("async def f():\n    pass\n", "async functions"),
        ("exec('1')\n", "Exec calls"),
    ],
)
def test_it_rejects_forbidden_constructs_naming_them(source: str, named: str) -> None:
    with pytest.raises(policy.Rejected) as info:
        policy.compile_submission(source, 20_000)
    assert named in str(info.value)
    assert str(info.value).startswith("rejected: ")


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ("def _helper(x):\n    return x\n", 'defining "_helper": names that start with "_"'),
        ("def f(x):\n    _t = x\n    return _t\n", '"_t": names that start with "_"'),
        ("class A:\n    def _scale(self, x):\n        return x\n", 'defining "_scale": names that start with "_"'),
    ],
)
def test_it_rejects_a_private_name_in_a_teachers_words(source: str, named: str) -> None:
    """A ``_private`` helper is refused with the rule the drill page states and the name to use instead, not
    RestrictedPython's own wording."""
    with pytest.raises(policy.Rejected) as info:
        policy.compile_submission(source, 20_000)
    assert named in str(info.value) and "kept for the sandbox" in str(info.value)
    assert "invalid variable name" not in str(info.value) and 'call it "' in str(info.value)


def test_it_rejects_oversized_source() -> None:
    with pytest.raises(policy.Rejected, match="limit is 100"):
        policy.compile_submission("x = 1\n" * 100, 100)


DEEP_SOURCES = {
    "unary minus": "x = " + "-" * 9000 + "1\n",
    "attribute chain": "x = a" + ".b" * 3000 + "\n",
    "sum": "x = " + "+".join(["1"] * 3000) + "\n",
    "subscripts": "x = a" + "[0]" * 3000 + "\n",
    "not": "x = " + "not " * 3000 + "1\n",
    "lambdas": "x = " + "lambda: " * 1500 + "1\n",
    "brackets": "x = " + "[" * 3000 + "]" * 3000 + "\n",
}


@pytest.mark.parametrize("source", DEEP_SOURCES.values(), ids=DEEP_SOURCES.keys())
def test_it_rejects_source_nested_too_deeply_to_compile(source: str) -> None:
    """Layer 1 runs in the grading worker's own process: a parser or transformer limit must end as a verdict."""
    with pytest.raises(policy.Rejected) as info:
        policy.compile_submission(source, 20_000)
    assert str(info.value).startswith("rejected: ")
    assert "nested" in str(info.value)


def test_it_refuses_underscore_and_denied_attributes_at_runtime(modules: dict[str, ModuleProxy]) -> None:
    guards = policy.Guards(modules, policy.PrintSink(100))
    tensor = torch.ones(2)
    for obj, name in [(tensor, "__class__"), (tensor, "storage"), (tensor.numpy(), "tofile"), (b"s", "format")]:
        with pytest.raises(policy.SandboxViolation):
            guards.getattr(obj, name)
    with pytest.raises(policy.SandboxViolation):
        guards.getattr(types, "ModuleType")  # a real module never passes
    assert guards.getattr(tensor, "__class__", None) is None


def test_it_drops_a_main_block_and_runs_its_else_part(modules: dict[str, ModuleProxy]) -> None:
    """``if __name__ == "__main__":`` never runs in an imported module: dropped before the checks, so its
    ``__name__`` is no underscore name to refuse; an ``else`` part is what runs."""
    source = (
        "import torch\n\ndef solution(x):\n    return x\n\n"
        'if __name__ == "__main__":\n    print(solution(torch.ones(2)))\n    _seen = 1\n'
        "else:\n    ran = True\n"
        "if '__main__' == __name__:\n    print('never')\n"
    )
    sink = policy.PrintSink(100)
    glb, _ = policy.make_globals(modules, sink)
    exec(policy.compile_submission(source, 20_000), glb)
    assert glb["ran"] is True and sink.text() == ""
    for other in ("if __name__ != '__main__':\n    pass\n", "print(__name__)\n", "if __name__ == 'x':\n    pass\n"):
        with pytest.raises(policy.Rejected, match="__name__"):
            policy.compile_submission(other, 20_000)


def test_str_format_fills_plain_fields_and_refuses_fields_that_read_attributes_or_items(
    modules: dict[str, ModuleProxy],
) -> None:
    glb = run(
        "import torch\nx = torch.ones(2)\n"
        "shown = '{0} {1:>6.2f} {n!r} {0}'.format(x.shape, 1.5, n=3)\nalso = getattr('{}', 'format')(4)\n",
        modules,
    )
    assert glb["shown"] == "torch.Size([2])   1.50 3 torch.Size([2])" and glb["also"] == "4"
    for text in ("{0.__class__}", "{0[0]}", "{.real}", "{0:{1.__class__}}", "{x.shape}"):
        with pytest.raises(policy.SandboxViolation, match="names an argument only"):
            run(f"import torch\nx = torch.ones(2)\ns = '{text}'.format(x, x, x=x)\n", modules)
    for source in (
        "f = getattr(str, 'format')\n",
        "f = '{a}'.format_map\n",
        "f = '{}'.format\nf.text = '{0.__class__}'\nf(1)\n",  # its text checked when called, not when made
    ):
        with pytest.raises(policy.SandboxViolation):
            run(source, modules)


def test_it_hides_everything_not_listed_in_the_proxies(modules: dict[str, ModuleProxy]) -> None:
    proxy = modules["torch"]
    for name in ("load", "save", "from_file", "ops", "library", "compile", "jit", "hub", "os", "_C", "classes"):
        assert not hasattr(proxy, name), name
    numpy_proxy = modules["numpy"]
    for name in ("load", "save", "fromfile", "ctypeslib", "memmap", "f2py", "lib", "os"):
        assert not hasattr(numpy_proxy, name), name
    with pytest.raises(AttributeError):
        proxy.allclose = None


def test_it_refuses_writes_to_modules_and_library_classes(modules: dict[str, ModuleProxy]) -> None:
    guards = policy.Guards(modules, policy.PrintSink(100))
    for target in (modules["torch"], torch.Tensor, torch.nn.Module, len):
        with pytest.raises(policy.SandboxViolation):
            guards.write(target)
    with pytest.raises(policy.SandboxViolation):
        guards.setattr(torch.ones(1), "__class__", object)


def test_it_caps_print_output(modules: dict[str, ModuleProxy]) -> None:
    with pytest.raises(policy.OutputLimitExceeded):
        run("for i in range(100):\n    print('x' * 10)\n", modules, limit=50)


def test_it_refuses_string_types_in_tensor_type(modules: dict[str, ModuleProxy]) -> None:
    guards = policy.Guards(modules, policy.PrintSink(100))
    method = guards.getattr(torch.ones(1), "type")
    assert method(torch.float64).dtype == torch.float64
    with pytest.raises(policy.SandboxViolation):
        method("os.system")


def test_it_refuses_to_build_a_proxy_that_holds_a_real_module(monkeypatch: pytest.MonkeyPatch) -> None:
    from graders.sandbox import allowlist

    patched = dict(allowlist.MODULES)
    patched["math"] = ("os", ("path",), ())
    monkeypatch.setattr(allowlist, "MODULES", patched)
    with pytest.raises(ValueError, match="is a module"):
        build_modules()


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(source=SOURCES)
def test_the_restricted_compile_answers_a_code_object_or_a_rejection_for_any_source(source: str) -> None:
    """Layer 1 compiles in the worker too (the pool's run, the output cards): deep nesting, long chains, huge
    literals and odd unicode end in ``Rejected``, never in another exception in the worker."""
    for compile_source in (policy.compile_submission, policy.compile_plain):
        try:
            code = compile_source(source, 20_000)
        except policy.Rejected as exc:
            str(exc).encode("utf-8")  # storable and printable: no lone surrogate
            assert "\x00" not in str(exc)
        else:
            assert isinstance(code, types.CodeType)
