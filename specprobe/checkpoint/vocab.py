"""Reading the draft-to-target vocabulary mapping (d2t offsets, t2d mask) with bounded reads.

Values come back as plain Python sequences (``array``/``bytes``): a 32k-entry d2t is checked in
milliseconds, and check's path stays free of numpy's import cost.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass

from specprobe.checkpoint.folder import Checkpoint
from specprobe.checkpoint.layout import Layout
from specprobe.checkpoint.safetensors_header import HeaderError

# d2t is draft_vocab x 8 bytes and t2d target_vocab x 1 byte: real ones are at most a few MiB (262k-token
# vocabularies); the bound keeps a hostile header from costing more memory than the check itself.
MAX_VOCAB_MAP_BYTES = 8 * 1024 * 1024

# array typecodes of the integer and boolean dtypes (safetensors data is little-endian).
_TYPECODES = {"BOOL": "B", "U8": "B", "I8": "b", "I16": "h", "U16": "H", "I32": "i", "U32": "I", "I64": "q", "U64": "Q"}


@dataclass
class VocabMapRead:
    """One mapping tensor: its values, or why they could not be read."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    location: str
    values: Sequence[int] | None = None
    error: str | None = None


def decode_integers(data: bytes, dtype: str) -> Sequence[int]:
    """Little-endian integer/bool tensor bytes as a sequence of Python ints."""
    if dtype in ("BOOL", "U8"):
        return data
    values = array(_TYPECODES[dtype])
    if len(data) % values.itemsize:
        raise ValueError(f"{len(data)} bytes is not a whole number of {dtype} values")
    values.frombytes(data)
    if sys.byteorder == "big":
        values.byteswap()
    return values


def read_vocab_tensor(ckpt: Checkpoint, layout: Layout, name: str) -> VocabMapRead | None:
    """The tensor ``name`` (``d2t`` or ``t2d``) as integers, or None when the checkpoint lacks it.

    Non-integer dtypes are described but not decoded: the dtype rule reports them.
    """
    info = layout.get(name)
    if info is None:
        return None
    result = VocabMapRead(name=name, dtype=info.dtype, shape=info.shape, location=layout.location(name))
    if info.dtype not in _TYPECODES:
        return result
    try:
        result.values = decode_integers(ckpt.read_tensor_bytes(info, max_bytes=MAX_VOCAB_MAP_BYTES), info.dtype)
    except (HeaderError, OSError, ValueError) as exc:
        result.error = str(exc)
    return result
