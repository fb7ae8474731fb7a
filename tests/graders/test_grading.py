"""``grade``: constraints, verdict statuses, hidden-case privacy, counts, the reference cache, devices."""

from __future__ import annotations

import dataclasses
import json
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import torch

from graders.drills import DRILLS_DIR, Constraints, check_constraints, load_drills
from graders.drills.grading import HIDDEN_FAILED, NOT_RUN, SAME_AS_EXAMPLES, ReferenceCache, SeedReservoir, grade
from graders.drills.local import LocalRunner
from graders.drills.schema import parse_drill
from graders.sandbox.results import CaseResult
from graders.sandbox.results import RunResult as RealRunResult

DRILLS = load_drills(DRILLS_DIR)
NLL = DRILLS["weighted-nll-loss"]
REVERSE = DRILLS["reverse-1d"]
NLL_FORBID = Constraints(forbid=("F.nll_loss", "F.cross_entropy", "nn.NLLLoss", "nn.CrossEntropyLoss", ".flip"))


def violations(code: str, constraints: Constraints = NLL_FORBID) -> list[str]:
    return [v.message for v in check_constraints(code, constraints)]


# ------------------------------------------------------------------------------------ constraints


@pytest.mark.parametrize(
    "code",
    [
        "import torch.nn.functional as F\nF.nll_loss(a, b)",
        "import torch\ntorch.nn.functional.nll_loss(a, b)",
        "from torch.nn import functional as G\nG.nll_loss(a, b)",
        "import torch.nn.functional as G\nG.cross_entropy(a, b)",
        "from torch.nn.functional import nll_loss as f\nf(a, b)",
        "from torch.nn.functional import *\nnll_loss(a, b)",
        "import torch.nn as nn\nloss = nn.NLLLoss()",
        "from torch import nn as N\nN.CrossEntropyLoss()(a, b)",
        "import torch.nn.functional as F\nloss = F.nll_loss\nloss(a, b)",
        "import torch.nn.functional as F\nH = F\nH.nll_loss(a, b)",
        "import torch.nn.functional as F\ngetattr(F, 'nll_loss')(a, b)",
        "import torch as T\nT.nn.functional.nll_loss(a, b)",
        "def f(x):\n    return x.flip(0)",
    ],
)
def test_it_finds_forbidden_calls_however_aliased(code: str) -> None:
    assert violations(code), code


def test_it_names_the_forbidden_construct_and_its_line() -> None:
    found = violations("import torch\nfrom torch.nn import functional as G\n\ny = G.nll_loss(a, b)\n")
    assert found == ["line 4: the drill forbids F.nll_loss (found torch.nn.functional.nll_loss)"]


@pytest.mark.parametrize(
    "code",
    [
        "import torch.nn.functional as F\nF.log_softmax(a, 1)",
        "nll_loss = 3\nnll_loss + 1",
        "x = torch.flipud",
        "import torch\ntorch.nn.functional.nll_losses(a)",
    ],
)
def test_it_leaves_allowed_code_alone(code: str) -> None:
    assert violations(code) == []


@pytest.mark.parametrize(
    ("code", "what"),
    [
        ("for i in range(3):\n    pass", "a for loop"),
        ("while True:\n    break", "a while loop"),
        ("y = [i for i in x]", "a list comprehension"),
        ("y = {i: i for i in x}", "a dict comprehension"),
        ("y = sum(i for i in x)", "a generator expression"),
    ],
)
def test_it_finds_loops_when_the_drill_forbids_them(code: str, what: str) -> None:
    assert violations(code, Constraints(no_loops=True)) == [f"line 1: {what}; this drill forbids loops"]
    assert violations(code, Constraints()) == []


def test_it_rejects_oversized_and_unparsable_code() -> None:
    assert violations("x = 1\n" * 10, Constraints(max_source_bytes=20)) == ["the code is 60 bytes; the limit is 20"]
    assert violations("def f(:\n") == ["line 1: syntax error: invalid syntax"]


@pytest.fixture(scope="module")
def runner() -> LocalRunner:
    return LocalRunner()


PUZZLE_RULES = Constraints(no_loops=True, allow=("torch.arange", "torch.where"), single_expression=True)


@pytest.mark.parametrize(
    "code",
    [
        "import torch\ndef f(n):\n    return torch.arange(n) * 0 + 1\n",
        "from torch import arange as a, where as w\ndef f(n):\n    'Ones.'\n    return w(a(n) >= 0, 1, 0)\n",
        "import torch as t\ndef f(n):\n    return t.arange(n)[:, None] == t.arange(n)\n",
        "import torch\ndef eye(n):\n    return torch.where(torch.arange(n)[:, None] == torch.arange(n), 1, 0)\n"
        "def f(n):\n    return eye(n) @ eye(n)\n",
        "import torch\ndef f(a):\n    return a[a.shape[0] - 1 - torch.arange(a.shape[0])] if a.shape[0] else a\n",
        # a module-level lambda helper, and a script's own test run (never run when graded, never judged)
        "import torch\nones = lambda n: torch.arange(n) * 0 + 1\ndef f(n):\n    return ones(n)\n",
        "import torch\ndef f(n):\n    return torch.arange(n)\n\nif __name__ == '__main__':\n"
        "    for n in range(3):\n        print(f(n).sum())\n",
    ],
)
def test_an_allow_list_lets_through_its_calls_operators_indexing_and_own_helpers(code: str) -> None:
    assert violations(code, PUZZLE_RULES) == []


@pytest.mark.parametrize(
    ("code", "found"),
    [
        ("import torch\ndef f(a):\n    return torch.cumsum(a, 0)\n", "line 3: calls torch.cumsum"),
        ("import torch as t\ndef f(a):\n    return t.sum(a)\n", "line 3: calls torch.sum"),
        ("from torch import cumsum as c\ndef f(a):\n    return c(a, 0)\n", "line 3: calls torch.cumsum"),
        (
            "import torch.nn.functional as G\ndef f(a, k):\n    return G.one_hot(a, k)\n",
            "line 3: calls torch.nn.functional.one_hot",
        ),
        ("def f(a):\n    return a.sum()\n", "line 2: calls .sum"),
        ("def f(a):\n    return (a + 1).cumsum(0)\n", "line 2: calls .cumsum"),
        ("import torch\ndef f(a, c=torch.cumsum):\n    return c(a, 0)\n", "line 3: calls c"),
        ("import torch\ndef f(a):\n    return getattr(torch, 'cumsum')(a, 0)\n", "line 3: calls getattr"),
        (
            "import torch\ndef f(a):\n    return (lambda: torch.cumsum)()(a, 0)\n",
            "line 3: calls (lambda: torch.cumsum)()",
        ),
        ("import torch\ndef f(a):\n    return [torch.cumsum][0](a, 0)\n", "line 3: calls [torch.cumsum][0]"),
        ("def f(a):\n    return len(a)\n", "line 2: calls len"),
        ("import torch\n@torch.no_grad()\ndef f(a):\n    return a\n", "line 2: a decorator"),
    ],
)
def test_an_allow_list_refuses_every_other_call_however_aliased(code: str, found: str) -> None:
    messages = violations(code, PUZZLE_RULES)
    assert any(m.startswith(found) for m in messages), messages
    assert all(v.rule == "allow" for v in check_constraints(code, PUZZLE_RULES))


@pytest.mark.parametrize(
    ("code", "found"),
    [
        ("import torch\ndef f(a):\n    b = a + 1\n    return b\n", "line 3: f() has 2 statements, not a single return"),
        ("def f(a):\n    pass\n", "line 2: f() has 1 statements, not a single return"),
        ("def f(a):\n    return\n", "line 2: f() has 1 statements, not a single return"),
        ("import torch\nONE = 1\ndef f(a):\n    return a\n", "line 2: an assignment outside a function"),
        ("import torch\nclass A:\n    pass\n", "line 2: a class outside a function"),
        ("if __name__ == '__main__':\n    pass\nelse:\n    B = 2\n", "line 4: an assignment outside a function"),
        ("f = g = lambda a: a\nh = (lambda a: a)(1)\n", "line 2: an assignment outside a function"),
    ],
)
def test_single_expression_asks_for_one_return_per_function(code: str, found: str) -> None:
    messages = violations(code, Constraints(single_expression=True))
    assert [m.split(";")[0] for m in messages] == [found], messages


def test_a_broken_puzzle_rule_is_a_rejected_verdict_naming_the_rule_and_line(runner: LocalRunner) -> None:
    drill = DRILLS["puzzle-cumsum"]
    code = "import torch\n\ndef cumsum(a):\n    return a.cumsum(0)\n"
    verdict = grade(drill, code, seed=0, runner=runner, cache=ReferenceCache())
    assert verdict["status"] == "rejected"
    assert verdict["message"] == "line 4: calls .cumsum; this drill allows only torch.arange, torch.where"


# ------------------------------------------------------------------------------------ verdicts


def test_it_accepts_the_reference_with_full_counts(runner: LocalRunner) -> None:
    verdict = grade(REVERSE, REVERSE.reference, seed=1, runner=runner, cache=ReferenceCache())
    assert verdict["status"] == "accepted"
    assert (verdict["passed"], verdict["total"]) == (12, 12)  # two examples, a twin pair, eight hidden
    assert (verdict["hidden_passed"], verdict["hidden_total"]) == (8, 8)
    assert [t["name"] for t in verdict["tests"][:5]] == [
        "three-floats",
        "ints",
        "random-twin-a",
        "random-twin-b",
        "random-1",
    ]
    assert verdict["device"] == "cpu" and verdict["drill"] == "reverse-1d"
    json.dumps(verdict, allow_nan=False)


def test_a_twin_failing_beside_a_failing_example_says_only_that(runner: LocalRunner) -> None:
    """Each fact once: the example's row holds the mismatch; the twin pair adds no second and third table."""
    code = "import torch\ndef solution(x):\n    return x + 1\n"
    verdict = grade(REVERSE, code, seed=1, runner=runner, cache=ReferenceCache())
    twins = [t for t in verdict["tests"] if "-twin-" in t["name"]]
    assert len(twins) == 2 and not any(t["passed"] for t in twins)
    assert all(t["message"] == SAME_AS_EXAMPLES and "mismatch" not in t for t in twins)
    assert [t for t in verdict["tests"] if "mismatch" in t][0]["name"] == "three-floats"


def test_the_twin_pair_is_not_run_once_an_example_raised(runner: LocalRunner) -> None:
    """The example's error is the verdict: the pair, which could only fail beside it, costs no calls."""
    code = "import torch\ndef solution(x):\n    raise ValueError('not yet')\n"
    verdict = grade(REVERSE, code, seed=1, runner=runner, cache=ReferenceCache())
    twins = [t for t in verdict["tests"] if "-twin-" in t["name"]]
    assert verdict["status"] == "runtime_error" and "not yet" in verdict["message"]
    assert len(twins) == 2 and all(t["message"] == NOT_RUN and not t["passed"] for t in twins)


def test_it_explains_a_visible_wrong_answer(runner: LocalRunner) -> None:
    code = "import torch\ndef solution(x):\n    return torch.sort(x, descending=True).values\n"
    verdict = grade(REVERSE, code, seed=1, runner=runner, cache=ReferenceCache())
    assert verdict["status"] == "wrong_answer"
    assert verdict["message"].startswith("ints: wrong value at [0]: expected 0, got 7")
    assert verdict["mismatch"]["index"] == [0]
    assert verdict["passed"] < verdict["total"]
    json.dumps(verdict, allow_nan=False)


def test_it_hides_the_inputs_and_outputs_of_hidden_cases(runner: LocalRunner) -> None:
    code = "import torch\ndef solution(x):\n    return x.flip(0) if x.dtype != torch.int32 else x\n"  # one hidden case
    verdict = grade(REVERSE, code, seed=1, runner=runner, cache=ReferenceCache())
    assert verdict["status"] == "wrong_answer"
    assert "mismatch" not in verdict
    failed = [t for t in verdict["tests"] if not t["passed"]]
    assert failed and all(t["hidden"] for t in failed)
    assert all(t["message"] == "failed" for t in failed)  # one bit: not even the kind of mismatch
    assert verdict["message"] == f"int32: {HIDDEN_FAILED}"
    assert 0 < verdict["hidden_passed"] < verdict["hidden_total"]
    assert (verdict["passed"], verdict["total"]) == (verdict["hidden_passed"] + 4, 12)


def test_it_reports_a_runtime_error_with_the_learners_lines(runner: LocalRunner) -> None:
    code = "def solution(x):\n    y = x * 2\n    return y[::-1]\n"
    verdict = grade(REVERSE, code, seed=1, runner=runner, cache=ReferenceCache())
    assert verdict["status"] == "runtime_error"
    assert verdict["message"].startswith(
        "three-floats: line 3, in solution\nValueError: step must be greater than zero"
    )
    hidden = [t for t in verdict["tests"] if t["hidden"]]
    assert hidden and {t["message"] for t in hidden} == {"not run"}  # a judge stops at the failed example


@pytest.mark.parametrize(
    "error",
    [
        "RuntimeError: shape [3] is invalid for input of size 2\nTraceback (your code, most recent call last):\n"
        "  line 4, in solution: x.view(3)",
        "Error: [0.1, 0.2]\nValueError: second line that looks like an exception name",
    ],
)
def test_a_hidden_case_says_one_bit_whatever_its_error_says(error: str) -> None:
    """The round-3 leak: a message whose second line looks like an exception name was shown for hidden cases."""
    echo = EchoRunner("cpu")
    verdict = grade(REVERSE, REVERSE.reference, seed=0, runner=LocalRunner(), cache=(cache := ReferenceCache()))
    assert verdict["status"] == "accepted"
    passing = CaseResult(ok=True, value=None, error=None, behaviour={})
    failing = CaseResult(ok=False, value=None, error=error, behaviour={})
    echo.run = lambda *a, **k: RealRunResult(
        "ok", [passing] * 4, hidden=[failing] * 8, hidden_status="ok", stdout="visible only"
    )
    verdict = grade(REVERSE, "anything", seed=0, runner=echo, cache=cache)
    assert verdict["status"] == "wrong_answer" and error not in json.dumps(verdict)
    assert {t["message"] for t in verdict["tests"] if t["hidden"]} == {"failed"}


@pytest.mark.parametrize("status", ["time_limit", "memory_limit", "output_limit", "runtime_error", "forged"])
def test_a_hidden_phase_that_ends_early_is_one_status_word(status: str) -> None:
    echo = EchoRunner("cpu")
    cache = ReferenceCache()
    grade(REVERSE, REVERSE.reference, seed=0, runner=LocalRunner(), cache=cache)
    passing = CaseResult(ok=True, value=torch.tensor([3.0, 2.0, 1.0]), error=None, behaviour={})
    echo.run = lambda *a, **k: RealRunResult(
        "ok", [passing] * 4, hidden=[], hidden_status=status, message="the hidden input was [4, 5]"
    )
    verdict = grade(REVERSE, "anything", seed=0, runner=echo, cache=cache)
    word = status if status != "forged" else "runtime_error"
    assert verdict["status"] in (word, "wrong_answer") and "[4, 5]" not in json.dumps(verdict)
    assert verdict["hidden_passed"] == 0 and len([t for t in verdict["tests"] if t["hidden"]]) == 8


def test_it_reports_code_that_does_not_load(runner: LocalRunner) -> None:
    verdict = grade(REVERSE, "def other(x):\n    return x\n", seed=1, runner=runner, cache=ReferenceCache())
    assert verdict["status"] == "runtime_error"
    assert verdict["message"] == "the code does not define 'solution'"
    assert verdict["passed"] == 0 and verdict["total"] == 12


def test_it_rejects_a_forbidden_call_before_running_anything() -> None:
    code = "from torch.nn import functional as G\ndef solution(lp, t, w):\n    return G.nll_loss(lp, t, weight=w)\n"
    calls = CountingRunner()
    verdict = grade(NLL, code, seed=0, runner=calls, cache=ReferenceCache())
    assert verdict["status"] == "rejected"
    assert verdict["message"] == "line 3: the drill forbids F.nll_loss (found torch.nn.functional.nll_loss)"
    assert calls.calls == []


@dataclass
class RunResult:
    status: str
    cases: list[Any] = field(default_factory=list)
    message: str = ""
    stdout: str = ""
    cpu_ms: float = 1.0
    wall_ms: float = 2.0
    device: str = "cpu"
    memory_mb: float = 0.0
    hidden_status: str = ""


class CountingRunner(LocalRunner):
    """The local runner, recording each call and answering learner code with a canned status."""

    def __init__(self, device: str = "cpu", answer: str | None = None) -> None:
        super().__init__(device)
        self.calls: list[str] = []
        self.answer = answer

    def run(self, code: str, entry_point: str, cases: list[tuple[Any, ...]], **kwargs: Any) -> Any:
        self.calls.append(code)
        if self.answer and len(self.calls) > 1:
            return RunResult(self.answer, message=f"{self.answer}: stopped", device=self.device)
        return super().run(code, entry_point, cases, **kwargs)


@pytest.mark.parametrize("status", ["time_limit", "memory_limit", "output_limit", "rejected", "internal_error"])
def test_it_passes_on_the_sandbox_statuses(status: str) -> None:
    verdict = grade(
        REVERSE,
        "def solution(x):\n    return x\n",
        seed=0,
        runner=CountingRunner(answer=status),
        cache=ReferenceCache(),
    )
    assert verdict["status"] == status
    assert verdict["message"] == f"{status}: stopped"
    assert verdict["passed"] == 0 and all(not t["passed"] for t in verdict["tests"])
    # Rejected by the sandbox's compile, nothing ran: no test is listed as failed, the rule is said once.
    assert (verdict["tests"] == []) == (status == "rejected")


def test_it_calls_a_missing_result_an_internal_error() -> None:
    verdict = grade(
        REVERSE, "def solution(x):\n    return x\n", seed=0, runner=CountingRunner(answer="ok"), cache=ReferenceCache()
    )
    assert verdict["status"] == "internal_error"
    assert verdict["message"] == "the runner returned 0 results for 4 cases"


def test_it_blames_a_broken_reference_on_us() -> None:
    broken = replace(REVERSE, reference="def solution(x):\n    return 1 / 0\n")
    verdict = grade(broken, REVERSE.reference, seed=0, runner=LocalRunner(), cache=ReferenceCache())
    assert verdict["status"] == "internal_error"
    assert "the reference failed case three-floats: " in verdict["message"]
    assert "ZeroDivisionError" in verdict["message"]


def test_it_blames_a_case_that_cannot_be_generated_on_us() -> None:
    examples = (replace(REVERSE.examples[0], args=("torch.zeros(-1)",)),)
    drill = replace(REVERSE, examples=examples)
    verdict = grade(drill, REVERSE.reference, seed=0, runner=LocalRunner(), cache=ReferenceCache())
    assert verdict["status"] == "internal_error"
    assert "case 'three-floats': RuntimeError" in verdict["message"]


def test_it_runs_the_reference_once_per_drill_version_seed_and_visibility() -> None:
    runner, cache = CountingRunner(), ReferenceCache()
    for _ in range(3):
        assert grade(REVERSE, REVERSE.reference, seed=4, runner=runner, cache=cache)["status"] == "accepted"
    assert len(runner.calls) == 4 and len(cache) == 1
    grade(REVERSE, REVERSE.reference, seed=5, runner=runner, cache=cache)
    grade(REVERSE, REVERSE.reference, seed=5, runner=runner, cache=cache, visible_only=True)
    assert len(runner.calls) == 8 and len(cache) == 3


def test_it_forgets_the_least_recently_used_references() -> None:
    runner, cache = CountingRunner(), ReferenceCache(size=2)
    for seed in (1, 2, 1, 3, 1):
        grade(REVERSE, REVERSE.reference, seed=seed, runner=runner, cache=cache)
    assert len(cache) == 2
    assert len(runner.calls) == 5 + 3  # seeds 1, 2 and 3 each ran the reference once


def test_it_runs_only_the_examples_when_visible_only(runner: LocalRunner) -> None:
    verdict = grade(REVERSE, REVERSE.reference, seed=0, runner=runner, visible_only=True, cache=ReferenceCache())
    assert verdict["status"] == "accepted"
    assert (verdict["total"], verdict["hidden_total"]) == (2, 0)  # the examples alone: no twin pair


class EchoRunner(LocalRunner):
    """A stand-in GPU pool: every case "returns" its last argument; the cases it saw are kept."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.seen: list[tuple[Any, ...]] = []

    def run(self, code: str, entry_point: str, cases: list[tuple[Any, ...]], **kwargs: Any) -> RealRunResult:
        hidden = kwargs.get("hidden") or []
        self.seen += cases + hidden
        echoed = [CaseResult(ok=True, value=args[-1], error=None, behaviour={}) for args in cases + hidden]
        n = len(cases)
        status = "ok" if hidden else ""
        return RealRunResult("ok", echoed[:n], device=self.device, hidden=echoed[n:], hidden_status=status)


def test_it_grades_cuda_drills_on_the_gpu_only_when_the_runner_has_one() -> None:
    drill = DRILLS["to-device-and-back"]
    cpu = grade(drill, drill.reference, seed=0, runner=LocalRunner(), cache=ReferenceCache())
    assert cpu["status"] == "accepted" and cpu["device"] == "cpu"
    gpu = EchoRunner("cuda")
    verdict = grade(drill, "anything", seed=0, runner=gpu, cache=ReferenceCache())
    assert verdict["status"] == "accepted" and verdict["device"] == "cuda"
    assert {args[1] for args in gpu.seen} == {"cuda"}
    assert grade(DRILLS["squeeze-dim"], "anything", seed=0, runner=gpu, cache=ReferenceCache())["device"] == "cuda"


def test_every_submission_of_a_day_gets_the_same_cases_object(runner: LocalRunner) -> None:
    """The sandbox pool encodes a cases list once; that only helps if grading hands over the same list."""
    seen: list[object] = []

    class Recording:
        device = "cpu"

        def run(self, code: str, entry_point: str, cases: Any, **kwargs: Any) -> Any:
            seen.append(cases)
            return runner.run(code, entry_point, cases, **kwargs)

        def make_cases(self, specs: Any, **kwargs: Any) -> Any:
            return runner.make_cases(specs, **kwargs)

    cache = ReferenceCache()
    for seed in (1, 1, 2):
        grade(REVERSE, REVERSE.reference, seed=seed, runner=Recording(), cache=cache)
    reference_1, learner_1a, learner_1b, reference_2, learner_2 = seen
    assert learner_1a is learner_1b is reference_1
    assert learner_2 is reference_2 and learner_2 is not learner_1a
    fresh = SeedReservoir(batch=2, background=False)
    seen.clear()
    for _ in range(2):
        grade(REVERSE, REVERSE.reference, seed=None, runner=Recording(), cache=cache, reservoir=fresh)
    examples, _batch, first, second = seen  # the examples' reference, one batch of two seeds, two attempts
    assert first is second is examples  # fresh seeds too: the examples' list is one object (seed 0's)


def test_it_sends_the_hidden_cases_apart_from_the_visible_ones() -> None:
    """The runner gets the hidden cases as a second phase (``hidden=``), never among the visible ones."""
    seen: list[tuple[int, int]] = []

    class Recording(LocalRunner):
        def run(self, code: str, entry_point: str, cases: list[tuple[Any, ...]], **kwargs: Any) -> Any:
            seen.append((len(cases), len(kwargs.get("hidden") or [])))
            return super().run(code, entry_point, cases, **kwargs)

    verdict = grade(REVERSE, REVERSE.reference, seed=0, runner=Recording(), cache=ReferenceCache())
    hidden = [test for test in verdict["tests"] if test["hidden"]]
    assert seen[-1] == (len(verdict["tests"]) - len(hidden), len(hidden)) and hidden


def test_a_reservoir_hands_out_each_fresh_seed_once_from_one_reference_run_per_batch(runner: LocalRunner) -> None:
    calls: list[int] = []

    class Counting(LocalRunner):
        def run(self, code: str, entry_point: str, cases: list[tuple[Any, ...]], **kwargs: Any) -> Any:
            calls.append(len(kwargs.get("hidden") or []))
            return super().run(code, entry_point, cases, **kwargs)

    seeds = iter(range(100, 200))
    reservoir = SeedReservoir(batch=4, new_seed=lambda: next(seeds), background=False)
    counting = Counting()
    cache = ReferenceCache()
    verdicts = [
        grade(REVERSE, REVERSE.reference, seed=None, runner=counting, reservoir=reservoir, cache=cache)
        for _ in range(5)
    ]
    assert [v["seed"] for v in verdicts] == [100, 101, 102, 103, 104]
    assert all(v["status"] == "accepted" for v in verdicts)
    # the examples' reference once (seed 0), the hidden cases of four seeds at once twice, the five attempts
    assert len(calls) == 1 + 2 + 5 and calls.count(8) == 5
    # the outputs made for a seed in a batch are the ones that seed gives alone
    wrong = "def solution(x):\n    return x.flip(0) if len(x) < 5 else x.flip(0) + 1\n"
    batched = grade(REVERSE, wrong, seed=None, runner=runner, reservoir=SeedReservoir(batch=3))
    alone = grade(REVERSE, wrong, seed=batched["seed"], runner=runner, cache=ReferenceCache())
    assert batched["tests"] == alone["tests"]


def test_a_reservoir_makes_the_next_batch_in_the_background_while_a_quarter_is_left(runner: LocalRunner) -> None:
    made = threading.Event()
    batches: list[int] = []
    niced: list[bool] = []

    class Slow(LocalRunner):
        def run(self, code: str, entry_point: str, cases: list[tuple[Any, ...]], **kwargs: Any) -> Any:
            if kwargs.get("reference") and len(cases) > 4:  # a batch (the examples' reference: two and a twin pair)
                batches.append(len(cases) // 8)
                niced.append(kwargs.get("background", False))
                if len(batches) == 2:
                    made.set()
            return super().run(code, entry_point, cases, **kwargs)

    reservoir, slow, cache = SeedReservoir(batch=4, first=4), Slow(), ReferenceCache()
    seeds = [grade(REVERSE, REVERSE.reference, seed=None, runner=slow, reservoir=reservoir, cache=cache)["seed"]]
    seeds += [grade(REVERSE, REVERSE.reference, seed=None, runner=slow, reservoir=reservoir, cache=cache)["seed"]]
    assert batches == [4]  # two of four left: not yet
    seeds += [grade(REVERSE, REVERSE.reference, seed=None, runner=slow, reservoir=reservoir, cache=cache)["seed"]]
    assert made.wait(10), "the second batch was never made"
    assert len(set(seeds)) == 3 and batches == [4, 4]  # the first batch on the path, the second beside it
    assert niced == [False, True]  # the one beside it runs at nice 19: the learners' runners go first


def test_an_attempt_that_fails_an_example_sends_no_hidden_case_and_spends_no_seed() -> None:
    """Like a judge that stops at the first failing test: the hidden cases stay here, the seed goes back unseen."""
    sent: list[int] = []

    class Recording(LocalRunner):
        def run(self, code: str, entry_point: str, cases: list[tuple[Any, ...]], **kwargs: Any) -> Any:
            result = super().run(code, entry_point, cases, **kwargs)
            sent.append(len(result.hidden))
            return result

    seeds = iter(range(100, 200))
    reservoir = SeedReservoir(batch=2, new_seed=lambda: next(seeds), background=False)
    runner, cache = Recording(), ReferenceCache()
    wrong = "def solution(x):\n    return x\n"
    failed = [grade(REVERSE, wrong, seed=None, runner=runner, reservoir=reservoir, cache=cache) for _ in range(3)]
    assert [v["status"] for v in failed] == ["wrong_answer"] * 3 and [v["seed"] for v in failed] == [None] * 3
    hidden = [t for t in failed[0]["tests"] if t["hidden"]]
    assert len(hidden) == failed[0]["hidden_total"] == 8 and {t["message"] for t in hidden} == {"not run"}
    assert failed[0]["message"].startswith("three-floats: ")  # the failed example, as before
    right = grade(REVERSE, REVERSE.reference, seed=None, runner=runner, reservoir=reservoir, cache=cache)
    assert right["status"] == "accepted" and right["seed"] == 100  # the seed nobody saw, still the first
    assert sent[-4:] == [0, 0, 0, 8]  # the attempts' hidden phases: none for the failed examples


def test_a_drills_seed_batches_grow_with_its_use() -> None:
    """A drill attempted twice a day pays for a few seeds, a busy one gets few large batches."""
    batches: list[int] = []

    class Counting(LocalRunner):
        def run(self, code: str, entry_point: str, cases: list[tuple[Any, ...]], **kwargs: Any) -> Any:
            if kwargs.get("reference") and len(cases) > 4:  # a batch: every seed's eight hidden cases at once
                batches.append(len(cases) // 8)
            return super().run(code, entry_point, cases, **kwargs)

    reservoir = SeedReservoir(batch=8, first=2, background=False)
    runner, cache = Counting(), ReferenceCache()
    seeds = [grade(REVERSE, REVERSE.reference, seed=None, runner=runner, reservoir=reservoir, cache=cache)["seed"]]
    seeds += [grade(REVERSE, REVERSE.reference, seed=None, runner=runner, reservoir=reservoir, cache=cache)["seed"]]
    assert batches == [2]
    for _ in range(2 + 4 + 8 + 1):
        seeds.append(
            grade(REVERSE, REVERSE.reference, seed=None, runner=runner, reservoir=reservoir, cache=cache)["seed"]
        )
    assert batches == [2, 4, 8, 8] and len(set(seeds)) == len(seeds) == 17  # 22 made, 17 taken


def test_a_batch_past_a_runners_limits_is_made_again_at_half_the_size_and_no_attempt_fails() -> None:
    """Issue 36: batches grew to 64 seeds in one runner until every attempt of a heavy drill was internal_error."""
    batches: list[tuple[int, str]] = []

    class Limited(LocalRunner):
        """A runner whose limits hold the reference for three seeds' hidden cases at most (eight each)."""

        def run(self, code: str, entry_point: str, cases: list[tuple[Any, ...]], **kwargs: Any) -> Any:
            if kwargs.get("reference") and len(cases) > 4:
                status = "time_limit" if len(cases) > 3 * 8 else "ok"
                batches.append((len(cases) // 8, status))
                if status != "ok":
                    return RealRunResult("time_limit", message="time limit: over 2 s of CPU")
            return super().run(code, entry_point, cases, **kwargs)

    reservoir, runner, cache = SeedReservoir(batch=16, first=8, background=False), Limited(), ReferenceCache()
    verdicts = [
        grade(REVERSE, REVERSE.reference, seed=None, runner=runner, reservoir=reservoir, cache=cache) for _ in range(12)
    ]
    assert {v["status"] for v in verdicts} == {"accepted"}
    assert len({v["seed"] for v in verdicts}) == 12
    assert batches[:3] == [(8, "time_limit"), (4, "time_limit"), (2, "ok")]
    assert all(size <= 2 for size, _ in batches[3:])  # never again past half the batch that failed


def test_a_batch_is_sized_to_a_share_of_the_drills_cpu_limit() -> None:
    """A reference that takes a quarter of the limit per seed gets batches of one, however busy the drill."""
    sizes: list[int] = []

    class Heavy(LocalRunner):
        def run(self, code: str, entry_point: str, cases: list[tuple[Any, ...]], **kwargs: Any) -> Any:
            result = super().run(code, entry_point, cases, **kwargs)
            if kwargs.get("reference") and len(cases) > 4:
                sizes.append(len(cases) // 8)
                per_seed = REVERSE.limits.cpu_seconds * 1000 * 0.25
                return dataclasses.replace(result, cpu_ms=per_seed * (len(cases) // 8))
            return result

    reservoir, runner, cache = SeedReservoir(batch=16, first=4, background=False), Heavy(), ReferenceCache()
    for _ in range(10):
        grade(REVERSE, REVERSE.reference, seed=None, runner=runner, reservoir=reservoir, cache=cache)
    assert sizes[0] == 4 and set(sizes[1:]) == {1}


def test_a_drill_never_reads_another_drills_references_or_seeds() -> None:
    """Issue 35: a hostile author's drill with the victim's slug and entry point, in the same worker (one
    reference cache, one reservoir), gets its own references and seeds: both are keyed by the file's hash."""
    text = Path(REVERSE.path).read_text(encoding="utf-8")
    assert "return torch.flip(x, dims=[0])" in text
    hostile = parse_drill(text.replace("return torch.flip(x, dims=[0])", "return x * 0", 1))
    assert hostile.slug == REVERSE.slug and hostile.version != REVERSE.version
    runner, cache = LocalRunner(), ReferenceCache()
    handed: dict[str, list[int]] = {REVERSE.version: [], hostile.version: []}
    reservoir = SeedReservoir(batch=4, first=4, background=False)
    for drill in (REVERSE, hostile, REVERSE, hostile):
        verdict = grade(drill, drill.reference, seed=None, runner=runner, cache=cache, reservoir=reservoir)
        assert verdict["status"] == "accepted", verdict["message"]  # judged on its own references
        handed[drill.version].append(int(verdict["seed"]))
    assert not set(handed[REVERSE.version]) & set(handed[hostile.version])  # no seed of the victim's reaches it
    victim = grade(REVERSE, REVERSE.reference, seed=11, runner=runner, cache=cache)
    assert victim["status"] == "accepted"  # the hostile drill's references never stood in for the victim's
