"""Target config.json fields vLLM reads differently from transformers, reported by `check --target`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.demo.fixtures import build_target
from tests.platform.mla_fixtures import mla_target


def check(draft: Path, target: Path | str, version: str = "0.32.0") -> dict:
    result = CliRunner().invoke(
        app, ["check", "--format", "json", str(draft), "--target", str(target), "--engine", f"vllm=={version}"]
    )
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def engine_config(report: dict) -> dict[str, dict]:
    return {f["rule"]: f for f in report["findings"] if f["rule"].startswith("ENGINE-CONFIG-")}


def test_deepseek_v3_as_deepseek_ships_it_reads_the_same(models):
    assert engine_config(check(models["mla_draft"], models["mla_target"])) == {}


def test_fixture_without_routing_keys_and_with_bias_weights(models, tmp_path):
    """The measured case: no scoring_func/topk_method, weights with e_score_correction_bias."""
    target = mla_target(tmp_path / "target", weights=True)
    found = engine_config(check(models["mla_draft"], target))
    assert found["ENGINE-CONFIG-ROUTING-SCORE"]["severity"] == "warning"
    assert "softmax" in found["ENGINE-CONFIG-ROUTING-SCORE"]["message"]
    bias = found["ENGINE-CONFIG-ROUTING-BIAS"]
    assert bias["severity"] == "error"
    assert "KeyError: 'layers.1.mlp.gate.e_score_correction_bias'" in bias["message"]
    # Both sides of the difference are cited: vLLM's line and transformers' line.
    assert any("vllm-project/vllm/blob/v0.32.0/" in url for url in bias["evidence"])
    assert any("huggingface/transformers/blob/v5.20.2/" in url for url in bias["evidence"])


def test_without_weights_the_bias_is_only_info(models, tmp_path):
    target = mla_target(tmp_path / "target", scoring_func="sigmoid")
    found = engine_config(check(models["mla_draft"], target))
    assert set(found) == {"ENGINE-CONFIG-ROUTING-BIAS"}
    assert found["ENGINE-CONFIG-ROUTING-BIAS"]["severity"] == "info"


def test_rope_interleave_false(models, tmp_path):
    target = mla_target(tmp_path / "target", scoring_func="sigmoid", topk_method="noaux_tc", rope_interleave=False)
    found = engine_config(check(models["mla_draft"], target))
    assert set(found) == {"ENGINE-CONFIG-ROPE-INTERLEAVE"}
    assert found["ENGINE-CONFIG-ROPE-INTERLEAVE"]["severity"] == "warning"


@pytest.mark.parametrize("version", ["0.8.5", "0.34.0"])
def test_nothing_claimed_outside_the_versions_read(models, tmp_path, version):
    target = mla_target(tmp_path / "target", weights=True, rope_interleave=False)
    assert engine_config(check(models["mla_draft"], target, version)) == {}


def test_llama_target_has_none(models):
    assert engine_config(check(models["draft32"], models["target32"])) == {}


@pytest.mark.parametrize(
    ("extra", "version", "fires"),
    [
        ({"use_sliding_window": True, "sliding_window": 256, "max_window_layers": 4}, "0.33.0", True),
        ({"use_sliding_window": True, "sliding_window": 256, "max_window_layers": 8}, "0.33.0", False),
        ({"use_sliding_window": False, "sliding_window": 256, "max_window_layers": 4}, "0.33.0", False),
        ({"layer_types": ["full_attention"] * 4 + ["sliding_attention"] * 4}, "0.32.0", True),
        ({"use_sliding_window": True, "sliding_window": 256, "max_window_layers": 4}, "0.28.0", False),
    ],
)
def test_qwen_partial_sliding_window(models, tmp_path, extra, version, fires):
    target = build_target(
        tmp_path / "qwen", hidden_size=128, model_type="qwen2", architecture="Qwen2ForCausalLM", extra=extra
    )
    found = engine_config(check(models["draft32"], target, version))
    assert ("ENGINE-CONFIG-PARTIAL-SLIDING-WINDOW" in found) is fires
    if fires:
        assert "4 of its 8 layers" in found["ENGINE-CONFIG-PARTIAL-SLIDING-WINDOW"]["message"]


def check_sglang(draft: Path, target: Path) -> dict:
    result = CliRunner().invoke(
        app, ["check", "--format", "json", str(draft), "--target", str(target), "--engine", "sglang==0.5.23"]
    )
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def test_sglang_needs_the_routing_keys(models, tmp_path):
    target = mla_target(tmp_path / "target", scoring_func="sigmoid")
    found = engine_config(check_sglang(models["mla_draft"], target))
    assert set(found) == {"ENGINE-CONFIG-SGLANG-ROUTING-KEYS"}
    assert "no attribute 'topk_method'" in found["ENGINE-CONFIG-SGLANG-ROUTING-KEYS"]["message"]
    # SGLang honours rope_interleave and reads the keys when present: nothing to report.
    assert engine_config(check_sglang(models["mla_draft"], models["mla_target"])) == {}
