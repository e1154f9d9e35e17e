"""Deep family (``--deep``): reads tensor data in bounded chunks for NaN/Inf and all-zero tensors.

An all-zero lm_head or fc is an untrained head; NaN/Inf anywhere poisons every draft.

The cost is bounded whatever the folder holds: holes of a sparse file (SEEK_DATA/SEEK_HOLE) are
zeros by definition and are counted without being read, and the whole scan stops after
``MAX_SCAN_SECONDS`` or ``MAX_SCAN_BYTES`` read, saying how much it read and which tensors it did not
finish (a tensor not read to its end is never called all-zero).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

from specprobe.checkpoint.safetensors_header import DTYPE_SIZES, NUMPY_DTYPES, TensorEntry, bf16_to_float32
from specprobe.findings import Finding, Severity
from specprobe.rules import rule
from specprobe.untrusted.files import open_regular

if TYPE_CHECKING:
    from pathlib import Path

    from specprobe.context import CheckContext

FAMILY = "deep"
CHUNK_BYTES = 8 * 1024 * 1024
# A 70B target's EAGLE-3 drafter is ~2-4 GB in BF16 and scans in seconds from a local disk; the bounds
# stop a hostile (or network-mounted, multi-hundred-GB) folder well inside a CI step's patience.
MAX_SCAN_SECONDS = 20.0
MAX_SCAN_BYTES = 32 * 1024**3
_FLOAT_DTYPES = ("F16", "BF16", "F32", "F64")
_SEEK_DATA = getattr(os, "SEEK_DATA", None)
_SEEK_HOLE = getattr(os, "SEEK_HOLE", None)

NONFINITE = rule(
    "DEEP-NONFINITE",
    FAMILY,
    Severity.ERROR,
    "a weight tensor holds NaN or Inf values",
    "https://github.com/SafeAILab/EAGLE/blob/bfeb532e689a3db4e1a9081c7c83219c9385e84a/eagle/model/cnets.py",
)
ALL_ZERO = rule(
    "DEEP-ALL-ZERO",
    FAMILY,
    Severity.ERROR,
    "a weight tensor is all zeros (an untrained or unsaved head)",
    "https://github.com/sgl-project/sglang/issues/27829",
)
INCOMPLETE = rule(
    "DEEP-INCOMPLETE",
    FAMILY,
    Severity.INFO,
    "--deep stopped at its time or byte bound: the tensors it did not finish were not checked for NaN/zeros",
    "https://man7.org/linux/man-pages/man2/lseek.2.html",
)


@dataclass
class ScanBudget:
    """What the whole ``--deep`` scan may still spend, and what it has spent."""

    deadline: float
    bytes_left: int
    bytes_read: int = 0
    hole_bytes: int = 0

    @classmethod
    def start(cls, seconds: float | None = None, max_bytes: int | None = None) -> ScanBudget:
        """A fresh budget: the module's bounds unless given (read at call time, so tests can lower them)."""
        seconds = MAX_SCAN_SECONDS if seconds is None else seconds
        max_bytes = MAX_SCAN_BYTES if max_bytes is None else max_bytes
        return cls(deadline=time.monotonic() + seconds, bytes_left=max_bytes)

    def exhausted(self) -> bool:
        return self.bytes_left <= 0 or time.monotonic() > self.deadline


@dataclass
class TensorStats:
    nonfinite: int = 0
    nonzero: int = 0
    complete: bool = True
    hole_bytes: int = 0  # bytes of the tensor that lie in holes of a sparse file: zeros, not read
    scanned_bytes: int = 0
    errors: list[str] = field(default_factory=list)


def _data_segments(handle: IO[bytes], begin: int, end: int) -> Iterator[tuple[int, int]]:
    """The [start, stop) ranges of ``begin..end`` that hold data; the rest are holes (zeros).

    Without SEEK_DATA support (or on a filesystem that does not report holes) the whole range is data.
    """
    if _SEEK_DATA is None or _SEEK_HOLE is None:
        yield begin, end
        return
    fd = handle.fileno()
    position = begin
    while position < end:
        try:
            data = os.lseek(fd, position, _SEEK_DATA)
        except OSError:  # ENXIO: only a hole remains up to the end of the file
            return
        if data >= end:
            return
        try:
            hole = os.lseek(fd, data, _SEEK_HOLE)
        except OSError:
            hole = end
        stop = min(max(hole, data + 1), end)
        yield data, stop
        position = stop


def scan_tensor(path: Path, entry: TensorEntry, budget: ScanBudget | None = None) -> TensorStats:
    """Count NaN/Inf and non-zero values, reading at most CHUNK_BYTES at a time and only data extents."""
    # numpy (~0.1 s) only for --deep: check reads headers alone.
    import numpy as np  # noqa: PLC0415

    budget = budget or ScanBudget.start()
    stats = TensorStats()
    itemsize = DTYPE_SIZES[entry.dtype]
    dtype = np.dtype(NUMPY_DTYPES[entry.dtype])
    step = CHUNK_BYTES - CHUNK_BYTES % itemsize
    with open_regular(path) as handle:
        for data_start, data_stop in _data_segments(handle, entry.begin, entry.end):
            # Whole elements only: widen the extent to element boundaries (the extra bytes are zeros).
            start = data_start - (data_start - entry.begin) % itemsize
            stop = min(entry.end, data_stop + (-(data_stop - entry.begin)) % itemsize)
            handle.seek(start)
            position = start
            while position < stop:
                if budget.exhausted():
                    stats.complete = False
                    return stats
                data = handle.read(min(step, stop - position))
                if not data:
                    stats.complete = False
                    stats.errors.append(f"the file ends at byte {position}")
                    return stats
                position += len(data)
                budget.bytes_left -= len(data)
                budget.bytes_read += len(data)
                stats.scanned_bytes += len(data)
                values = np.frombuffer(data[: len(data) - len(data) % itemsize], dtype=dtype)
                if entry.dtype == "BF16":
                    values = bf16_to_float32(values)
                stats.nonfinite += int(np.count_nonzero(~np.isfinite(values)))
                stats.nonzero += int(np.count_nonzero(values))
    stats.hole_bytes = max(0, entry.nbytes - stats.scanned_bytes)
    budget.hole_bytes += stats.hole_bytes
    return stats


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


def run(ctx: CheckContext) -> Iterator[Finding]:
    if not ctx.deep:
        return
    if ctx.checkpoint.files.folder is None:
        # A drafter read on the hub: only headers and d2t/t2d travel, never the weights --deep scans.
        yield INCOMPLETE.finding(
            f"--deep reads tensor data, and specprobe does not download the weights of {ctx.checkpoint.files.label} "
            "from the hub: no tensor was checked for NaN/zeros",
            hint=f"run --deep on a local copy (`hf download {ctx.checkpoint.files.label}`)",
        )
        return
    truncated = {i.location.split(":")[0] for i in ctx.checkpoint.issues if i.kind == "truncated" and i.location}
    budget = ScanBudget.start()
    unfinished: list[str] = []
    total = 0
    for canonical, info in sorted(ctx.layout.tensors.items()):
        if info.dtype not in _FLOAT_DTYPES or info.file in truncated or info.entry.nbytes == 0:
            continue
        total += info.entry.nbytes
        if budget.exhausted():
            unfinished.append(canonical)
            continue
        try:
            stats = scan_tensor(ctx.checkpoint.path_of(info), info.entry, budget)
        except OSError as exc:  # the file vanished or was swapped since the folder was read
            unfinished.append(f"{canonical} ({exc.strerror or exc})")
            continue
        location = ctx.layout.location(canonical)
        if stats.nonfinite:
            yield NONFINITE.finding(
                f"{canonical} has {stats.nonfinite} NaN/Inf values",
                location=location,
                hint="the training run diverged or the export is corrupt",
            )
        if not stats.complete:
            unfinished.append(canonical)
            continue
        if stats.nonzero == 0:
            # A zero bias is a legitimate initial value; a zero weight matrix or norm is not.
            severity = Severity.WARNING if canonical.endswith(".bias") else Severity.ERROR
            sparse = (
                f" ({_size(stats.hole_bytes)} of its {_size(info.entry.nbytes)} are holes of a sparse file, "
                "zeros counted without reading)"
                if stats.hole_bytes
                else ""
            )
            yield ALL_ZERO.finding(
                f"{canonical} is all zeros{sparse}",
                location=location,
                severity=severity,
                hint="export the trained weights; this tensor was never written",
            )
    if unfinished:
        yield INCOMPLETE.finding(
            f"--deep read {_size(budget.bytes_read)} of {_size(total)} of tensor data "
            f"(plus {_size(budget.hole_bytes)} of sparse-file holes counted as zeros) within its bounds of "
            f"{MAX_SCAN_SECONDS:g} s and {_size(MAX_SCAN_BYTES)}; not checked to the end: {', '.join(unfinished)}",
            hint="run --deep where the weights are on a local disk, or check those tensors with the training code",
        )
