"""What a runner that owns its process says about a job is data: ``grade`` returns a verdict whatever it says.

A submission on a pool with layers 1 and 2 off (``SandboxPool(unguarded=True)``) replaces the runner's own
``wire.pack`` and so rewrites every message it sends, after its honest values were computed: behaviour records
with numbers no call has (``cpu_us = 10**400`` once crashed the contract judge, in the examples or only for
chosen hidden inputs, making the crash itself a channel), fields of the wrong type, headers whose fields say
anything. Each run goes through the real pool, the real decoding and the real ``grade``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from graders.drills.grading import ReferenceCache, grade  # noqa: E402
from graders.drills.schema import parse_drill  # noqa: E402
from graders.sandbox import SandboxPool  # noqa: E402
from graders.sandbox.results import RECORD_RANGES, checked_record  # noqa: E402
from jobs.status import VERDICTS  # noqa: E402
from tests.graders.conftest import drill_text  # noqa: E402

pytestmark = pytest.mark.sandbox

# Every budget on, so the judge reads every number a record can hold.
BUDGETS = drill_text().replace(
    "[limits]", "[contract]\ntime_budget = 2\nmemory_budget = 2\ngraph_budget = 2\n\n[limits]"
)
DRILL = parse_drill(BUDGETS, "notes/drills/add-one.toml")

# The submission: right answers, then every message rewritten by ``forge`` (the phase's header, its kind
# "result" or "hidden") before it is packed. "@INF@" becomes 1e999 in the JSON (which json.loads reads as
# infinity: no pack writes it, a forger can).
FORGER = """
import struct
import sys

FORGED = {forged!r}

def forge(header):
    phase = FORGED.get(header.get("kind"), {{}})
    cases = header.get("cases")
    if isinstance(cases, list) and "record" in phase:
        for case in cases:
            if isinstance(case, dict):
                case["behaviour"] = phase["record"]
    header.update(phase.get("header", {{}}))
    return header

wire = sys.modules["graders.sandbox.wire"]
if not hasattr(wire, "honest_pack"):
    wire.honest_pack = wire.pack

    def pack(header, values=None):
        body = wire.honest_pack(forge(dict(header)), values)
        (size,) = struct.unpack_from("<I", body)
        head = body[4 : 4 + size].replace(b'"@INF@"', b"1e999").replace(b'"@-INF@"', b"-1e999")
        return struct.pack("<I", len(head)) + head + body[4 + size :]

    wire.pack = pack

def solution(x):
    return x + 1
"""

HUGE = st.sampled_from([10**400, -(10**400), 2**63, 2**64, 2**53 + 1, -1, 10**15, "@INF@", "@-INF@", 1e308, -0.0])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), HUGE, st.floats(allow_nan=False, allow_infinity=False))
TEXT = st.text(max_size=30) | st.sampled_from(["\ud800", "\x00", "x" * 5_000, "grad_fn", "changed", "differs"])
JSON = st.recursive(
    SCALARS | TEXT, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4)
)
KEYS = st.sampled_from(
    [*RECORD_RANGES, "changed", "moved", "grad_left", "requires_grad_set", "alias", "type", "devices", "autograd"]
    + ["grad_fn", "where", "repeat"]
)
RECORDS = st.one_of(
    st.dictionaries(KEYS | TEXT, JSON, max_size=8),
    st.fixed_dictionaries({key: HUGE for key in RECORD_RANGES}),
    JSON,
)
HEADERS = st.fixed_dictionaries(
    {},
    optional={
        "status": st.sampled_from(["ok", "runtime_error", "time_limit", "internal_error", "accepted", "x"]) | JSON,
        "message": JSON,
        "stdout": JSON,
        "cpu_ms": HUGE | JSON,
        "max_rss_kb": HUGE | JSON,
        "cases": JSON | st.lists(st.fixed_dictionaries({"ok": JSON, "error": JSON, "behaviour": RECORDS}), max_size=3),
    },
)
PHASES = st.fixed_dictionaries({}, optional={"record": RECORDS, "header": HEADERS})
FORGERIES = st.fixed_dictionaries({}, optional={"result": PHASES, "hidden": PHASES})


@pytest.fixture(scope="module")
def owned() -> Iterator[SandboxPool]:
    with SandboxPool(size=2, unguarded=True) as pool:
        pool.warm()
        yield pool


CACHE = ReferenceCache()  # the reference runs once per seed on this pool


def graded(pool: SandboxPool, forged: dict[str, Any]) -> dict[str, Any]:
    verdict = dict(grade(DRILL, FORGER.format(forged=forged), seed=1, runner=pool, cache=CACHE))
    assert verdict["status"] in VERDICTS and verdict["status"] != "internal_error", verdict
    json.dumps(verdict, ensure_ascii=False, allow_nan=False, default=str).encode("utf-8")
    return verdict


def test_an_owned_runner_that_forges_nothing_is_accepted(owned: SandboxPool) -> None:
    assert graded(owned, {})["status"] == "accepted"


@pytest.mark.parametrize("phase", ["result", "hidden"])
@pytest.mark.parametrize("key", sorted(RECORD_RANGES))
def test_a_number_no_call_has_in_a_record_is_the_runners_fault(owned: SandboxPool, phase: str, key: str) -> None:
    """In the examples it is the verdict; in the hidden phase one status word (the hidden cases did not run)."""
    verdict = graded(owned, {phase: {"record": {key: 10**400}}})
    assert verdict["status"] == "runtime_error", verdict
    if phase == "result":
        assert "unreadable result" in verdict["message"], verdict
    else:
        assert verdict["message"] == "the hidden tests ended in runtime error", verdict
        assert verdict["passed"] == 3 and verdict["hidden_passed"] == 0  # the example and the twin pair


SLOW = """
import time

def solution(x):
    started = time.process_time()
    while time.process_time() - started < 0.06:  # 60 ms of CPU a call: over the 50 ms floor
        sum(range(10_000))  # burnt in C: a few hundred lines of Python, under the line count's floor
    return x + 1
"""


# The runner's own clock stopped: every record it sends says each call took no CPU time at all.
STOPPED_CLOCK = """
import sys
import types

sys.modules["graders.sandbox.behaviour"].time = types.SimpleNamespace(thread_time_ns=lambda: 0)
"""


def test_a_forged_cpu_time_cannot_pass_the_time_budget(owned: SandboxPool) -> None:
    """Records that say every call took no time: the warden's measure of the whole run still rejects it."""
    verdict = dict(grade(DRILL, STOPPED_CLOCK + SLOW, seed=1, runner=owned, cache=CACHE))
    assert verdict["status"] == "wrong_answer", verdict
    assert "ms of CPU time over all the tests" in verdict["message"], verdict
    assert verdict["passed"] == verdict["total"] - 1, verdict
    honest = dict(grade(DRILL, SLOW, seed=1, runner=owned, cache=CACHE))  # its own records convict it first
    assert honest["status"] == "wrong_answer" and "ms of CPU time, where the reference takes" in honest["message"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(forged=FORGERIES)
def test_grade_returns_a_verdict_whatever_an_owned_runner_says(owned: SandboxPool, forged: dict[str, Any]) -> None:
    graded(owned, forged)


# What ordinary code may return, as source: numbers past a float, non-finite ones, odd text, tensors of every
# kind, nested containers. Judged against references that return a tensor, a Python float (with and without
# loose scalars) and a nested structure.
LEAVES = st.sampled_from(
    [
        "x + 1",
        "10**400",
        "-(10**4000)",
        "2**64",
        "float('inf')",
        "float('nan')",
        "1e308",
        "complex(1e308, float('nan'))",
    ]
    + [
        "True",
        "None",
        "'\\ud800\\x00'",
        "torch.full((2,), float('nan'))",
        "torch.zeros(0)",
        "torch.ones(3, dtype=torch.int8)",
    ]
    + ["torch.tensor(2**62)", "torch.ones(2, 2).t()", "x.sum()", "(x + 1).double()", "torch.tensor(True)", "x.numpy()"]
)


def _listed(items: list[str], brackets: str) -> str:
    return brackets[0] + ", ".join(items) + ("," if brackets == "()" else "") + brackets[1]


KEYS_SOURCE = st.sampled_from(["'a'", "1", "'\\x00'"])
VALUES = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda v: _listed(v, "[]"))
        | st.lists(inner, max_size=3).map(lambda v: _listed(v, "()"))
        | st.dictionaries(KEYS_SOURCE, inner, max_size=2).map(
            lambda d: _listed([f"{k}: {v}" for k, v in d.items()], "{}")
        )
    ),
    max_leaves=6,
)
REFERENCES = {
    "tensor": DRILL,
    "float": parse_drill(BUDGETS.replace("return x + 1", "return float(x.sum()) + 0.5"), "notes/drills/add-one.toml"),
    "loose": parse_drill(
        BUDGETS.replace("return x + 1", "return float(x.sum())").replace(
            "[contract]", "[compare]\nloose_scalars = true\n\n[contract]"
        ),
        "notes/drills/add-one.toml",
    ),
    "any_dtype": parse_drill(
        BUDGETS.replace("return x + 1", "return float(x.sum())").replace(
            "[contract]", "[compare]\ncheck_dtype = false\n\n[contract]"
        ),
        "notes/drills/add-one.toml",
    ),
    "nested": parse_drill(
        BUDGETS.replace("return x + 1", "return [x + 1, {'a': 1.5, 1: (x.sum(), None)}]"), "notes/drills/add-one.toml"
    ),
}


@pytest.fixture(scope="module")
def guarded() -> Iterator[SandboxPool]:
    with SandboxPool(size=2) as pool:
        pool.warm()
        yield pool


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(value=VALUES, reference=st.sampled_from(sorted(REFERENCES)))
def test_grade_returns_a_verdict_whatever_a_submission_returns(
    guarded: SandboxPool, value: str, reference: str
) -> None:
    code = f"import torch\n\ndef solution(x):\n    return {value}\n"
    verdict = dict(grade(REFERENCES[reference], code, seed=1, runner=guarded, cache=CACHE))
    assert verdict["status"] in VERDICTS and verdict["status"] != "internal_error", verdict
    json.dumps(verdict, ensure_ascii=False, allow_nan=False, default=str).encode("utf-8")


@pytest.mark.parametrize("value", ["10**400", "-(10**400)", "[10**400, float('nan')]", "complex(1e308, 1e308) * 10"])
@pytest.mark.parametrize("reference", sorted(REFERENCES))
def test_a_number_past_a_float_is_a_wrong_answer(guarded: SandboxPool, value: str, reference: str) -> None:
    """A reference of any dtype (``check_dtype = false``: ``float(10**400)`` raised OverflowError in the worker)."""
    code = f"import torch\n\ndef solution(x):\n    return {value}\n"
    verdict = grade(REFERENCES[reference], code, seed=1, runner=guarded, cache=CACHE)
    assert verdict["status"] == "wrong_answer", verdict


@given(record=RECORDS)
def test_a_checked_record_is_small_plain_data_with_every_number_in_range(record: object) -> None:
    checked = checked_record(record)
    if checked is None:
        return
    assert checked == record and len(json.dumps(checked)) < 100_000
    for key, (low, high) in RECORD_RANGES.items():
        if key in checked:
            assert type(checked[key]) is int and low <= checked[key] <= high  # type: ignore[operator]


def test_an_honest_record_passes_unchanged() -> None:
    record = {
        "cpu_us": 812,
        "changed": [0],
        "moved": [],
        "grad_left": [],
        "requires_grad_set": [],
        "alias": [],
        "type": "Tensor[float32 x2]",
        "devices": ["cpu"],
        "autograd": "none",
        "grad_fn": "",
        "graph_nodes": 12,
        "peak_bytes": 4096,
        "where": {"arg": 0, "what": "changed", "op": "add_", "line": 3, "code": "x.add_(1)"},
        "repeat": "",
    }
    assert checked_record(record) == record
