"""Comparison of a learner's output with the reference output: every mismatch kind, NaN, tolerances."""

from __future__ import annotations

import json
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.drills.compare import compare
from graders.drills.schema import CompareRule

CLOSE = CompareRule(rtol=1e-5, atol=1e-8)
EXACT = CompareRule(mode="exact")


def test_it_accepts_equal_tensors() -> None:
    assert compare(torch.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3), CLOSE) is None


def test_it_reports_a_shape_mismatch() -> None:
    found = compare(torch.zeros(2, 3), torch.zeros(3, 2), CLOSE)
    assert found is not None and found["kind"] == "shape"
    assert found["message"] == "expected shape (2, 3), got (3, 2)"


def test_it_accepts_a_reshaped_result_only_when_the_drill_allows_it() -> None:
    loose = CompareRule(check_shape=False)
    assert compare(torch.arange(6.0).reshape(2, 3), torch.arange(6.0), loose) is None
    found = compare(torch.arange(6.0), torch.arange(5.0), loose)
    assert found is not None and found["kind"] == "shape"


def test_it_reports_a_dtype_mismatch() -> None:
    found = compare(torch.zeros(3), torch.zeros(3, dtype=torch.float64), CLOSE)
    assert found is not None and found["kind"] == "dtype"
    assert found["message"] == "expected dtype torch.float32, got torch.float64"


def test_it_reports_ints_for_floats_even_when_dtypes_are_not_checked() -> None:
    loose = CompareRule(check_dtype=False)
    assert compare(torch.zeros(3), torch.zeros(3, dtype=torch.float64), loose) is None
    found = compare(torch.zeros(3), torch.zeros(3, dtype=torch.int64), loose)
    assert found is not None and found["kind"] == "dtype"
    found = compare(torch.zeros(3, dtype=torch.bool), torch.zeros(3, dtype=torch.uint8), loose)
    assert found is not None and found["kind"] == "dtype"


def test_it_reports_a_device_mismatch() -> None:
    meta = torch.empty(3, device="meta")
    found = compare(torch.zeros(3), meta, CLOSE)
    assert found is not None and found["kind"] == "device"
    assert found["message"] == "expected a tensor on cpu, got one on meta"


def test_it_reports_the_first_differing_index_with_errors_and_tolerance() -> None:
    expected = torch.zeros(2, 3)
    actual = expected.clone()
    actual[1, 2] = 0.5
    actual[0, 1] = 0.25
    found = compare(expected, actual, CLOSE)
    assert found is not None and found["kind"] == "value"
    assert found["index"] == [0, 1]
    assert (found["expected"], found["actual"]) == (0.0, 0.25)
    assert found["max_abs_error"] == 0.5
    assert found["max_rel_error"] == "inf"
    assert "max abs error 0.5" in found["message"] and "|actual - expected| <= 1e-08 + 1e-05" in found["message"]


def test_it_uses_the_tolerance_at_its_edges() -> None:
    rule = CompareRule(rtol=0.0, atol=0.5)
    base = torch.tensor([1.0], dtype=torch.float64)
    assert compare(base, base + 0.5, rule) is None
    assert compare(base, base + 0.5000001, rule) is not None
    relative = CompareRule(rtol=0.1, atol=0.0)
    assert compare(torch.tensor([10.0]), torch.tensor([11.0]), relative) is None
    assert compare(torch.tensor([10.0]), torch.tensor([11.01]), relative) is not None


def test_it_matches_nan_only_where_the_reference_is_nan() -> None:
    expected = torch.tensor([1.0, math.nan, 3.0])
    assert compare(expected, torch.tensor([1.0, math.nan, 3.0]), CLOSE) is None
    assert compare(expected, torch.tensor([1.0, math.nan, 3.0]), EXACT) is None
    found = compare(expected, torch.tensor([1.0, 2.0, 3.0]), CLOSE)
    assert found is not None and found["index"] == [1] and found["expected"] == "nan"
    found = compare(torch.tensor([1.0, 2.0]), torch.tensor([1.0, math.nan]), CLOSE)
    assert found is not None and found["actual"] == "nan" and found["max_abs_error"] == "inf"


def test_it_treats_infinities_as_values() -> None:
    assert compare(torch.tensor([math.inf, -math.inf]), torch.tensor([math.inf, -math.inf]), CLOSE) is None
    found = compare(torch.tensor([math.inf]), torch.tensor([-math.inf]), CLOSE)
    assert found is not None and found["kind"] == "value"


def test_it_compares_exactly_in_exact_mode_and_counts_differences() -> None:
    found = compare(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0001, 4.0]), EXACT)
    assert found is not None and found["index"] == [1]
    assert "(2 of 3 differ)" in found["message"]


def test_it_compares_integer_tensors_exactly_even_in_allclose_mode() -> None:
    found = compare(torch.tensor([1, 2]), torch.tensor([1, 3]), CLOSE)
    assert found is not None and found["expected"] == 2 and found["actual"] == 3


def test_it_accepts_empty_tensors_of_the_right_shape() -> None:
    assert compare(torch.zeros(0, 3), torch.zeros(0, 3), CLOSE) is None
    found = compare(torch.zeros(0, 3), torch.zeros(0, 2), CLOSE)
    assert found is not None and found["kind"] == "shape"


def test_it_compares_nested_structures_and_names_the_path() -> None:
    expected = {"output": torch.ones(2), "grads": [torch.zeros(2), None]}
    assert compare(expected, {"output": torch.ones(2), "grads": [torch.zeros(2), None]}, CLOSE) is None
    found = compare(expected, {"output": torch.ones(2), "grads": [torch.ones(2), None]}, CLOSE)
    assert found is not None and found["path"] == "['grads'][0]"
    assert found["message"].startswith("wrong value at ['grads'][0][0]")
    found = compare(expected, {"output": torch.ones(2), "grads": [torch.zeros(2), torch.zeros(2)]}, CLOSE)
    assert found is not None and found["kind"] == "type" and "expected None at ['grads'][1]" in found["message"]


def test_it_reports_length_keys_and_container_type_mismatches() -> None:
    found = compare((torch.ones(1), torch.ones(1)), (torch.ones(1),), CLOSE)
    assert found is not None and found["kind"] == "length"
    found = compare((torch.ones(1),), [torch.ones(1)], CLOSE)
    assert found is not None and found["kind"] == "type" and found["message"] == "expected a tuple, got list"
    found = compare({"a": 1, "b": 2}, {"a": 1, "c": 2}, CLOSE)
    assert found is not None and found["kind"] == "keys"
    assert found["message"] == "dict keys differ: missing [\"'b'\"], unexpected [\"'c'\"]"


def test_it_reports_a_non_tensor_where_a_tensor_is_expected() -> None:
    import numpy as np

    found = compare(torch.ones(2), np.ones(2), CLOSE)
    assert found is not None and found["message"] == "expected a tensor, got numpy.ndarray"
    found = compare(torch.ones(2), [1.0, 1.0], CLOSE)
    assert found is not None and found["kind"] == "type"


def test_it_handles_python_numbers() -> None:
    assert compare(3, 3, CLOSE) is None
    assert compare(0.1 + 0.2, 0.3, CLOSE) is None
    found = compare(3, 4, CLOSE)
    assert found is not None and found["message"] == "wrong value at the result: expected 3, got 4"
    found = compare(3, 3.0, CLOSE)
    assert found is not None and found["kind"] == "type"
    found = compare(True, 1, CLOSE)
    assert found is not None and found["kind"] == "type"
    assert compare(2**70, 2**70, CLOSE) is None


def test_it_matches_a_scalar_and_a_zero_dim_tensor_only_when_loose() -> None:
    loose = CompareRule(loose_scalars=True)
    found = compare(torch.tensor(0.5), 0.5, CLOSE)
    assert found is not None and found["kind"] == "type"
    assert compare(torch.tensor(0.5), 0.5, loose) is None
    assert compare(0.5, torch.tensor(0.5), loose) is None
    assert compare(torch.tensor(0.5), 0.7, loose) is not None
    assert compare(torch.tensor([0.5]), 0.5, loose) is not None


def test_it_never_calls_a_returned_subclass() -> None:
    calls: list[str] = []

    class Sneaky(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(getattr(func, "__name__", "?"))
            return super().__torch_function__(func, types, args, kwargs or {})

        def __eq__(self, other: object) -> bool:
            calls.append("eq")
            return True

    sneaky = torch.tensor([1.0, 2.0]).as_subclass(Sneaky)
    calls.clear()
    found = compare(torch.tensor([1.0, 3.0]), sneaky, CLOSE)
    assert found is not None and found["index"] == [1]
    assert calls == []


def test_it_keeps_mismatches_json_serialisable() -> None:
    found = compare(torch.tensor([math.nan, 1j]), torch.tensor([1.0 + 0j, 2j]), CLOSE)
    assert found is not None
    json.dumps(found, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=0, max_size=3),
    seed=st.integers(0, 2**31),
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_it_accepts_any_tensor_against_its_own_copy(shape: list[int], seed: int, dtype: torch.dtype) -> None:
    value = torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)
    assert compare(value, value.clone(), CLOSE) is None
    assert compare(value, value.clone(), EXACT) is None


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(1, 30),
    position=st.integers(0, 29),
    seed=st.integers(0, 2**31),
    bump=st.floats(1e-3, 1e3),
)
def test_it_finds_the_one_element_beyond_tolerance(size: int, position: int, seed: int, bump: float) -> None:
    expected = torch.randn(size, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    actual = expected.clone()
    where = position % size
    actual[where] += bump + abs(float(expected[where])) * 1e-3
    found = compare(expected, actual, CompareRule(rtol=1e-6, atol=1e-6))
    assert found is not None and found["index"] == [where]
    assert found["max_abs_error"] == pytest.approx(float((actual - expected).abs().max()))


@settings(max_examples=40, deadline=None)
@given(values=st.recursive(st.integers(-5, 5) | st.none(), lambda kids: st.lists(kids, max_size=3), max_leaves=10))
def test_it_accepts_any_nested_structure_against_itself(values: object) -> None:
    assert compare(values, values, EXACT) is None


@settings(max_examples=80, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=0, max_size=3),
    seed=st.integers(0, 2**31),
    dtypes=st.tuples(*[st.sampled_from([torch.float32, torch.float64, torch.int64, torch.bool])] * 2),
    rule=st.sampled_from([CLOSE, EXACT, CompareRule(check_dtype=False), CompareRule(loose_scalars=True)]),
    nan=st.booleans(),
)
def test_comparing_never_changes_either_tensor(
    shape: list[int], seed: int, dtypes: tuple[torch.dtype, torch.dtype], rule: CompareRule, nan: bool
) -> None:
    """Plain tensors are compared without a copy, and a reference output is shared by every verdict of its
    seed: whatever the comparison finds, neither tensor may change."""
    generator = torch.Generator().manual_seed(seed)
    expected = (torch.randn(shape, generator=generator) * 3).to(dtypes[0])
    actual = (torch.randn(shape, generator=generator) * 3).to(dtypes[1])
    if nan and expected.is_floating_point() and expected.numel():
        expected.view(-1)[0] = math.nan
    before = expected.clone(), actual.clone()
    found = compare(expected, actual, rule)
    json.dumps(found)
    assert torch.equal(expected.nan_to_num(7.0), before[0].nan_to_num(7.0)) and expected.dtype == before[0].dtype
    assert torch.equal(actual, before[1]) and actual.dtype == before[1].dtype
