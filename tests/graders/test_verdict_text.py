"""A verdict reads in the learner's language (graders.web.verdict_text, docs/i18n.md).

The grading core writes English; these tests take the messages the core itself writes (its constraint
checks, its contract judge, its comparison, its advice, its verdict lines) and run them through the
display-time translation: in Chinese each must come out translated, with no English sentence left
outside its code; in English each must come out exactly as written. A message whose shape changes in the
core without its entry in ``SHAPES`` fails here.
"""

from __future__ import annotations

import re

import pytest
import torch
from django.utils import translation

from graders.drills.advice import advise
from graders.drills.compare import compare
from graders.drills.constraints import check_constraints
from graders.drills.contract import budget_advice, judge, judge_run_time, judge_type
from graders.drills.grading import HIDDEN_FAILED, SAME_AS_EXAMPLES, STALE
from graders.drills.schema import CompareRule, Constraints, Contract
from graders.drills.teacher import HINTS, LEAF_CHANGED, NONFINITE, UNDERFLOW
from graders.web.verdict_text import CATALOGUE, SHAPES, mismatch_title, translate

CJK = re.compile(r"[\u4e00-\u9fff]")
CODE = re.compile(r"`[^`]*`")
ENGLISH_RUN = re.compile(r"\b[a-z]{2,}(?:[ ,'-]+[a-z]{2,}){2,}\b", re.IGNORECASE)


def constraint_messages() -> list[str]:
    loops = Constraints(no_loops=True)
    forbidden = Constraints(forbid=("torch.nn.functional.softmax", ".sum"))
    allowed = Constraints(allow=("torch.where",))
    single = Constraints(single_expression=True)
    cases = [
        ("def f(x):\n    for i in x:\n        pass\n    return [v for v in x]\n", loops),
        ("def f(x):\n    while x:\n        pass\n", loops),
        ("import torch.nn.functional as F\ndef f(x):\n    return F.softmax(x, 0).sum()\n", forbidden),
        ("import torch\n@staticmethod\ndef f(x):\n    return torch.exp(x)\n", allowed),
        ("y = 1\ndef f(x):\n    z = x\n    return z\n", single),
        ("def f(x):\n    return (x\n", loops),
        ("x" * 30, Constraints(max_source_bytes=10)),
    ]
    return [v.message for code, rule in cases for v in check_constraints(code, rule)]


def contract_messages() -> list[str]:
    names = ("w", "lr")
    plain, in_place = Contract(), Contract(in_place=("w",))
    where = {"arg": 0, "what": "changed", "line": 3, "code": "w.add_(1)"}
    loop = {"steps": 80_003}
    judged = [
        judge(in_place, {}, {"changed": []}, names, 2),
        judge(in_place, {}, {"changed": [0], "moved": [0]}, names, 2),
        judge(plain, {}, {"changed": [0], "where": where}, names, 2),
        judge(plain, {}, {"changed": [0, 1]}, names, 2),
        judge(plain, {}, {"grad_left": [1]}, names, 2),
        judge(plain, {}, {"requires_grad_set": [0]}, names, 2),
        judge(plain, {}, {"alias": [0, 1]}, names, 2),
        judge(plain, {}, {"alias": [2]}, names, 3),
        judge(Contract(result_grad="graph"), {}, {"autograd": "none"}, names, 2),
        judge(plain, {}, {"autograd": "grad_fn", "grad_fn": "AddBackward0"}, names, 2),
        judge(plain, {}, {"autograd": "leaf"}, names, 2),
        judge(plain, {"devices": ["cuda"]}, {"devices": ["cpu"]}, names, 2),
        budget_advice(Contract(graph_budget=2), {"graph_nodes": 3}, {"graph_nodes": 300}),
        budget_advice(Contract(graph_budget=2), {"graph_kept": 0}, {"graph_kept": 30}),
        judge(Contract(time_budget=2), {"steps": 3}, {**loop, "busiest": [3, 40_001, "for i in x:"]}, names, 2),
        judge(Contract(time_budget=2), {"steps": 3}, {**loop, "busiest": [3, 40_001]}, names, 2),
        judge(Contract(time_budget=2), {"steps": 3}, loop, names, 2),
        budget_advice(Contract(memory_budget=2), {"peak_bytes": 4096}, {"peak_bytes": 50_000_000}),
        judge_run_time(Contract(time_budget=2), [{"cpu_us": 1000}], 900.0),
        judge_run_time(Contract(time_budget=2), [{"cpu_us": 1000}], None),
        judge(Contract(time_budget=2), {"cpu_us": 1000}, {"cpu_us": 900_000}, names, 2),
        judge(plain, {}, {"repeat": "raised RuntimeError"}, names, 2),
        judge(plain, {}, {"repeat": "differs"}, names, 2),
        judge(plain, {}, None, names, 2),
        judge_type({"type": "Tensor[float32]"}, {"type": "numpy.ndarray[float32]"}),
        judge_type({"type": "float"}, {"type": "numpy.float64"}),
        judge_type({"type": "int"}, {"type": "Tensor[int64]"}),
        judge_type({"type": "Tensor[float32]"}, {"type": "float"}),
        judge_type({"type": "int"}, {"type": "str"}),
    ]
    assert all(judged), "each record above breaks the contract"
    return [message for message in judged if message]


def compare_messages() -> list[str]:
    rule, exact = CompareRule(), CompareRule(mode="exact")
    pairs = [
        (torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.5, 3.0]), rule),
        (torch.tensor([1, 2, 3]), torch.tensor([1, 5, 3]), exact),
        (torch.zeros(2, 3), torch.zeros(3, 2), rule),
        (torch.zeros(2), torch.zeros(2, dtype=torch.float64), rule),
        (1.5, 2.5, rule),
        (3, "3", rule),
        ([torch.zeros(1), torch.zeros(1)], [torch.zeros(1)], rule),
        ({"a": torch.zeros(1)}, {"b": torch.zeros(1)}, rule),
        ((torch.zeros(2),), (torch.zeros(3),), rule),
        (torch.zeros(2), [0.0, 0.0], rule),
    ]
    found = [compare(want, got, r) for want, got, r in pairs]
    assert all(found), "each pair above differs"
    return [m["message"] for m in found if m]


def advice_messages() -> list[str]:
    code = (
        "import torch\n"
        "def f(x):\n"
        "    total = 0\n"
        "    for i in range(len(x)):\n"
        "        total += x[i].item()\n"
        "    y = torch.tensor(x)\n"
        "    return y\n"
    )
    return [a.message for a in advise(code, "f", frozenset({"x"}))]


def grading_lines() -> list[str]:
    """Lines the grading core builds around the others (verdict messages and a failing test's line)."""
    return [
        "all 12 tests passed",
        "the hidden tests ended in time limit",
        f"random-3: {HIDDEN_FAILED}",
        "small: wrong value at [0]: expected 1.0, got 2.0",
        "time limit: over 10 s of wall time",
        "time limit: over 2 s of CPU",
        "output limit: more than 65536 bytes printed",
        "the process died (SIGKILL) before returning",
        "raised an error",
    ]


def messages_that_fit_the_drill() -> list[str]:
    """Issue 36 item 6: a fix the drill allows, and state kept per shape named on a twin case."""
    plain, names = Contract(), ("w", "lr")
    judged = [
        judge(plain, {}, {"alias": [0]}, names, 2, may_clone=False),
        judge(plain, {}, {"changed": [0]}, names, 2, may_clone=False),
    ]
    stale = f"random-twin-b: {STALE % {'test': 'random-twin-a'}}"
    return [message for message in judged if message] + [stale, f"random-twin-a: {SAME_AS_EXAMPLES}"]


MESSAGES = (
    constraint_messages()
    + contract_messages()
    + compare_messages()
    + advice_messages()
    + grading_lines()
    + list(HINTS)
    + messages_that_fit_the_drill()
)
# The messages that fit the drill (issue 36 item 6) and the nan/inf hints: each must match one listed shape whole.
FITTED_MESSAGES = {
    "the result still carries an autograd graph (grad_fn=AddBackward0): compute it under `torch.no_grad()`, or "
    "return `.detach()`ed tensors",
    LEAF_CHANGED,
    UNDERFLOW,
    NONFINITE,
    *messages_that_fit_the_drill(),
}


@pytest.mark.parametrize("message", MESSAGES)
def test_it_translates_each_message_the_grading_core_writes(message: str) -> None:
    with translation.override("zh-hans"):
        shown = translate(message)
    assert CJK.search(shown), f"not translated: {message!r}"
    ours = shown.split("语法错误：")[0]  # Python's own words for a syntax error stay as Python says them
    left = ENGLISH_RUN.findall(CODE.sub("", ours))
    assert not left, f"English left in {shown!r}: {left}"


@pytest.mark.parametrize("message", MESSAGES)
def test_it_leaves_each_message_as_written_in_english(message: str) -> None:
    with translation.override("en"):
        assert translate(message) == message


def test_it_translates_a_traceback_line_by_line_and_keeps_the_error_itself() -> None:
    text = (
        "RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.\n"
        "Traceback (your code, most recent call last):\n"
        "  line 3, in step: w -= lr * w.grad"
    )
    with translation.override("zh-hans"):
        shown = translate(text).split("\n")
    assert shown[0] == "RuntimeError: a leaf Variable that requires grad is being used in an in-place operation."
    assert shown[1] == "Traceback（你的代码，最近一次调用在最后）："
    assert shown[2] == "  第 3 行，在 step 中：w -= lr * w.grad"


def test_it_drops_the_english_article_of_a_type_and_names_arguments_in_chinese() -> None:
    with translation.override("zh-hans"):
        assert translate("the result should be an int, but your function returned a float") == (
            "结果应当是 int，但你的函数返回了 float"
        )
        changed = translate(
            "your function changed its argument `w` and argument 3 (line 4: `w.add_(1)`); the caller's value must "
            "stay as it was: work on a copy (`.clone()`) or use an out-of-place operation"
        )
    assert changed.startswith("你的函数修改了参数 `w` 和 第 3 个参数（第 4 行：`w.add_(1)`）；")


def test_it_names_the_mismatch_kind_in_the_heading() -> None:
    with translation.override("zh-hans"):
        assert [mismatch_title(k) for k in ("value", "shape", "dtype")] == ["值错误", "形状错误", "dtype 错误"]
    with translation.override("en"):
        assert mismatch_title("shape") == "Wrong shape"


def test_it_keeps_every_shape_distinct() -> None:
    sources = [shape.source for shape in SHAPES]
    assert len(sources) == len(set(sources))


@pytest.mark.parametrize("message", sorted(FITTED_MESSAGES))
def test_each_message_that_fits_the_drill_has_its_shape(message: str) -> None:
    """Each line matches a listed shape whole, so it is translated as one sentence, never piecemeal."""
    patterns = [pattern for _, pattern in CATALOGUE._patterns]
    for line in message.split("\n"):
        assert any(pattern.match(line) for pattern in patterns), line
