"""The drill editor's document and the one drill-file writer (``graders.authoring.document``).

document -> TOML -> document is the identity, a text the writer wrote is written again byte for byte (both
as hypothesis properties), every bundled drill reads into a document whose TOML is the same drill, and a
text the form cannot hold says why. tests/courses/test_drill_forms.py adds the Django form to the loop.
"""

from __future__ import annotations

import dataclasses
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graders.authoring.document import (
    Unfit,
    blank,
    in_form_layout,
    read_document,
    write_drill,
)
from graders.drills import DRILLS_DIR, DrillError, parse_drill
from graders.drills.schema import COMPARE_MODES, DEVICES, DIFFICULTIES, EXPECTABLE, RESULT_GRAD, RESULT_KINDS

BUNDLED = sorted(DRILLS_DIR.rglob("*.toml"))

# Text a browser can send once line breaks are "\n": anything but surrogates, NUL and carriage returns.
TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00\r"), max_size=40)
LINE = TEXT.filter(lambda s: "\n" not in s).map(str.strip)
WORD = st.text(string.ascii_letters + string.digits + "._-", min_size=1, max_size=12)
EXPR = LINE.filter(bool)
NAME = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)
FLOAT = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)


def cases(hidden: bool) -> st.SearchStrategy[list[dict[str, Any]]]:
    base = {
        "name": LINE,
        "let": st.dictionaries(NAME, EXPR, max_size=3),
        "args": st.lists(EXPR, min_size=1, max_size=3),
    }
    if hidden:
        base |= {"repeat": st.integers(1, 20), "fixed": st.booleans()}
    return st.lists(st.fixed_dictionaries(base), max_size=3)


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    """Any drill the form can hold (valid or not: the schema is asked separately)."""
    document = blank()
    document.update(
        slug=draw(LINE), title=draw(LINE), entry_point=draw(LINE), device=draw(st.sampled_from(DEVICES)),
        difficulty=draw(st.sampled_from(DIFFICULTIES)), tags=draw(st.lists(WORD, max_size=3)), track=draw(LINE),
        position=draw(st.integers(0, 10_000)), prompt_zh=draw(TEXT), prompt_en=draw(TEXT), starter=draw(TEXT),
        reference=draw(TEXT),
    )  # fmt: skip
    document["source"] = {"note": draw(LINE), "heading": draw(LINE)}
    document["compare"] = {
        "mode": draw(st.sampled_from(COMPARE_MODES)), "rtol": draw(FLOAT), "atol": draw(FLOAT),
        "check_dtype": draw(st.booleans()), "check_shape": draw(st.booleans()), "check_device": draw(st.booleans()),
        "loose_scalars": draw(st.booleans()),
    }  # fmt: skip
    document["constraints"] = {
        "no_loops": draw(st.booleans()), "forbid": draw(st.lists(WORD, max_size=3)),
        "max_source_bytes": draw(st.integers(1, 10**6)), "allow": draw(st.lists(WORD, max_size=3)),
        "single_expression": draw(st.booleans()),
    }  # fmt: skip
    document["limits"] = {
        "cpu_seconds": draw(FLOAT.filter(bool)), "wall_seconds": draw(FLOAT.filter(bool)),
        "memory_mb": draw(st.integers(1, 10**5)),
    }  # fmt: skip
    document["contract"] = {
        "in_place": draw(st.lists(WORD, max_size=2)), "result": draw(st.sampled_from(RESULT_KINDS)),
        "result_grad": draw(st.sampled_from(RESULT_GRAD)), "repeatable": draw(st.booleans()),
        "graph_budget": draw(FLOAT), "memory_budget": draw(FLOAT), "time_budget": draw(FLOAT),
    }  # fmt: skip
    document["examples"] = draw(cases(False))
    document["hidden"] = draw(cases(True))
    # A row with nothing typed in it is no row (the form leaves it out).
    wrong = st.fixed_dictionaries({"why": LINE, "expect": st.sampled_from(EXPECTABLE), "says": LINE, "code": TEXT})
    document["wrong"] = draw(st.lists(wrong.filter(lambda w: w["why"] or w["says"] or w["code"]), max_size=3))
    alternative = st.fixed_dictionaries({"why": LINE, "code": TEXT}).filter(lambda a: a["why"] or a["code"])
    document["alternative"] = draw(st.lists(alternative, max_size=2))
    hint = st.fixed_dictionaries({"en": TEXT, "zh": TEXT}).filter(lambda h: h["en"] or h["zh"])
    document["hints"] = draw(st.lists(hint, max_size=3))
    return document


PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@PROPERTY
@given(documents())
def test_document_to_toml_to_document_is_the_identity(document: dict[str, Any]) -> None:
    assert read_document(write_drill(document)) == document


@pytest.mark.slow
@PROPERTY
@given(documents())
def test_a_written_text_is_written_again_byte_for_byte(document: dict[str, Any]) -> None:
    text = write_drill(document)
    assert write_drill(read_document(text)) == text
    assert in_form_layout(text)


@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_every_bundled_drill_reads_into_a_document_of_the_same_drill(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    written = write_drill(read_document(text))
    same = [dataclasses.replace(parse_drill(t), version="", path="") for t in (text, written)]
    assert same[0] == same[1]


def test_it_leaves_defaults_out_and_keeps_the_bundled_order() -> None:
    document = blank() | {"slug": "a", "title": "A", "reference": "def solution(x):\n    return x\n"}
    document["hidden"] = [
        {"name": "r", "repeat": 1, "fixed": False, "let": {}, "args": ["torch.randn(2, generator=g)"]}
    ]
    text = write_drill(document)
    assert text.splitlines()[:5] == ['slug = "a"', 'title = "A"', 'entry_point = "solution"', 'device = "cpu"',
                                     'difficulty = "medium"']  # fmt: skip
    assert "[compare]" not in text and "repeat" not in text and "fixed" not in text and "prompt_zh" not in text
    assert text.index("[source]") < text.index("[[hidden]]")


def test_it_writes_each_hint_in_both_languages_and_reads_them_back_in_order() -> None:
    long = "Which dim holds the classes? " * 4  # too long for an inline table: written as [[hints]]
    document = blank() | {"slug": "a", "hints": [{"en": long, "zh": "哪一维？"}, {"en": "", "zh": "只有中文"}]}
    text = write_drill(document)
    assert f'[[hints]]\nen = "{long}"\nzh = "哪一维？"\n\n[[hints]]\nen = ""\nzh = "只有中文"\n' in text
    assert read_document(text)["hints"] == document["hints"]


def test_the_fixed_flag_the_form_writes_is_the_one_the_loader_reads() -> None:
    document = read_document((DRILLS_DIR / "tips-gradients-numpy-tf" / "reverse-1d.toml").read_text(encoding="utf-8"))
    empty = next(case for case in document["hidden"] if case["name"] == "empty")
    assert empty["fixed"] is True and empty["args"] == ["torch.zeros(0)"]
    text = write_drill(document)
    assert 'name = "empty"\nfixed = true\n' in text
    assert [case.fixed for case in parse_drill(text).hidden if case.name == "empty"] == [True]
    empty["fixed"] = False
    with pytest.raises(DrillError, match="the hidden case 'empty' draws nothing from g or rng"):
        parse_drill(write_drill(document))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('slug = "a"\nslug = "b"\n', "not valid TOML"),
        ('slug = "a"\nauthor = "me"\n', "author: not a field of a drill file"),
        ('slug = "a"\n[compare]\nrtol = "small"\n', "compare.rtol: must be float, not str"),
        ('slug = "a"\n[[examples]]\nname = "x"\nargs = ["torch.tensor(\\n[1])"]\n', "examples[0].args[0]: the form"),
        ('slug = "a"\n[[examples]]\nname = "x"\nargs = ["1"]\nrepeat = 2\n', "examples[0].repeat"),
        ('slug = "a"\n[[hidden]]\nname = "x"\nargs = ["1"]\nlet = { n = 3 }\n', "hidden[0].let.n"),
        ('slug = "a"\ntags = ["two words"]\n', "tags: each item must be one word"),
        ('slug = "a"\nprompt_en = "a\\r\\nb"\n', "prompt_en: holds a carriage return"),
        ('slug = "a"\n[[wrong]]\nwhy = "x"\nexpect = "wrong_answer"\ncode = "y"\nlevel = 2\n', "wrong[0].level"),
        ('slug = "a"\n[[hints]]\nen = "x"\nzh = "y"\nlevel = 2\n', "hints[0].level"),
        ('slug = "a"\n[[hints]]\nen = 3\nzh = "y"\n', "hints[0].en: must be str"),
    ],
)
def test_it_says_why_the_form_cannot_hold_a_text(text: str, reason: str) -> None:
    with pytest.raises(Unfit) as caught:
        read_document(text)
    assert any(reason in why for why in caught.value.reasons), caught.value.reasons


def test_a_comment_is_layout_the_form_rewrites_not_a_reason_to_refuse() -> None:
    text = write_drill(blank() | {"slug": "a"})
    commented = text.replace('slug = "a"', 'slug = "a"  # the slug')
    assert read_document(commented) == read_document(text)
    assert in_form_layout(text) and not in_form_layout(commented)
