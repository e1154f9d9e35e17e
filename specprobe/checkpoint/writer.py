"""A small numpy-only safetensors writer for building real-format checkpoints (tests, demo, benchmarks).

Tensors given only as a dtype and shape become holes in a sparse file: a Kimi-sized drafter costs a
header and the few bytes really written, yet every reader sees a file of the true size.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from specprobe.checkpoint.safetensors_header import DTYPE_SIZES

_FROM_NUMPY: dict[str, str] = {
    "bool": "BOOL",
    "uint8": "U8",
    "int8": "I8",
    "int16": "I16",
    "uint16": "U16",
    "float16": "F16",
    "int32": "I32",
    "uint32": "U32",
    "float32": "F32",
    "int64": "I64",
    "uint64": "U64",
    "float64": "F64",
}


@dataclass(frozen=True)
class TensorSpec:
    """A tensor by dtype and shape; ``data`` (raw little-endian values) or None for a sparse hole."""

    dtype: str
    shape: tuple[int, ...]
    data: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * DTYPE_SIZES[self.dtype]


def as_spec(value: np.ndarray | TensorSpec) -> TensorSpec:
    if isinstance(value, TensorSpec):
        return value
    array = np.ascontiguousarray(value)
    dtype = _FROM_NUMPY.get(array.dtype.name)
    if dtype is None:
        raise ValueError(f"no safetensors dtype for numpy {array.dtype}")
    return TensorSpec(dtype=dtype, shape=tuple(array.shape), data=array.astype(array.dtype.newbyteorder("<")))


def float32_to_bf16(values: np.ndarray) -> TensorSpec:
    """Round-toward-zero bfloat16 words of ``values`` (the upper half of each float32)."""
    words = (np.ascontiguousarray(values, dtype="<f4").view("<u4") >> 16).astype("<u2")
    return TensorSpec(dtype="BF16", shape=tuple(values.shape), data=words)


def write_safetensors(
    path: Path, tensors: Mapping[str, np.ndarray | TensorSpec], metadata: Mapping[str, str] | None = None
) -> int:
    """Write ``tensors`` to ``path`` in safetensors layout; returns the file size in bytes."""
    specs = {name: as_spec(value) for name, value in tensors.items()}
    header: dict[str, Any] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    offset = 0
    placed: list[tuple[int, TensorSpec]] = []
    for name, spec in specs.items():
        header[name] = {"dtype": spec.dtype, "shape": list(spec.shape), "data_offsets": [offset, offset + spec.nbytes]}
        placed.append((offset, spec))
        offset += spec.nbytes
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    # Pad with spaces so the data region starts 8-byte aligned, as the reference writer does.
    encoded += b" " * (-len(encoded) % 8)
    data_start = 8 + len(encoded)
    total = data_start + offset
    with path.open("wb") as handle:
        handle.write(struct.pack("<Q", len(encoded)))
        handle.write(encoded)
        for start, spec in placed:
            if spec.data is None:
                continue
            raw = np.ascontiguousarray(spec.data).tobytes()
            if len(raw) != spec.nbytes:
                raise ValueError(f"data of {len(raw)} bytes for a {spec.dtype}{list(spec.shape)} tensor")
            handle.seek(data_start + start)
            handle.write(raw)
        handle.truncate(total)
    return total


def write_sharded(
    folder: Path,
    shards: Mapping[str, Mapping[str, np.ndarray | TensorSpec]],
    index_name: str = "model.safetensors.index.json",
) -> None:
    """Write several shards and the index that maps every tensor to its shard."""
    weight_map: dict[str, str] = {}
    total = 0
    for shard_name, tensors in shards.items():
        total += write_safetensors(folder / shard_name, tensors)
        weight_map.update(dict.fromkeys(tensors, shard_name))
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (folder / index_name).write_text(json.dumps(index, indent=2), encoding="utf-8")
