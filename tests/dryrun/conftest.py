"""Fixtures for the dry-run tests: real on-disk models (the engine interpreters come from
tests/engine_interpreters.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine_runs import dry_run_models


@pytest.fixture(scope="session")
def models() -> dict[str, Path]:
    """A Llama-style target (head size 32, which vLLM's CPU attention runs) and EAGLE-3 drafters for it:
    a valid one and one whose architecture no engine registers (shared with the rule fixtures)."""
    return dry_run_models()


@pytest.fixture(autouse=True)
def offline_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty Hugging Face cache and no report-format default from the environment."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("SPECPROBE_FORMAT", raising=False)
