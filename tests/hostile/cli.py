"""Running the CLI on hostile input and asserting the contract: exit 0/1 with a report, or exit 2
with exactly one ``specprobe: error:`` line; never a traceback, never an internal error."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from specprobe.cli import app

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Outcome:
    exit_code: int
    stdout: str
    stderr: str


def invoke(*args: str, allowed: tuple[int, ...] = (0, 1)) -> Outcome:
    """The CLI in-process (CliRunner surfaces an escaped exception as ``result.exception``)."""
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{args[:2]}: exception escaped: {result.exception!r}") from result.exception
    outcome = Outcome(result.exit_code, result.stdout, result.stderr)
    assert_contract(outcome, allowed)
    return outcome


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 60, allowed: tuple[int, ...] = (0, 1)) -> Outcome:
    """The CLI as a user runs it (``python -m specprobe``), with its console-script error handling."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    completed = subprocess.run(
        [sys.executable, "-m", "specprobe", *args],
        capture_output=True,
        text=True,
        errors="surrogateescape",
        timeout=timeout,
        cwd=cwd,
        env=env,
        check=False,
    )
    outcome = Outcome(completed.returncode, completed.stdout, completed.stderr)
    assert_contract(outcome, allowed)
    return outcome


def assert_contract(outcome: Outcome, allowed: tuple[int, ...]) -> None:
    both = outcome.stdout + outcome.stderr
    assert "Traceback" not in both, both[-2000:]
    assert "internal error" not in both, both[-2000:]
    assert "\x1b" not in both, "a raw escape sequence reached the output"
    if outcome.exit_code == 2:
        lines = [line for line in outcome.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("specprobe: error: "), outcome.stderr[-2000:]
    else:
        assert outcome.exit_code in allowed, (outcome.exit_code, both[-2000:])
