"""Runners of the launch-command and deployment-file fixtures, in process (no subprocess, no engine).

Kinds:

- ``lint``: ``{"argv": [...], "engine": "vllm==0.33.0" | null, "device": null | "cpu", "strict": false}``,
  a serve command linted as ``specprobe lint -- ARGV`` would;
- ``gate``: ``{"files": ["pod.yaml", ...], "engine": ..., "strict": false}``, the deployment files of the
  case folder gated as ``specprobe gate FILES`` would.

Placeholders in argv words and file texts (``{target}``, ``{draft}``, ``{draft_broken}``, ``{spec}``) are
filled with the demo models, written once per test process, so a case names real local folders without
committing checkpoints. Everything runs offline: hub ids resolve against an empty Hugging Face cache and no
engine interpreter is visible, so the verdict comes from the input alone.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from specprobe.demo.example import write_demo
from specprobe.deploy.engines import live_version
from specprobe.engines.spec import parse_engine_spec
from specprobe.pipeline.gate import gate_paths, lint_command

ENGINE_VARIABLES = ("SPECPROBE_VLLM_PYTHON", "SPECPROBE_SGLANG_PYTHON", "SPECPROBE_VLLM_CPU_PYTHON")
# Temporary folders that live as long as the test process (removed when it exits).
_KEEP: list[tempfile.TemporaryDirectory[str]] = []


@cache
def _demo_root() -> Path:
    # One folder per test process, removed with it: cases only read the demo models.
    holder = tempfile.TemporaryDirectory(prefix="specprobe-rule-fixtures-")
    _KEEP.append(holder)
    root = Path(holder.name)
    write_demo(root)
    return root



def placeholders() -> dict[str, str]:
    """The placeholder values: the demo target, its valid drafter, its broken copy, an EAGLE-3 spec."""
    root = _demo_root()
    spec = {"method": "eagle3", "model": str(root / "draft"), "num_speculative_tokens": 3}
    return {
        "{target}": str(root / "target"),
        "{draft}": str(root / "draft"),
        "{draft_broken}": str(root / "draft-broken"),
        "{spec}": json.dumps(spec),
    }


def fill(text: str) -> str:
    for name, value in placeholders().items():
        text = text.replace(name, value)
    return text


@contextmanager
def offline(tmp_path: Path, *, engines: bool = False) -> Iterator[None]:
    """An empty, offline Hugging Face cache; without ``engines`` no engine interpreter is visible either,
    so an engine installed on this machine cannot decide the version a deployment is checked against."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
        patch.setenv("HF_HUB_OFFLINE", "1")
        patch.delenv("HF_HOME", raising=False)
        if not engines:
            for variable in ENGINE_VARIABLES:
                patch.delenv(variable, raising=False)
        live_version.cache_clear()
        try:
            yield
        finally:
            live_version.cache_clear()


def run_lint(case: dict[str, Any], folder: Path, tmp_path: Path) -> set[str]:
    argv = [fill(word) for word in case["argv"]]
    with offline(tmp_path):
        report = lint_command(argv, engine=case.get("engine"), strict=bool(case.get("strict")),
                              device=case.get("device"))
    return report.fired()


def run_gate(case: dict[str, Any], folder: Path, tmp_path: Path) -> set[str]:
    paths: list[str] = []
    for name in case["files"]:
        # A copy with the placeholders filled; the committed file keeps them (and its line numbers).
        written = tmp_path / "deployment" / name
        written.parent.mkdir(parents=True, exist_ok=True)
        written.write_text(fill((folder / name).read_text(encoding="utf-8")), encoding="utf-8")
        paths.append(os.fspath(written))
    engine = parse_engine_spec(case["engine"], allow_range=False) if case.get("engine") else None
    with offline(tmp_path):
        report = gate_paths(paths, engine=engine, strict=bool(case.get("strict")))
    return report.fired()


RUNNERS: dict[str, Callable[[dict[str, Any], Path, Path], set[str]]] = {"lint": run_lint, "gate": run_gate}
