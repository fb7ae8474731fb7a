"""The sandbox's result format: what a child sends back is rebuilt exactly, and nothing else is accepted."""

from __future__ import annotations

import json
import struct

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graders.sandbox import wire

DTYPES = [getattr(torch, name) for name in wire.DTYPES]


def round_trip(value: object) -> object:
    _, values = wire.unpack(wire.pack({"kind": "result"}, {"v": value}))
    return values["v"]


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


@pytest.mark.parametrize("dtype", DTYPES, ids=wire.DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 4), (2, 3, 5)])
def test_every_dtype_and_shape_comes_back_exactly(dtype: torch.dtype, shape: tuple[int, ...]) -> None:
    source = (torch.randn(shape, dtype=torch.float64) * 50).to(dtype)
    back = round_trip(source)
    assert isinstance(back, torch.Tensor) and same(back, source)


def test_views_conjugates_negatives_and_grad_tensors_come_back_as_plain_values() -> None:
    base = torch.arange(24.0).reshape(4, 6)
    z = torch.complex(torch.randn(3), torch.randn(3))
    leaf = torch.ones(2, requires_grad=True)
    values = [base.t(), base[::2, 1::3], z.conj(), torch._neg_view(base), leaf * 2, base.expand(2, 4, 6)]
    for value in values:
        back = round_trip(value)
        expected = value.detach().resolve_conj().resolve_neg().contiguous()
        assert same(back, expected) and back.is_contiguous() and not back.requires_grad


def test_views_whose_size_one_dims_have_other_strides_come_back() -> None:
    """A 1x1 matrix's diagonal is "contiguous" with stride 2 (the tf-diag-part drill returned one)."""
    for value in (torch.diagonal(torch.ones(1, 1)), torch.diagonal(torch.ones(3, 1, 1), dim1=-2, dim2=-1)):
        assert value.is_contiguous() and value.stride()[-1] != 1
        assert same(round_trip(value), value.clone())


def test_a_tensor_subclass_comes_back_as_a_plain_tensor() -> None:
    class Sneaky(torch.Tensor):
        def __eq__(self, other: object) -> bool:  # type: ignore[override]
            return True

    back = round_trip(torch.ones(3).as_subclass(Sneaky))
    assert type(back) is torch.Tensor


def test_decoded_tensors_own_their_memory() -> None:
    first, second = round_trip([torch.zeros(4), torch.zeros(4)])
    first.add_(1)
    assert second.sum() == 0


def test_nested_structures_and_scalars() -> None:
    value = {"a": [1, 2.5, True, None, "s", 3 + 4j], 7: (torch.tensor(1), [torch.tensor([True])]), "dt": torch.int64}
    back = round_trip(value)
    assert back["a"] == [1, 2.5, True, None, "s", 3 + 4j]
    assert same(back[7][0], torch.tensor(1)) and same(back[7][1][0], torch.tensor([True]))
    assert back["dt"] is torch.int64


@settings(max_examples=60, deadline=None)
@given(
    dtype=st.sampled_from(DTYPES),
    shape=st.lists(st.integers(0, 4), max_size=4),
    count=st.integers(1, 4),
)
def test_any_list_of_tensors_round_trips(dtype: torch.dtype, shape: list[int], count: int) -> None:
    tensors = [(torch.randn(shape, dtype=torch.float64) * 9).to(dtype) for _ in range(count)]
    back = round_trip(tensors)
    assert len(back) == count and all(same(a, b) for a, b in zip(back, tensors, strict=True))


def test_unsupported_tensors_are_refused_when_sending() -> None:
    with pytest.raises(wire.WireError, match="dense"):
        wire.pack({}, {"v": torch.eye(3).to_sparse()})
    with pytest.raises(wire.WireError, match="dtype"):
        wire.pack({}, {"v": torch.zeros(2, dtype=torch.uint16)})


def forged(node: object, blob: bytes = b"\0" * 64) -> bytes:
    head = json.dumps({"kind": "result", "values": {"v": node}}).encode()
    return struct.pack("<I", len(head)) + head + blob


@pytest.mark.parametrize(
    "node",
    [
        {"T": ["float32", [2], 0, 4]},  # 2 floats are 8 bytes, not 4
        {"T": ["float32", [20], 0, 80]},  # past the end of the blob
        {"T": ["float32", [1], 8, 4]},  # not aligned
        {"T": ["float32", [1], -64, 4]},  # negative offset
        {"T": ["float32", [-1], 0, -4]},  # negative size
        {"T": ["float32", [True], 0, 4]},  # a bool is not a size
        {"T": ["float32", [1.0], 0, 4]},
        {"T": ["float32", "1", 0, 4]},
        {"T": ["qint8", [1], 0, 1]},  # not in the list of dtypes
        {"T": ["__class__", [1], 0, 1]},
        {"T": ["float32", [1], 0]},
        {"T": "0"},
        {"T": ["float32", [2**40, 2**40], 0, 4]},
        {"T": ["float32", [0, 2**64], 0, 0]},  # zero bytes, but a size torch.empty cannot take (TypeError)
        {"T": ["float32", [0, 2**63 - 1, 2**63 - 1], 0, 0]},
        {"T": ["float32", [0] * 100, 0, 0]},  # more dims than torch allows
    ],
)
def test_forged_tensor_nodes_are_refused(node: object) -> None:
    with pytest.raises(wire.WireError):
        wire.unpack(forged(node))


def test_a_well_formed_forged_node_is_just_data() -> None:
    _, values = wire.unpack(forged({"T": ["int32", [2], 0, 8]}, struct.pack("<ii", 7, -1) + b"\0" * 56))
    assert same(values["v"], torch.tensor([7, -1], dtype=torch.int32))


def test_a_bool_tensor_must_hold_only_zeros_and_ones() -> None:
    """Any other byte is undefined behaviour in ATen: compared bytewise or as truth, it must not get through."""
    with pytest.raises(wire.WireError, match="bool"):
        wire.unpack(forged({"T": ["bool", [2], 0, 2]}, b"\x02\x00" + b"\0" * 62))
    _, values = wire.unpack(forged({"T": ["bool", [2], 0, 2]}, b"\x01\x00" + b"\0" * 62))
    assert same(values["v"], torch.tensor([True, False]))


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_header_number_pack_never_writes_is_refused(constant: str) -> None:
    """A forged ``cpu_ms: NaN`` would reach the CLI's JSON (invalid) and the database; it stops here."""
    head = b'{"kind": "result", "status": "ok", "cpu_ms": ' + constant.encode() + b"}"
    with pytest.raises(wire.WireError):
        wire.unpack(struct.pack("<I", len(head)) + head)


@given(st.binary(max_size=300))
@settings(max_examples=300, deadline=None)
def test_any_bytes_decode_or_raise_wire_error_only(blob: bytes) -> None:
    """The trust boundary: nothing but WireError may come out of unpack, whatever the child sends."""
    try:
        wire.unpack(blob)
    except wire.WireError:
        pass


@given(st.lists(st.integers(min_value=-(2**70), max_value=2**70), max_size=6), st.sampled_from(["float32", "bool"]))
@settings(max_examples=300, deadline=None)
def test_any_forged_shape_decodes_or_raises_wire_error_only(shape: list[int], dtype: str) -> None:
    try:
        wire.unpack(forged({"T": [dtype, shape, 0, 0]}))
    except wire.WireError:
        pass
