"""The solution key (issue 41 item 3): spellings of one solution share it, different operations never do, and it
is total on learner input."""

from __future__ import annotations

import ast
import io
import keyword
import tokenize
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.drills import DRILLS_DIR, load_drills
from graders.drills.solution_key import KEY_LENGTH, MAX_SOURCE_CHARS, normalised_source, solution_key

SOLUTIONS = Path(__file__).parent / "solutions"
DRILLS = load_drills(DRILLS_DIR)
REFERENCES = sorted((slug, drill.reference) for slug, drill in DRILLS.items())


def known(slug: str) -> dict[str, list[dict[str, str]]]:
    path = SOLUTIONS / f"{slug}.toml"
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def bound_names(source: str) -> list[str]:
    """The names a solution chooses itself (what a learner could rename), less those also spelled as an attribute
    or a keyword argument (renaming a token there would change what the code does)."""
    chosen, fixed = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            chosen.add(node.id)
        elif isinstance(node, ast.arg):
            chosen.add(node.arg)
        elif isinstance(node, ast.Attribute):
            fixed.add(node.attr)
        elif isinstance(node, ast.keyword) and node.arg:
            fixed.add(node.arg)
    return sorted(chosen - fixed)


def renamed(source: str, mapping: dict[str, str]) -> str:
    """The source with its NAME tokens renamed, its layout kept."""
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for index, tok in enumerate(tokens):
        after_dot = index > 0 and tokens[index - 1].string == "."  # an attribute or a module path: not a name
        if tok.type == tokenize.NAME and not after_dot:
            tokens[index] = tok._replace(string=mapping.get(tok.string, tok.string))
    return tokenize.untokenize(tokens)


def reformatted(source: str, comment: str) -> str:
    """Comments on every line, blank lines between statements, a docstring: what ``ast.unparse`` forgets."""
    lines = []
    for line in source.splitlines():
        lines.append(f"{line}  # {comment}" if line.strip() and not line.rstrip().endswith("\\") else line)
        lines.append("")
    text = "\n".join(lines)
    return text.replace("):\n", '):\n    """' + comment + '"""\n', 1)


identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(lambda name: not keyword.iskeyword(name))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(REFERENCES), st.data())
def test_it_keeps_the_key_when_a_solution_renames_its_variables(
    reference: tuple[str, str], data: st.DataObject
) -> None:
    _slug, source = reference
    names = bound_names(source)
    fresh = data.draw(
        st.lists(identifiers.map(lambda n: f"q{n}"), min_size=len(names), max_size=len(names), unique=True)
    )
    mapping = dict(zip(names, fresh, strict=True))
    assert solution_key(renamed(source, mapping)) == solution_key(source)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(REFERENCES), st.from_regex(r"[A-Za-z ]{0,30}", fullmatch=True))
def test_it_keeps_the_key_when_a_solution_is_reformatted(reference: tuple[str, str], comment: str) -> None:
    _slug, source = reference
    again = reformatted(source, comment)
    assert again != source
    assert solution_key(again) == solution_key(source)


def test_it_reads_an_import_alias_as_the_module_it_names() -> None:
    by_alias = "import torch.nn.functional as F\ndef solution(x):\n    return F.relu(x)\n"
    spelled_out = "import torch\ndef solution(t):\n    return torch.nn.functional.relu(t)\n"
    assert solution_key(by_alias) == solution_key(spelled_out)


def test_it_keeps_attribute_names_and_unbound_globals() -> None:
    assert "torch.sum" in (normalised_source("def solution(x):\n    return torch.sum(x)\n") or "")
    assert solution_key("def solution(x):\n    return x.sum()\n") != solution_key(
        "def solution(x):\n    return x.mean()\n"
    )


@pytest.mark.parametrize("slug", sorted(DRILLS))
def test_it_tells_every_known_wrong_solution_from_the_reference(slug: str) -> None:
    """Different operations, different keys: a wrong solution grouped with the reference would be a lie."""
    reference = solution_key(DRILLS[slug].reference)
    for wrong in known(slug).get("wrong", []):
        assert solution_key(wrong["code"]) != reference, wrong.get("why")


def test_it_tells_operations_apart() -> None:
    base = "def solution(a, b):\n    return a + b\n"
    others = [base.replace("+", op) for op in ("-", "*", "/", "@", "**")] + [
        "def solution(a, b):\n    return b + a\n",
        "def solution(a, b):\n    return a + b + 0\n",
        "def solution(a, b):\n    c = a + b\n    return c\n",
    ]
    keys = {solution_key(source) for source in [base, *others]}
    assert len(keys) == 1 + len(others)


@pytest.mark.parametrize(
    "source",
    [
        "def solution(:\n",
        "x = 1\x00",
        "(" * 100_000,
        "x = " + "-" * 800 + "1",  # parses, too deep to walk: RecursionError inside
        "x" + "+x" * 9_000,  # too deep for the parser itself
        "f" + "()" * 30_000,
        "lambda: " * 9_000 + "1",
        "x" * (MAX_SOURCE_CHARS + 1),
        "s = '\udcff'",
    ],
)
def test_it_falls_back_to_the_raw_text_on_what_it_cannot_normalise(source: str) -> None:
    key = solution_key(source)
    assert key.startswith("r:") and len(key) == KEY_LENGTH
    assert solution_key(source + " ") != key  # the raw text, not one bucket for every failure


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_it_never_raises_on_any_text(source: str) -> None:
    key = solution_key(source)
    assert len(key) == KEY_LENGTH and key[:2] in ("a:", "r:")
