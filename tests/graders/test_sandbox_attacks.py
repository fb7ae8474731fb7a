"""The attack suite: every hostile submission ends contained, the fork server survives it, nothing of it
is left on the host, and the pool still grades the next submission correctly."""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import threading
import types
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from unittest import mock

import pytest

torch = pytest.importorskip("torch")

from graders.drills.grading import HIDDEN_STATUSES  # noqa: E402
from graders.sandbox import Limits, RunResult, SandboxPool, policy, wire  # noqa: E402
from graders.sandbox.forkserver import PROJECT_ROOT  # noqa: E402
from graders.sandbox.results import CaseResult  # noqa: E402
from tests.graders.attacks import ATTACKS, Attack  # noqa: E402
from tests.graders.attacks.hidden import HIDDEN_VALUES, MARKERS  # noqa: E402

pytestmark = pytest.mark.sandbox

CORRECT = "def solution(x):\n    return x * 2\n"
SYSV_TABLES = ("/proc/sysvipc/shm", "/proc/sysvipc/msg", "/proc/sysvipc/sem")


@dataclass(frozen=True)
class Env:
    canary_text: str
    canary_file: str
    canary_env: str
    pwned: str
    pwnkey: int


def prepare() -> Env:
    """A canary file and environment variable in the parent that no child may ever read."""
    token = uuid.uuid4().hex
    canary_text = f"canary-{token}"
    canary_file = os.path.join("/tmp", f"quizsite-canary-{uuid.uuid4().hex}.txt")  # the name is not secret
    with open(canary_file, "w") as fh:
        fh.write(canary_text)
    canary_env = "QUIZSITE_SANDBOX_CANARY"
    os.environ[canary_env] = canary_text
    return Env(canary_text, canary_file, canary_env, f"sbx-pwned-{token[:12]}", 0x5B000000 + int(token[:6], 16))


def make_cases() -> list[tuple[Any, ...]]:
    return [(torch.arange(4.0),), (torch.ones(2, 3),)]


def hidden_cases() -> list[tuple[Any, ...]]:
    """A hidden_data attack's one hidden case: values no visible case has (``attacks.hidden``)."""
    return [(torch.tensor(HIDDEN_VALUES),)]


def hidden_leaks(result: RunResult) -> list[str]:
    """Where the hidden input shows in what the parent passes on: texts, and the visible cases' values."""
    found = [piece for piece in texts(result) for marker in MARKERS if marker in piece]
    for case in result.cases:
        for value in _walk(case.value):
            if isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel():
                if bool(torch.isin(value.detach().reshape(-1), torch.tensor(HIDDEN_VALUES)).any()):
                    found.append(f"a visible value holds the hidden input: {value}")
    if result.hidden_status not in HIDDEN_STATUSES + ("",):
        found.append(f"a hidden status that is not a fixed word: {result.hidden_status!r}")
    return found


def expected_for(cases: list[tuple[Any, ...]]) -> list[Any]:
    return [c[0] * 2 for c in cases]


def substitute(code: str, env: Env) -> str:
    return (
        code.replace("CANARY_FILE", env.canary_file)
        .replace("CANARY_ENV", env.canary_env)
        .replace("PROJECT_ROOT", PROJECT_ROOT)
        .replace("PWNKEY", str(env.pwnkey))
        .replace("PWNED", env.pwned)
        .replace("HOST_NAME", os.uname().nodename)
    )


def _plain_compile(source: str, max_source_bytes: int) -> types.CodeType:
    return compile(source, policy.FILENAME, "exec")


def layers_broken(attack: Attack, pool: SandboxPool) -> contextlib.AbstractContextManager[Any]:
    """For a raw attack on a guarded pool the pool ships plain bytecode: layer 1 is skipped and its escape
    defeats layer 2. An unguarded pool (layers 1 and 2 off) needs nothing."""
    if not attack.raw or pool.unguarded:
        return contextlib.nullcontext()
    return mock.patch.object(policy, "compile_submission", _plain_compile)


def run_attack(
    pool: SandboxPool,
    attack: Attack,
    env: Env,
    cases: list[tuple[Any, ...]] | None = None,
    other: SandboxPool | None = None,
) -> list[RunResult]:
    """The attack's result, and its follow-up's when it has one (run next, on another runner); with a
    ``beside``, that one runs at the same time on a runner of ``other`` (another pool; without one, as in the
    GPU suite, another runner of the same pool), its result first."""
    limits = Limits(cpu_seconds=attack.cpu_seconds, wall_seconds=attack.wall_seconds, memory_mb=attack.memory_mb)
    results = []
    other = other or pool
    with layers_broken(attack, pool), layers_broken(attack, other), beside(attack, other, env, limits) as rest:
        for index, code in enumerate(filter(None, (attack.code, attack.follow_up))):
            run_cases = cases if cases is not None and index == 0 else make_cases()
            hidden = hidden_cases() if attack.category == "hidden_data" and index == 0 else None
            results.append(
                pool.run(substitute(code, env), "solution", run_cases, limits=limits, grad=attack.grad, hidden=hidden)
            )
    return rest + results  # the judged one (the attack's, or its follow-up's) last


@contextlib.contextmanager
def beside(attack: Attack, other: SandboxPool, env: Env, limits: Limits) -> Iterator[list[RunResult]]:
    """Run the attack's ``beside`` submission on ``other`` in a thread while the block runs; its result is
    added to the list once the block is done."""
    found: list[RunResult] = []
    if not attack.beside:
        yield found
        return
    code = substitute(attack.beside, env)
    worker = threading.Thread(target=lambda: found.append(other.run(code, "solution", make_cases(), limits=limits)))
    worker.start()
    try:
        yield found
    finally:
        worker.join()


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


def texts(result: RunResult) -> list[str]:
    """Every text the parent passes on (to the page, the database, the CLI's JSON)."""
    found = [result.status, result.message, result.stdout, result.device]
    for case in result.cases:
        found.append(case.error or "")
        found.extend(v for v in _walk(case.value) if isinstance(v, str))
    return found


def _walk(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, list | tuple):
        for item in value:
            yield from _walk(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _walk(item)


def leaked(env: Env) -> list[str]:
    """What a runner left on the host: files or directories named PWNED, System V objects with its key."""
    found = []
    for place in ("/tmp", "/dev/shm", "/dev/mqueue", os.getcwd(), PROJECT_ROOT):
        for root, dirs, files in os.walk(place) if os.path.isdir(place) else ():
            if root.count(os.sep) - place.count(os.sep) >= 3 or root.startswith(os.path.join(PROJECT_ROOT, ".")):
                dirs[:] = []
            found += [os.path.join(root, n) for n in dirs + files if env.pwned in n]
    for table in SYSV_TABLES:
        with contextlib.suppress(OSError), open(table) as fh:
            keys = [line.split()[0] for line in fh.read().splitlines()[1:] if line.split()]
        found += [f"{table}: {key}" for key in keys if key == str(env.pwnkey)]
    return found


@pytest.fixture(scope="module")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(size=2) as p:
        p.warm()
        yield p


@pytest.fixture(scope="module")
def unguarded_pool() -> Iterator[SandboxPool]:
    """Layers 1 and 2 off: the jail's attacks run once against code that owns its runner from its first line."""
    with SandboxPool(size=2, unguarded=True) as p:
        p.warm()
        yield p


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    e = prepare()
    yield e
    os.unlink(e.canary_file)
    os.environ.pop(e.canary_env, None)


def test_it_recognises_an_attack_that_got_through() -> None:
    """The suite's own check: a run that returns x * 2 for every case is an attack that got through."""
    cases = make_cases()
    got_through = RunResult(status="ok", cases=[CaseResult(ok=True, value=c[0] * 2, error=None) for c in cases])
    assert all_correct(got_through, expected_for(cases))
    wrong = RunResult(status="ok", cases=[CaseResult(ok=True, value=c[0] * 3, error=None) for c in cases])
    assert not all_correct(wrong, expected_for(cases))


# Holes the suite has found in code this suite does not own: strict, so a fix makes the entry fail.
KNOWN_HOLES: dict[str, str] = {}
PARAMS = [
    pytest.param(a, marks=[pytest.mark.xfail(reason=KNOWN_HOLES[a.name], strict=True)] if a.name in KNOWN_HOLES else [])
    for a in ATTACKS
]


@pytest.mark.parametrize("attack", PARAMS, ids=[f"{a.category}-{a.name}" for a in ATTACKS])
def test_it_contains_the_attack(
    pool: SandboxPool, unguarded_pool: SandboxPool, env: Env, attack: Attack, learner: Any, drill: Any
) -> None:
    """Raw attacks run with layers 1 and 2 off; every verdict is stored as a submission's (jsonb on PostgreSQL).
    A submission run beside the attack runs in the other pool."""
    mine, other = (unguarded_pool, pool) if attack.raw else (pool, unguarded_pool)
    for result in check_contained(mine, env, attack, other):
        store_verdict(result, learner, drill)


def store_verdict(result: RunResult, learner: Any, drill: Any) -> None:
    """What the parent makes of a run, stored where a verdict goes: once, a NUL made it unstorable."""
    from django.utils import timezone

    from graders.models import Submission

    tests = [
        {"name": str(i), "passed": case.ok, "message": case.error or "passed"} for i, case in enumerate(result.cases)
    ]
    verdict = {
        "status": result.status,
        "message": result.message,
        "stdout": result.stdout,
        "device": result.device,
        "cpu_ms": result.cpu_ms,
        "wall_ms": result.wall_ms,
        "tests": tests,
        "texts": texts(result),
    }
    status = result.status if result.status != "ok" else "wrong_answer"
    row = Submission.objects.create(
        user=learner,
        drill=drill,
        code="x",
        seed=1,
        drill_version=drill.version,
        status=status,
        verdict=verdict,
        finished_at=timezone.now(),
    )
    row.refresh_from_db()
    assert row.verdict == verdict
    json.dumps(row.verdict, ensure_ascii=False, allow_nan=False).encode("utf-8")  # and printed, as the CLI does


def judge_every_record(result: RunResult) -> None:
    """What the parent does next with a run's behaviour records: the contract judge, with every budget on (a
    record of 10**400 once made it raise in the worker). Each record stands for the reference's as well."""
    from graders.drills.contract import budget_advice, judge, judge_run_time, judge_type
    from graders.drills.schema import Contract

    contract = Contract(graph_budget=2.0, memory_budget=2.0, time_budget=2.0)
    for case in [*result.cases, *result.hidden]:
        judge(contract, case.behaviour, case.behaviour, ("x",), 1)
        judge(contract, {"cpu_us": 1, "peak_bytes": 1, "graph_nodes": 1}, case.behaviour, ("x",), 1)
        budget_advice(contract, case.behaviour, case.behaviour)
        budget_advice(contract, {"cpu_us": 1, "peak_bytes": 1, "graph_nodes": 1}, case.behaviour)
        judge_type(case.behaviour, case.behaviour)
    judge_run_time(contract, [case.behaviour for case in [*result.cases, *result.hidden]], result.runner_cpu_ms)


def check_contained(pool: SandboxPool, env: Env, attack: Attack, other: SandboxPool | None = None) -> list[RunResult]:
    """The attack ends contained on ``pool``; returns its results (and its follow-up's, or the result of the
    submission beside it, run on ``other``)."""
    cases = make_cases()
    originals = [c[0].clone() for c in cases]
    assert pool.run(CORRECT, "solution", make_cases()).status == "ok"  # the fork server is up
    zygote = pool.fork_server.process
    modules = set(sys.modules)

    results = run_attack(pool, attack, env, cases, other)

    for result in results:
        if attack.category == "hidden_data":  # its visible cases may well be right: the leak is what counts
            assert hidden_leaks(result) == [], f"the hidden input got out: {hidden_leaks(result)}"
        else:
            assert not all_correct(result, [o * 2 for o in originals]), f"the attack got through: {result}"
        assert result.status != "internal_error", result
        text = repr(result)
        for secret in (env.canary_text, os.environ.get("SECRET_KEY", "unset-secret"), "root:x:0:0", "SECRET_KEY ="):
            assert secret not in text
        if result.status == "ok":
            assert all(is_plain(c.value) for c in result.cases)
        assert math.isfinite(result.cpu_ms) and math.isfinite(result.wall_ms), result
        json.dumps(texts(result), allow_nan=False)
        for piece in texts(result):
            piece.encode("utf-8")  # a lone surrogate here crashed the CLI's JSON output
            assert wire.clean_text(piece) == piece, piece  # no NUL (jsonb refuses it) or control character
    for result in results:
        judge_every_record(result)
    assert leaked(env) == []
    assert all(torch.equal(c[0], o) for c, o in zip(cases, originals, strict=True)), "the parent's inputs changed"
    if attack.category == "parent_robustness":
        assert set(sys.modules) - modules == set(), "a forged result made the parent import modules"

    after = pool.run(CORRECT, "solution", make_cases())
    assert all_correct(after, expected_for(make_cases())), after
    survived = pool.fork_server.process is zygote and zygote is not None and zygote.poll() is None
    assert survived, "the fork server did not survive"
    return results


# ----------------------------------------------------------------------- hostile authors (case expressions)
#
# A team's editor writes a drill's case expressions, and they run in a runner (``graders.sandbox.casemaker``)
# with real torch and no layer 1 or 2. The loader's vocabulary check is a speed bump here as layer 2 is for
# submissions: each raw jail attack is replayed as an author who got past it, one expression that runs the
# attack with the real builtins and calls its ``solution`` on x. Judged as the submissions are: the attack got
# through if the case's value is x * 2 (its hostile step worked), and nothing may be left on the host or leak.
AUTHORED = [a for a in ATTACKS if a.raw and not a.follow_up and not a.beside and a.category != "hidden_data"]


def as_case_expression(code: str) -> str:
    """``code`` run by an expression with the real builtins; the case's argument is ``solution(x)``."""
    return (
        "(lambda G: __import__('builtins').exec(SOURCE, G) or G['solution'](torch.arange(4.0)))"
        "({'__builtins__': __import__('builtins'), '__name__': 'case'})"
    ).replace("SOURCE", repr(code))


@pytest.mark.parametrize("attack", AUTHORED, ids=[f"author-{a.category}-{a.name}" for a in AUTHORED])
def test_a_hostile_authors_case_expression_is_contained(pool: SandboxPool, env: Env, attack: Attack) -> None:
    zygote = pool.fork_server.process
    limits = Limits(cpu_seconds=attack.cpu_seconds, wall_seconds=attack.wall_seconds, memory_mb=attack.memory_mb)
    expression = as_case_expression(substitute(attack.code, env))
    result = pool.make_cases([(1, [], [expression], "cpu")], limits=limits)
    assert result.status != "internal_error", result
    got = result.cases[0].value if result.status == "ok" and result.cases and result.cases[0].ok else None
    assert not (
        isinstance(got, tuple) and len(got) == 1 and isinstance(got[0], torch.Tensor) and torch.equal(
            got[0], torch.arange(4.0) * 2)
    ), f"the attack got through: {result}"  # fmt: skip
    text = repr(result)
    for secret in (env.canary_text, os.environ.get("SECRET_KEY", "unset-secret"), "root:x:0:0"):
        assert secret not in text
    assert leaked(env) == []
    after = pool.make_cases([(1, [], ["torch.arange(4.0)"], "cpu")])
    assert after.status == "ok" and torch.equal(after.cases[0].value[0], torch.arange(4.0))
    assert pool.fork_server.process is zygote and zygote is not None and zygote.poll() is None


@pytest.mark.filterwarnings("ignore")  # the attack leaves its file open, as an attack would
def test_the_authored_replay_gets_through_where_nothing_contains_it() -> None:
    """The replay's own check: run in this process (no jail), an attack that reads a file returns x * 2."""
    from graders.drills.local import LocalRunner

    env = prepare()
    try:
        reader = next(a for a in AUTHORED if a.name == "read_canary")
        result = LocalRunner().make_cases([(1, [], [as_case_expression(substitute(reader.code, env))], "cpu")])
        assert result.cases[0].ok and torch.equal(result.cases[0].value[0], torch.arange(4.0) * 2), result
    finally:
        os.unlink(env.canary_file)
        os.environ.pop(env.canary_env, None)
