"""Header-only safetensors reader: the 8-byte length, the JSON header, and bounded reads of small tensors.

The format (https://github.com/huggingface/safetensors#format): a little-endian u64 header length N,
N bytes of JSON mapping tensor names to {dtype, shape, data_offsets}, then the data region. Offsets
are relative to the start of the data region. Only json and struct are used so that the cost of a
check does not grow with the checkpoint size and no code from the file can run.
"""

from __future__ import annotations

import itertools
import math
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specprobe.untrusted.files import UntrustedInputError, open_regular, parse_json

if TYPE_CHECKING:
    import numpy as np

# Bytes per element for every dtype the safetensors format defines.
DTYPE_SIZES: dict[str, int] = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E5M2": 1,
    "F8_E4M3": 1,
    "F8_E8M0": 1,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "I64": 8,
    "U64": 8,
    "F64": 8,
    "C64": 8,
}

INTEGER_DTYPES = frozenset({"U8", "I8", "I16", "U16", "I32", "U32", "I64", "U64"})

# numpy equivalents for the dtypes whose values specprobe reads (d2t/t2d, --deep statistics).
NUMPY_DTYPES: dict[str, str] = {
    "BOOL": "?",
    "U8": "u1",
    "I8": "i1",
    "I16": "<i2",
    "U16": "<u2",
    "I32": "<i4",
    "U32": "<u4",
    "I64": "<i8",
    "U64": "<u8",
    "F16": "<f2",
    "F32": "<f4",
    "F64": "<f8",
    "BF16": "<u2",  # read as raw 16-bit words and widened to float32 by the caller
}

# The safetensors library refuses headers above 100 MB; specprobe reads at most 8 MiB. A header is about
# 100 bytes per tensor: 8 MiB holds ~80,000 tensors, where a drafter has tens and one shard of the largest
# public checkpoints a few thousand. Parsing costs ~15x the header in memory and ~0.3 s per MB (a 75 MB
# header took 23 s and 1.1 GB RSS), so the bound keeps a hostile length from costing more than the check.
SAFETENSORS_MAX_HEADER_BYTES = 100_000_000
MAX_HEADER_BYTES = 8 * 1024 * 1024
# Sizes and offsets are u64 in the format (usize in the reference loader).
_U64_LIMIT = 2**64


class HeaderError(Exception):
    """The file is not a readable safetensors file; ``kind`` says which rule applies."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class TensorEntry:
    """One tensor as the header declares it; ``begin``/``end`` are absolute file offsets."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.begin


@dataclass
class HeaderProblem:
    """A defect inside an otherwise parseable header (kind: dtype, size, offsets, overlap, truncated)."""

    kind: str
    message: str
    tensor: str | None = None


@dataclass
class SafetensorsHeader:
    path: Path
    file_size: int
    data_start: int
    tensors: dict[str, TensorEntry] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    problems: list[HeaderProblem] = field(default_factory=list)


def _parse_entry(name: str, raw: Any) -> tuple[str, tuple[int, ...], int, int]:
    if not isinstance(raw, dict):
        raise HeaderError("header", f"tensor {name!r} is not described by an object")
    dtype = raw.get("dtype")
    shape = raw.get("shape")
    offsets = raw.get("data_offsets")
    if not isinstance(dtype, str):
        raise HeaderError("header", f"tensor {name!r} has no dtype")
    if not isinstance(shape, list) or not all(_is_u64(d) for d in shape):
        raise HeaderError("header", f"tensor {name!r} has an invalid shape {_short(shape)}")
    if _checked_nbytes(shape, DTYPE_SIZES.get(dtype, 1)) is None:
        raise HeaderError("header", f"tensor {name!r}: shape {_short(shape)} overflows 64 bits")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(_is_u64(o) for o in offsets)
        or offsets[0] > offsets[1]
    ):
        raise HeaderError("header", f"tensor {name!r} has invalid data_offsets {_short(offsets)}")
    return dtype, tuple(shape), offsets[0], offsets[1]


def _checked_nbytes(shape: list[int], itemsize: int) -> int | None:
    """Element count x itemsize, multiplied left to right as the reference loader's checked
    multiplication does; None once it leaves 64 bits (also keeps a hostile rank from building a
    million-digit product)."""
    total = itemsize
    for dim in shape:
        total *= dim
        if total >= _U64_LIMIT:
            return None
    return total


def _is_u64(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _U64_LIMIT


def _short(value: Any, limit: int = 80) -> str:
    """A value quoted in a message, cut short: a hostile shape can be a megabyte long."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def read_header(path: Path, *, max_header_bytes: int = MAX_HEADER_BYTES) -> SafetensorsHeader:
    """Read and validate the header of ``path``; raises HeaderError when nothing can be trusted.

    Only a regular file is opened (``open_regular``); a header longer than ``max_header_bytes`` is
    refused from its 8-byte length, before it is read.
    """
    try:
        with open_regular(path) as handle:
            file_size = os.fstat(handle.fileno()).st_size

            def read_at(begin: int, length: int) -> bytes:
                handle.seek(begin)
                return handle.read(length)

            return read_header_from(read_at, file_size, path, max_header_bytes=max_header_bytes)
    except OSError as exc:
        raise HeaderError("unreadable", f"cannot read: {exc.strerror or exc}") from None


def read_header_from(
    read_at: Callable[[int, int], bytes], file_size: int, path: Path, *, max_header_bytes: int = MAX_HEADER_BYTES
) -> SafetensorsHeader:
    """The header of a file of ``file_size`` bytes whose bytes ``read_at(begin, length)`` returns (a local
    file, or a hub file read by HTTP Range): the length is read and bounded before the header is.
    ``path`` names the file in the result. OSError from ``read_at`` is left to the caller."""
    prefix = read_at(0, 8) if file_size >= 8 else b""
    if len(prefix) < 8:
        raise HeaderError("truncated", f"{file_size} bytes, too short to hold a header length")
    (header_len,) = struct.unpack("<Q", prefix)
    if header_len > file_size - 8 or header_len > SAFETENSORS_MAX_HEADER_BYTES:
        raise HeaderError(
            "header",
            f"header length {header_len} does not fit in the {file_size}-byte file",
        )
    if header_len > max_header_bytes:
        raise HeaderError(
            "header",
            f"header is {header_len} bytes, above the {max_header_bytes}-byte limit specprobe reads "
            "(~100 bytes per tensor; real shards hold a few thousand tensors at most)",
        )
    raw_header = read_at(8, header_len)
    if len(raw_header) != header_len:
        raise HeaderError("truncated", f"header cut short: {len(raw_header)} of {header_len} bytes")
    return parse_header(raw_header, file_size, path)


def parse_header(raw_header: bytes, file_size: int, path: Path) -> SafetensorsHeader:
    """Validate the JSON header ``raw_header`` of a ``file_size``-byte safetensors file."""
    header_len = len(raw_header)
    try:
        parsed = parse_json(raw_header, what="header").value
    except UntrustedInputError as exc:
        raise HeaderError("header", str(exc)) from None
    if not isinstance(parsed, dict):
        raise HeaderError("header", "header is not a JSON object")

    data_start = 8 + header_len
    header = SafetensorsHeader(path=path, file_size=file_size, data_start=data_start)
    metadata = parsed.pop("__metadata__", None)
    if isinstance(metadata, dict):
        header.metadata = metadata
    data_len = file_size - data_start
    for name, raw in parsed.items():
        dtype, shape, begin, end = _parse_entry(name, raw)
        entry = TensorEntry(name=name, dtype=dtype, shape=shape, begin=data_start + begin, end=data_start + end)
        header.tensors[name] = entry
        size = DTYPE_SIZES.get(dtype)
        if size is None:
            header.problems.append(HeaderProblem("dtype", f"tensor {name!r} has unknown dtype {_short(dtype)}", name))
        elif math.prod(shape) * size != end - begin:
            header.problems.append(
                HeaderProblem(
                    "size",
                    f"tensor {name!r}: shape {_short(list(shape))} x {dtype} is {math.prod(shape) * size} bytes, "
                    f"data_offsets span {end - begin}",
                    name,
                )
            )
        if end > data_len:
            header.problems.append(
                HeaderProblem(
                    "truncated",
                    f"tensor {name!r} ends at byte {end} of the data region, which holds only {data_len} bytes",
                    name,
                )
            )
    ordered = sorted(header.tensors.values(), key=lambda t: (t.begin, t.end))
    for before, after in itertools.pairwise(ordered):
        if after.begin < before.end and after.nbytes and before.nbytes:
            header.problems.append(
                HeaderProblem("overlap", f"tensors {before.name!r} and {after.name!r} share bytes", after.name)
            )
        elif after.begin > before.end:
            header.problems.append(
                HeaderProblem(
                    "gap",
                    f"{after.begin - before.end} unused bytes between {before.name!r} and {after.name!r}",
                    after.name,
                )
            )
    # The reference loader requires the tensors to tile the data region exactly.
    covered = max((t.end for t in ordered), default=data_start)
    first = min((t.begin for t in ordered), default=data_start)
    if first > data_start:
        header.problems.append(HeaderProblem("gap", f"{first - data_start} unused bytes before the first tensor"))
    if covered < file_size:
        header.problems.append(HeaderProblem("gap", f"{file_size - covered} bytes after the last tensor's data"))
    return header


def read_raw(entry: TensorEntry, path: Path, *, max_bytes: int) -> bytes:
    """One small tensor's bytes with a single bounded read (d2t/t2d)."""
    if entry.nbytes > max_bytes:
        raise HeaderError("size", f"tensor {entry.name!r} is {entry.nbytes} bytes, above the {max_bytes}-byte limit")
    with open_regular(path) as handle:
        handle.seek(entry.begin)
        data = handle.read(entry.nbytes)
    if len(data) != entry.nbytes:
        raise HeaderError("truncated", f"tensor {entry.name!r} is cut short")
    return data


def read_tensor(entry: TensorEntry, path: Path, *, max_bytes: int) -> np.ndarray:
    """A small tensor as numpy (BF16 widened to float32); numpy is imported only here."""
    # numpy (~0.1 s) only for reading tensor values: check reads headers and never imports it.
    import numpy as np  # noqa: PLC0415

    np_dtype = NUMPY_DTYPES.get(entry.dtype)
    if np_dtype is None:
        raise HeaderError("dtype", f"tensor {entry.name!r} has dtype {entry.dtype}, which cannot be read")
    array = np.frombuffer(read_raw(entry, path, max_bytes=max_bytes), dtype=np.dtype(np_dtype))
    if entry.dtype == "BF16":
        array = bf16_to_float32(array)
    return array.reshape(entry.shape)


def bf16_to_float32(words: np.ndarray) -> np.ndarray:
    """bfloat16 is the upper half of a float32: shift the 16-bit words into place."""
    import numpy as np  # noqa: PLC0415

    return (words.astype(np.uint32) << 16).view(np.float32)
