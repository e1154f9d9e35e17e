"""A drafter folder as specprobe sees it: config.json, safetensors headers, shard index, stray files.

Loading never fails on bad input: every defect becomes a ``FileIssue`` that the files and safety rule
families turn into findings. Only regular files inside the folder are opened, and only for reading.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from specprobe.checkpoint.safetensors_header import HeaderError, SafetensorsHeader, TensorEntry, read_header
from specprobe.hfconfig import ConfigError, load_config_json

# Pickle containers: engines may unpickle them, specprobe never does.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".ckpt")
# Trainer by-products that are pickles but not weights.
NON_WEIGHT_PICKLES = ("training_args.bin", "optimizer.pt", "scheduler.pt", "scaler.pt")


@dataclass(frozen=True)
class FileIssue:
    """A defect found while reading the folder; ``kind`` selects the rule that reports it."""

    kind: str
    message: str
    location: str | None = None


@dataclass(frozen=True)
class TensorInfo:
    """Where a tensor lives and what its header says."""

    file: str
    entry: TensorEntry

    @property
    def shape(self) -> tuple[int, ...]:
        return self.entry.shape

    @property
    def dtype(self) -> str:
        return self.entry.dtype


@dataclass
class Checkpoint:
    root: Path
    config_raw: dict[str, Any] | None = None
    safetensors_files: list[str] = field(default_factory=list)
    pickle_weight_files: list[str] = field(default_factory=list)
    python_files: list[str] = field(default_factory=list)
    escaping_symlinks: list[tuple[str, str]] = field(default_factory=list)
    index_file: str | None = None
    headers: dict[str, SafetensorsHeader] = field(default_factory=dict)
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    issues: list[FileIssue] = field(default_factory=list)

    def path_of(self, info: TensorInfo) -> Path:
        return self.root / info.file

    def issue(self, kind: str, message: str, location: str | None = None) -> None:
        self.issues.append(FileIssue(kind, message, location))


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def _hf_cache_blob(target: Path, root: Path) -> bool:
    """Hub cache snapshots link every file to ../../blobs/<hash>: that is the cache, not an escape."""
    repo_dir = root.parent.parent
    return root.parent.name == "snapshots" and _inside(target, repo_dir / "blobs")


def _scan(ckpt: Checkpoint, root: Path) -> set[str]:
    """List the top-level entries; returns the names of regular files that may be opened."""
    readable: set[str] = set()
    with os.scandir(root) as entries:
        names = sorted(entry.name for entry in entries)
    for name in names:
        path = root / name
        if path.is_symlink():
            target = path.resolve()
            if not _inside(target, root) and not _hf_cache_blob(target, root):
                ckpt.escaping_symlinks.append((name, str(target)))
                continue
        if path.is_file():
            readable.add(name)
    return readable


def _load_config(ckpt: Checkpoint, readable: set[str]) -> None:
    path = ckpt.root / "config.json"
    if "config.json" not in readable:
        reason = (
            "config.json is missing" if not path.exists() and not path.is_symlink() else "config.json is not readable"
        )
        ckpt.issue("config-missing", reason, "config.json")
        return
    try:
        ckpt.config_raw = load_config_json(path)
    except ConfigError as exc:
        ckpt.issue("config-invalid", str(exc), "config.json")


def _read_headers(ckpt: Checkpoint, files: list[str]) -> None:
    owner: dict[str, str] = {}
    for name in files:
        try:
            header = read_header(ckpt.root / name)
        except HeaderError as exc:
            kind = exc.kind if exc.kind in ("truncated", "header") else "header"
            ckpt.issue(kind, f"{name}: {exc}", name)
            continue
        ckpt.headers[name] = header
        for problem in header.problems:
            ckpt.issue(
                problem.kind, f"{name}: {problem.message}", f"{name}:{problem.tensor}" if problem.tensor else name
            )
        for tensor_name, entry in header.tensors.items():
            if tensor_name in owner:
                ckpt.issue(
                    "duplicate",
                    f"tensor {tensor_name!r} is stored in both {owner[tensor_name]} and {name}",
                    f"{name}:{tensor_name}",
                )
                continue
            owner[tensor_name] = name
            ckpt.tensors[tensor_name] = TensorInfo(file=name, entry=entry)


def _shard_name_escapes(shard: str) -> bool:
    pure = PurePosixPath(shard.replace("\\", "/"))
    return pure.is_absolute() or ".." in pure.parts or len(pure.parts) != 1 or shard.startswith("~")


def _read_index(ckpt: Checkpoint, index_name: str, readable: set[str]) -> list[str] | None:
    """Validate the shard index; returns the shard files to read, or None when the index is unusable."""
    ckpt.index_file = index_name
    try:
        index = json.loads((ckpt.root / index_name).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        ckpt.issue("index-invalid", f"{index_name} is not valid JSON ({exc})", index_name)
        return None
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()
    ):
        ckpt.issue("index-invalid", f"{index_name} has no weight_map of tensor name -> shard file", index_name)
        return None
    shards: list[str] = []
    for shard in sorted(set(weight_map.values())):
        if _shard_name_escapes(shard):
            ckpt.issue("path-escape", f"{index_name} points at {shard!r}, outside the checkpoint folder", index_name)
        elif shard not in readable:
            ckpt.issue("shard-missing", f"shard {shard} listed in {index_name} is missing", shard)
        else:
            shards.append(shard)
    _read_headers(ckpt, shards)
    for tensor_name, shard in weight_map.items():
        if shard not in ckpt.headers:
            continue
        if tensor_name not in ckpt.headers[shard].tensors:
            ckpt.issue(
                "index-tensor-missing",
                f"{index_name} places {tensor_name!r} in {shard}, whose header does not contain it",
                f"{shard}:{tensor_name}",
            )
    for tensor_name, info in ckpt.tensors.items():
        if tensor_name not in weight_map:
            ckpt.issue("index-unlisted", f"tensor {tensor_name!r} in {info.file} is not in {index_name}", info.file)
    return shards


def load_checkpoint(root: Path) -> Checkpoint:
    """Read everything check needs from ``root`` (an existing folder) without writing anything."""
    root = root.resolve()
    ckpt = Checkpoint(root=root)
    readable = _scan(ckpt, root)
    _load_config(ckpt, readable)
    ckpt.python_files = sorted(n for n in readable if n.endswith(".py"))
    ckpt.safetensors_files = sorted(n for n in readable if n.endswith(".safetensors"))
    ckpt.pickle_weight_files = sorted(
        n for n in readable if n.endswith(PICKLE_SUFFIXES) and n not in NON_WEIGHT_PICKLES
    )
    indexes = sorted(n for n in readable if n.endswith(".safetensors.index.json"))
    if indexes:
        shards = _read_index(ckpt, indexes[0], readable)
        if shards is None:
            _read_headers(ckpt, ckpt.safetensors_files)
    else:
        _read_headers(ckpt, ckpt.safetensors_files)
    if not ckpt.safetensors_files and not indexes:
        if ckpt.pickle_weight_files:
            ckpt.issue(
                "pickle-only",
                "weights are only in pickle files (" + ", ".join(ckpt.pickle_weight_files) + "); not loaded",
                ckpt.pickle_weight_files[0],
            )
        else:
            ckpt.issue("no-weights", "no .safetensors weights in the folder")
    elif ckpt.pickle_weight_files:
        ckpt.issue(
            "pickle-ignored",
            "pickle files beside the safetensors weights are not read: " + ", ".join(ckpt.pickle_weight_files),
            ckpt.pickle_weight_files[0],
        )
    return ckpt
