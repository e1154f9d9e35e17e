"""A command finding names the setting it is about (``Finding.key``) and its line is looked up by that
key in the deployment's source map, whatever the message says."""

from __future__ import annotations

import json
from pathlib import Path

from specprobe.pipeline.gate import gate_paths, lint_command

CONFIG = """\
# vllm serve --config serve.yaml
model: meta-llama/Llama-3.1-8B-Instruct
speculative-config:
  method: eagle3
  model: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B
  num_speculative_tokens: "three"
  not_a_field: 1
"""


def test_config_key_findings_point_at_their_key(tmp_path: Path) -> None:
    path = tmp_path / "serve.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    from specprobe.engines.spec import parse_engine_spec

    report = gate_paths([str(path)], engine=parse_engine_spec("vllm==0.33.0", allow_range=False))
    by_key = {f.key: f for f in report.findings if f.key is not None}
    assert by_key["speculative.not_a_field"].rule == "LINT-SPEC-CONFIG-KEY"
    assert by_key["speculative.not_a_field"].line == 7
    assert by_key["speculative.num_speculative_tokens"].rule == "LINT-SPEC-CONFIG-VALUE"
    assert by_key["speculative.num_speculative_tokens"].line == 6
    written = json.dumps(report.to_json_dict())
    assert '"key": "speculative.not_a_field"' in written


def test_key_is_in_json_only_when_set() -> None:
    report = lint_command(
        ["python", "-m", "sglang.launch_server", "--model-path", "m", "--speculative-algorithm", "EAGLE3",
         "--speculative-draft-model-path", "d", "--speculative-num-stepz", "3"],
        engine="sglang==0.5.23",
    )
    unknown = [f for f in report.findings if f.rule == "LINT-UNKNOWN-FLAG"]
    assert [f.key for f in unknown] == ["--speculative-num-stepz"]
    assert unknown[0].to_json_dict()["key"] == "--speculative-num-stepz"
    assert all("key" not in f.to_json_dict() for f in report.findings if f.key is None)


def test_settings_are_checked_by_the_exported_json_schema() -> None:
    spec = {
        "method": "eagle3",
        "model": "/d",
        "rejection_sample_method": "nope",
        "draft_tensor_parallel_size": 0,
        "fly_entropy_threshold": "high",
        "max_model_len": None,
        "attention_backend": "FLASH_ATTN",
        "draft_lm_head_quantization": "int3",
    }
    report = lint_command(["vllm", "serve", "m", "--speculative-config", json.dumps(spec)], engine="vllm==0.33.0")
    values = {f.key: f.message for f in report.findings if f.rule == "LINT-SPEC-CONFIG-VALUE"}
    assert values == {
        "speculative.rejection_sample_method": (
            "rejection_sample_method=\"nope\" is not one of ['standard', 'synthetic', 'block', 'fly']"
        ),
        "speculative.draft_tensor_parallel_size": "draft_tensor_parallel_size=0 breaks the engine's bound ge 1",
        "speculative.fly_entropy_threshold": 'fly_entropy_threshold must be number, got "high"',
        "speculative.draft_lm_head_quantization": "draft_lm_head_quantization=\"int3\" is not one of ['fp8', 'nvfp4']",
    }
    # A Python enum's member names are choices too (the exported schema states them as an enum).
    wrong = {"method": "eagle3", "model": "/d", "attention_backend": "flash-attention"}
    report = lint_command(["vllm", "serve", "m", "--speculative-config", json.dumps(wrong)], engine="vllm==0.33.0")
    assert [f.key for f in report.findings if f.rule == "LINT-SPEC-CONFIG-VALUE"] == ["speculative.attention_backend"]


def test_checkpoint_findings_name_their_config_key(tmp_path: Path) -> None:
    from specprobe.pipeline.check import run_check
    from tests.check.casebuild import build_case

    draft, options, _ = build_case("vocab-larger-than-target", tmp_path)
    report = run_check(draft, **options)
    mismatch = [f for f in report.findings if f.rule == "TARGET-VOCAB-MISMATCH"]
    assert mismatch and all(f.key == "config.json:vocab_size" for f in mismatch)
    assert mismatch[0].to_json_dict()["key"] == "config.json:vocab_size"
