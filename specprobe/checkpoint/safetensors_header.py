"""Header-only safetensors reader: the 8-byte length, the JSON header, and bounded reads of small tensors.

The format (https://github.com/huggingface/safetensors#format): a little-endian u64 header length N,
N bytes of JSON mapping tensor names to {dtype, shape, data_offsets}, then the data region. Offsets
are relative to the start of the data region. Only json and struct are used so that the cost of a
check does not grow with the checkpoint size and no code from the file can run.
"""

from __future__ import annotations

import itertools
import json
import math
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

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

# The safetensors library refuses headers above 100 MB; a larger length is a corrupt or hostile file.
MAX_HEADER_BYTES = 100 * 1024 * 1024


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
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise HeaderError("header", f"tensor {name!r} has an invalid shape {shape!r}")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offsets)
        or offsets[0] > offsets[1]
    ):
        raise HeaderError("header", f"tensor {name!r} has invalid data_offsets {offsets!r}")
    return dtype, tuple(shape), offsets[0], offsets[1]


def read_header(path: Path) -> SafetensorsHeader:
    """Read and validate the header of ``path``; raises HeaderError when nothing can be trusted."""
    try:
        with path.open("rb") as handle:
            file_size = path.stat().st_size
            prefix = handle.read(8)
            if len(prefix) < 8:
                raise HeaderError("truncated", f"{file_size} bytes, too short to hold a header length")
            (header_len,) = struct.unpack("<Q", prefix)
            if header_len > MAX_HEADER_BYTES or header_len > file_size - 8:
                raise HeaderError(
                    "header",
                    f"header length {header_len} does not fit in the {file_size}-byte file",
                )
            raw_header = handle.read(header_len)
    except OSError as exc:
        raise HeaderError("unreadable", f"cannot read: {exc.strerror or exc}") from None
    try:
        parsed = json.loads(raw_header.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HeaderError("header", f"header is not valid UTF-8 JSON ({exc})") from None
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
            header.problems.append(HeaderProblem("dtype", f"tensor {name!r} has unknown dtype {dtype!r}", name))
        elif math.prod(shape) * size != end - begin:
            header.problems.append(
                HeaderProblem(
                    "size",
                    f"tensor {name!r}: shape {list(shape)} x {dtype} is {math.prod(shape) * size} bytes, "
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
    with path.open("rb") as handle:
        handle.seek(entry.begin)
        data = handle.read(entry.nbytes)
    if len(data) != entry.nbytes:
        raise HeaderError("truncated", f"tensor {entry.name!r} is cut short")
    return data


def read_tensor(entry: TensorEntry, path: Path, *, max_bytes: int) -> np.ndarray:
    """A small tensor as numpy (BF16 widened to float32); numpy is imported only here."""
    import numpy as np

    np_dtype = NUMPY_DTYPES.get(entry.dtype)
    if np_dtype is None:
        raise HeaderError("dtype", f"tensor {entry.name!r} has dtype {entry.dtype}, which cannot be read")
    array = np.frombuffer(read_raw(entry, path, max_bytes=max_bytes), dtype=np.dtype(np_dtype))
    if entry.dtype == "BF16":
        array = bf16_to_float32(array)
    return array.reshape(entry.shape)


def bf16_to_float32(words: np.ndarray) -> np.ndarray:
    """bfloat16 is the upper half of a float32: shift the 16-bit words into place."""
    import numpy as np

    return (words.astype(np.uint32) << 16).view(np.float32)
