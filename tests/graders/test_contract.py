"""The behaviour contract: what the runner records about a call, and how the grader judges and words it."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from graders.drills import DRILLS_DIR, DrillError, load_drills, parse_drill
from graders.drills.advice import advice_for, advise
from graders.drills.constraints import check_constraints
from graders.drills.contract import (
    RUN_OVERHEAD_US,
    STEP_FLOOR,
    TIME_FLOOR_US,
    budget_advice,
    describe,
    judge,
    judge_run_time,
    judge_type,
)
from graders.drills.schema import Contract
from graders.models import Drill
from graders.sandbox import behaviour
from graders.sandbox.child import run_case
from tests.graders.test_feedback import graded, page_of

DRILLS = load_drills(DRILLS_DIR)
FILE = "<test-submission>"


def record_of(
    source: str, *args: Any, grad: bool = False, count_graph: bool = False, count_steps: bool = False
) -> dict[str, Any]:
    """Run ``solution`` from ``source`` on ``args`` the way the runner does; its behaviour record."""
    namespace: dict[str, Any] = {"torch": torch, "np": np}
    exec(compile(source, FILE, "exec"), namespace)  # noqa: S102 - the test's own code
    _value, record = run_case(
        namespace["solution"],
        args,
        grad=grad,
        count_graph=count_graph,
        count_steps=count_steps,
        lines=source.splitlines(),
        quiet=contextlib.nullcontext,
        filename=FILE,
    )
    return record


def test_it_records_nothing_for_a_well_behaved_call() -> None:
    record = record_of("def solution(x):\n    return x.flip(0)\n", torch.arange(3.0))
    assert record["changed"] == record["alias"] == record["grad_left"] == record["requires_grad_set"] == []
    assert (record["type"], record["devices"], record["autograd"], record["repeat"]) == ("Tensor", ["cpu"], "none", "")
    assert "where" not in record


def test_it_records_an_argument_changed_in_place_and_the_line_that_did_it() -> None:
    record = record_of(
        "def solution(x, y):\n    y = y + 1\n    x.add_(y)\n    return x * 2\n", torch.ones(2), torch.ones(2)
    )
    assert record["changed"] == [0] and record["moved"] == []
    assert record["where"] == {"arg": 0, "what": "changed", "op": "add_", "line": 3, "code": "x.add_(y)"}


def test_it_tells_a_replaced_memory_from_an_in_place_write() -> None:
    record = record_of("def solution(x):\n    x.data = x.data * 2\n    return x.sum()\n", torch.ones(3))
    assert record["changed"] == [0] and record["moved"] == [0]


def test_it_records_a_list_argument_that_was_emptied() -> None:
    record = record_of("def solution(xs):\n    return torch.cat([xs.pop(), *xs])\n", [torch.ones(1), torch.zeros(1)])
    assert record["changed"] == [0]


def test_it_records_grad_and_requires_grad_left_on_the_arguments() -> None:
    source = "def solution(w, x):\n    w.requires_grad_()\n    (w * x).sum().backward()\n    return w.grad.clone()\n"
    record = record_of(source, torch.ones(2), torch.ones(2))
    assert record["grad_left"] == [0] and record["requires_grad_set"] == [0]
    assert record["where"]["what"] == "requires_grad" and record["where"]["line"] == 2


def test_it_records_memory_shared_with_an_argument() -> None:
    assert record_of("def solution(x):\n    return x[1:]\n", torch.arange(4.0))["alias"] == [0]
    assert record_of("def solution(x):\n    return x[1:].clone()\n", torch.arange(4.0))["alias"] == []
    assert record_of("def solution(a):\n    return a.reshape(2, 2)\n", np.arange(4.0))["alias"] == [0]


@pytest.mark.parametrize(
    ("source", "signature"),
    [
        ("def solution(x):\n    return x.numpy()\n", "numpy.ndarray"),
        ("def solution(x):\n    return np.float64(1.5)\n", "numpy.float64"),
        ("def solution(x):\n    return x.sum().item()\n", "float"),
        ("def solution(x):\n    return (x, x + 1, x + 2)\n", "tuple[Tensor x3]"),
        ("def solution(x):\n    return {'a': x, 'b': [1, 2.0]}\n", "dict[Tensor, list[int, float]]"),
    ],
)
def test_it_records_the_exact_type_of_the_result(source: str, signature: str) -> None:
    assert record_of(source, torch.arange(3.0))["type"] == signature


def test_it_records_the_autograd_state_of_the_result() -> None:
    w = torch.ones(2)
    leaf = "def solution(w):\n    return w.clone().requires_grad_()\n"
    graph = "def solution(w):\n    v = w.clone().requires_grad_()\n    return v * 2\n"
    assert record_of(leaf, w)["autograd"] == "leaf"
    assert (record_of(graph, w)["autograd"], record_of(graph, w)["grad_fn"]) == ("grad_fn", "MulBackward0")


def test_it_sees_state_kept_between_calls() -> None:
    assert (
        record_of("def solution(x, seen=[]):\n    seen.append(1)\n    return x * len(seen)\n", torch.ones(1))["repeat"]
        == "near 1.000e+00 1.000e+00"  # judged within the drill's tolerance: far outside it
    )
    once = "n = [0]\n\ndef solution(x):\n    n[0] += 1\n    if n[0] > 1:\n        raise ValueError\n    return x\n"
    assert record_of(once, torch.ones(1))["repeat"] == "raised ValueError"


def test_it_watches_requires_grad_and_grad_of_tensors_nested_in_list_and_dict_arguments() -> None:
    params = {"w": torch.ones(2, requires_grad=True), "b": [torch.zeros(1)]}
    backward = "def solution(d):\n    d['w'].sum().backward()\n    return d['w'].detach() * 1\n"
    flagged = "def solution(d):\n    d['b'][0].requires_grad_()\n    return d['w'].detach() * 1\n"
    record = record_of(backward, params)
    assert (record["grad_left"], record["requires_grad_set"]) == ([0], []), record
    record = record_of(flagged, {"w": torch.ones(2, requires_grad=True), "b": [torch.zeros(1)]})
    assert (record["grad_left"], record["requires_grad_set"]) == ([], [0]), record
    assert record["where"]["what"] == "requires_grad" and "requires_grad_" in record["where"]["code"], record
    message = judge(Contract(), {}, record, ("d",), 1) or ""
    assert "changed `requires_grad` on its argument `d`" in message, message


def test_the_repeat_call_sees_one_object_handed_out_twice_and_arguments_changed_only_then() -> None:
    cached = "kept = {}\n\ndef solution(x):\n    return kept.setdefault(x.shape[0], x * 2)\n"
    assert record_of(cached, torch.ones(3))["repeat"] == "same object"
    second = "seen = []\n\ndef solution(x, y):\n    if seen:\n        y.zero_()\n    seen.append(1)\n    return x * 1\n"
    again = record_of(second, torch.ones(2), torch.ones(2))["repeat"]
    assert again == "changed 1", again
    message = judge(Contract(), {}, {"repeat": again}, ("x", "y"), 2) or ""
    assert "changed its argument `y`, which the first call left alone" in message, message
    assert (
        judge(Contract(in_place=("y",)), {}, {"repeat": again, "changed": [1]}, ("x", "y"), 2) is None
    )  # an in-place drill's
    assert "two different answers" in (
        judge(Contract(in_place=("y",)), {}, {"repeat": again + "; differs", "changed": [1]}, ("x", "y"), 2) or ""
    )
    step = "def solution(w):\n    w.sub_(1)\n    return None\n"
    assert record_of(step, torch.ones(2))["repeat"] == "changed 0"  # every call changes it: allowed when in place


def test_a_second_answer_that_moved_only_by_rounding_is_judged_within_the_drills_tolerance() -> None:
    """A sum in another order (float addition is not associative) is not state kept between calls: the
    runner says how far the answer moved, and the judge allows what the drill's comparison allows."""
    order = (
        "n = [0]\n\ndef solution(x):\n    n[0] += 1\n    total = x[0] * 0\n"
        "    for v in x if n[0] % 2 else x.flip(0):\n        total = total + v\n    return total\n"
    )
    x = torch.tensor([1e8, 1.0, -1e8, 1e-3, 3.3, 7.7, 1e-4], dtype=torch.float32)
    again = record_of(order, x)["repeat"]
    assert again.startswith("near "), again
    moved, rel = (float(v) for v in again.split()[1:])
    assert moved > 0 and rel > 0
    names = ("x",)
    assert judge(Contract(), {}, {"repeat": again}, names, 1, (max(rel, 1e-5) * 2, 0.0)) is None
    assert judge(Contract(), {}, {"repeat": again}, names, 1, (0.0, moved * 2)) is None
    assert "two different answers" in (judge(Contract(), {}, {"repeat": again}, names, 1, None) or "")
    assert "two different answers" in (judge(Contract(), {}, {"repeat": again}, names, 1, (rel / 4, moved / 4)) or "")
    for forged in ("near nan 0", "near inf inf", "near 1e-9", "near x y", "differs"):
        assert judge(Contract(), {}, {"repeat": forged}, names, 1, (1e-5, 1e-6)), forged
    shape = "n = [0]\n\ndef solution(x):\n    n[0] += 1\n    return x[: n[0]] * 1.0\n"
    assert record_of(shape, torch.ones(3))["repeat"] == "differs"
    nan = "n = [0]\n\ndef solution(x):\n    n[0] += 1\n    return x / (n[0] - 1)\n"
    assert record_of(nan, torch.tensor([0.0, 1.0]))["repeat"] == "differs"  # a NaN in one answer only


def test_it_measures_the_largest_graph_alive_during_the_call() -> None:
    loop = "def solution(x):\n    total = 0.0\n    for i in range(10):\n        total = total + {}\n    return {}\n"
    keeps, frees = loop.format("(x * i).sum()", "total.item()"), loop.format("(x * i).sum().item()", "total")
    x = torch.ones(3, requires_grad=True)
    kept, freed = record_of(keeps, x, count_graph=True), record_of(frees, x, count_graph=True)
    assert kept["graph_nodes"] > 3 * freed["graph_nodes"] > 0
    assert "graph_nodes" not in record_of(frees, x)


def test_it_counts_every_graph_alive_together_and_the_graphs_kept_past_the_call() -> None:
    """A list of losses holds one small graph per step: the largest single graph stays a step's, their sum grows;
    a module-level list keeps them after the call returns, which a graph returned as the result does not count."""
    loop = "{}def solution(x):\n    {}\n    for i in range(10):\n        kept.append((x * i).sum())\n    return {}\n"
    x = torch.ones(3, requires_grad=True)
    listed = record_of(loop.format("", "kept = []", "sum(k.item() for k in kept)"), x, count_graph=True)
    items = loop.format("", "kept = []", "sum(kept)").replace(".sum())", ".sum().item())")
    freed = record_of(items, x, count_graph=True)
    assert listed["graph_nodes"] > 3 * freed["graph_nodes"] > 0
    assert listed["graph_kept"] == freed["graph_kept"] == 0  # the local list went with the call
    module = record_of(loop.format("kept = []\n\n", "pass", "0.0"), x, count_graph=True)
    assert module["graph_kept"] >= 10  # ten sums' nodes, held by the module's list
    returned = record_of("def solution(x):\n    return (x * 2).sum()\n", x, count_graph=True)
    assert returned["graph_nodes"] > 0 and returned["graph_kept"] == 0


def test_it_counts_the_lines_of_the_learners_code_a_call_ran() -> None:
    """The same count on any machine: a loop over 40,000 elements runs its lines 40,000 times, a right solution a
    few; only the learner's file is counted (torch's and the grader's Python are not), and its busiest line."""
    listed = (
        "def solution(idx, n):\n    flags = [False] * n\n    for i in idx.tolist():\n        flags[i] = True\n"
        "    return torch.tensor(flags)\n"
    )
    idx = torch.randint(0, 100, (40_000,))
    loop = record_of(listed, idx, 100, count_steps=True)
    assert loop["steps"] == 2 * 40_000 + 3 and loop["busiest"] == [3, 40_001, "for i in idx.tolist():"]
    whole = record_of("def solution(idx, n):\n    return torch.zeros(n).index_fill(0, idx, 1).bool()\n", idx, 100,
                      count_steps=True)  # fmt: skip
    assert whole["steps"] == 1 and whole["busiest"][:2] == [2, 1]
    assert "steps" not in record_of(listed, idx[:3], 100)  # only a drill with a time budget pays for it


def test_a_step_budget_is_relative_to_the_reference_with_a_floor_under_a_40000_step_loop() -> None:
    contract = Contract(time_budget=20.0)
    loop = {"steps": 80_003, "busiest": [3, 40_001, "for i in idx.tolist():"], "cpu_us": 25_000}
    message = broken(contract, {**CLEAN, "steps": 3, "cpu_us": 300}, **loop) or ""
    assert "ran 80003 lines of Python in one call (line 3: `for i in idx.tolist():`, 40001 times)" in message
    assert "where the reference runs 3" in message and "Python loop over a tensor's elements" in message
    assert 40_000 > STEP_FLOOR * 2  # a 40,000-element loop is caught with room to spare
    assert broken(contract, {**CLEAN, "steps": 3}, steps=STEP_FLOOR) is None  # a short loop: the floor
    assert broken(contract, {**CLEAN, "steps": 3}, steps=STEP_FLOOR + 1) is not None
    assert broken(contract, {**CLEAN, "steps": 1000}, steps=20_000) is None  # a reference that loops: its lines x20
    assert broken(contract, {**CLEAN, "steps": 1000}, steps=20_001) is not None
    assert broken(Contract(), {**CLEAN, "steps": 3}, steps=10**9) is None  # no time budget, no count judged
    assert broken(contract, CLEAN, steps=10**9) is None  # no reference count: nothing to judge against
    assert "(line" not in (broken(contract, {**CLEAN, "steps": 3}, steps=10**6, busiest=["x", -1]) or "")


def test_it_measures_the_most_tensor_memory_the_call_held_at_once() -> None:
    """Only memory the call allocated counts, for as long as anything (a list, a graph) keeps it alive."""
    loop = "def solution(x):\n    kept = []\n    for i in range(8):\n        y = x * i\n        {}\n    return {}\n"
    x = torch.ones(1000)  # 4,000 bytes a product
    kept = record_of(loop.format("kept.append(y)", "len(kept)"), x, count_graph=True)
    freed = record_of(loop.format("pass", "0"), x, count_graph=True)
    assert kept["peak_bytes"] == 8 * 4000
    assert 4000 <= freed["peak_bytes"] <= 2 * 4000  # the next product is made before the last one goes
    views = "def solution(x):\n    x.mul_(1)\n    return x[1:].view(-1, 9).t().sum().item()\n"
    assert record_of(views, torch.ones(10))["cpu_us"] >= 0
    assert record_of(views, torch.ones(10), count_graph=True)["peak_bytes"] <= 64  # the sum's few bytes only
    activations = (
        "def solution(x, w):\n    total = 0\n    for xb in x.split(10):\n        total += (xb @ w).relu().sum()\n"
        "    return total.item()\n"
    )
    x, w = torch.randn(100, 50), torch.randn(50, 50, requires_grad=True)
    graphs = record_of(activations, x, w, count_graph=True)["peak_bytes"]
    with torch.no_grad():
        no_graphs = record_of(activations, x, w, count_graph=True)["peak_bytes"]
    assert graphs >= 10 * 10 * 50 * 4 > 3 * no_graphs  # every batch's saved relu output stays alive
    assert "peak_bytes" not in record_of(activations, x, w)


def test_it_times_the_call_on_its_own_thread() -> None:
    loop = (
        "def solution(x):\n    out = x.clone()\n    for i in range(len(x)):\n        out[i] = x[i] * 2\n    return out"
    )
    x = torch.ones(3000)
    assert record_of(loop, x)["cpu_us"] > 20 * max(1, record_of("def solution(x):\n    return x * 2\n", x)["cpu_us"])


def test_equal_values_count_nan_as_equal_and_types_as_different() -> None:
    assert behaviour.same(torch.tensor([float("nan"), 1.0]), torch.tensor([float("nan"), 1.0]))
    assert not behaviour.same(torch.tensor([1, 2]), torch.tensor([1.0, 2.0]))
    assert not behaviour.same([1], (1,)) and behaviour.same({"a": [1.0]}, {"a": [1.0]})


# ------------------------------------------------------------------------------ judging

NAMES = ("x", "y")
CLEAN = {"changed": [], "moved": [], "grad_left": [], "requires_grad_set": [], "alias": [], "type": "Tensor"}
CLEAN |= {"devices": ["cpu"], "autograd": "none", "grad_fn": "", "repeat": ""}


DEFAULT = Contract()


def broken(contract: Contract = DEFAULT, expected: dict[str, Any] = CLEAN, **actual: Any) -> str | None:
    return judge(contract, expected, {**CLEAN, **actual}, NAMES, 2)


def test_a_clean_record_keeps_the_default_contract() -> None:
    assert broken() is None


@pytest.mark.parametrize(
    ("actual", "words"),
    [
        ({"changed": [1]}, "changed its argument `y`"),
        ({"grad_left": [0]}, "left a `.grad` on its argument `x`"),
        ({"requires_grad_set": [0]}, "changed `requires_grad` on its argument `x`"),
        ({"alias": [0]}, "shares memory with the argument `x`"),
        ({"autograd": "grad_fn", "grad_fn": "SubBackward0"}, "grad_fn=SubBackward0"),
        ({"autograd": "leaf"}, "still requires grad"),
        ({"devices": ["cuda"]}, "should be on cpu, but it is on cuda"),
        ({"repeat": "differs"}, "two different answers"),
        ({"repeat": "raised KeyError"}, "raised KeyError"),
    ],
)
def test_it_names_each_broken_promise(actual: dict[str, Any], words: str) -> None:
    message = broken(**actual)
    assert message is not None and words in message


def test_it_points_at_the_line_the_runner_located() -> None:
    where = {"arg": 0, "what": "changed", "op": "copy_", "line": 3, "code": "x.copy_(x.flip(0))"}
    assert "(line 3: `x.copy_(x.flip(0))`)" in (broken(changed=[0], where=where) or "")
    # the located change comes first even when another kind was found too
    located = {"arg": 1, "what": "requires_grad", "line": 2, "code": "y.requires_grad_()"}
    assert "`requires_grad` on its argument `y` (line 2" in (
        broken(changed=[0], requires_grad_set=[1], where=located) or ""
    )


def test_in_place_arguments_must_change_and_keep_their_memory() -> None:
    contract = Contract(in_place=("x",))
    assert broken(contract, changed=[0]) is None
    assert "should be updated in place" in (broken(contract) or "")
    assert "was given new memory" in (broken(contract, changed=[0], moved=[0]) or "")
    assert "changed its argument `y`" in (broken(contract, changed=[0, 1]) or "")


def test_what_the_reference_does_itself_is_allowed() -> None:
    assert broken(expected={**CLEAN, "alias": [0]}, alias=[0]) is None
    assert broken(Contract(result="may_view"), alias=[0]) is None
    assert broken(Contract(result_grad="graph"), autograd="grad_fn") is None
    assert "carries no autograd graph" in (broken(Contract(result_grad="graph")) or "")
    assert broken(Contract(repeatable=False), repeat="differs") is None


def advised(contract: Contract, expected: dict[str, Any], **actual: Any) -> str | None:
    return budget_advice(contract, expected, {**CLEAN, **actual})


def test_a_graph_budget_is_relative_to_the_reference_and_only_advises() -> None:
    contract = Contract(graph_budget=3.0)
    reference = {**CLEAN, "graph_nodes": 5}
    assert advised(contract, reference, graph_nodes=15) is None
    assert "kept the autograd graphs of earlier steps alive" in (advised(contract, reference, graph_nodes=16) or "")
    assert broken(contract, reference, graph_nodes=10**6) is None  # the runner's word: never a rejection
    kept = advised(contract, {**reference, "graph_kept": 0}, graph_nodes=5, graph_kept=4) or ""
    assert "left 4 autograd operations alive after it returned" in kept and "`loss.item()`" in kept
    assert advised(contract, {**reference, "graph_kept": 0}, graph_nodes=5, graph_kept=0) is None
    assert advised(contract, reference, graph_nodes=5, graph_kept=4) is None  # no reference count, nothing said
    assert broken(contract, {**reference, "graph_kept": 0}, graph_kept=10**6) is None


def test_a_memory_budget_is_relative_to_the_reference_with_a_floor_and_only_advises() -> None:
    contract = Contract(memory_budget=3.0)
    reference = {**CLEAN, "peak_bytes": 100_000}
    assert advised(contract, reference, peak_bytes=300_000) is None
    message = advised(contract, reference, peak_bytes=1_200_000) or ""
    assert "kept too much alive at once: its tensors peaked at 1.1 MB, where the reference needs 97.7 KB" in message
    assert "`torch.no_grad()`" in message
    assert advised(contract, {**CLEAN, "peak_bytes": 0}, peak_bytes=3072) is None  # a few bytes are never too many
    assert advised(Contract(), reference, peak_bytes=10**9) is None  # no budget, no check
    assert broken(contract, reference, peak_bytes=10**12) is None  # the runner's word: never a rejection
    assert budget_advice(contract, None, {"peak_bytes": 10**12}) is None  # no reference record, nothing to say


def test_a_time_budget_is_relative_to_the_reference_with_a_floor() -> None:
    contract = Contract(time_budget=20.0)
    assert broken(contract, {**CLEAN, "cpu_us": 10_000}, cpu_us=200_000) is None
    message = broken(contract, {**CLEAN, "cpu_us": 10_000}, cpu_us=200_001) or ""
    assert "took 200 ms of CPU time, where the reference takes 10.0 ms" in message and "Python loop" in message
    assert broken(contract, {**CLEAN, "cpu_us": 5}, cpu_us=TIME_FLOOR_US) is None  # a tiny reference: the floor
    assert broken(contract, {**CLEAN, "cpu_us": 5}, cpu_us=TIME_FLOOR_US + 1) is not None
    assert broken(Contract(), {**CLEAN, "cpu_us": 5}, cpu_us=10**9) is None


def test_a_forged_record_cannot_pass_the_time_budget_measured_outside_the_runner() -> None:
    contract = Contract(time_budget=20.0)
    references = [{**CLEAN, "cpu_us": 300}, {**CLEAN, "cpu_us": 20}, None]  # a hidden case's record may be missing
    forged = {**CLEAN, "cpu_us": 0}  # what a runner that owns its process says of a 40,000-step loop
    assert all(judge(contract, reference, forged, NAMES, 2) is None for reference in references)
    allowed_ms = (RUN_OVERHEAD_US + TIME_FLOOR_US) / 1000  # 20 x 3 calls x 320 us is under the floor
    assert judge_run_time(contract, references, allowed_ms) is None
    message = judge_run_time(contract, references, allowed_ms + 1) or ""
    assert "took 101 ms of CPU time over all the tests, where the reference's calls take 0.3 ms" in message
    assert "Python loop" in message
    heavy = [{**CLEAN, "cpu_us": 10_000}] * 2  # a heavier reference: each of its calls gets the budget, 3 times
    assert judge_run_time(contract, heavy, RUN_OVERHEAD_US / 1000 + 20 * 3 * 20) is None
    assert judge_run_time(contract, heavy, RUN_OVERHEAD_US / 1000 + 20 * 3 * 20 + 1) is not None
    for unmeasured in (None, float("nan"), -1.0, float("inf")):  # no warden report is never a cheap run
        assert "could not measure" in (judge_run_time(contract, references, unmeasured) or "")
    assert judge_run_time(Contract(), references, None) is None  # no budget, no check


@pytest.mark.parametrize(
    "garbage",
    [None, [], {"changed": "all"}, {"changed": [True, -1, 99, "0"]}, {"where": {"arg": "x", "line": "1"}}, {"type": 5}],
)
def test_it_reads_a_forged_or_broken_record_without_failing(garbage: Any) -> None:
    message = judge(Contract(), CLEAN, garbage, NAMES, 2)
    assert message is None or isinstance(message, str)
    assert judge(Contract(), CLEAN, None, NAMES, 2) == (
        "the grader could not observe what your function did (no behaviour record came back)"
    )


@pytest.mark.parametrize(
    ("expected", "actual", "hint"),
    [
        ("Tensor", "numpy.ndarray", "torch.from_numpy"),
        ("float", "numpy.float64", "float(...)"),
        ("int", "Tensor", ".item()"),
    ],
)
def test_it_names_a_type_the_wire_would_have_hidden(expected: str, actual: str, hint: str) -> None:
    message = judge_type({"type": expected}, {"type": actual})
    assert message is not None and actual in message and hint in message
    assert judge_type({"type": "list[Tensor x3]"}, {"type": "list[Tensor x2]"}) is None  # lengths: the comparison's


def test_it_says_the_contract_in_one_sentence_per_language() -> None:
    default = describe(Contract(), ("x",))
    assert "leaves every argument untouched" in default["en"] and "no autograd graph" in default["en"]
    assert "不改动任何参数" in default["zh"]
    in_place = describe(Contract(in_place=("w",), result_grad="graph", graph_budget=2.0), ("w", "x"))
    assert "updates `w` in place and leaves `x` untouched" in in_place["en"]
    assert "keeps the autograd graph" in in_place["en"] and "no step's graph is kept alive" in in_place["en"]
    budgets = describe(Contract(memory_budget=3.0, time_budget=20.0, repeatable=False), ("x",))
    assert budgets["en"] == (
        "The function leaves every argument untouched (no in-place change, no `.grad`, `requires_grad` as it was), "
        "returns a new result that shares no memory with the arguments, the result carries no autograd graph, "
        "no batch's tensors are kept alive after that batch (advised, not judged), it works on whole tensors "
        "instead of looping over their elements in Python."
    )
    assert budgets["zh"].count("，") == 4 and "Python 循环" in budgets["zh"]


@pytest.mark.parametrize(
    ("table", "field"),
    [
        ('in_place = ["z"]', "contract.in_place[0]"),
        ('result = "copy"', "contract.result"),
        ('result_grad = "maybe"', "contract.result_grad"),
        ("graph_budget = 0.5", "contract.graph_budget"),
        ("memory_budget = -1.0", "contract.memory_budget"),
        ("time_budget = 0.9", "contract.time_budget"),
        ("strict = true", "contract.strict"),
    ],
)
def test_it_names_the_field_of_a_broken_contract(table: str, field: str) -> None:
    text = Path(DRILLS["reverse-1d"].path).read_text(encoding="utf-8")
    text = text.replace("[source]", f"[contract]\n{table}\n\n[source]", 1)
    with pytest.raises(DrillError, match=re.escape(f"field '{field}'")):
        parse_drill(text, "reverse-1d.toml")


def test_every_bundled_view_contract_is_one_the_reference_keeps() -> None:
    """``result = "may_view"`` only where a view is a natural answer; every drill's arguments are named."""
    views = {slug for slug, drill in DRILLS.items() if drill.contract.result == "may_view"}
    assert views == {"narrow-slice", "squeeze-dim", "permute-nhwc", "tf-diag-part", "numpy-repeat"}
    assert all(drill.arg_names for drill in DRILLS.values())


# ------------------------------------------------------------------------------ constraints and advice


@pytest.mark.parametrize(
    "code",
    [
        "import torch\ndef solution(x, f=torch.flip):\n    return f(x, [0])\n",
        "import torch\ndef solution(x, *, f=torch.flip):\n    return f(x, [0])\n",
        "import torch\nsolution = lambda x, f=torch.flip: f(x, [0])\n",
    ],
)
def test_constraints_see_through_a_parameter_default(code: str) -> None:
    allow = DRILLS["puzzle-flip"].constraints
    assert any("f (its default is torch.flip)" in v.message for v in check_constraints(code, allow))
    forbid = DRILLS["weighted-nll-loss"].constraints
    nll = code.replace("torch.flip", "torch.nn.functional.nll_loss")
    assert any("forbids F.nll_loss" in v.message for v in check_constraints(nll, forbid))


def test_a_default_that_is_an_allowed_call_stays_allowed() -> None:
    code = "import torch\ndef solution(x, w=torch.where):\n    return w(x > 0, x, 0)\n"
    assert not [v for v in check_constraints(code, DRILLS["puzzle-flip"].constraints) if "its default" in v.message]


TENSORS = frozenset({"x"})


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        (
            "def solution(x):\n    out = []\n    for i in range(len(x)):\n        out.append(x[i])\n    return out\n",
            "element-loop",
        ),
        ("def solution(x):\n    return [v * 2 for v in x]\n", None),
        ("def solution(x):\n    for v in x:\n        pass\n    return x\n", "element-loop"),
        ("def solution(x, n):\n    for i in range(n):\n        x = x + 1\n    return x\n", None),
        (
            "def solution(x):\n    t = 0.0\n    for i in range(3):\n        t += x.sum().item()\n    return t\n",
            "item-in-loop",
        ),
        ("import torch\ndef solution(x):\n    return torch.tensor(x) + 1\n", "tensor-of-tensor"),
        ("import torch\ndef solution(values):\n    return torch.tensor(values)\n", None),
    ],
)
def test_it_advises_on_torch_habits(code: str, rule: str | None) -> None:
    assert [a.rule for a in advise(code, "solution", TENSORS)] == ([rule] if rule else [])


def test_it_never_advises_against_what_the_reference_does() -> None:
    drill = DRILLS["accumulate-loss-item"]
    code = drill.reference.replace("total_loss += loss.item()", "total_loss += float(loss.item())")
    assert advice_for(code, "solution", drill.reference, frozenset({"w0", "x", "y"})) == []
    assert advice_for(code, "solution", "def solution(w0, x, y, lr, batch_size):\n    return 0.0\n", frozenset({"x"}))


# ------------------------------------------------------------------------------ pages


@pytest.mark.django_db
def test_the_verdict_page_shows_time_memory_and_advice(client_for: Client, learner: User, drill: Drill) -> None:
    code = "def solution(x):\n    out = x.clone()\n    for i in range(len(x)):\n        out[i] += 1\n    return out\n"
    sub = graded(learner, drill, code)
    page = page_of(client_for, sub)
    assert sub.verdict["status"] == "accepted" and "data-run-facts" in page and " ms · wall " in page
    assert "data-advice" in page and "a Python loop over the elements of <code>x</code>" in page
    assert "`" not in page.split("data-advice", 1)[1].split("</div>", 1)[0]  # no raw Markdown backticks


@pytest.mark.django_db
def test_the_verdict_page_names_a_changed_argument(client_for: Client, learner: User, drill: Drill) -> None:
    sub = graded(learner, drill, "def solution(x):\n    x += 1\n    return x\n")
    assert sub.verdict["status"] == "wrong_answer"
    page = page_of(client_for, sub)  # the core's backticked names shown as code (issue 38), escaped once
    assert "your function changed its argument <code>x</code> (line 2: <code>x += 1</code>)" in page


@pytest.mark.django_db
def test_the_drill_page_states_the_contract(client_for: Client, drill: Drill) -> None:
    page = client_for.get(reverse("graders:drill", args=[drill.slug])).content.decode()
    assert page.count("data-contract") == 2 and "leaves every argument untouched" in page


def test_a_result_with_a_graph_is_told_about_an_update_only_where_the_drill_updates_in_place() -> None:
    record = {"autograd": "grad_fn", "grad_fn": "AddBackward0"}
    in_place = judge(Contract(in_place=("w",)), {}, {**record, "changed": [0]}, ("w", "lr"), 2) or ""
    sgd = judge(Contract(), {}, record, ("x",), 1, updates=True) or ""  # an SGD step on copies: no in_place args
    for plain in (
        judge(Contract(), {}, record, ("x",), 1) or "",
        judge(Contract(), {}, record, ("x",), 1, updates=False) or "",
    ):
        assert "update" not in plain and "compute it under `torch.no_grad()`" in plain, plain
    for update in (in_place, sgd):
        assert "do the update inside `torch.no_grad()`" in update, update


def test_it_knows_a_drill_with_an_update_from_its_reference() -> None:
    from graders.drills.grading import updates_in_place

    assert updates_in_place("import torch\ndef f(w, g):\n    with torch.no_grad():\n        w -= 0.1 * w.grad\n")
    assert updates_in_place("import torch\ndef f(w, v):\n    with torch.no_grad():\n        w.copy_(v)\n")
    assert not updates_in_place("import torch\ndef f(m, x):\n    with torch.no_grad():\n        total += m(x).item()\n")
    assert not updates_in_place("import torch\ndef f(w):\n    w.sub_(1)\n    return w\n")  # not under no_grad


def test_a_drill_that_refuses_clone_is_never_told_to_clone() -> None:
    for record in ({"alias": [0]}, {"changed": [0]}):
        told = judge(Contract(), {}, record, ("x",), 1) or ""
        refused = judge(Contract(), {}, record, ("x",), 1, may_clone=False) or ""
        assert "(`.clone()`)" in told, told
        assert "(`.clone()`)" not in refused and "this drill does not allow `.clone()`" in refused, refused
