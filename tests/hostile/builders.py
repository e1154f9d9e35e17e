"""Hostile drafter folders built from a valid one made by the project's writer.

Each builder damages one thing the way the fuzz classes do: sparse multi-GB tensors, nesting, giant
integers, symlink loops, FIFOs, control characters in names and values.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

from specprobe.checkpoint.safetensors_header import read_header
from specprobe.demo.fixtures import DraftSpec, build_draft


def valid_draft(folder: Path) -> Path:
    """A small valid EAGLE-3 drafter (config.json + model.safetensors)."""
    return build_draft(folder, DraftSpec())


def split_safetensors(path: Path) -> tuple[dict[str, Any], bytes]:
    """The header (as a dict) and the data region of a safetensors file."""
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + length]), raw[8 + length :]


def write_safetensors_raw(
    path: Path, header: dict[str, Any] | bytes, data: bytes, *, total_size: int | None = None
) -> None:
    """Write a header and data; ``total_size`` extends the file sparsely (no blocks allocated)."""
    encoded = header if isinstance(header, bytes) else json.dumps(header).encode()
    with path.open("wb") as handle:
        handle.write(struct.pack("<Q", len(encoded)))
        handle.write(encoded)
        handle.write(data)
    if total_size is not None:
        os.truncate(path, total_size)


def make_sparse_tensor(folder: Path, name: str = "lm_head.weight", gigabytes: int = 100) -> int:
    """Move ``name`` to the end of model.safetensors with a shape of about ``gigabytes`` GB, stored as a
    hole: the file's size says 100 GB, the disk holds kilobytes. Returns the tensor's byte size."""
    path = folder / "model.safetensors"
    header, data = split_safetensors(path)
    entry = header.pop(name)
    begin, end = entry["data_offsets"]
    # Drop the tensor's old bytes and shift the tensors after it, keeping the data region tiled.
    data = data[:begin] + data[end:]
    for other in header.values():
        if isinstance(other, dict) and "data_offsets" in other and other["data_offsets"][0] >= end:
            other["data_offsets"] = [o - (end - begin) for o in other["data_offsets"]]
    rows = entry["shape"][0]
    cols = (gigabytes * 10**9) // (rows * 4)
    nbytes = rows * cols * 4
    header[name] = {"dtype": "F32", "shape": [rows, cols], "data_offsets": [len(data), len(data) + nbytes]}
    encoded = json.dumps(header).encode()
    write_safetensors_raw(path, encoded, data, total_size=8 + len(encoded) + len(data) + nbytes)
    read_header(path)  # still a well-formed file
    return nbytes


def nested(depth: int, leaf: str = "0") -> str:
    return "[" * depth + leaf + "]" * depth


SENTINEL = "sentinel-created-by-input-code"


class TouchOnUnpickle:
    """Unpickling this object creates a file: the proof that something executed pickle code."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (Path.touch, (self.path,))


def folder_fingerprint(folder: Path) -> dict[str, str]:
    """Names, link targets, sizes, mtimes and content hashes under ``folder`` (links not followed;
    multi-GB sparse files hashed by their first MiB plus size and mtime)."""
    import hashlib
    import stat

    state: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            rel = str(path.relative_to(folder))
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                state[rel] = "link:" + str(path.readlink())
            elif stat.S_ISREG(info.st_mode):
                with path.open("rb") as handle:
                    digest = hashlib.sha256(handle.read(2**20)).hexdigest()
                state[rel] = f"{info.st_size}:{info.st_mtime_ns}:{digest}"
            else:
                state[rel] = f"mode:{stat.S_IFMT(info.st_mode)}"
    return state
