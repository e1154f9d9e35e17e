"""Tokenizer identity through the hub reader: a drafter and a target hosted on a loopback hub are judged as
the same folders are locally, and only the small tokenizer files travel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specprobe.checkpoint.tokenizer_identity import MAX_HUB_TOKENIZER_JSON_BYTES
from specprobe.demo.fixtures import write_json
from specprobe.modelfiles import HubSession
from specprobe.modelfiles.hub import MAX_REPO_BYTES
from specprobe.pipeline.check import run_check
from tests.check.casebuild import build_draft_case, case_target_config, load_case
from tests.hub.hubserver import HubServer, publish

# In-process runs ask the loopback hub (tests/hub/conftest.py).
pytestmark = pytest.mark.usefixtures("online_in_process")

ENGINE = "vllm==0.33.0"
LLAMA31_EAGLE3 = load_case("valid-specforge-llama31-8b")[0]["draft"]


def _tokenizer_json(prefix: str, count: int) -> dict[str, Any]:
    return {"version": "1.0", "added_tokens": [],
            "model": {"type": "BPE", "vocab": {f"{prefix}{i}": i for i in range(count)}, "merges": []}}


def _tokenizer_config(added: dict[int, str]) -> dict[str, Any]:
    return {"added_tokens_decoder": {str(i): {"content": c, "special": True} for i, c in added.items()}}


def _publish(hub: HubServer, tmp_path: Path, tokens: int) -> tuple[Path, Path]:
    """A Llama-3.1 EAGLE-3 drafter (Llama tokenizer) and a Qwen3-8B target (Qwen tokenizer), both as local
    folders and published as acme/llama-eagle3 and qwen/target, each with a tokenizer.json of ``tokens``."""
    draft_dir, target_dir = tmp_path / "draft", tmp_path / "target"
    draft = {**LLAMA31_EAGLE3, "config_set": {**LLAMA31_EAGLE3.get("config_set", {}), "bos_token_id": 128000}}
    build_draft_case(draft_dir, draft)
    target_dir.mkdir()
    write_json(target_dir / "config.json", case_target_config({"preset": "Qwen/Qwen3-8B"}))
    for folder, prefix, added, bos in ((draft_dir, "l", {128000: "<|begin_of_text|>"}, 128000),
                                       (target_dir, "q", {151643: "<|endoftext|>"}, 151643)):
        write_json(folder / "tokenizer.json", _tokenizer_json(prefix, tokens))
        write_json(folder / "tokenizer_config.json", _tokenizer_config(added))
        write_json(folder / "generation_config.json", {"bos_token_id": bos})
    publish(hub.root, "acme/llama-eagle3", draft_dir)
    publish(hub.root, "qwen/target", target_dir)
    return draft_dir, target_dir


def _mismatch(report: Any) -> list[str]:
    return [f.message for f in report.findings if f.rule == "TOKENIZER-MISMATCH"]


def _tokenizer_reads(hub: HubServer) -> list[tuple[str, str]]:
    return [(repo, path) for repo, path, *_ in hub.served.reads if path == "tokenizer.json"]


def test_hub_pair_of_two_tokenizers_is_a_mismatch_as_locally(hub: HubServer, tmp_path: Path) -> None:
    """Small tokenizer.json files fit the budget: read through the reader, the same evidence as locally."""
    draft_dir, target_dir = _publish(hub, tmp_path, 300)
    local = run_check(draft_dir, target=str(target_dir), engine=ENGINE)
    online = run_check(
        "acme/llama-eagle3", target="qwen/target", engine=ENGINE,
        hub=HubSession(endpoint=hub.url, cache_root=tmp_path / "cache"),
    )
    assert _mismatch(local) and _mismatch(online) == _mismatch(local)
    assert "tokenizer.json vocabularies differ" in _mismatch(online)[0]
    assert sorted(_tokenizer_reads(hub)) == [("acme/llama-eagle3", "tokenizer.json"), ("qwen/target", "tokenizer.json")]
    served = dict(hub.served.bytes_by_repo)
    assert all(0 < n <= MAX_REPO_BYTES for n in served.values()), served
    assert hub.served.whole_weight_files() == []


def test_a_published_size_tokenizer_json_stays_on_the_hub(hub: HubServer, tmp_path: Path) -> None:
    """A tokenizer.json above the hub share (as published ones are) is not fetched: bos_token_id and the
    special ids still tell the two tokenizers apart, and the bytes served stay within the budget."""
    draft_dir, target_dir = _publish(hub, tmp_path, 80_000)
    assert (draft_dir / "tokenizer.json").stat().st_size > MAX_HUB_TOKENIZER_JSON_BYTES
    local = run_check(draft_dir, target=str(target_dir), engine=ENGINE)
    online = run_check(
        "acme/llama-eagle3", target="qwen/target", engine=ENGINE,
        hub=HubSession(endpoint=hub.url, cache_root=tmp_path / "cache"),
    )
    assert _mismatch(local) and _mismatch(online)
    assert "bos_token_id 128000 (drafter) vs 151643 (target)" in _mismatch(online)[0]
    assert _tokenizer_reads(hub) == []
    served = dict(hub.served.bytes_by_repo)
    assert all(0 < n <= MAX_REPO_BYTES for n in served.values()), served
    assert sum(served.values()) < 1024 * 1024, served
    assert {f.rule for f in online.findings} == {f.rule for f in local.findings}
