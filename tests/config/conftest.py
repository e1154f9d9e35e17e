"""Drafter folders with known findings, and the CLI, for the configuration and baseline tests."""

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
def project(tmp_path: Path, monkeypatch) -> Path:
    """An empty project folder, also the working directory."""
    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def mpe_draft(project: Path) -> tuple[Path, Path]:
    """A valid drafter whose check gives one warning (TARGET-MAX-POSITION) and info findings."""
    draft, options, _ = build_case("mpe-2048", project / "models")
    return draft, Path(options["target"])


@pytest.fixture
def broken_draft(project: Path) -> Path:
    """A drafter whose check gives an error (VOCAB-D2T-RANGE)."""
    draft, _, _ = build_case("d2t-absolute", project / "broken")
    return draft


Cli = Callable[..., tuple[int, str, str]]


def run_cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr
