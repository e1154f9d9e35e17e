"""Runners for the drafter-side fixture kinds: ``check``, ``deep``, ``matrix`` and ``internal``.

``check``: the schema of the check corpus (tests/cases/*/case.json): ``draft`` (format, DraftSpec
fields and edits), ``files`` (file-level damage), ``target`` (target_config() keywords, or raw
config.json text) and ``check`` (run_check keywords: engine, method, deep, device). One addition:
``target_tensors`` ({name: {"shape": [...]}}) writes a header-true ``model.safetensors`` beside the
target's config.json, for rules that read the target's tensor names; and one more file op, ``link``
(``name`` -> ``to``, a symbolic link inside the drafter folder), the near miss of the corpus's
outside-pointing ``symlink``. The drafter is written with the real writer and checked in-process.

``deep``: a ``check`` case with ``--deep`` whose scan bounds are ``scan_bounds`` (``max_bytes``,
``max_seconds``) instead of the shipped ones (32 GiB, 20 s), which no test can exhaust.

``matrix``: ``specprobe matrix`` with ``args`` (engine, method, feature list, and target / draft as paths
relative to the case folder), through the command itself, in-process.

``internal``: ``check`` on the ``draft`` with one extra rule family that raises ``raises`` (an exception
class name from builtins) or, with ``raises`` null, returns no finding.

Every specprobe import of the fixtures is here, so a module move changes one file.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from typer.testing import CliRunner

from specprobe.checkpoint.writer import TensorSpec, write_safetensors
from specprobe.cli import app
from specprobe.demo.fixtures import write_json
from specprobe.findings import Finding
from specprobe.pipeline.check import run_check
from specprobe.rules import deep as deep_rules
from tests.check.casebuild import SENTINEL, apply_file_ops, build_draft_case, case_target_config, write_target_files

CHECK_KEYS = frozenset({"engine", "method", "deep", "device"})


def _build(case: dict[str, Any], tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The drafter (and target) of a ``check``-schema case under ``tmp_path``; the run_check keywords."""
    draft_dir = tmp_path / "draft"
    build_draft_case(draft_dir, case.get("draft", {}))
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    for op in case.get("files", []):
        if op["op"] == "link":
            (draft_dir / op["name"]).symlink_to(op["to"])
        else:
            apply_file_ops(draft_dir, [op], sandbox)
    kwargs: dict[str, Any] = dict(case.get("check", {}))
    unknown = set(kwargs) - CHECK_KEYS
    if unknown:
        raise ValueError(f"unknown check keywords {sorted(unknown)}")
    if "target" in case:
        target_dir = tmp_path / "target"
        target_dir.mkdir()
        if isinstance(case["target"], str):
            (target_dir / "config.json").write_text(case["target"], encoding="utf-8")
        else:
            write_json(target_dir / "config.json", case_target_config(case["target"]))
        write_target_files(target_dir, case.get("target_files", {}))
        if case.get("target_tensors"):
            tensors: dict[str, np.ndarray | TensorSpec] = {
                name: TensorSpec(dtype=raw.get("dtype", "F32"), shape=tuple(raw["shape"]))
                for name, raw in case["target_tensors"].items()
            }
            write_safetensors(target_dir / "model.safetensors", tensors, metadata={"format": "pt"})
        kwargs["target"] = str(target_dir)
    return draft_dir, kwargs


def _checked(case: dict[str, Any], tmp_path: Path, **extra: Any) -> set[str]:
    draft_dir, kwargs = _build(case, tmp_path)
    fired = run_check(draft_dir, **kwargs, **extra).fired()
    # A case whose input ran code from the checkpoint is a failure whatever fired.
    if (tmp_path / "sandbox" / SENTINEL).exists():
        raise AssertionError("checking the case executed code from the checkpoint")
    return fired


def run_check_case(case: dict[str, Any], folder: Path, tmp_path: Path) -> set[str]:
    return _checked(case, tmp_path)


@contextmanager
def _scan_bounds(max_bytes: int | None, max_seconds: float | None) -> Iterator[None]:
    saved = deep_rules.MAX_SCAN_BYTES, deep_rules.MAX_SCAN_SECONDS
    if max_bytes is not None:
        deep_rules.MAX_SCAN_BYTES = max_bytes
    if max_seconds is not None:
        deep_rules.MAX_SCAN_SECONDS = max_seconds
    try:
        yield
    finally:
        deep_rules.MAX_SCAN_BYTES, deep_rules.MAX_SCAN_SECONDS = saved


def run_deep_case(case: dict[str, Any], folder: Path, tmp_path: Path) -> set[str]:
    bounds = case["scan_bounds"]
    with _scan_bounds(bounds.get("max_bytes"), bounds.get("max_seconds")):
        return _checked({**case, "check": {**case.get("check", {}), "deep": True}}, tmp_path)


def run_matrix_case(case: dict[str, Any], folder: Path, tmp_path: Path) -> set[str]:
    args = case["args"]
    argv = ["matrix", "--format", "json"]
    for option in ("engine", "method"):
        if option in args:
            argv += [f"--{option}", args[option]]
    for option in ("target", "draft"):
        if option in args:
            argv += [f"--{option}", str(folder / args[option])]
    for feature in args.get("feature", []):
        argv += ["--feature", feature]
    result = CliRunner().invoke(app, argv)
    if result.exit_code not in (0, 1):
        raise AssertionError(f"matrix exited {result.exit_code}: {result.output}")
    return {finding["rule"] for finding in json.loads(result.stdout)["findings"]}


def run_internal_case(case: dict[str, Any], folder: Path, tmp_path: Path) -> set[str]:
    raises = case["raises"]
    error = getattr(builtins, raises) if raises is not None else None
    if error is not None and not (isinstance(error, type) and issubclass(error, Exception)):
        raise ValueError(f"{raises} is not a builtin exception")

    def family(ctx: object) -> list[Finding]:
        if error is not None:
            raise error("a rule family that raises")
        return []

    draft_dir, kwargs = _build(case, tmp_path)
    return run_check(draft_dir, families=[family], **kwargs).fired()


RUNNERS = {
    "check": run_check_case,
    "deep": run_deep_case,
    "matrix": run_matrix_case,
    "internal": run_internal_case,
}
