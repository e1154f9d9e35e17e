"""`specprobe lint --dry-run` against a provisioned engine, once per interpreter, command and options in a
test process: each run imports the engine (10-30 s on 2 cores), and the dry-run tests
(tests/dryrun/test_dryrun_engine.py) and the LINT-DRY-RUN* rule fixtures (tests/rules/runners/engine.py)
ask about the same commands on the same models, so they share the run and read the same report."""

from __future__ import annotations

import json
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.demo.fixtures import DraftSpec, build_draft, build_target

_KEEP: list[tempfile.TemporaryDirectory[str]] = []


@cache
def dry_run_models() -> dict[str, Path]:
    """A Llama-style target (head size 32, which vLLM's CPU attention runs), an EAGLE-3 drafter for it, one
    whose architecture no engine registers, and a drafter path that does not exist; written once."""
    holder = tempfile.TemporaryDirectory(prefix="specprobe-dry-run-models-")
    _KEEP.append(holder)
    root = Path(holder.name)
    target = build_target(root / "target", hidden_size=128, extra={"torch_dtype": "float32"})
    spec = DraftSpec(hidden_size=128, intermediate_size=256, num_attention_heads=4, num_key_value_heads=2)
    draft = build_draft(root / "draft", spec)
    unregistered = build_draft(
        root / "draft-unregistered", spec, config_overrides={"architectures": ["NoSuchDraftModel"]}
    )
    return {"target": target, "draft": draft, "unregistered": unregistered, "missing": root / "no-such-draft"}


def dry_run(python: str, command: tuple[str, ...], options: tuple[str, ...] = ()) -> tuple[int, dict[str, Any]]:
    """The exit code and JSON report of ``lint --dry-run --python PYTHON [options] -- command`` (exit 0 or 1,
    else it fails)."""
    return _dry_run(python, tuple(command), tuple(options))  # one call form: one cache key per run


@cache
def _dry_run(python: str, command: tuple[str, ...], options: tuple[str, ...]) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(
        app, ["lint", "--dry-run", "--python", python, "--format", "json", *options, "--", *command]
    )
    assert result.exit_code in (0, 1), result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return result.exit_code, report
