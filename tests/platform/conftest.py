"""Real on-disk targets and drafters for the platform and engine-config rules, written by the builder."""

from __future__ import annotations

from pathlib import Path

import pytest

from specprobe.demo.fixtures import DraftSpec, build_draft, build_target
from tests.platform.mla_fixtures import mla_target


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("platform-models")
    head16 = DraftSpec()  # hidden 64 / 4 heads: head size 16, the demo's size
    head32 = DraftSpec(hidden_size=128, intermediate_size=256)
    head80 = DraftSpec(hidden_size=320, intermediate_size=256, num_attention_heads=4)
    return {
        "target16": build_target(root / "target16"),
        "target32": build_target(root / "target32", hidden_size=128),
        "target80": build_target(root / "target80", hidden_size=320),
        "draft16": build_draft(root / "draft16", head16),
        "draft32": build_draft(root / "draft32", head32),
        "draft80": build_draft(root / "draft80", head80),
        "mla_target": mla_target(root / "mla", scoring_func="sigmoid", topk_method="noaux_tc"),
        "mla_small": mla_target(root / "mla-small", kv_lora_rank=32, qk_rope_head_dim=8),
        "mla_draft": build_draft(root / "mla-draft", DraftSpec(draft_format="eagle3-mla", hidden_size=128)),
        "llama_draft_for_mla": build_draft(root / "llama-draft", head32),
    }
