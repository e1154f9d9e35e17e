"""Shared fixtures: a real demo target with a good and a broken drafter written by the project's writer."""

from __future__ import annotations

from pathlib import Path

import pytest

from specprobe.demo.example import write_demo
from specprobe.deploy.engines import live_version


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo")
    write_demo(root)
    return root


@pytest.fixture(autouse=True)
def _no_live_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Engine versions come from the files under test, not from an engine installed on this machine;
    hub ids resolve against an empty cache."""
    monkeypatch.delenv("SPECPROBE_VLLM_PYTHON", raising=False)
    monkeypatch.delenv("SPECPROBE_SGLANG_PYTHON", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    live_version.cache_clear()


def line_of(text: str, needle: str, occurrence: int = 1) -> int:
    """The 1-based line of the ``occurrence``-th line containing ``needle``."""
    hits = [number for number, line in enumerate(text.splitlines(), start=1) if needle in line]
    return hits[occurrence - 1]
