"""The attack suite: every hostile submission ends contained, and the pool still grades correctly after it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from graders.sandbox import Limits, RunResult, SandboxPool  # noqa: E402
from graders.sandbox.pool import PROJECT_ROOT  # noqa: E402
from tests.graders.attacks import ATTACKS, Attack  # noqa: E402

pytestmark = pytest.mark.sandbox

CORRECT = "def solution(x):\n    return x * 2\n"


@dataclass(frozen=True)
class Env:
    canary_text: str
    canary_file: str
    canary_env: str
    pwned: str


def prepare() -> Env:
    """A canary file and environment variable in the parent that no child may ever read."""
    token = uuid.uuid4().hex
    canary_text = f"canary-{token}"
    canary_file = os.path.join("/tmp", f"quizsite-canary-{uuid.uuid4().hex}.txt")  # the name is not secret
    with open(canary_file, "w") as fh:
        fh.write(canary_text)
    canary_env = "QUIZSITE_SANDBOX_CANARY"
    os.environ[canary_env] = canary_text
    return Env(canary_text, canary_file, canary_env, f"sbx-pwned-{token}")


def make_cases() -> list[tuple[Any, ...]]:
    return [(torch.arange(4.0),), (torch.ones(2, 3),)]


def expected_for(cases: list[tuple[Any, ...]]) -> list[Any]:
    return [c[0] * 2 for c in cases]


def run_attack(pool: SandboxPool, attack: Attack, env: Env, cases: list[tuple[Any, ...]] | None = None) -> RunResult:
    code = (
        attack.code.replace("CANARY_FILE", env.canary_file)
        .replace("CANARY_ENV", env.canary_env)
        .replace("PROJECT_ROOT", PROJECT_ROOT)
        .replace("PWNED", env.pwned)
    )
    limits = Limits(cpu_seconds=attack.cpu_seconds, wall_seconds=attack.wall_seconds, memory_mb=attack.memory_mb)
    return pool.run(code, "solution", cases if cases is not None else make_cases(), limits=limits, grad=attack.grad)


def is_plain(value: Any) -> bool:
    if type(value) is torch.Tensor:
        return True
    if value is None or type(value) in (int, float, bool, str, complex):
        return True
    if type(value) in (list, tuple):
        return all(is_plain(v) for v in value)
    if type(value) is dict:
        return all(type(k) in (str, int) and is_plain(v) for k, v in value.items())
    return False


def all_correct(result: RunResult, expected: list[Any]) -> bool:
    if result.status != "ok" or len(result.cases) != len(expected):
        return False
    for case, want in zip(result.cases, expected, strict=True):
        if not case.ok or type(case.value) is not torch.Tensor or case.value.shape != want.shape:
            return False
        if not torch.equal(case.value, want):
            return False
    return True


def leaked_files(env: Env) -> list[str]:
    places = ["/tmp", os.getcwd(), PROJECT_ROOT]
    return [os.path.join(p, n) for p in places for n in os.listdir(p) if env.pwned in n]


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(size=2) as p:
        p.warm()
        yield p


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    e = prepare()
    yield e
    os.unlink(e.canary_file)
    os.environ.pop(e.canary_env, None)


@pytest.mark.parametrize("attack", ATTACKS, ids=[f"{a.category}-{a.name}" for a in ATTACKS])
def test_it_contains_the_attack(pool: SandboxPool, env: Env, attack: Attack) -> None:
    cases = make_cases()
    originals = [c[0].clone() for c in cases]
    result = run_attack(pool, attack, env, cases)

    assert not all_correct(result, expected_for(originals)), f"the attack got through: {result}"
    assert result.status != "internal_error", result
    text = repr(result)
    for secret in (env.canary_text, os.environ.get("SECRET_KEY", "unset-secret"), "root:x:0:0", "SECRET_KEY ="):
        assert secret not in text
    if result.status == "ok":
        assert all(is_plain(c.value) for c in result.cases)
    assert leaked_files(env) == []
    assert all(torch.equal(c[0], o) for c, o in zip(cases, originals, strict=True)), "the parent's inputs changed"

    after = pool.run(CORRECT, "solution", make_cases())
    assert all_correct(after, expected_for(make_cases())), after
