"""Writing a fix plan: a new folder built in a temporary folder beside ``--out`` and renamed at the end.

The drafter and the target are only read. ``--out`` must be new (or an empty folder) and may not lie
inside the drafter or the target; everything is written into ``.<name>.specprobe-fix-*`` beside it,
and only a complete, proven copy is renamed to ``--out``: an interruption or a failed proof leaves
nothing behind. ``write_shadow`` writes the same files with every copied tensor left as a hole, in a
private temporary folder, so a plan can be checked without writing its data anywhere the user sees.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from specprobe.checkpoint.rewrite import PAGE, OutTensor, write_streamed
from specprobe.findings import SpecprobeError
from specprobe.fix.model import FixPlan
from specprobe.untrusted.files import expand_user, is_dir


@dataclass
class Written:
    """The copy on disk: its folder and, per tensor, the file and absolute byte offsets of its data."""

    folder: Path
    offsets: dict[str, tuple[str, int, int]] = field(default_factory=dict)


def validate_out(out: Path, *, draft_dir: Path, target_dir: Path | None) -> Path:
    """The resolved ``--out``; SpecprobeError (exit 2, one line) when it may not be written."""
    out = expand_user(out)
    try:
        resolved = out.resolve()
    except (OSError, RuntimeError) as exc:
        raise SpecprobeError(f"--out {out}: {exc}") from None
    for label, given in (("the drafter folder", draft_dir), ("the target folder", target_dir)):
        if given is None:
            continue
        root = given.resolve()
        if resolved.is_relative_to(root):
            raise SpecprobeError(f"--out {out} is inside {label} {root}; fix never writes into its inputs")
        if root.is_relative_to(resolved):
            raise SpecprobeError(f"--out {out} contains {label} {root}; give a new folder")
    if out.is_symlink():
        raise SpecprobeError(f"--out {out} is a symlink; give a new folder")
    if out.exists():
        if not is_dir(out):
            raise SpecprobeError(f"--out {out} exists and is not a folder")
        if any(out.iterdir()):
            raise SpecprobeError(f"--out {out} exists and is not empty; fix never overwrites")
    if not is_dir(resolved.parent):
        raise SpecprobeError(f"--out {out}: the folder {resolved.parent} does not exist")
    return resolved


# The only tensors whose data check reads (without --deep): a shadow copy writes these for real.
_READ_BY_CHECK = frozenset({"d2t", "t2d"})


def out_tensors(plan: FixPlan, file: str, *, shadow: bool = False) -> list[OutTensor]:
    tensors = []
    for t in plan.tensors:
        if t.file != file:
            continue
        hole = shadow and t.data is None and t.name not in _READ_BY_CHECK
        tensors.append(
            OutTensor(name=t.name, dtype=t.dtype, shape=t.shape, ranges=() if hole else t.ranges, data=t.data,
                      shadow=hole)
        )
    return tensors


def write_into(
    plan: FixPlan, folder: Path, *, shadow: bool = False, after_tensor: Callable[[str], None] | None = None
) -> Written:
    """Write config.json, the weight files (and index), and the copied plain files into ``folder``."""
    written = Written(folder)
    (folder / "config.json").write_text(json.dumps(plan.config, indent=2) + "\n", encoding="utf-8")
    weight_map: dict[str, str] = {}
    total = 0
    for file, fmt in sorted(plan.files.items()):
        tensors = out_tensors(plan, file, shadow=shadow)
        if not tensors and plan.index_file is not None:
            continue
        result = write_streamed(
            folder / file, tensors, {"format": fmt}, after_tensor=after_tensor, page_offset=_page_offset(tensors)
        )
        total += result.size
        for name, (begin, end) in result.offsets.items():
            written.offsets[name] = (file, begin, end)
            weight_map[name] = file
    if plan.index_file is not None:
        index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
        (folder / plan.index_file).write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    if not shadow:
        for name in plan.copied_files:
            shutil.copyfile(plan.draft_dir / name, folder / name, follow_symlinks=False)
    return written


def _page_offset(tensors: list[OutTensor]) -> int | None:
    """Where in a page the data region should start so that every streamed tensor keeps its source's
    position within a page; None when the streamed tensors do not all move by the same amount."""
    wanted: int | None = None
    position = 0  # offset within the new data region
    for tensor in tensors:
        if not tensor.ranges:
            position += tensor.nbytes
            continue
        for source in tensor.ranges:
            start = (source.begin - position) % PAGE
            if wanted is not None and start != wanted:
                return None
            wanted = start
            position += source.nbytes
    return wanted


def staging_folder(out: Path) -> Path:
    """A new temporary folder beside ``out`` (same file system, so the final rename is atomic)."""
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.specprobe-fix-", dir=out.parent))


def publish(staging: Path, out: Path) -> None:
    """Rename the finished copy to ``out`` (an absent path or an empty folder)."""
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp's 0700 is for the staging phase only
    if out.exists():
        out.rmdir()  # empty, checked before writing; rmdir refuses if anything appeared since
    staging.rename(out)


def discard(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def write_shadow(plan: FixPlan) -> tuple[Path, Written]:
    """The plan's files with copied tensors as holes, in a private temporary folder (removed by the caller)."""
    folder = Path(tempfile.mkdtemp(prefix="specprobe-fix-plan-"))
    try:
        return folder, write_into(plan, folder, shadow=True)
    except BaseException:
        discard(folder)
        raise
