"""Target attention classification of published config.json shapes, and drafter classification."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specprobe.compat.subjects import classify_draft, classify_target, draft_format_from_config
from specprobe.demo.fixtures import DraftSpec, build_draft
from specprobe.findings import SpecprobeError
from specprobe.hfconfig import AttentionKind as A
from specprobe.hfconfig import attention_traits, classify_attention, parse_model_config
from tests.compat.conftest import DRAFTERS, TARGETS, target

# folder -> (primary kind, all traits, model_types)
EXPECTED = {
    "llama-3.1-8b-instruct": (A.GQA, {A.GQA}, ("llama",)),
    "llama-2-7b": (A.MHA, {A.MHA}, ("llama",)),
    "qwen3-8b": (A.GQA, {A.GQA}, ("qwen3",)),
    "qwen2-7b-instruct": (A.GQA, {A.GQA}, ("qwen2",)),
    "mistral-7b-instruct-v0.3": (A.GQA, {A.GQA}, ("mistral",)),
    "mistral-7b-v0.1": (A.SLIDING_WINDOW, {A.SLIDING_WINDOW, A.GQA}, ("mistral",)),
    "deepseek-v3": (A.MLA, {A.MLA}, ("deepseek_v3",)),
    "deepseek-v2-lite": (A.MLA, {A.MLA}, ("deepseek_v2",)),
    "kimi-k2-instruct": (A.MLA, {A.MLA}, ("kimi_k2",)),
    "kimi-k2.5": (A.MLA, {A.MLA}, ("deepseek_v3", "kimi_k25")),
    "qwen3-next-80b-a3b-instruct": (A.LINEAR_HYBRID, {A.LINEAR_HYBRID, A.GQA}, ("qwen3_next",)),
    "jamba-v0.1": (A.LINEAR_HYBRID, {A.LINEAR_HYBRID, A.GQA}, ("jamba",)),
    "gemma-2-9b-it": (A.SLIDING_WINDOW, {A.SLIDING_WINDOW, A.GQA}, ("gemma2",)),
    "gemma-3-4b-it": (A.SLIDING_WINDOW, {A.SLIDING_WINDOW}, ("gemma3_text", "gemma3")),
    "gemma-3-1b-it": (A.SLIDING_WINDOW, {A.SLIDING_WINDOW, A.MQA}, ("gemma3_text",)),
    "gpt-oss-20b": (A.SLIDING_WINDOW, {A.SLIDING_WINDOW, A.GQA}, ("gpt_oss",)),
    "falcon-7b": (A.MQA, {A.MQA}, ("falcon",)),
    "gemma-2b": (A.MQA, {A.MQA}, ("gemma",)),
    "demo-tiny-llama": (A.GQA, {A.GQA}, ("llama",)),
}


def test_every_target_fixture_has_an_expectation():
    assert {p.name for p in TARGETS.iterdir()} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_published_config_shapes(name):
    kind, traits, model_types = EXPECTED[name]
    info = target(name)
    assert info.attention is kind
    assert info.traits == frozenset(traits)
    assert info.model_types == model_types


def test_kimi_k25_reads_the_nested_text_config():
    config = parse_model_config(json.loads((TARGETS / "kimi-k2.5" / "config.json").read_text()))
    assert config.text_config_used
    assert config.wrapper_model_type == "kimi_k25"
    assert config.num_hidden_layers == 61
    assert config.hidden_size == 7168


def test_falcon_style_keys_are_read():
    config = parse_model_config(json.loads((TARGETS / "falcon-7b" / "config.json").read_text()))
    assert (config.num_attention_heads, config.num_hidden_layers, config.hidden_size) == (71, 32, 4544)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # a window as long as the context is full attention (Phi-3-mini-128k style)
        (
            {
                "sliding_window": 262144,
                "max_position_embeddings": 131072,
                "num_attention_heads": 32,
                "num_key_value_heads": 32,
            },
            {A.MHA},
        ),
        # Gemma-3 style pattern with an explicit window
        (
            {
                "sliding_window": 1024,
                "sliding_window_pattern": 6,
                "max_position_embeddings": 1024,
                "num_attention_heads": 8,
                "num_key_value_heads": 4,
            },
            {A.SLIDING_WINDOW, A.GQA},
        ),
        # Nemotron-H style pattern string (M = Mamba)
        (
            {"hybrid_override_pattern": "M-M*-M-", "num_attention_heads": 32, "num_key_value_heads": 8},
            {A.LINEAR_HYBRID, A.GQA},
        ),
        # MiniMax: attn_type_list 0 = lightning (linear) attention
        ({"attn_type_list": [0, 0, 1], "num_attention_heads": 64, "num_key_value_heads": 8}, {A.LINEAR_HYBRID, A.GQA}),
        # MLA declared through use_mla
        ({"use_mla": True, "num_attention_heads": 16, "num_key_value_heads": 16}, {A.MLA}),
        # no head counts at all: nothing to say about grouping
        ({"model_type": "x"}, set()),
    ],
)
def test_attention_traits_of_other_shapes(raw, expected):
    config = parse_model_config(raw)
    assert attention_traits(config) == frozenset(expected)
    assert classify_attention(config) in (expected or {A.MHA})


@pytest.mark.parametrize(
    ("name", "draft_format", "architecture"),
    [
        ("eagle3-llama3.1-8b", "eagle3", "LlamaForCausalLM"),
        ("specforge-kimi-k2.5-eagle3", "specforge", "LlamaForCausalLMEagle3"),
        ("speculators-llama3.1-8b-eagle3", "speculators", "Eagle3Speculator"),
        ("eagle3-deepseek-mla", "eagle3-mla", "Eagle3DeepseekV2ForCausalLM"),
    ],
)
def test_config_only_drafters(name, draft_format, architecture):
    info = classify_draft(str(DRAFTERS / name))
    assert (info.format, info.architecture) == (draft_format, architecture)


@pytest.mark.parametrize("draft_format", ["eagle3", "specforge", "speculators", "vllm-native", "eagle3-mla"])
def test_real_format_drafters_use_checks_detection(tmp_path: Path, draft_format):
    folder = build_draft(tmp_path / draft_format, DraftSpec(draft_format=draft_format, sparse=True))
    assert classify_draft(str(folder)).format == draft_format


def test_draft_format_from_config_unknown():
    assert draft_format_from_config({"architectures": ["MistralForCausalLM"]}) is None


def test_missing_folders_are_usage_errors(tmp_path: Path):
    with pytest.raises(SpecprobeError):
        classify_draft(str(tmp_path / "nope"))
    with pytest.raises(SpecprobeError):
        classify_target(str(tmp_path / "nope" / "also-nope"))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text("[1, 2]")
    with pytest.raises(SpecprobeError, match="not a JSON object"):
        classify_target(str(bad))


@pytest.mark.parametrize(
    "raw",
    [
        {"model_type": 5, "num_attention_heads": "32", "layer_types": "oops", "text_config": [], "sliding_window": True,
         "kv_lora_rank": None, "architectures": "x"},
        {"text_config": {"hidden_size": 1, "model_type": ["a"]}, "model_type": {"x": 1}},
        {"layer_types": [None, 3, "sliding_attention"], "hybrid_override_pattern": 7, "attn_type_list": "0,1"},
        {},
    ],
)  # fmt: skip
def test_hostile_configs_classify_without_crashing(raw):
    from specprobe.compat.subjects import target_from_config

    info = target_from_config(raw, "hostile")
    assert all(isinstance(t, str) for t in info.model_types)
    assert info.attention in set(A)


def test_hostile_config_through_the_cli(tmp_path: Path):
    from typer.testing import CliRunner

    from specprobe.cli import app

    (tmp_path / "config.json").write_text(json.dumps({"model_type": 5, "num_attention_heads": "32", "text_config": []}))
    result = CliRunner().invoke(
        app, ["matrix", "--engine", "vllm==0.16.0", "--method", "eagle3", "--target", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
