"""The result format: JSON for structure, raw bytes for tensors, nothing that can run code when read.

A message is ``[8-byte length][4-byte header length][JSON header][tensor bytes]``.  Values are encoded
as small tagged JSON nodes; a tensor node names its dtype, shape and byte range in the blob, and the
decoder checks all three (a dtype from a fixed list, sizes that multiply out to the range, a range
inside the blob) before copying the bytes into a fresh tensor.  Decoding builds fresh plain
``torch.Tensor`` objects, ``int``/``float``/``bool``/``str``/``None``/``complex`` and
``list``/``tuple``/``dict`` of them, so nothing a child returns is ever called by the parent.

Raw bytes rather than safetensors: both are data only, but every child is a fresh fork that pays a
copy-on-write fault for each page it first touches, and safetensors' Python path (numpy, ctypes)
cost a child several times what one ``tobytes``/``frombuffer`` per tensor does.

torch is imported lazily, so the web process can import graders.sandbox without it.
"""

from __future__ import annotations

import functools
import json
import math
import re
import socket
import struct
from typing import Any

MAX_DEPTH = 32
MAX_NODES = 200_000
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
# What a header may decode to, checked on its bytes before ``json.loads`` builds anything: 16 MiB of JSON
# (an output-capped stdout, messages and 200,000 value nodes take a few), at most this many arrays and
# objects (every ``[`` and ``{``, those inside strings included, so the count only errs on the safe side)
# and this many items (every ``,``). A 64 MiB header of empty lists once made the parent build 22 million
# of them (1.6 GB); now it is refused by three ``bytes.count`` calls.
MAX_HEADER_BYTES = 16 * 1024 * 1024
MAX_CONTAINERS = 2 * MAX_NODES + 100_000
MAX_ITEMS = 4 * MAX_NODES
ALIGN = 64  # every tensor's bytes start at a multiple of this, so any dtype can view them in place
DTYPES = ("float16 bfloat16 float32 float64 complex64 complex128 uint8 int8 int16 int32 int64 bool").split()


class WireError(ValueError):
    """A message that is malformed, too large or too deep."""


class _Encoder:
    def __init__(self) -> None:
        self.blobs: list[bytes] = []
        self.size = 0
        self.nodes = 0

    def encode(self, value: Any, depth: int = 0) -> Any:
        import numpy as np
        import torch

        self.nodes += 1
        if depth > MAX_DEPTH or self.nodes > MAX_NODES:
            raise WireError("the value is nested too deeply or has too many parts")
        if value is None:
            return {"n": None}
        if type(value) is bool or isinstance(value, np.bool_):
            return {"b": bool(value)}
        if isinstance(value, int | np.integer):
            return {"i": str(int(value))}
        if isinstance(value, float | np.floating):
            return {"f": repr(float(value))}
        if isinstance(value, complex | np.complexfloating):
            value = complex(value)
            return {"c": [repr(value.real), repr(value.imag)]}
        if isinstance(value, str):
            return {"s": str.__str__(value)}
        if isinstance(value, np.ndarray):
            value = torch.from_numpy(np.array(value, copy=True))
        if isinstance(value, torch.Tensor):
            view = _view_of_storage(value)
            return {"T": self._add_tensor(value)} if view is None else {"V": [self._add_tensor(view[0]), *view[1:]]}
        if isinstance(value, torch.dtype):
            return {"dt": str(value).removeprefix("torch.")}
        if isinstance(value, list | tuple):  # torch.Size is a tuple
            tag = "l" if isinstance(value, list) else "t"
            return {tag: [self.encode(v, depth + 1) for v in list.__iter__(list(value))]}
        if isinstance(value, dict):
            items = []
            for k, v in dict.items(value):
                if not isinstance(k, str | int) or isinstance(k, bool):
                    raise WireError(f"dict keys must be str or int, not {type(k).__name__}")
                items.append([self.encode(k, depth + 1), self.encode(v, depth + 1)])
            return {"d": items}
        raise WireError(f"a value of type {type(value).__name__} cannot be returned (use tensors and plain data)")

    def _add_tensor(self, value: Any) -> list[Any]:
        import torch

        if (
            type(value) is torch.Tensor
            and value.layout == torch.strided
            and value.is_cpu
            and value.is_contiguous()
            and not value.is_conj()
            and not value.is_neg()
            and value.dtype in _numpy_dtypes()
        ):  # the usual tensor (a case's, a result's): its bytes as they are, at a fifth of the general path's cost
            return self._add_bytes(value.dtype, value.shape, value.detach().numpy().tobytes(), None)
        with torch._C.DisableTorchFunction():
            plain = torch.Tensor.detach(value)
            if plain.layout != torch.strided:
                raise WireError("only dense tensors can be returned")
            if plain.is_conj():
                plain = plain.resolve_conj()
            if plain.is_neg():
                plain = plain.resolve_neg()
            plain = plain.to("cpu").as_subclass(torch.Tensor)
            order = _dense_order(plain)
            plain = (plain if order is None else plain.permute(order)).contiguous()
        # ``contiguous`` keeps a tensor whose size-1 dims have other strides (a 1x1 matrix's diagonal has
        # stride 2); the byte view needs stride 1, so such a tensor is copied first.
        flat = plain.reshape(-1)
        flat = flat if flat.stride(0) == 1 else torch.Tensor.clone(flat, memory_format=torch.contiguous_format)
        data = flat.view(torch.uint8).numpy().tobytes() if plain.numel() else b""
        return self._add_bytes(plain.dtype, plain.shape, data, order)

    def _add_bytes(self, dtype: Any, shape: Any, data: bytes, order: list[int] | None) -> list[Any]:
        name = str(dtype).removeprefix("torch.")
        if name not in DTYPES:
            raise WireError(f"tensors of dtype {name} cannot be returned")
        offset = self.size
        self.blobs.append(data)
        self.blobs.append(bytes(-len(data) % ALIGN))
        self.size += len(data) + len(self.blobs[-1])
        node = [name, list(shape), offset, len(data)]
        return node if order is None else [*node, order]


@functools.cache
def _numpy_dtypes() -> frozenset[Any]:
    """The wire's dtypes that ``Tensor.numpy()`` can hand over as they are (every one but bfloat16)."""
    import torch

    return frozenset(getattr(torch, name) for name in DTYPES if name != "bfloat16")


def _dense_order(tensor: Any) -> list[int] | None:
    """For a transposed or permuted view of dense memory (``x.t()``, ``x.permute(2, 0, 1)``), the order of its
    dims from the slowest in memory to the fastest, so the view crosses the wire as a view and a drill's
    non-contiguous case stays non-contiguous; None for anything else (sent as a contiguous copy)."""
    if tensor.dim() < 2 or tensor.is_contiguous() or 0 in tensor.shape:
        return None
    order = sorted(range(tensor.dim()), key=lambda d: (-tensor.stride(d), d))
    return order if tensor.permute(order).is_contiguous() else None


VIEW_STORAGE_BYTES = 1 << 16  # a slice's whole storage crosses the wire up to this size (or twice its own bytes)


def _view_of_storage(tensor: Any) -> tuple[Any, list[int], list[int], int] | None:
    """For a slice of a small storage (``x[::2]``, ``m[2]``): the storage as a flat tensor, and the slice's
    shape, strides and offset in it, so what a drill asks about a view (``untyped_storage()``, ``stride()``,
    ``storage_offset()``) holds on the other side; None for a tensor that owns its storage (the usual case),
    a permuted view (``_dense_order``), or a slice of a storage too large to send whole (sent as a copy)."""
    import torch

    if type(tensor) is not torch.Tensor or tensor.layout != torch.strided or not tensor.is_cpu:
        return None
    if tensor.is_conj() or tensor.is_neg() or str(tensor.dtype).removeprefix("torch.") not in DTYPES:
        return None
    storage = tensor.untyped_storage()
    size = storage.nbytes()
    if tensor.storage_offset() == 0 and size == tensor.nbytes:
        return None
    if size % tensor.element_size() or size > max(VIEW_STORAGE_BYTES, 2 * tensor.nbytes):
        return None
    if tensor.numel() > size // tensor.element_size():  # an ``expand``ed view repeats elements: sent as a copy
        return None
    with torch._C.DisableTorchFunction():
        flat = torch.empty(0, dtype=tensor.dtype).set_(storage, 0, (size // tensor.element_size(),), (1,))
    return flat, list(tensor.shape), list(tensor.stride()), int(tensor.storage_offset())


def pack(header: dict[str, Any], values: dict[str, Any] | None = None) -> bytes:
    """Encode a header dict plus named values (tensors anywhere inside) into one message body."""
    enc = _Encoder()
    body = dict(header)
    body["values"] = {k: enc.encode(v) for k, v in (values or {}).items()}
    head = json.dumps(body, allow_nan=False, separators=(",", ":")).encode()
    return b"".join([struct.pack("<I", len(head)), head, *enc.blobs])


def unpack(data: bytes | bytearray) -> tuple[dict[str, Any], dict[str, Any]]:
    """Inverse of pack: (header without "values", decoded values).  Raises WireError on anything odd.

    This is the trust boundary for what a child sends: whatever goes wrong while decoding (a shape torch
    refuses, an allocation that fails, a NaN where pack never writes one) is a WireError, so the pool can
    make it the submission's verdict; no other exception may escape into the parent.
    """
    try:
        return _unpack(data)
    except WireError:
        raise
    except Exception as exc:  # noqa: BLE001 - hostile bytes: any failure is the sender's fault
        raise WireError(f"undecodable result ({type(exc).__name__})") from None


def _refuse_constant(name: str) -> float:
    raise WireError(f"{name} is not a number pack() ever writes")


def _unpack(data: bytes | bytearray) -> tuple[dict[str, Any], dict[str, Any]]:
    if len(data) < 4:
        raise WireError("short message")
    (head_len,) = struct.unpack_from("<I", data)
    if head_len > len(data) - 4:
        raise WireError("bad header length")
    if head_len > MAX_HEADER_BYTES:  # before the header is copied out of the message
        raise WireError(f"the header's {head_len} bytes are over the {MAX_HEADER_BYTES} byte limit")
    head = bytes(data[4 : 4 + head_len])
    _check_header_size(head)
    try:
        text = head.decode(json.detect_encoding(head), "surrogatepass")  # what json.loads(bytes) decodes
        body = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise WireError(f"bad header: {exc}") from None
    if _UNCLEAN.search(text) or _UNCLEAN_ESCAPE.search(text):  # else no string in it can hold one
        body = clean(body)
    if not isinstance(body, dict):
        raise WireError("the header is not an object")
    raw_values = body.pop("values", {})
    if not isinstance(raw_values, dict):
        raise WireError("values must be an object")
    dec = _Decoder(memoryview(data)[4 + head_len :])
    return body, {str(k): dec.decode(v) for k, v in raw_values.items()}


def _check_header_size(head: bytes) -> None:
    """Refuse a header whose JSON would decode to more than a message ever holds (see MAX_HEADER_BYTES).

    Counted on the bytes, in any of the encodings ``json.loads`` accepts: ``[``, ``{`` and ``,`` are one
    byte each in UTF-8 and a byte of their own (beside zeros) in UTF-16 and UTF-32.
    """
    if head.count(b"[") + head.count(b"{") > MAX_CONTAINERS or head.count(b",") > MAX_ITEMS:
        raise WireError("the header holds too many parts")


class _Decoder:
    def __init__(self, blob: memoryview) -> None:
        self.blob = blob
        self.nodes = 0
        self.copied = 0  # tensor bytes copied so far: never more than the blob holds

    def decode(self, node: Any, depth: int = 0) -> Any:
        self.nodes += 1
        if depth > MAX_DEPTH or self.nodes > MAX_NODES:
            raise WireError("the value is nested too deeply or has too many parts")
        if not isinstance(node, dict) or len(node) != 1:
            raise WireError("malformed value node")
        ((tag, arg),) = node.items()
        if tag == "n":
            return None
        if tag == "b" and isinstance(arg, bool):
            return arg
        if tag == "i" and isinstance(arg, str) and len(arg) < 5000:
            return int(arg)
        if tag == "f" and isinstance(arg, str):
            return _float(arg)
        if tag == "c" and isinstance(arg, list) and len(arg) == 2:
            return complex(_float(arg[0]), _float(arg[1]))
        if tag == "s" and isinstance(arg, str):
            return arg  # cleaned with the rest of the header (``clean``)
        if tag == "T" and isinstance(arg, list) and len(arg) == 4:
            return self._tensor(*arg)
        if tag == "T" and isinstance(arg, list) and len(arg) == 5:  # a permuted view: the bytes are in ``order``
            order = arg[4]
            if not isinstance(order, list) or sorted(order) != list(range(len(order))) or len(order) != len(arg[1]):
                raise WireError("malformed tensor order")
            return self._tensor(*arg[:4]).permute([order.index(d) for d in range(len(order))])
        if tag == "V" and isinstance(arg, list) and len(arg) == 4 and isinstance(arg[0], list) and len(arg[0]) == 4:
            return self._view(self._tensor(*arg[0]), *arg[1:])
        if tag == "dt" and isinstance(arg, str):
            return _dtype(arg)
        if tag in ("l", "t") and isinstance(arg, list):
            items = [self.decode(v, depth + 1) for v in arg]
            return items if tag == "l" else tuple(items)
        if tag == "d" and isinstance(arg, list):
            out: dict[Any, Any] = {}
            for pair in arg:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise WireError("malformed dict item")
                key = self.decode(pair[0], depth + 1)
                if not isinstance(key, str | int):
                    raise WireError("dict keys must be str or int")
                out[key] = self.decode(pair[1], depth + 1)
            return out
        raise WireError(f"unknown value node {tag!r}")

    def _tensor(self, dtype_name: Any, shape: Any, offset: Any, size: Any) -> Any:
        """A fresh tensor from a checked byte range: the dtype, shape and range must all agree."""
        import torch

        if dtype_name not in DTYPES:
            raise WireError(f"unknown tensor dtype {dtype_name!r}")
        if not isinstance(shape, list) or len(shape) > MAX_DEPTH * 2:
            raise WireError("malformed tensor shape")
        if not all(type(n) is int and n >= 0 for n in (*shape, offset, size)):
            raise WireError("malformed tensor shape or range")
        dtype = getattr(torch, dtype_name)
        if math.prod(shape) * dtype.itemsize != size or offset % ALIGN or offset + size > len(self.blob):
            raise WireError("the tensor's shape, dtype and bytes do not agree")
        if size == 0:
            return torch.empty(shape, dtype=dtype)
        # pack writes every tensor's bytes once: nodes that share a range (one 64 MiB range named by
        # 200,000 nodes) would make the parent copy far more than the child sent.
        self.copied += size
        if self.copied > len(self.blob):
            raise WireError("the tensors name more bytes than the message holds")
        raw = bytearray(self.blob[offset : offset + size])  # a copy the tensor owns, writable
        if dtype_name == "bool" and raw.translate(None, b"\x00\x01"):
            raise WireError("a bool tensor holds bytes other than 0 and 1")  # undefined behaviour in ATen
        return torch.frombuffer(raw, dtype=dtype).reshape(shape)

    @staticmethod
    def _view(flat: Any, shape: Any, strides: Any, offset: Any) -> Any:
        """A slice of a decoded flat storage: torch checks it stays inside; no more elements than the storage."""
        import torch

        if flat.dim() != 1 or not isinstance(shape, list) or not isinstance(strides, list):
            raise WireError("malformed tensor view")
        if len(shape) != len(strides) or len(shape) > MAX_DEPTH * 2:
            raise WireError("malformed tensor view")
        if not all(type(n) is int and n >= 0 for n in (*shape, *strides, offset)):
            raise WireError("malformed tensor view")
        if math.prod(shape) > max(flat.numel(), 1):
            raise WireError("a tensor view with more elements than its storage")
        try:
            return torch.as_strided(flat, shape, strides, offset)
        except RuntimeError:
            raise WireError("a tensor view outside its storage") from None


def _float(text: Any) -> float:
    if not isinstance(text, str) or len(text) > 64:
        raise WireError("malformed float")
    try:
        value = float(text)
    except ValueError:
        raise WireError("malformed float") from None
    return value if not math.isnan(value) else math.nan


# What no text from a child may hold: unpaired surrogates (however they were sent: an escaped ``ud800``,
# the raw bytes ED A0 80, a UTF-16 header; ``json.loads`` lets all three through), which no encoder
# accepts, so the verdict could not be printed as JSON or stored; NUL, which PostgreSQL's ``jsonb``
# refuses; and the other C0 and C1 control characters and DEL (a terminal's escape sequences), except
# newline and tab.
_UNCLEAN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
# The JSON escapes that can decode to such a character (``\b``, ``\f``, ``\r``, any ``\uXXXX``): a header
# text holding neither one of them nor an unclean character itself decodes to clean strings only, so the
# walk over every decoded string (half of a runner's decoding of its cases) is skipped.
_UNCLEAN_ESCAPE = re.compile(r"\\[bfru]")
REPLACEMENT = "\ufffd"


def clean_text(text: str) -> str:
    """``text`` with every character in ``_UNCLEAN`` replaced by U+FFFD (one regex scan when none is)."""
    if _UNCLEAN.search(text) is None:
        return text
    return _UNCLEAN.sub(REPLACEMENT, text)


def clean(value: Any) -> Any:
    """A decoded header with every string in it (dict keys too) passed through ``clean_text``."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, dict):
        return {clean(k): clean(v) for k, v in value.items()}
    return value


def _dtype(name: str) -> Any:
    """A dtype by name from torch's own table: never ``getattr(torch, name)``, which imports any lazily
    loaded submodule it is asked for (``_inductor``: hundreds of modules in the parent)."""
    value = _dtypes().get(name) if isinstance(name, str) else None
    if value is None:
        raise WireError(f"unknown dtype {name!r}")
    return value


@functools.cache
def _dtypes() -> dict[str, Any]:
    import torch

    return {str(d).removeprefix("torch."): d for d in vars(torch).values() if isinstance(d, torch.dtype)}


# ---------------------------------------------------------------------------------------------------------
# Framing over a stream socket


def send_message(sock: socket.socket, data: bytes) -> None:
    sock.sendall(struct.pack("<Q", len(data)) + data)


def recv_exact(sock: socket.socket, size: int) -> bytearray:
    """Exactly ``size`` bytes, read into one buffer of that size (a 64 MiB message costs 64 MiB, not the
    two or three times that growing a buffer and copying it out took)."""
    buf = bytearray(size)
    view = memoryview(buf)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:], min(size - got, 1 << 20))
        if not n:
            raise EOFError("the peer closed the channel")
        got += n
    view.release()
    return buf


def recv_message(sock: socket.socket, max_bytes: int = MAX_MESSAGE_BYTES) -> bytearray:
    (size,) = struct.unpack("<Q", recv_exact(sock, 8))
    if size > max_bytes:
        raise WireError(f"message of {size} bytes is over the {max_bytes} byte limit")
    return recv_exact(sock, size)
