"""A drafter folder as specprobe sees it: config.json, safetensors headers, shard index, stray files.

Loading never fails on bad input: every defect becomes a ``FileIssue`` that the files and safety rule
families turn into findings. Only regular files inside the folder are opened, and only for reading.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from specprobe.checkpoint.safetensors_header import (
    MAX_HEADER_BYTES,
    HeaderError,
    SafetensorsHeader,
    TensorEntry,
    read_header,
    read_header_from,
)
from specprobe.findings import SpecprobeError
from specprobe.hfconfig import MAX_CONFIG_BYTES, ConfigError, parse_config_bytes
from specprobe.modelfiles import LocalFiles, ModelFiles, hub_ref, locate
from specprobe.untrusted.files import UntrustedInputError, exists, expand_user, is_dir, parse_json

# Pickle containers: engines may unpickle them, specprobe never does.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".ckpt")
# Trainer by-products that are pickles but not weights.
NON_WEIGHT_PICKLES = ("training_args.bin", "optimizer.pt", "scheduler.pt", "scaler.pt")
# A shard index is ~100 bytes per tensor: the largest public checkpoints (DeepSeek-V3, Kimi-K2, ~100k
# tensors) need about 10-15 MB; a drafter's is under 2 kB.
MAX_INDEX_BYTES = 16 * 1024 * 1024
# All headers of one folder together: a drafter has one or a few files; the bound keeps a folder of
# thousands of hostile files from costing more than one large real checkpoint's headers.
MAX_TOTAL_HEADER_BYTES = 4 * MAX_HEADER_BYTES
# Entries looked at below the top level when searching for symlink loops and escapes (no file there is
# read; engines read only the top level of a drafter folder).
MAX_WALK_ENTRIES = 10_000


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
    """What was read of one drafter. ``files`` is where it lives (a folder, or a hub repository at one
    commit); ``root`` is the folder for a local drafter and the model's label otherwise."""

    root: Path
    files: ModelFiles = field(default=None)  # type: ignore[assignment]  # set by load_checkpoint
    config_raw: dict[str, Any] | None = None
    safetensors_files: list[str] = field(default_factory=list)
    pickle_weight_files: list[str] = field(default_factory=list)
    python_files: list[str] = field(default_factory=list)
    escaping_symlinks: list[tuple[str, str]] = field(default_factory=list)
    index_file: str | None = None
    config_nonfinite: tuple[str, ...] = ()  # NaN/Infinity literals config.json used
    headers: dict[str, SafetensorsHeader] = field(default_factory=dict)
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    issues: list[FileIssue] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.files is None:
            self.files = LocalFiles(self.root)

    def path_of(self, info: TensorInfo) -> Path:
        """The file holding ``info`` on this machine (a local drafter only: see ``files.folder``)."""
        return self.root / info.file

    def read_tensor_bytes(self, info: TensorInfo, *, max_bytes: int) -> bytes:
        """One small tensor's bytes (d2t/t2d) with one bounded read, from disk or by HTTP Range."""
        entry = info.entry
        if entry.nbytes > max_bytes:
            raise HeaderError(
                "size", f"tensor {entry.name!r} is {entry.nbytes} bytes, above the {max_bytes}-byte limit"
            )
        data = self.files.read_range(info.file, entry.begin, entry.nbytes)
        if len(data) != entry.nbytes:
            raise HeaderError("truncated", f"tensor {entry.name!r} is cut short")
        return data

    def read_header(self, name: str, *, max_header_bytes: int) -> SafetensorsHeader:
        """The header of shard ``name``; HeaderError when nothing of it can be trusted."""
        if self.files.folder is not None:
            return read_header(self.files.folder / name, max_header_bytes=max_header_bytes)
        size = self.files.listing().get(name)
        if size is None:
            raise HeaderError("unreadable", "cannot read: the hub does not give its size")
        try:
            return read_header_from(
                lambda begin, length: self.files.read_range(name, begin, length),
                size,
                Path(name),
                max_header_bytes=max_header_bytes,
            )
        except OSError as exc:
            raise HeaderError("unreadable", f"cannot read: {exc.strerror or exc}") from None

    def issue(self, kind: str, message: str, location: str | None = None) -> None:
        self.issues.append(FileIssue(kind, message, location))


def _hf_cache_blob(target: Path, root: Path) -> bool:
    """Hub cache snapshots link every file to ../../blobs/<hash>: that is the cache, not an escape."""
    repo_dir = root.parent.parent
    return root.parent.name == "snapshots" and target.is_relative_to(repo_dir / "blobs")


def _symlink_target(path: Path) -> Path | None:
    """Where a symlink finally points, or None when the chain loops (or is too long to follow)."""
    try:
        return path.resolve(strict=False)
    except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError on a loop, 3.13 OSError(ELOOP)
        return None


def _check_symlink(ckpt: Checkpoint, root: Path, relative: str) -> bool:
    """Record a looping or escaping symlink; True when the link may be followed."""
    path = root / relative
    target = _symlink_target(path)
    if target is None:
        ckpt.issue(
            "file-unreadable",
            f"{relative} is a symlink loop: neither specprobe nor an engine can open it",
            relative,
        )
        return False
    if not target.is_relative_to(root) and not _hf_cache_blob(target, root):
        ckpt.escaping_symlinks.append((relative, str(target)))
        return False
    return True


def _walk_below(ckpt: Checkpoint, root: Path, folders: list[str]) -> None:
    """Look for symlink loops and escapes in subfolders without following any link; bounded."""
    seen = 0
    pending = list(folders)
    while pending:
        folder = pending.pop()
        try:
            with os.scandir(root / folder) as entries:
                for entry in entries:
                    seen += 1
                    if seen > MAX_WALK_ENTRIES:
                        return
                    relative = f"{folder}/{entry.name}"
                    if entry.is_symlink():
                        _check_symlink(ckpt, root, relative)
                    elif entry.is_dir(follow_symlinks=False):
                        pending.append(relative)
        except OSError:
            continue  # a folder that vanished or cannot be listed holds nothing an engine reads


def _scan(ckpt: Checkpoint, root: Path) -> set[str]:
    """List the top-level entries; returns the names of regular files that may be opened.

    A name is only a candidate here: every read opens it again through ``open_regular``, which refuses
    anything that is not a regular file by then (a file may vanish or be swapped after this listing).
    """
    readable: set[str] = set()
    folders: list[str] = []
    with os.scandir(root) as entries:
        names = sorted(entry.name for entry in entries)
    for name in names:
        path = root / name
        try:
            is_link = path.is_symlink()
            if is_link and not _check_symlink(ckpt, root, name):
                continue
            mode = path.stat().st_mode if is_link else path.lstat().st_mode
        except OSError:
            continue  # vanished since the listing: nothing to read
        if stat.S_ISREG(mode):
            readable.add(name)
        elif stat.S_ISDIR(mode) and not is_link:
            folders.append(name)
    _walk_below(ckpt, root, folders)
    return readable


def _load_config(ckpt: Checkpoint, readable: set[str]) -> None:
    if "config.json" not in readable:
        if any(issue.location == "config.json" for issue in ckpt.issues) or any(
            name == "config.json" for name, _ in ckpt.escaping_symlinks
        ):
            return  # already reported as a symlink loop or escape
        folder = ckpt.files.folder
        path = folder / "config.json" if folder is not None else None
        reason = (
            "config.json is missing"
            if path is None or (not path.exists() and not path.is_symlink())
            else "config.json is not a regular file (a folder, FIFO or device)"
        )
        ckpt.issue("config-missing", reason, "config.json")
        return
    try:
        parsed = parse_config_bytes(ckpt.files.read_file("config.json", max_bytes=MAX_CONFIG_BYTES))
    except FileNotFoundError:
        ckpt.issue("config-invalid", "config.json is missing", "config.json")
        return
    except OSError as exc:
        ckpt.issue("config-invalid", f"config.json cannot be read: {exc.strerror or exc}", "config.json")
        return
    except UntrustedInputError as exc:
        ckpt.issue("config-invalid", str(exc), "config.json")
        return
    except ConfigError as exc:
        ckpt.issue("config-invalid", str(exc), "config.json")
        return
    ckpt.config_raw = parsed.value
    ckpt.config_nonfinite = parsed.nonfinite_literals
    if parsed.nonfinite_literals:
        ckpt.issue(
            "config-nonfinite",
            f"config.json uses {', '.join(parsed.nonfinite_literals)}, which is not JSON; Python's json, and so "
            "vLLM and SGLang, read it as a float, strict JSON parsers refuse the file",
            "config.json",
        )


def _read_headers(ckpt: Checkpoint, files: list[str]) -> None:
    owner: dict[str, str] = {}
    budget = MAX_TOTAL_HEADER_BYTES
    for name in files:
        if budget <= 0:
            ckpt.issue(
                "header",
                f"{name}: not read; the folder's headers together exceed {MAX_TOTAL_HEADER_BYTES} bytes",
                name,
            )
            continue
        try:
            header = ckpt.read_header(name, max_header_bytes=min(MAX_HEADER_BYTES, budget))
        except HeaderError as exc:
            kind = exc.kind if exc.kind in ("truncated", "header") else "header"
            ckpt.issue(kind, f"{name}: {exc}", name)
            continue
        ckpt.headers[name] = header
        budget -= header.data_start
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
        index = parse_json(ckpt.files.read_file(index_name, max_bytes=MAX_INDEX_BYTES), what=index_name).value
    except OSError as exc:
        ckpt.issue("index-invalid", f"{index_name} cannot be read: {exc.strerror or exc}", index_name)
        return None
    except UntrustedInputError as exc:
        ckpt.issue("index-invalid", str(exc), index_name)
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


def draft_folder(draft_dir: Path | str) -> Path:
    """``draft_dir`` with ``~`` expanded, checked to be an existing folder (a one-line SpecprobeError, exit 2,
    otherwise): what `fix` accepts as the drafter before reading anything in it. A hub id is accepted when
    its weights are in the local Hugging Face cache (fix copies them into the new folder)."""
    path = expand_user(draft_dir)
    if not exists(path):
        ref = hub_ref(str(draft_dir))
        if ref is not None:
            files = locate(str(draft_dir), role="draft")
            if files.folder is not None:
                return files.folder
            raise SpecprobeError(
                f"draft {ref} is on the hub, where specprobe reads only headers; fix copies the drafter's weights "
                f"into --out, so they must be on this machine first: `hf download {ref.repo_id}`"
            )
        raise SpecprobeError(f"draft folder {path} does not exist")
    if not is_dir(path):
        raise SpecprobeError(f"draft {path} is not a folder")
    return path


def load_checkpoint(source: Path | ModelFiles) -> Checkpoint:
    """Read everything check needs from ``source`` (an existing folder, or a model's files wherever they
    are) without writing anything."""
    if isinstance(source, Path):
        source = LocalFiles(source.resolve())
    folder = source.folder
    if folder is not None:
        root = folder.resolve()
        ckpt = Checkpoint(root=root, files=source)
        readable = _scan(ckpt, root)
    else:
        ckpt = Checkpoint(root=Path(source.label), files=source)
        readable = set(source.listing())
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
