"""The deck audit's patterns run in linear time on any text: a learner's imported notes reach them too.

Every compiled pattern at module level in ``cards.ingest.quality`` and ``graders.authoring.statement`` needs an
entry in ``ATTACKS``: the input most likely to make it backtrack (a long run of what it half-matches). The test
times each on that input at two sizes; a pattern that backtracks takes about 16 times as long on four times the
text, a linear one about 4 times.

``KNOWN_SUPERLINEAR`` lists the patterns older than this test that do not pass yet, with the input that shows
it; a pattern added to either module must pass.
"""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Callable

import pytest

import cards.ingest.quality as quality
import graders.authoring.statement as statement

MODULES = (quality, statement)
SIZE = 20_000  # characters of the smaller attack

# Pattern name -> the text that repeats to make its worst input (``n`` repetitions).
ATTACKS: dict[str, Callable[[int], str]] = {
    "cards.ingest.quality._QUESTION_END": lambda n: "？" * n,
    "cards.ingest.quality._TWO_ANSWERS": lambda n: "分别" * n,
    "cards.ingest.quality._ASKS": lambda n: "会不" * n,
    "cards.ingest.quality._WHY": lambda n: "为" * n,
    "cards.ingest.quality._ASIDE": lambda n: "（" + "a" * n,
    "cards.ingest.quality._CLAUSE": lambda n: "，" * n,
    "cards.ingest.quality._JOINED": lambda n: "以" * n,
    "cards.ingest.quality._BOTH_ENDING": lambda n: ("和" + "形" * 9) * (n // 10),
    "cards.ingest.quality._COMPARES": lambda n: "区" * n,
    "cards.ingest.quality._HALF_WIDTH": lambda n: "形 " * n,
    "cards.ingest.quality._ONE_LETTER": lambda n: "a " * n,
    "cards.ingest.quality._OWNER": lambda n: "torch." * n,
    "cards.ingest.quality._HEAD": lambda n: "，" * n,
    "cards.ingest.quality._NOT_WORD": lambda n: "!" * n,
    "cards.ingest.quality._LITERAL": lambda n: "1." * n + "e-",
    "cards.ingest.quality._IDENT": lambda n: "a" * n + "!",
    "cards.ingest.quality._CONTRASTS": lambda n: "哪一" * n,
    "cards.ingest.quality._GLUED": lambda n: "5;" * n + ":",
    "cards.ingest.quality._HAS_CHINESE": lambda n: "a" * n,
    "cards.ingest.quality._CHOICE": lambda n: "还" * n,
    "cards.ingest.quality._NAME_ANSWER": lambda n: "a.(" * n,
    "graders.authoring.statement._SENTENCES": lambda n: ". " * n,
    "graders.authoring.statement._CODE": lambda n: "`" + "a" * n,
    "graders.authoring.statement._WORD": lambda n: "a" * n + "!",
    "graders.authoring.statement._NEW": lambda n: "返回" * n,
    "graders.authoring.statement._IN_PLACE": lambda n: "in-" * n,
    "graders.authoring.statement._NEGATION": lambda n: "n'" * n,
    "graders.authoring.statement._KEPT": lambda n: "must not " * n,
    "graders.authoring.statement._DTYPE": lambda n: "float32 " * n,
    "graders.authoring.statement._DTYPE_FREE": lambda n: "dtype does " * n,
    "graders.authoring.statement._CALL": lambda n: " " * n + "a" * n,
}
# Older than this test, and superlinear on these inputs: each Markdown fence or code span that never closes
# scans to the end of the text. They read a card's own short faces here; the importer bounds a note's size.
KNOWN_SUPERLINEAR = {
    "cards.ingest.quality._FENCE": lambda n: "```a\n" * (n // 5),
    "cards.ingest.quality._CODE_SPAN": lambda n: "`a" + "``" * (n // 2),
}


def patterns() -> dict[str, re.Pattern[str]]:
    return {
        f"{module.__name__}.{name}": value
        for module in MODULES
        for name, value in vars(module).items()
        if isinstance(value, re.Pattern)
    }


def run(pattern: re.Pattern[str], text: str) -> float:
    """The best of three timings of every way the modules use a pattern: search all, split, whole match.

    In this thread's CPU time, not the wall clock: on a machine busy with other work the wall clock counts the
    waits for a core, which say nothing of the pattern."""
    best = float("inf")
    gc.disable()  # the many small results would otherwise time the collector
    try:
        for _ in range(3):
            start = time.thread_time()
            list(pattern.finditer(text))
            pattern.split(text)
            pattern.fullmatch(text)
            best = min(best, time.thread_time() - start)
    finally:
        gc.enable()
    return best


def test_every_pattern_has_an_attack() -> None:
    assert set(patterns()) - set(ATTACKS) - set(KNOWN_SUPERLINEAR) == set()
    assert set(ATTACKS) | set(KNOWN_SUPERLINEAR) <= set(patterns())  # no entry outlives its pattern


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_the_pattern_runs_in_linear_time_on_its_attack(name: str) -> None:
    pattern, attack = patterns()[name], ATTACKS[name]
    small, large = run(pattern, attack(SIZE)), run(pattern, attack(4 * SIZE))
    assert large < 0.5
    assert large < 8 * small + 0.02, f"{name}: {small:.4f} s at {SIZE}, {large:.4f} s at {4 * SIZE}"
