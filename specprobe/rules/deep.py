"""Deep family (``--deep``): reads tensor data in bounded chunks for NaN/Inf and all-zero tensors.

An all-zero lm_head or fc is an untrained head; NaN/Inf anywhere poisons every draft.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specprobe.checkpoint.safetensors_header import NUMPY_DTYPES, TensorEntry, bf16_to_float32
from specprobe.findings import Finding, Severity
from specprobe.rules import rule

if TYPE_CHECKING:
    from pathlib import Path

    from specprobe.context import CheckContext

FAMILY = "deep"
CHUNK_BYTES = 8 * 1024 * 1024
_FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")

NONFINITE = rule(
    "DEEP-NONFINITE",
    FAMILY,
    Severity.ERROR,
    "a weight tensor holds NaN or Inf values",
    "https://github.com/SafeAILab/EAGLE/blob/main/eagle/model/cnets.py",
)
ALL_ZERO = rule(
    "DEEP-ALL-ZERO",
    FAMILY,
    Severity.ERROR,
    "a weight tensor is all zeros (an untrained or unsaved head)",
    "https://github.com/sgl-project/sglang/issues/27829",
)


@dataclass
class TensorStats:
    nonfinite: int = 0
    nonzero: int = 0


def scan_tensor(path: Path, entry: TensorEntry) -> TensorStats:
    """Count NaN/Inf and non-zero values, reading at most CHUNK_BYTES at a time."""
    import numpy as np

    stats = TensorStats()
    itemsize = 2 if entry.dtype in ("F16", "BF16") else 4 if entry.dtype == "F32" else 8
    dtype = np.dtype(NUMPY_DTYPES[entry.dtype])
    step = CHUNK_BYTES - CHUNK_BYTES % itemsize
    with path.open("rb") as handle:
        handle.seek(entry.begin)
        remaining = entry.nbytes
        while remaining > 0:
            data = handle.read(min(step, remaining))
            if not data:
                break
            remaining -= len(data)
            values = np.frombuffer(data[: len(data) - len(data) % itemsize], dtype=dtype)
            if entry.dtype == "BF16":
                values = bf16_to_float32(values)
            stats.nonfinite += int(np.count_nonzero(~np.isfinite(values)))
            stats.nonzero += int(np.count_nonzero(values))
    return stats


def run(ctx: CheckContext) -> Iterator[Finding]:
    if not ctx.deep:
        return
    truncated = {i.location.split(":")[0] for i in ctx.checkpoint.issues if i.kind == "truncated" and i.location}
    for canonical, info in sorted(ctx.layout.tensors.items()):
        if info.dtype not in _FLOAT_DTYPES or info.file in truncated or info.entry.nbytes == 0:
            continue
        stats = scan_tensor(ctx.checkpoint.path_of(info), info.entry)
        location = ctx.layout.location(canonical)
        if stats.nonfinite:
            yield NONFINITE.finding(
                f"{canonical} has {stats.nonfinite} NaN/Inf values",
                location=location,
                hint="the training run diverged or the export is corrupt",
            )
        if stats.nonzero == 0:
            # A zero bias is a legitimate initial value; a zero weight matrix or norm is not.
            severity = Severity.WARNING if canonical.endswith(".bias") else Severity.ERROR
            yield ALL_ZERO.finding(
                f"{canonical} is all zeros",
                location=location,
                severity=severity,
                hint="export the trained weights; this tensor was never written",
            )
