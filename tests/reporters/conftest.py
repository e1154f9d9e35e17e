"""Drafter folders built with the project's writer, and CLI runs, shared by the reporter tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.cli import app
from tests.check.casebuild import build_case

# The engine version at which the mpe-2048 drafter (2048 positions for a 131072-position target) is
# a warning (TARGET-MAX-POSITION is version-ranged; vLLM 0.16.0 is inside its range).
MPE_WARNING_ENGINE = "vllm==0.16.0"


@pytest.fixture
def built_case(tmp_path: Path, monkeypatch) -> Callable[[str], tuple[Path, str | None]]:
    """Build corpus case NAME under tmp_path (also the working directory); return (draft, target)."""
    monkeypatch.chdir(tmp_path)

    def build(name: str) -> tuple[Path, str | None]:
        draft, options, _ = build_case(name, tmp_path / name)
        return draft, options.get("target")

    return build


def run_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr
