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
    big = torch.arange(100_000.0)
    values = [big[::4], z.conj(), torch._neg_view(base), leaf * 2, base.expand(2, 4, 6)]
    for value in values:
        back = round_trip(value)
        expected = value.detach().resolve_conj().resolve_neg().contiguous()
        assert same(back, expected) and back.is_contiguous() and not back.requires_grad


def test_a_transposed_or_permuted_view_crosses_as_a_view() -> None:
    """A drill's non-contiguous case must reach the runner non-contiguous (``x.view`` fails on it there too)."""
    base = torch.arange(24.0).reshape(2, 3, 4)
    for value in (base[0].t(), base.permute(2, 0, 1), base.transpose(1, 2)):
        back = round_trip(value)
        assert same(back, value) and not back.is_contiguous() and back.stride() == value.stride()
    for order in ([0, 0], [1], [0, 2], "01"):  # not a permutation of the dims: refused, never guessed at
        head = json.dumps({"values": {"v": {"T": ["float32", [2, 2], 0, 16, order]}}}).encode()
        with pytest.raises(wire.WireError, match="malformed tensor order"):
            wire.unpack(struct.pack("<I", len(head)) + head + bytes(64))


def test_a_slice_of_a_small_storage_crosses_with_its_storage() -> None:
    """A drill about views (tensor-nbytes: "count x's own elements, not the storage") must get a view."""
    base = torch.arange(24.0).reshape(4, 6)
    for value in (torch.arange(10.0)[::2], base[2], base[::2, 1::3], base[1:, 2]):
        back = round_trip(value)
        assert isinstance(back, torch.Tensor) and same(back, value)
        assert back.stride() == value.stride() and back.storage_offset() == value.storage_offset()
        assert back.untyped_storage().nbytes() == value.untyped_storage().nbytes()


@pytest.mark.parametrize(
    "view",
    [
        [[5], [3], 0],  # past the storage's end
        [[2], [1], 9],
        [[3], [-1], 2],  # negative stride
        [[2**40], [0], 0],  # more elements than the storage holds
        [[2, 2], [1], 0],  # strides and shape disagree
        [[2], [1], True],
        "x",
    ],
)
def test_forged_views_are_refused(view: object) -> None:
    node = {"V": [["float32", [10], 0, 40], *view]} if isinstance(view, list) else {"V": view}
    with pytest.raises(wire.WireError):
        wire.unpack(forged(node, bytes(64)))


def test_views_whose_size_one_dims_have_other_strides_come_back() -> None:
    """A 1x1 matrix's diagonal is "contiguous" with stride 2 (the tf-diag-part drill returned one)."""
    for value in (torch.diagonal(torch.ones(1, 1)), torch.diagonal(torch.ones(3, 1, 1), dim1=-2, dim2=-1)):
        assert value.is_contiguous() and value.stride()[-1] != 1
        assert same(round_trip(value), value.clone())


def test_a_tensor_subclass_comes_back_as_a_plain_tensor() -> None:
    class Sneaky(torch.Tensor):
        def __eq__(self, other: object) -> bool:
            return True

    back = round_trip(torch.ones(3).as_subclass(Sneaky))
    assert type(back) is torch.Tensor


@pytest.mark.parametrize("dtype", DTYPES, ids=wire.DTYPES)
def test_the_fast_path_for_a_plain_tensor_writes_what_the_general_path_writes(dtype: torch.dtype) -> None:
    """A plain contiguous CPU tensor skips the general path (a subclass takes it): the bytes are the same."""

    class Marked(torch.Tensor):
        pass

    for shape in [(), (0,), (3,), (2, 3)]:
        source = (torch.randn(shape, dtype=torch.float64) * 50).to(dtype)
        assert wire.pack({}, {"v": source}) == wire.pack({}, {"v": source.as_subclass(Marked)})


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


def header_message(head: bytes, blob: bytes = b"") -> bytes:
    return struct.pack("<I", len(head)) + head + blob


def strings_in(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [s for v in value for s in strings_in(v)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*strings_in(k), *strings_in(v))]
    return []


def storable(text: str) -> bool:
    """What PostgreSQL's jsonb and a JSON printer need: encodable, no NUL, no control character but \\n, \\t."""
    text.encode("utf-8")
    return not any(ord(c) < 32 and c not in "\n\t" or 0x7F <= ord(c) <= 0x9F for c in text)


SURROGATE_HEADERS = {
    "escaped": b'{"kind": "x", "stdout": "a\\ud800b\\udfff", "values": {"v": {"s": "\\udc00"}}}',
    "raw utf-8 bytes": b'{"kind": "x", "stdout": "a\xed\xa0\x80b", "values": {"v": {"s": "\xed\xbf\xbf"}}}',
    "utf-16": '{"kind": "x", "stdout": "a\ud800b", "values": {"v": {"s": "\udfff"}}}'.encode("utf-16", "surrogatepass"),
    "utf-16-be": '{"kind": "x", "stdout": "a\ud800b", "values": {}}'.encode("utf-16-be", "surrogatepass"),
    "utf-32": '{"kind": "x", "stdout": "a\ud800b", "values": {}}'.encode("utf-32", "surrogatepass"),
    "nul and controls": b'{"kind": "x", "stdout": "a\\u0000b\\u001b[2J\\r\\u0085", "message": "\\u0000",'
    b' "values": {"v": {"d": [[{"s": "k\\u0000"}, {"s": "\\u0007"}]]}}}',
}


@pytest.mark.parametrize("head", SURROGATE_HEADERS.values(), ids=SURROGATE_HEADERS.keys())
def test_every_text_a_child_sends_comes_out_storable_and_printable(head: bytes) -> None:
    """Lone surrogates in any encoding json.loads accepts, NUL and control characters: each becomes U+FFFD."""
    header, values = wire.unpack(header_message(head))
    texts = strings_in(header) + strings_in(values)
    assert all(storable(t) for t in texts), texts
    assert "\ufffd" in header["stdout"]
    json.dumps([header, values], ensure_ascii=False).encode("utf-8")


def test_newlines_and_tabs_and_other_text_are_kept() -> None:
    text = "line 1\n\tline 2: ünïcödé, 中文, 🙂"
    assert round_trip(text) == text
    assert wire.clean_text(text) is text


@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=50))
@settings(max_examples=300, deadline=None)
def test_any_text_decodes_storable(text: str) -> None:
    head = json.dumps({"kind": "x", "stdout": text, "values": {"v": {"s": text}}}).encode()
    header, values = wire.unpack(header_message(head))
    assert storable(header["stdout"]) and storable(values["v"])


def test_a_huge_header_of_empty_lists_is_refused_fast_and_small() -> None:
    """64 MiB of ``[],`` once cost the parent 1.6 GB and 9 s: it is refused on its bytes, building nothing."""
    import time
    import tracemalloc

    body = b"[" + b"[]," * (22 * 1024 * 1024) + b"[]]"
    for head in (body, b'{"kind": "x", "values": {}, "stdout": ' + body[: 15 * 1024 * 1024 - 3] + b"]}"):
        message = header_message(head)
        tracemalloc.start()
        started = time.perf_counter()
        with pytest.raises(wire.WireError):
            wire.unpack(message)
        elapsed = time.perf_counter() - started
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert elapsed < 1.0
        assert peak < 20 * 1024 * 1024  # the header's own copy, nothing decoded from it


@pytest.mark.parametrize(
    "head",
    [
        b'{"kind": "x", "values": {}, "n": [' + b"0," * (wire.MAX_ITEMS + 1) + b"0]}",
        b'{"kind": "x", "values": {}, "n": [' + b"{}" * (wire.MAX_CONTAINERS + 1) + b"]}",
    ],
    ids=["items", "containers"],
)
def test_a_header_with_too_many_parts_is_refused(head: bytes) -> None:
    with pytest.raises(wire.WireError, match="too many parts"):
        wire.unpack(header_message(head))


def test_tensor_nodes_may_not_name_one_range_again_and_again() -> None:
    """200,000 nodes naming one 64 MiB range would make the parent copy 12 TB; the blob is a budget."""
    node = {"T": ["uint8", [64], 0, 64]}
    wire.unpack(forged({"l": [node]}))
    with pytest.raises(wire.WireError, match="more bytes than"):
        wire.unpack(forged({"l": [node, node]}))


def test_a_legitimate_big_result_still_decodes() -> None:
    """The bounds sit well above what pack writes for the biggest values a job may return."""
    plain = [[i, float(i), str(i)] for i in range(40_000)]
    back = round_trip([plain, [torch.ones(1000)] * 100])
    assert isinstance(back, list) and back[0] == plain
    assert all(same(t, torch.ones(1000)) for t in back[1])


@given(
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=30),
    st.booleans(),
    st.sampled_from(["utf-8", "utf-16", "utf-16-le", "utf-32"]),
)
@settings(max_examples=400, deadline=None)
def test_the_walk_over_strings_is_skipped_only_where_it_would_change_nothing(
    text: str, ascii_only: bool, encoding: str
) -> None:
    """``unpack`` cleans only a header whose text can hold an unclean string: whatever the text, escaped or
    raw, in any encoding json.loads reads, the result is the fully walked one."""
    body = {"kind": "x", "stdout": text, text: [text, {"k": text}], "values": {"v": {"s": text}}}
    head = json.dumps(body, ensure_ascii=ascii_only).encode(encoding, "surrogatepass")
    header, values = wire.unpack(header_message(head))
    walked = wire.clean(json.loads(head))
    walked_values = walked.pop("values")
    assert header == walked
    assert values == {"v": walked_values["v"]["s"]}
