"""Fixtures for the dry-run tests: real on-disk models (the engine interpreters come from
tests/engine_interpreters.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from specprobe.demo.fixtures import DraftSpec, build_draft, build_target


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
