"""The drill format's author checks (``[[wrong]]``, ``[[alternative]]``) and a statement in one language.

The tables are the ones tests/graders/solutions/<slug>.toml holds for the bundled drills, with ``expect`` (the
verdict class each wrong solution must get): a drill file may carry them, the schema validates them, and the
grader ignores them.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import tomli_w

from graders.drills import DRILLS_DIR, DrillError
from graders.drills.grading import ReferenceCache, grade
from graders.drills.local import LocalRunner
from graders.drills.schema import Solution, parse_drill

SOLUTIONS = Path(__file__).parent / "solutions"
NUMPY_REPEAT = (DRILLS_DIR / "tips-gradients-numpy-tf" / "numpy-repeat.toml").read_text(encoding="utf-8")
WRONG = '''
[[wrong]]
why = "Tensor.repeat tiles like np.tile"
expect = "wrong_answer"
says = "values differ"
code = """
def solution(x, n):
    return x.repeat(n)
"""

[[alternative]]
code = """
def solution(x, n):
    return x.unsqueeze(1).expand(-1, n).reshape(-1)
"""
'''


def with_solutions(known: dict[str, list[dict[str, str]]]) -> str:
    """numpy-repeat's drill file with the solutions file's tables, each wrong one expecting a wrong answer."""
    tables = {
        "wrong": [
            {k: v for k, v in w.items() if k != "behaviour"} | {"expect": "wrong_answer"} for w in known["wrong"]
        ],
        "alternative": known["alternative"],
    }
    return NUMPY_REPEAT + "\n" + tomli_w.dumps(tables, multiline_strings=True)


def test_it_reads_the_solutions_files_tables_in_a_drill_file() -> None:
    known = tomllib.loads((SOLUTIONS / "numpy-repeat.toml").read_text(encoding="utf-8"))
    drill = parse_drill(with_solutions(known))
    assert [w.why for w in drill.wrong] == [w["why"] for w in known["wrong"]]
    assert all(w.expect == "wrong_answer" for w in drill.wrong)
    assert drill.wrong[-1].says == "returned a numpy.ndarray"
    assert [a.code for a in drill.alternatives] == [a["code"] for a in known["alternative"]]
    assert drill.alternatives[0].why == "" and drill.alternatives[0].expect == "accepted"


def test_it_keeps_the_author_checks_with_their_fields() -> None:
    drill = parse_drill(NUMPY_REPEAT + WRONG)
    code = "def solution(x, n):\n    return x.repeat(n)\n"
    assert drill.wrong == (Solution(code, "Tensor.repeat tiles like np.tile", "wrong_answer", "values differ"),)
    assert len(drill.alternatives) == 1


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (('expect = "wrong_answer"\n', ""), "'wrong[0].expect': is required"),
        (('expect = "wrong_answer"', 'expect = "accepted"'), "'wrong[0].expect': must be one of wrong_answer"),
        (('expect = "wrong_answer"', 'expect = "internal_error"'), "'wrong[0].expect': must be one of"),
        (('why = "Tensor.repeat tiles like np.tile"\n', ""), "'wrong[0].why': is required"),
        (('says = "values differ"', "says = 3"), "'wrong[0].says': must be str"),
        (
            ("[[alternative]]\ncode", '[[alternative]]\nexpect = "accepted"\ncode'),
            "'alternative[0].expect': is not a known",
        ),
        (("[[wrong]]\nwhy", '[[wrong]]\nbehaviour = "type"\nwhy'), "'wrong[0].behaviour': is not a known field"),
    ],
)
def test_it_names_the_field_of_a_broken_author_check(change: tuple[str, str], error: str) -> None:
    old, new = change
    assert old in NUMPY_REPEAT + WRONG
    text = (NUMPY_REPEAT + WRONG).replace(old, new, 1)
    with pytest.raises(DrillError, match=error.replace("[", r"\[").replace("]", r"\]")):
        parse_drill(text, "d.toml")


def test_it_refuses_author_checks_that_are_not_tables_or_have_no_code() -> None:
    with pytest.raises(DrillError, match="'wrong': must be list"):
        parse_drill(NUMPY_REPEAT.replace('slug = "numpy-repeat"', 'slug = "numpy-repeat"\nwrong = "x"'))
    with pytest.raises(DrillError, match="'wrong\\[0\\]': must be a table"):
        parse_drill(NUMPY_REPEAT.replace('slug = "numpy-repeat"', 'slug = "numpy-repeat"\nwrong = ["x"]'))
    with pytest.raises(DrillError, match="'alternative\\[0\\].code': must not be empty"):
        parse_drill(NUMPY_REPEAT + '\n[[alternative]]\ncode = "  "\n')


def test_the_grader_ignores_the_author_checks() -> None:
    """The same verdicts with and without them (only the version, a hash of the whole text, differs)."""
    plain, checked = parse_drill(NUMPY_REPEAT), parse_drill(NUMPY_REPEAT + WRONG)
    runner = LocalRunner()
    for code in (plain.reference, checked.wrong[0].code, "def solution(x, n):\n    return x\n"):
        verdicts = [grade(d, code, seed=5, runner=runner, cache=ReferenceCache()) for d in (plain, checked)]
        assert [(v["status"], v["message"], v["tests"]) for v in verdicts][0] == (
            verdicts[1]["status"], verdicts[1]["message"], verdicts[1]["tests"]
        )  # fmt: skip
    assert plain.version != checked.version


def test_it_takes_a_statement_in_one_language_and_refuses_none() -> None:
    english_only = NUMPY_REPEAT.split("prompt_zh = ")[0] + "prompt_en = " + NUMPY_REPEAT.split("prompt_en = ")[1]
    drill = parse_drill(english_only)
    assert drill.prompt_zh == "" and drill.prompt_en.startswith("`np.repeat")
    neither = english_only.split("prompt_en = ")[0] + 'starter = """' + english_only.split('starter = """')[1]
    with pytest.raises(DrillError, match="'prompt_en': is required \\(or prompt_zh\\)"):
        parse_drill(neither)
