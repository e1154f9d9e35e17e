"""Reading the draft-to-target vocabulary mapping (d2t offsets, t2d mask) with bounded reads."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specprobe.checkpoint.folder import Checkpoint
from specprobe.checkpoint.layout import Layout
from specprobe.checkpoint.safetensors_header import HeaderError, read_tensor

# d2t is draft_vocab x 8 bytes and t2d target_vocab x 1 byte: a few MiB even for 1M-token vocabularies.
MAX_VOCAB_MAP_BYTES = 64 * 1024 * 1024


@dataclass
class VocabMapRead:
    """One mapping tensor: its values, or why they could not be read."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    location: str
    values: np.ndarray | None = None
    error: str | None = None


def read_vocab_tensor(ckpt: Checkpoint, layout: Layout, name: str) -> VocabMapRead | None:
    """The tensor ``name`` (``d2t`` or ``t2d``) as numpy, or None when the checkpoint lacks it."""
    info = layout.get(name)
    if info is None:
        return None
    result = VocabMapRead(name=name, dtype=info.dtype, shape=info.shape, location=layout.location(name))
    try:
        result.values = read_tensor(info.entry, ckpt.path_of(info), max_bytes=MAX_VOCAB_MAP_BYTES)
    except (HeaderError, OSError, ValueError) as exc:
        result.error = str(exc)
    return result
