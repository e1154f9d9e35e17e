"""One Hugging Face cache lookup (``hfconfig.cached_file``), honouring HF_HUB_CACHE/HF_HOME as they are
when it is called, not as they were when huggingface_hub was first imported; gate, lint and the dry run
all go through it."""

from __future__ import annotations

import json
from pathlib import Path

import huggingface_hub  # noqa: F401 - imported first on purpose: its cache constant is fixed now
import pytest

from specprobe.deploy.model import Deployment
from specprobe.hfconfig import cached_file, hub_cache_dir
from specprobe.pipeline.dryrun import _hub_id_cached
from specprobe.pipeline.gate import resolve_model
from specprobe.pipeline.lint import _target_architectures

REPO = "example-org/tiny-target"


def _cache(hub: Path) -> Path:
    """A hub cache holding REPO's config.json the way huggingface_hub lays it out."""
    commit = "0" * 40
    repo = hub / f"models--{REPO.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit, encoding="utf-8")
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}
    (snapshot / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return snapshot


@pytest.mark.parametrize("variable", ["HF_HOME", "HF_HUB_CACHE"])
def test_every_lookup_sees_the_cache_named_after_import(tmp_path, monkeypatch, variable):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HF_HOME", raising=False)
    hub = tmp_path / "hf" / "hub"
    snapshot = _cache(hub)
    monkeypatch.setenv(variable, str(hub if variable == "HF_HUB_CACHE" else tmp_path / "hf"))
    assert hub_cache_dir() == hub
    assert cached_file(REPO, "config.json") == snapshot / "config.json"
    assert cached_file(REPO, "tokenizer.json") is None
    assert cached_file("not a valid id!", "config.json") is None
    ref = resolve_model(Deployment(name="d"), REPO, "target")
    assert ref is not None and ref.folder == snapshot and ref.hub_cached
    assert _target_architectures(REPO) == ["LlamaForCausalLM"]
    assert _hub_id_cached(REPO)
    monkeypatch.setenv(variable, str(tmp_path / "elsewhere"))
    assert cached_file(REPO, "config.json") is None
    assert not _hub_id_cached(REPO)
