"""The pure half of output cards: snippets from real note cards, and the tolerant comparison."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cards.ingest import parse_note
from outputs import snippets as outputs

NOTES = Path(__file__).resolve().parents[2] / "notes"


def _output_cards(name: str) -> list[tuple[str, str]]:
    parsed = parse_note((NOTES / name).read_text(encoding="utf-8"), name.removesuffix(".md"))
    return [(c.front, c.back) for c in parsed.cards if c.kind == "output"]


def test_it_runs_a_real_card_as_one_plain_cell_with_its_set_up_and_no_transcript() -> None:
    fronts = [f for f, _ in _output_cards("pytorch-basics.md") if "dist = dist + dist.T" in f]
    snippet = outputs.snippet_from_card(fronts[0], "```text\nx\n```")
    assert snippet is not None and len(snippet.cells) == 1
    lines = snippet.cells[0].split("\n")
    assert lines[0] == "b = torch.tensor([[3., 5.],"  # the random b the transcript showed, written out
    assert lines[-2:] == ["dist = dist + dist.T", "dist"]
    assert not any(line.startswith(("In [", "Out[", ">>>")) for line in lines)


def test_it_splits_an_old_transcript_card_into_cells() -> None:
    front = "x:\n\n```python\na = torch.ones(2)\na\n>>>tensor([1., 1.])\nloss = a.sum()\nloss\n```"
    snippet = outputs.snippet_from_card(front, "```text\ntensor(2.)\n```")
    assert snippet is not None
    assert snippet.cells == ("a = torch.ones(2)\na", "loss = a.sum()\nloss")
    assert snippet.shown == "tensor(2.)"


def test_it_reads_a_repl_session_with_a_traceback_between_prompts() -> None:
    transcript = (
        ">>>torch.cat([torch.tensor(1)])\n>>>Traceback (most recent call last):\n"
        '  File "x"\nRuntimeError: no\n>>>torch.tensor([1])'
    )
    assert outputs.split_cells(transcript) == ["torch.cat([torch.tensor(1)])", "torch.tensor([1])"]


def test_it_reads_a_standard_repl_with_continuations_and_drops_future_imports() -> None:
    transcript = ">>> from __future__ import print_function\n>>> for i in range(2):\n...     print(i)\n...\n0\n1\n>>> i"
    assert outputs.split_cells(transcript) == ["for i in range(2):\n    print(i)", "i"]


def test_it_prints_the_last_expression_like_the_repl() -> None:
    assert outputs.show_last_expression("a = 1\na + 1") == "a = 1\nrepl_show(\na + 1\n)"
    assert outputs.show_last_expression("print(1)") == "print(1)"
    assert outputs.show_last_expression("x = 2") == "x = 2"


def test_it_aliases_t_only_when_the_snippet_does_not_bind_it() -> None:
    uses = outputs.Snippet(cells=("t.ones(2)",), shown="")
    binds = outputs.Snippet(cells=("import torch as t\nt.ones(2)",), shown="")
    assert "t = torch\n" in outputs.build_program(uses, 0)
    assert "t = torch\n" not in outputs.build_program(binds, 0)


def test_it_keys_the_cache_on_what_runs() -> None:
    a = outputs.Snippet(cells=("x = 1", "x"), shown="1")
    assert a.content_hash == outputs.Snippet(cells=("x = 1", "x"), shown="2").content_hash
    assert a.content_hash != outputs.Snippet(cells=("x = 2", "x"), shown="1").content_hash


@pytest.mark.parametrize(
    ("typed", "real"),
    [
        ("tensor([1., 2.])", "tensor([1.0000, 2.0000])"),
        ("tensor([[1, 2],[3, 4]])", "tensor([[1, 2],\n        [3, 4]])"),
        ("tensor(0.9076)", "tensor(0.9076)"),
        ("tensor([0.0875, 0.1045], grad_fn=<SelectBackward>)", "tensor([0.0875, 0.1045], grad_fn=<SelectBackward0>)"),
        ("```\nOut[3]: tensor([4.0960e+02, 4096.])\n```", "tensor([4.0960e+02, 4.0960e+03])"),
        ("torch.Size([10,10,2])", "torch.Size([10, 10, 2])"),
        ("1.1677", "1.1676583333333335"),
        ("  True  ", "True"),
        ("tensor([1, 2], dtype=torch.int64)", "tensor([1, 2])"),
        ("RuntimeError", "RuntimeError: zero-dimensional tensor (at position 0) cannot be concatenated"),
    ],
)
def test_it_accepts_equal_values_printed_differently(typed: str, real: str) -> None:
    assert outputs.outputs_match(real, outputs.clean_answer(typed))


@pytest.mark.parametrize(
    ("typed", "real"),
    [
        ("tensor([1., 2.])", "tensor([1., 3.])"),  # a value
        ("tensor([0.4816])", "tensor([0.4815])"),  # a value in the last printed digit
        ("tensor([1., 2.])", "tensor([[1., 2.]])"),  # a shape
        ("tensor([1, 2])", "tensor([1., 2.])"),  # a dtype (int64 vs float32)
        ("tensor([1., 2.])", "tensor([1., 2.], dtype=torch.float64)"),  # a dtype
        ("tensor([True, False])", "tensor([1, 0])"),
        ("False", "True"),
        ("TypeError", "RuntimeError: no"),
        ("tensor([1, 2])", "RuntimeError: no"),
        ("", "tensor([1])"),
    ],
)
def test_it_rejects_a_different_value_shape_or_dtype(typed: str, real: str) -> None:
    assert not outputs.outputs_match(real, outputs.clean_answer(typed))


def test_it_compares_error_messages_only_when_strict() -> None:
    assert outputs.outputs_match("RuntimeError: a", "RuntimeError: b")
    assert not outputs.outputs_match("RuntimeError: a", "RuntimeError: b", strict_errors=True)


@given(st.lists(st.floats(min_value=-1e3, max_value=1e3, allow_nan=False), min_size=1, max_size=6))
def test_it_accepts_any_float_list_reprinted_with_other_precision_and_spacing(values: list[float]) -> None:
    four = "tensor([" + ", ".join(f"{v:.4f}" for v in values) + "])"
    six = "tensor([\n  " + ",\n  ".join(f"{v:.6f}" for v in values) + "  ])"
    assert outputs.outputs_match(four, six)


@given(st.lists(st.integers(-50, 50), min_size=1, max_size=6), st.integers(0, 5), st.integers(1, 3))
def test_it_rejects_any_changed_element(values: list[int], where: int, delta: int) -> None:
    changed = list(values)
    changed[where % len(values)] += delta
    assert not outputs.outputs_match(f"tensor({values})", f"tensor({changed})")


def test_it_reads_a_run_of_a_snippet_that_needs_earlier_code() -> None:
    stdout = f"{outputs.CELL_MARKER}\n"
    found = outputs.interpret_run(
        "runtime_error", stdout, "the module body raised: NameError: name 'loss' is not defined"
    )
    assert found.kind == "needs_context"
    raised = outputs.interpret_run(
        "runtime_error", stdout + "1\n", "the module body raised: RuntimeError: bad\nTraceback"
    )
    assert raised == outputs.RunOutcome("raised", "1\nRuntimeError: bad", "RuntimeError: bad")


def test_it_finds_the_note_context_before_a_snippet_in_a_list_item() -> None:
    note = "# T\n\n```python\na = 1\n```\n\n- text\n\n- ```python\n  b = a + 1\n  b\n  ```\n"
    snippet = outputs.Snippet(cells=("b = a + 1\nb",), shown="2")
    assert outputs.note_context(note, snippet) == ("a = 1",)


@pytest.mark.parametrize(
    ("code", "kind", "output", "error", "problem"),
    [
        ("torch.ones(2).sum()", "ok", "tensor(2.)", "", ""),
        ("torch.cat([torch.tensor(1)])", "raised", "RuntimeError: zero-dimensional", "RuntimeError: z", ""),
        ("if torch.cuda.is_available():\n    print(1)", "ok", "", "", "silent"),
        ("x = torch.tensor([1, 2])\nx", "ok", "tensor([1, 2])", "", "answer_in_front"),
        ("torch.randn(2)", "random", "tensor([0.1, 0.2])", "", "random"),
        ("alpha.shape", "needs_context", "", "NameError: name 'alpha' is not defined", "undefined"),
        ("DataLoader(d)", "unsupported", "", "NameError: name 'DataLoader' is not defined", "unsupported"),
        ("while True: pass", "failed", "", "time limit\nmore", "fails"),
    ],
)
def test_it_lets_only_code_that_runs_alone_deterministically_and_prints_something_be_a_card(
    code: str, kind: str, output: str, error: str, problem: str
) -> None:
    judged = outputs.verdict(code, kind, output, error)
    assert (judged.qualifies, judged.problem) == (not problem, problem)
    if problem == "fails":
        assert judged.detail == "does not run: time limit"
    if problem == "silent":
        assert "needs a GPU" in judged.detail


def test_it_says_when_a_snippet_runs_after_the_notes_earlier_code() -> None:
    judged = outputs.verdict("loss.sum()", "needs_context", "", "NameError: loss", "ok", "tensor(1.)")
    assert not judged.qualifies
    assert judged.detail.endswith("put the set-up it needs in its code block")


def test_it_tells_a_stale_note_from_a_reprinted_value() -> None:
    assert not outputs.note_is_stale("tensor([1.])", "tensor([1.0000])")
    assert outputs.note_is_stale("tensor([1.])", "tensor([2.])")
    assert outputs.note_is_stale("RuntimeError: old message", "RuntimeError: new message")
