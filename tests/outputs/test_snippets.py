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


def test_it_strips_ipython_prompts_and_shown_outputs_from_a_real_card() -> None:
    fronts = [f for f, _ in _output_cards("pytorch-basics.md") if "In [42]: dist" in f]
    snippet = outputs.snippet_from_card(fronts[0], "```text\nx\n```")
    assert snippet is not None
    assert snippet.cells[0] == "b = torch.randint(10, size=(3,2)).float()"
    assert snippet.cells[-1] == "dist"
    assert not any("Out[" in cell or "tensor([[" in cell for cell in snippet.cells)


def test_it_splits_the_notes_own_marker_style_into_cells() -> None:
    cards = _output_cards("pytorch-basics.md")
    front, back = next((f, b) for f, b in cards if "loss = criterion(log_prob, target)" in f)
    snippet = outputs.snippet_from_card(front, back)
    assert snippet is not None
    assert snippet.cells[-1] == "loss = criterion(log_prob, target)\nloss"
    assert snippet.shown == "tensor([0.4815, 0.5630, 0.4076])"


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


def test_it_reports_a_mismatch_and_nothing_for_a_match() -> None:
    assert outputs.check_finding("tensor([1.])", "ok", "tensor([1.0000])", "") is None
    found = outputs.check_finding("tensor([1.])", "ok", "tensor([2.])", "")
    assert found is not None and (found.severity, found.problem) == ("error", "mismatch")
    undefined = outputs.check_finding("1", "needs_context", "", "NameError: x", "needs_context", "")
    assert undefined is not None and (undefined.severity, undefined.problem) == ("error", "undefined")
