"""Reading a learner's source is bounded and total: whatever the text, ``grade`` returns a verdict.

The constraints run first in the worker, before layer 1; ~19,000 unary minus signs once made ``ast.parse``
raise MemoryError there and a 7,000-term sum RecursionError, and the worker retried the job three times and
showed the learner its traceback (issue 36). Every source here goes through the real ``grade`` on a real
sandbox pool (a source that passes the constraints runs there).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graders.drills.advice import advise
from graders.drills.constraints import MAX_NESTING, Violation, check_constraints, nesting, parse
from graders.drills.schema import Constraints, parse_drill
from jobs.status import VERDICTS
from tests.graders.conftest import drill_text

LIMIT = Constraints().max_source_bytes
PUZZLE = drill_text().replace(
    "[source]", '[constraints]\nno_loops = true\nforbid = ["F.nll_loss", ".flip"]\nallow = ["torch.add"]\n\n[source]'
)


def violation(code: str) -> Violation:
    found = check_constraints(code, Constraints())
    assert len(found) == 1, found
    return found[0]


def body(expression: str) -> str:
    return f"def solution(x):\n    return {expression}\n"


@pytest.mark.parametrize(
    "code",
    [
        body("-" * 19_000 + "x"),  # the parser's own limit (MemoryError)
        body("+".join(["x"] * 7_000)),  # the tree's conversion (RecursionError)
        body("x" + ".a" * 9_000),
        body("x" + "[0]" * 5_000),
        body("not " * 4_000 + "x"),
        body("**".join(["2"] * 6_000)),
        body("lambda: " * 2_000 + "x"),  # parses; later passes would recurse 4,000 levels
        body("1 if x else " * 1_500 + "x"),
    ],
    ids=["unary", "sum", "attributes", "subscripts", "not", "power", "lambdas", "conditionals"],
)
def test_it_refuses_code_nested_past_the_limit_and_names_it(code: str) -> None:
    found = violation(code)
    assert found.rule == "nesting" and f"the limit is {MAX_NESTING}" in found.message, found


def test_it_reads_code_nested_just_under_the_limit_and_says_where_it_is_deepest() -> None:
    depth = MAX_NESTING - 10
    assert check_constraints(body(" + ".join(["x"] * depth)), Constraints()) == []
    deep = "import torch\n\n" + body(" + ".join(["x"] * (MAX_NESTING + 1)))
    found = violation(deep)
    assert found.line == 4 and found.message.startswith("line 4: the code nests 10") and "levels deep" in found.message


def test_it_counts_nesting_without_recursion() -> None:
    tree = parse(body(" + ".join(["x"] * 50)), LIMIT)
    assert not isinstance(tree, Violation)
    depth, line = nesting(tree)
    assert depth == 54 and line == 2


@pytest.mark.parametrize(
    ("code", "rule", "says"),
    [
        (body("'\ud800'"), "text", "line 2: the character U+D800 is half of a surrogate pair"),
        ("# \udfff\n" + body("x"), "text", "line 1: the character U+DFFF"),
        (body("x\x00"), "syntax", "null bytes"),
        (body("1" + "0" * 5_000), "syntax", "4300 digits"),
        (body("x" * 30_000), "size", "the limit is 20000"),
        ("\ud800" * 10_000, "size", "30000 bytes"),  # counted as the bytes it would take, never encoded
    ],
)
def test_it_names_the_limit_of_text_that_is_not_code(code: str, rule: str, says: str) -> None:
    found = violation(code)
    assert found.rule == rule and says in found.message, found


def test_advice_reads_no_code_it_cannot_bound() -> None:
    assert advise(body("-" * 19_000 + "x"), "solution", frozenset({"x"})) == []
    assert advise(body("'\ud800'"), "solution", frozenset({"x"})) == []
    loop = "def solution(x):\n    for i in range(len(x)):\n        pass\n    return x\n"
    assert [a.rule for a in advise(loop, "solution", frozenset({"x"}))] == ["element-loop"]


# ----------------------------------------------------------------------------------------- grade, always

ODD = st.sampled_from(
    ["\ud800", "\udfff", "\x00", "\ufeff", "\u202e", "\u2028", "\u0301", "\U0001f600", "\x0c", "\r", "\x1b", "é", "ｘ"]
)
ATOMS = st.sampled_from(["x", "1", "2.5", "torch.ones(2)", "x.sum()", "'s'", "None", "[x]", "(x,)", "1" + "0" * 4_400])
UNARY = st.sampled_from(["-", "+", "~", "not "])
BINARY = st.sampled_from([" + ", " * ", "**", " < ", " if x else ", " and ", ", "])


@st.composite
def expressions(draw: st.DrawFn) -> str:
    """Deep nesting, long chains, huge literals and odd text, in any mix."""
    atom = draw(ATOMS)
    shape = draw(st.sampled_from(["unary", "chain", "parens", "calls", "attributes", "lambdas", "plain"]))
    count = draw(st.one_of(st.integers(0, 120), st.integers(120, 12_000)))
    if shape == "unary":
        text = draw(UNARY) * count + atom
    elif shape == "chain":
        text = draw(BINARY).join([atom] * max(1, count))
    elif shape == "parens":
        text = "(" * min(count, 300) + atom + ")" * min(count, 300)
    elif shape == "calls":
        text = "torch.add(" * min(count, 300) + atom + ", 1)" * min(count, 300)
    elif shape == "attributes":
        text = atom + ".T" * count
    elif shape == "lambdas":
        text = "(" + "lambda: " * count + atom + ")()"
    else:
        text = atom
    if draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(ODD) + text[at:]
    return text


SOURCES = st.one_of(
    expressions().map(body),
    st.text(max_size=400),
    st.text(alphabet=st.sampled_from("()[]{}-+*~x1 :\n\t\\'\"#.,=lambdaifelsenotdef"), max_size=3_000),
    st.lists(expressions(), min_size=1, max_size=4).map(lambda parts: "import torch\n" + body(" + ".join(parts))),
)


@pytest.fixture(scope="module")
def pool() -> Iterator[object]:
    from graders.sandbox import SandboxPool

    with SandboxPool(size=2) as p:
        p.warm()
        yield p


@pytest.mark.sandbox
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(code=SOURCES)
def test_grade_returns_a_verdict_for_any_source(pool: object, code: str) -> None:
    from graders.drills.grading import grade

    for drill in (PLAIN, PUZZLE_DRILL):
        verdict = grade(drill, code, seed=1, runner=pool)  # type: ignore[arg-type]
        assert verdict["status"] in VERDICTS and verdict["status"] != "internal_error", verdict
        assert isinstance(verdict["message"], str) and len(verdict["message"]) <= 4_000
        verdict["message"].encode("utf-8")  # printable and storable


PLAIN = parse_drill(drill_text(), "notes/drills/add-one.toml")
PUZZLE_DRILL = parse_drill(PUZZLE, "notes/drills/add-one.toml")
