"""Builds EAGLE-3 drafters and target configs in every supported format, with the writer.

Used by the demo, the corpus tests and the scaling benchmark, so all three exercise real on-disk
layouts. ``sparse=True`` leaves every weight except d2t/t2d as a hole (no data written).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from specprobe.checkpoint.writer import TensorSpec, float32_to_bf16, write_safetensors


@dataclass
class DraftSpec:
    """The knobs of a drafter; defaults give a tiny Llama-style EAGLE-3 head."""

    draft_format: str = "vllm-native"
    hidden_size: int = 64
    target_hidden_size: int | None = None
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    intermediate_size: int = 128
    vocab_size: int = 512
    draft_vocab_size: int = 128
    aux_layer_ids: list[int] | None = field(default_factory=lambda: [1, 3, 5])
    max_position_embeddings: int = 8192
    embed_tokens: bool = False
    dtype: str = "F32"
    sparse: bool = False
    seed: int = 0
    head_dim: int | None = None
    # MLA (eagle3-mla) dimensions
    q_lora_rank: int = 32
    kv_lora_rank: int = 32
    qk_nope_head_dim: int = 16
    qk_rope_head_dim: int = 8
    v_head_dim: int = 16

    @property
    def target_hidden(self) -> int:
        return self.target_hidden_size or self.hidden_size


def target_config(
    *,
    hidden_size: int = 64,
    vocab_size: int = 512,
    num_hidden_layers: int = 8,
    max_position_embeddings: int = 8192,
    model_type: str = "llama",
    architecture: str = "LlamaForCausalLM",
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A target model's config.json (only what check reads)."""
    config: dict[str, Any] = {
        "architectures": [architecture],
        "model_type": model_type,
        "hidden_size": hidden_size,
        "intermediate_size": hidden_size * 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_hidden_layers": num_hidden_layers,
        "vocab_size": vocab_size,
        "max_position_embeddings": max_position_embeddings,
        "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0,
        "tie_word_embeddings": False,
    }
    config.update(extra or {})
    return config


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def vocab_map(spec: DraftSpec) -> tuple[np.ndarray, np.ndarray]:
    """SpecForge's construction: d2t[i] = used[i] - i over sorted used target ids; t2d marks them."""
    rng = np.random.default_rng(spec.seed)
    used = np.sort(rng.choice(spec.vocab_size, size=spec.draft_vocab_size, replace=False)).astype(np.int64)
    d2t = used - np.arange(spec.draft_vocab_size, dtype=np.int64)
    t2d = np.zeros(spec.vocab_size, dtype=bool)
    t2d[used] = True
    return d2t, t2d


def _llama_config(spec: DraftSpec) -> dict[str, Any]:
    config: dict[str, Any] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "num_attention_heads": spec.num_attention_heads,
        "num_key_value_heads": spec.num_key_value_heads,
        "num_hidden_layers": 1,
        "vocab_size": spec.vocab_size,
        "draft_vocab_size": spec.draft_vocab_size,
        "max_position_embeddings": spec.max_position_embeddings,
        "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16" if spec.dtype == "BF16" else "float32",
    }
    if spec.target_hidden_size is not None:
        config["target_hidden_size"] = spec.target_hidden_size
    if spec.head_dim is not None:
        config["head_dim"] = spec.head_dim
    return config


def draft_config(spec: DraftSpec) -> dict[str, Any]:
    """config.json of the drafter in ``spec.draft_format``'s own conventions."""
    base = _llama_config(spec)
    fmt = spec.draft_format
    if fmt == "eagle3":
        if spec.aux_layer_ids is not None:
            base["eagle_aux_hidden_state_layer_ids"] = spec.aux_layer_ids
        return base
    if fmt == "specforge":
        base["architectures"] = ["LlamaForCausalLMEagle3"]
        if spec.aux_layer_ids is not None:
            base["eagle_config"] = {
                "eagle_aux_hidden_state_layer_ids": spec.aux_layer_ids,
                "use_aux_hidden_state": True,
            }
        return base
    if fmt == "vllm-native":
        base["architectures"] = ["LlamaForCausalLMEagle3"]
        if spec.aux_layer_ids is not None:
            base["eagle_aux_hidden_state_layer_ids"] = spec.aux_layer_ids
        return base
    if fmt == "speculators":
        layer = {k: v for k, v in base.items() if k not in ("draft_vocab_size", "target_hidden_size")}
        config: dict[str, Any] = {
            "architectures": ["Eagle3Speculator"],
            "speculators_model_type": "eagle3",
            "speculators_version": "0.2.0",
            "speculators_config": {
                "algorithm": "eagle3",
                "default_proposal_method": "greedy",
                "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
                "verifier": {"name_or_path": "target", "architectures": ["LlamaForCausalLM"]},
            },
            "transformer_layer_config": layer,
            "draft_vocab_size": spec.draft_vocab_size,
            "target_hidden_size": spec.target_hidden_size,
            "norm_before_residual": True,
        }
        if spec.aux_layer_ids is not None:
            config["eagle_aux_hidden_state_layer_ids"] = spec.aux_layer_ids
        return config
    if fmt == "eagle3-mla":
        base.update(
            {
                "architectures": ["Eagle3DeepseekV3ForCausalLM"],
                "model_type": "deepseek_v3",
                "q_lora_rank": spec.q_lora_rank,
                "kv_lora_rank": spec.kv_lora_rank,
                "qk_nope_head_dim": spec.qk_nope_head_dim,
                "qk_rope_head_dim": spec.qk_rope_head_dim,
                "v_head_dim": spec.v_head_dim,
                "num_key_value_heads": spec.num_attention_heads,
            }
        )
        if spec.aux_layer_ids is not None:
            base["eagle_aux_hidden_state_layer_ids"] = spec.aux_layer_ids
        return base
    raise ValueError(f"unknown draft format {fmt!r}")


def draft_tensor_shapes(spec: DraftSpec) -> dict[str, tuple[int, ...]]:
    """Canonical (layers.0.*) tensor names and shapes of the drafter's weights."""
    h = spec.hidden_size
    n_aux = len(spec.aux_layer_ids) if spec.aux_layer_ids is not None else 3
    shapes: dict[str, tuple[int, ...]] = {}
    if spec.draft_format == "eagle3-mla":
        heads = spec.num_attention_heads
        attn = {
            "q_a_proj": (spec.q_lora_rank, 2 * h),
            "q_a_layernorm": (spec.q_lora_rank,),
            "q_b_proj": (heads * (spec.qk_nope_head_dim + spec.qk_rope_head_dim), spec.q_lora_rank),
            "kv_a_proj_with_mqa": (spec.kv_lora_rank + spec.qk_rope_head_dim, 2 * h),
            "kv_a_layernorm": (spec.kv_lora_rank,),
            "kv_b_proj": (heads * (spec.qk_nope_head_dim + spec.v_head_dim), spec.kv_lora_rank),
            "o_proj": (h, heads * spec.v_head_dim),
        }
    else:
        head_dim = spec.head_dim or h // spec.num_attention_heads
        attn = {
            "q_proj": (spec.num_attention_heads * head_dim, 2 * h),
            "k_proj": (spec.num_key_value_heads * head_dim, 2 * h),
            "v_proj": (spec.num_key_value_heads * head_dim, 2 * h),
            "o_proj": (h, spec.num_attention_heads * head_dim),
        }
    for name, shape in attn.items():
        shapes[f"layers.0.self_attn.{name}.weight"] = shape
    shapes.update(
        {
            "layers.0.mlp.gate_proj.weight": (spec.intermediate_size, h),
            "layers.0.mlp.up_proj.weight": (spec.intermediate_size, h),
            "layers.0.mlp.down_proj.weight": (h, spec.intermediate_size),
            "layers.0.input_layernorm.weight": (h,),
            "layers.0.post_attention_layernorm.weight": (h,),
            "layers.0.hidden_norm.weight": (h,),
            "fc.weight": (h, n_aux * spec.target_hidden),
            "norm.weight": (h,),
            "lm_head.weight": (spec.draft_vocab_size, h),
        }
    )
    if spec.embed_tokens:
        shapes["embed_tokens.weight"] = (spec.vocab_size, h)
    return shapes


def _stored_name(canonical: str, draft_format: str) -> str:
    if draft_format in ("eagle3", "specforge") and canonical.startswith("layers.0."):
        return "midlayer." + canonical[len("layers.0.") :]
    return canonical


def draft_tensors(spec: DraftSpec) -> dict[str, np.ndarray | TensorSpec]:
    """Every tensor of the drafter, keyed by the name its format stores it under."""
    rng = np.random.default_rng(spec.seed + 1)
    tensors: dict[str, np.ndarray | TensorSpec] = {}
    for canonical, shape in draft_tensor_shapes(spec).items():
        name = _stored_name(canonical, spec.draft_format)
        if spec.sparse:
            tensors[name] = TensorSpec(dtype=spec.dtype, shape=shape)
            continue
        is_norm = len(shape) == 1
        values = np.ones(shape, dtype=np.float32) if is_norm else rng.normal(0.0, 0.02, size=shape).astype(np.float32)
        tensors[name] = float32_to_bf16(values) if spec.dtype == "BF16" else values
    if spec.draft_vocab_size < spec.vocab_size:
        d2t, t2d = vocab_map(spec)
        tensors["d2t"] = d2t
        tensors["t2d"] = t2d
    return tensors


def kimi_k25_sized(draft_format: str = "specforge") -> DraftSpec:
    """A drafter of Kimi-K2.5's size (hidden 7168, vocab 163840, draft vocab 32000, ~4.3 GB) as a sparse
    file: what the benchmarks use to show that cost does not grow with checkpoint size."""
    return DraftSpec(
        draft_format=draft_format,
        hidden_size=7168,
        num_attention_heads=64,
        num_key_value_heads=8,
        intermediate_size=18432,
        vocab_size=163840,
        draft_vocab_size=32000,
        aux_layer_ids=[2, 30, 58],
        max_position_embeddings=262144,
        embed_tokens=True,
        dtype="BF16",
        sparse=True,
    )


def build_draft(folder: Path, spec: DraftSpec, *, config_overrides: dict[str, Any] | None = None) -> Path:
    """Write config.json and model.safetensors of a drafter into ``folder`` (created if needed)."""
    folder.mkdir(parents=True, exist_ok=True)
    config = draft_config(spec)
    config.update(config_overrides or {})
    write_json(folder / "config.json", config)
    write_safetensors(folder / "model.safetensors", draft_tensors(spec), metadata={"format": "pt"})
    return folder


def build_target(folder: Path, **kwargs: Any) -> Path:
    """Write a target's config.json into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "config.json", target_config(**kwargs))
    return folder
