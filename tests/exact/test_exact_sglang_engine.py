"""Exact mode against SGLang 0.5.23 (the provisioned venv): valid drafters and one drafter of each class SGLang
refuses or silently accepts, all in one probe process (one SGLang import, ~40 s here).

Each silent acceptance (a drafter SGLang loads without a word although it cannot work as trained) must
come back as a finding; each refusal must quote SGLang with its file:line; a valid drafter must have no
warning.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specprobe.checkpoint.folder import load_checkpoint
from specprobe.demo.fixtures import DraftSpec, build_draft, build_target
from specprobe.engines import exact
from specprobe.engines._probe import Interpreter
from specprobe.findings import Finding, Severity
from specprobe.rules import exact as exact_rules

pytestmark = pytest.mark.engine
SPEC: dict[str, Any] = {"hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
                        "intermediate_size": 512, "draft_format": "specforge"}


def _without(*names: str) -> Callable[[list[Any]], list[Any]]:
    return lambda tensors: [t for t in tensors if t[0] not in names]


def _renamed(old: str, new: str) -> Callable[[list[Any]], list[Any]]:
    return lambda tensors: [(new if t[0] == old else t[0], t[1], t[2]) for t in tensors]


def _plus(name: str, shape: tuple[int, ...]) -> Callable[[list[Any]], list[Any]]:
    return lambda tensors: [*tensors, (name, "F32", shape)]


def _second_namespace(tensors: list[Any]) -> list[Any]:
    extra = [("layers.0." + t[0][len("midlayer."):], t[1], t[2]) for t in tensors if t[0].startswith("midlayer.")]
    return tensors + extra


# id -> (DraftSpec changes, config.json changes, header edit)
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], Callable[[list[Any]], list[Any]] | None]] = {
    "valid": ({}, {}, None),
    "valid-no-ids": ({"aux_layer_ids": None}, {}, None),
    "valid-full-vocab": ({"draft_vocab_size": 512}, {}, _without("d2t", "t2d")),
    "toplevel-ids-not-defaults": ({"draft_format": "vllm-native"}, {}, None),
    "ids-out-of-range": ({"aux_layer_ids": [1, 3, 9]}, {}, None),
    "ids-duplicate": ({"aux_layer_ids": [1, 1, 5]}, {}, None),
    "num-aux-disagrees": ({"aux_layer_ids": [1, 2, 3, 5]}, {"num_aux_hidden_states": 3},
                          lambda t: [(n, d, (256, 768) if n == "fc.weight" else s) for n, d, s in t]),
    "hidden-not-target": ({"hidden_size": 512, "num_attention_heads": 8}, {}, None),
    "d2t-missing": ({}, {}, _without("d2t", "t2d")),
    "lm-head-missing": ({}, {}, _without("lm_head.weight")),
    "fc-missing": ({}, {}, _without("fc.weight")),
    "unknown-tensor": ({}, {}, _plus("midlayer.self_attn.q_norm.weight", (64,))),
    "two-namespaces": ({}, {}, _second_namespace),
    "llama-label-full-vocab": ({"draft_vocab_size": 512}, {"architectures": ["LlamaForCausalLM"]},
                               _without("d2t", "t2d")),
    "fc-four-wide": ({}, {}, lambda t: [(n, d, (256, 1024) if n == "fc.weight" else s) for n, d, s in t]),
    "renamed-tensor": ({}, {}, _renamed("midlayer.mlp.down_proj.weight", "midlayer.mlp.down.weight")),
    "short-context": ({"max_position_embeddings": 2048}, {}, None),
    "mlp-narrower-than-config": ({}, {}, lambda t: [(n, d, (384, 256) if n.endswith("gate_proj.weight") else s)
                                                    for n, d, s in t]),
    "tied-reduced-vocab": ({}, {"tie_word_embeddings": True}, _without("lm_head.weight")),
    "eagle-algorithm": ({}, {}, None),
    # SGLang's MLA EAGLE-3 drafter (kimi_k25_eagle3.py) on a DeepSeek-V3-style target: it fuses q_a and kv_a.
    "mla": ({"draft_format": "eagle3-mla", "aux_layer_ids": [1, 3, 4]},
            {"architectures": ["Eagle3DeepseekV2ForCausalLM"]}, None),
    "mla-no-kv-a": ({"draft_format": "eagle3-mla", "aux_layer_ids": [1, 3, 4]},
                    {"architectures": ["Eagle3DeepseekV2ForCausalLM"]},
                    lambda t: [x for x in t if "kv_a_proj_with_mqa" not in x[0]]),
    "mxfp4-target": ({}, {}, None),
}


@pytest.fixture(scope="module")
def findings(sglang_python: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Finding]]:
    root = tmp_path_factory.mktemp("sglang-exact")
    target = build_target(root / "target", hidden_size=256, vocab_size=512, num_hidden_layers=8)
    target_config = json.loads((target / "config.json").read_text(encoding="utf-8"))
    # gpt-oss ships mxfp4 experts; SGLang registers mxfp4 only on GPU platforms (and its CPU engine).
    mxfp4 = {**target_config, "quantization_config": {"quant_method": "mxfp4"}}
    mla = {**target_config, "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
           "kv_lora_rank": 32, "q_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16,
           "moe_layer_freq": 1, "first_k_dense_replace": 1, "n_routed_experts": 4, "n_shared_experts": 1,
           "num_experts_per_tok": 2, "moe_intermediate_size": 32, "n_group": 1, "topk_group": 1,
           "routed_scaling_factor": 1.0, "norm_topk_prob": True, "scoring_func": "sigmoid", "topk_method": "noaux_tc",
           "num_key_value_heads": 4}
    targets = {"mxfp4-target": mxfp4, "mla": mla, "mla-no-kv-a": mla}
    cases = []
    for case_id, (spec, config, edit) in CASES.items():
        folder = build_draft(root / case_id, DraftSpec(**{**SPEC, **spec}), config_overrides=config or None)
        case = exact.case_from_checkpoint(case_id, load_checkpoint(folder), targets.get(case_id, target_config),
                                          method="eagle" if case_id == "eagle-algorithm" else None)
        if edit is not None:
            case = exact.ExactCase(case.id, case.draft_config, case.target_config, edit(list(case.tensors)),
                                   case.speculative, case.tensor_files)
        cases.append(case)
    run = exact.run_cases(cases, Interpreter(sglang_python, "test"), engine="sglang")
    assert exact.same_release(run.version, "0.5.23"), run.version
    return {case.id: exact_rules.sglang_findings_for(case, run.cases[case.id], run.version) for case in cases}


def _of(found: list[Finding], rule: str) -> list[Finding]:
    return [f for f in found if f.rule == rule]


def _worst(found: list[Finding]) -> Severity:
    order = [Severity.INFO, Severity.WARNING, Severity.ERROR]
    return max((f.severity for f in found), key=order.index)


@pytest.mark.parametrize("case_id", ["valid", "valid-no-ids", "valid-full-vocab", "mla"])
def test_valid_drafters_have_no_warning(findings: dict[str, list[Finding]], case_id: str) -> None:
    found = findings[case_id]
    assert _worst(found) is Severity.INFO, [f.message for f in found]
    (resolved,) = _of(found, "EXACT-RESOLVED")
    assert "fc 256x768" in resolved.message
    assert ("Eagle3DeepseekV2ForCausalLM" if case_id == "mla" else "LlamaForCausalLMEagle3") in resolved.message


def test_mla_drafter_without_its_kv_a_half_is_left_at_init(findings: dict[str, list[Finding]]) -> None:
    (unloaded,) = _of(findings["mla-no-kv-a"], "EXACT-UNLOADED-PARAMS")
    assert "fused_qkv_a_proj_with_mqa" in unloaded.message
    assert "MLA attention" in _of(findings["mla"], "EXACT-RESOLVED")[0].message


def test_the_aux_default_is_info_as_in_static_mode(findings: dict[str, list[Finding]]) -> None:
    (default,) = _of(findings["valid-no-ids"], "EXACT-DEFAULTS")
    assert default.severity is Severity.INFO and "[2, 4, 5]" in default.message


def test_ignored_top_level_ids_are_a_warning(findings: dict[str, list[Finding]]) -> None:
    (ignored,) = _of(findings["toplevel-ids-not-defaults"], "EXACT-DEFAULTS")
    assert ignored.severity is Severity.WARNING
    assert "ignores the top-level eagle_aux_hidden_state_layer_ids [1, 3, 5]" in ignored.message
    assert "[2, 4, 5]" in ignored.message and "[2, 4, 6]" in ignored.message


@pytest.mark.parametrize("case_id", ["ids-out-of-range", "ids-duplicate", "num-aux-disagrees"])
def test_captures_that_do_not_fit_fc(findings: dict[str, list[Finding]], case_id: str) -> None:
    (mismatch,) = _of(findings[case_id], "EXACT-AUX-FC-MISMATCH")
    assert mismatch.severity is Severity.ERROR and "fc for 768" in mismatch.message


def test_target_embedding_of_another_width(findings: dict[str, list[Finding]]) -> None:
    (embed,) = _of(findings["hidden-not-target"], "EXACT-EMBED-MISMATCH")
    assert "[512, 256]" in embed.message and "hidden size is 512" in embed.message


def test_reduced_vocabulary_without_d2t(findings: dict[str, list[Finding]]) -> None:
    (default,) = _of(findings["d2t-missing"], "EXACT-DEFAULTS")
    assert default.severity is Severity.ERROR and "128 out of 512" in default.message


@pytest.mark.parametrize(("case_id", "parameter"), [("lm-head-missing", "lm_head.weight"),
                                                    ("fc-missing", "model.fc.weight")])
def test_parameters_left_at_init(findings: dict[str, list[Finding]], case_id: str, parameter: str) -> None:
    (unloaded,) = _of(findings[case_id], "EXACT-UNLOADED-PARAMS")
    assert unloaded.severity is Severity.ERROR and parameter in unloaded.message


def test_dropped_and_overwritten_tensors(findings: dict[str, list[Finding]]) -> None:
    (dropped,) = _of(findings["unknown-tensor"], "EXACT-UNCONSUMED-TENSORS")
    assert "midlayer.self_attn.q_norm.weight" in dropped.message
    renamed = {f.rule: f for f in findings["renamed-tensor"]}
    assert "midlayer.mlp.down.weight" in renamed["EXACT-UNCONSUMED-TENSORS"].message
    assert "down_proj" in renamed["EXACT-UNLOADED-PARAMS"].message
    overwritten = _of(findings["two-namespaces"], "EXACT-UNCONSUMED-TENSORS")
    assert any("the later one silently wins" in f.message for f in overwritten)


def test_a_label_sglang_builds_a_plain_target_class_for_is_refused_at_bind(
    findings: dict[str, list[Finding]],
) -> None:
    (bind,) = _of(findings["llama-label-full-vocab"], "EXACT-BIND-REFUSED")
    assert "hot_token_id" in bind.message and "speculative/eagle_worker_v2.py:" in bind.message
    assert any(link.startswith("https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/speculative/")
               for link in bind.evidence)


def test_load_refusal_quotes_sglang(findings: dict[str, list[Finding]]) -> None:
    (refused,) = _of(findings["fc-four-wide"], "EXACT-LOAD-REFUSED")
    assert "[256, 1024]" in refused.message and "sglang/srt/" in refused.message
    assert refused.location == "model.safetensors:fc.weight"


def test_short_context_is_a_launch_warning_and_the_rest_is_judged(findings: dict[str, list[Finding]]) -> None:
    found = findings["short-context"]
    (launch,) = _of(found, "EXACT-LAUNCH-SETTING")
    assert launch.severity is Severity.WARNING
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 or --context-length 2048" in launch.message
    assert "sglang/srt/configs/model_config.py:" in launch.message
    assert _of(found, "EXACT-RESOLVED") and _worst([f for f in found if f is not launch]) is Severity.INFO


def test_a_tensor_sglang_pads_with_zeros(findings: dict[str, list[Finding]]) -> None:
    (padded,) = _of(findings["mlp-narrower-than-config"], "EXACT-UNLOADED-PARAMS")
    assert "pads 1 checkpoint tensor" in padded.message and "384 of 512 rows" in padded.message


def test_a_tied_head_over_a_reduced_vocabulary(findings: dict[str, list[Finding]]) -> None:
    (head,) = _of(findings["tied-reduced-vocab"], "EXACT-EMBED-MISMATCH")
    assert "head of 512 rows" in head.message and "translates 128" in head.message


def test_an_eagle3_drafter_under_the_eagle_algorithm_runs_without_its_fc(findings: dict[str, list[Finding]]) -> None:
    (skipped,) = _of(findings["eagle-algorithm"], "EXACT-AUX-FC-MISMATCH")
    assert "algorithm EAGLE" in skipped.message and "is skipped" in skipped.message


def test_a_target_quantization_registered_only_on_gpu_is_left_out_of_the_target(
    findings: dict[str, list[Finding]],
) -> None:
    found = findings["mxfp4-target"]
    assert _worst(found) is Severity.INFO and "EXACT-UNAVAILABLE" not in {f.rule for f in found}
    (resolved,) = _of(found, "EXACT-RESOLVED")
    assert "the target built without its mxfp4 quantization" in resolved.message
