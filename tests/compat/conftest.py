"""Shared paths and builders for the compatibility-matrix tests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from specprobe.compat.subjects import DraftInfo, TargetInfo, classify_draft, classify_target

HERE = Path(__file__).parent
TARGETS = HERE / "configs" / "targets"
DRAFTERS = HERE / "configs" / "drafters"
SHIPPED_SNAPSHOTS = Path(__file__).parents[2] / "specprobe" / "data" / "schemas"

# vLLM 0.16.0's `eagle3_target_supported` (vllm/config/speculative.py at v0.16.0), as quoted in the
# issue; used to build a 0.16.0 snapshot file in the shipped snapshot format.
VLLM_0_16_ALLOWLIST = ["llama", "qwen", "minicpm", "gpt_oss", "hunyuan_vl", "hunyuan_v1_dense", "afmoe"]


def target(name: str) -> TargetInfo:
    return classify_target(str(TARGETS / name))


def drafter(name: str) -> DraftInfo:
    return classify_draft(str(DRAFTERS / name))


@pytest.fixture
def snapshot_dir(tmp_path: Path) -> Path:
    """A writable copy of the shipped snapshots (tests may edit it to show verdicts follow the data).

    When no vLLM 0.16.0 snapshot ships, one is made in the same file format from a shipped vLLM
    snapshot with 0.16.0's allowlist and method list (medusa and mlp_speculator still present).
    """
    root = tmp_path / "schemas"
    shutil.copytree(SHIPPED_SNAPSHOTS, root)
    target = root / "vllm" / "0.16.0.json"
    if not target.exists():
        source = sorted((root / "vllm").glob("*.json"))[0]
        data = json.loads(source.read_text())
        data["version"] = "0.16.0"
        data["eagle3_target_supported"] = VLLM_0_16_ALLOWLIST
        data["methods"] = ["ngram", "eagle", "eagle3", "medusa", "mlp_speculator", "draft_model", "mtp"]
        target.write_text(json.dumps(data))
    return root
