"""Fixtures for the schema tests: the provisioned engine interpreters and a private live cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ENGINE_VERSIONS = {"vllm": "0.33.0", "sglang": "0.5.23"}


def engine_python(engine: str) -> Path:
    """The interpreter of the provisioned engine venv; a missing engine fails the test unless allowed."""
    from_env = os.environ.get(f"SPECPROBE_{engine.upper()}_PYTHON")
    root = Path(os.environ.get("SPECPROBE_ENGINES_DIR", Path.home() / ".cache" / "specprobe" / "engines"))
    candidate = Path(from_env) if from_env else root / f"{engine}-{ENGINE_VERSIONS[engine]}" / "bin" / "python"
    if candidate.is_file():
        return candidate
    version = ENGINE_VERSIONS[engine]
    message = f"{engine} interpreter not found at {candidate}; run scripts/provision-engine.sh {engine} {version}"
    if os.environ.get("SPECPROBE_ALLOW_MISSING_ENGINES") == "1":
        pytest.skip(message)
    pytest.fail(message)


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    return engine_python("vllm")


@pytest.fixture(scope="session")
def sglang_python() -> Path:
    return engine_python("sglang")


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One live-extraction cache for the whole session: each engine is probed uncached once."""
    return tmp_path_factory.mktemp("specprobe-cache")


@pytest.fixture(autouse=True)
def _private_cache(monkeypatch: pytest.MonkeyPatch, session_cache: Path) -> None:
    # Never read or write the user's real cache from tests.
    monkeypatch.setenv("SPECPROBE_CACHE_DIR", str(session_cache))
    monkeypatch.delenv("SPECPROBE_FORMAT", raising=False)
