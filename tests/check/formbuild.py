"""Drafters of the forms that are not EAGLE-3, in their published on-disk shapes, with the real writer.

A case's ``draft`` names ``form`` (``draft_model``, ``dflash``, ``dspark``, ``medusa``, ``mlp_speculator``)
and ``preset`` (a published model's config.json, below) plus ``config_set`` / ``config_remove`` edits and
``tensors_remove``. Weights are sparse holes: only config.json and the safetensors headers are real, which
is all ``check`` reads. Beside the drafter, ``files`` may write tokenizer files (``tokenizer.json``, ...).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from specprobe.checkpoint.writer import TensorSpec, write_safetensors
from specprobe.demo.fixtures import write_json

# config.json of published models, as their hub repositories ship them (only keys check reads kept).
PRESETS: dict[str, dict[str, Any]] = {
    "Qwen/Qwen3-0.6B": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "bos_token_id": 151643,
        "eos_token_id": 151645, "head_dim": 128, "hidden_size": 1024, "intermediate_size": 3072,
        "max_position_embeddings": 40960, "num_attention_heads": 16, "num_hidden_layers": 28,
        "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_theta": 1000000, "tie_word_embeddings": True,
        "torch_dtype": "bfloat16", "vocab_size": 151936,
    },
    "Qwen/Qwen3-32B": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "bos_token_id": 151643,
        "eos_token_id": 151645, "head_dim": 128, "hidden_size": 5120, "intermediate_size": 25600,
        "max_position_embeddings": 40960, "num_attention_heads": 64, "num_hidden_layers": 64,
        "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_theta": 1000000, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "vocab_size": 151936,
    },
    "Qwen/Qwen3-8B": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "bos_token_id": 151643,
        "eos_token_id": 151645, "head_dim": 128, "hidden_size": 4096, "intermediate_size": 12288,
        "max_position_embeddings": 40960, "num_attention_heads": 32, "num_hidden_layers": 36,
        "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_theta": 1000000, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "vocab_size": 151936,
    },
    "meta-llama/Llama-3.1-8B-Instruct": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "bos_token_id": 128000,
        "eos_token_id": [128001, 128008, 128009], "hidden_size": 4096, "intermediate_size": 14336,
        "max_position_embeddings": 131072, "num_attention_heads": 32, "num_hidden_layers": 32,
        "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": False,
        "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "torch_dtype": "bfloat16", "vocab_size": 128256,
    },
    "meta-llama/Llama-3.2-1B-Instruct": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "bos_token_id": 128000,
        "eos_token_id": [128001, 128008, 128009], "head_dim": 64, "hidden_size": 2048, "intermediate_size": 8192,
        "max_position_embeddings": 131072, "num_attention_heads": 32, "num_hidden_layers": 16,
        "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "tie_word_embeddings": True,
        "torch_dtype": "bfloat16", "vocab_size": 128256,
    },
    # SpecForge configs/qwen3-8b-dflash.json (z-lab/Qwen3-8B-DFlash-b16's shape) with its dflash_config.
    "z-lab/Qwen3-8B-DFlash-b16": {
        "architectures": ["DFlashDraftModel"], "auto_map": {"AutoModel": "modeling_dflash.DFlashDraftModel"},
        "block_size": 16, "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_size": 4096,
        "intermediate_size": 12288, "layer_types": ["full_attention"] * 5, "max_position_embeddings": 40960,
        "model_type": "qwen3", "num_attention_heads": 32, "num_hidden_layers": 5, "num_key_value_heads": 8,
        "num_target_layers": 36, "rms_norm_eps": 1e-06, "rope_theta": 1000000, "tie_word_embeddings": False,
        "vocab_size": 151936,
        "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 9, 17, 25, 33]},
    },
    # SpecForge configs/qwen3-8b-dspark.json.
    "SpecForge/qwen3-8b-dspark": {
        "architectures": ["DSparkDraftModel"], "auto_map": {"AutoModel": "dspark.DSparkDraftModel"},
        "block_size": 16, "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_size": 4096,
        "intermediate_size": 12288, "layer_types": ["full_attention"] * 5, "max_position_embeddings": 40960,
        "model_type": "qwen3", "num_attention_heads": 32, "num_hidden_layers": 5, "num_key_value_heads": 8,
        "num_target_layers": 36, "rms_norm_eps": 1e-06, "rope_theta": 1000000, "tie_word_embeddings": False,
        "vocab_size": 151936,
        "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 9, 17, 25, 33], "projector_type": "dspark",
                          "markov_rank": 256},
    },
}


# A Qwen3-Next-style target with its MTP layer (mtp.*), FP8-quantized with block scales as the published
# Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 is; sizes shrunk (check reads names, dtypes and shapes only).
PRESETS["Qwen3-Next-FP8-small"] = {
    "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "bos_token_id": 151643,
    "eos_token_id": 151645, "head_dim": 64, "hidden_size": 256, "intermediate_size": 512,
    "max_position_embeddings": 262144, "num_attention_heads": 4, "num_hidden_layers": 2, "num_key_value_heads": 2,
    "mtp_num_hidden_layers": 1, "tie_word_embeddings": False, "vocab_size": 151936,
    "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                            "weight_block_size": [128, 128], "modules_to_not_convert": ["lm_head"]},
}


def preset(name: str) -> dict[str, Any]:
    return copy.deepcopy(PRESETS[name])


def _decoder_layer(prefix: str, config: dict[str, Any], *, qk_norm: bool) -> dict[str, TensorSpec]:
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    kv = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or hidden // heads)
    inter = int(config["intermediate_size"])
    t = {
        f"{prefix}.self_attn.q_proj.weight": (heads * head_dim, hidden),
        f"{prefix}.self_attn.k_proj.weight": (kv * head_dim, hidden),
        f"{prefix}.self_attn.v_proj.weight": (kv * head_dim, hidden),
        f"{prefix}.self_attn.o_proj.weight": (hidden, heads * head_dim),
        f"{prefix}.mlp.gate_proj.weight": (inter, hidden),
        f"{prefix}.mlp.up_proj.weight": (inter, hidden),
        f"{prefix}.mlp.down_proj.weight": (hidden, inter),
        f"{prefix}.input_layernorm.weight": (hidden,),
        f"{prefix}.post_attention_layernorm.weight": (hidden,),
    }
    if qk_norm:
        t[f"{prefix}.self_attn.q_norm.weight"] = (head_dim,)
        t[f"{prefix}.self_attn.k_norm.weight"] = (head_dim,)
    return {name: TensorSpec("BF16", shape) for name, shape in t.items()}


def form_tensors(form: str, config: dict[str, Any], target_hidden: int | None = None) -> dict[str, TensorSpec]:
    """The tensor names and shapes a published drafter of ``form`` ships."""
    hidden = int(config["hidden_size"])
    vocab = int(config["vocab_size"])
    qk_norm = config.get("model_type") == "qwen3"
    tensors: dict[str, TensorSpec] = {}
    if form == "draft_model":
        tensors["model.embed_tokens.weight"] = TensorSpec("BF16", (vocab, hidden))
        for i in range(int(config["num_hidden_layers"])):
            tensors.update(_decoder_layer(f"model.layers.{i}", config, qk_norm=qk_norm))
        tensors["model.norm.weight"] = TensorSpec("BF16", (hidden,))
        if not config.get("tie_word_embeddings"):
            tensors["lm_head.weight"] = TensorSpec("BF16", (vocab, hidden))
    elif form in ("dflash", "dspark"):
        ids = (config.get("dflash_config") or {}).get("target_layer_ids") or [0, 1, 2, 3, 4]
        width = (target_hidden or hidden) * len(ids)
        for i in range(int(config["num_hidden_layers"])):
            tensors.update(_decoder_layer(f"layers.{i}", config, qk_norm=qk_norm))
        if config.pop("_fc_packed", False):
            # compressed-tensors W4A16 (pack-quantized): int4 values packed eight to an int32, group scales.
            tensors["fc.weight_packed"] = TensorSpec("I32", (hidden, width // 8))
            tensors["fc.weight_scale"] = TensorSpec("BF16", (hidden, width // 128))
            tensors["fc.weight_shape"] = TensorSpec("I64", (2,))
        else:
            tensors["fc.weight"] = TensorSpec("BF16", (hidden, width))
        tensors["hidden_norm.weight"] = TensorSpec("BF16", (hidden,))
        tensors["norm.weight"] = TensorSpec("BF16", (hidden,))
    elif form == "mtp":
        # Target layers quantized (F8 weight + weight_scale_inv); the MTP layer dense or quantized per
        # ``mtp_dtype`` (the case's "mtp_quantized").
        tensors["model.embed_tokens.weight"] = TensorSpec("BF16", (vocab, hidden))
        layers = [f"model.layers.{i}" for i in range(int(config["num_hidden_layers"]))]
        for prefix in [*layers, "mtp.layers.0"]:
            for name, spec in _decoder_layer(prefix, config, qk_norm=False).items():
                quantize = prefix != "mtp.layers.0" or bool(config.get("_mtp_quantized"))
                if quantize and len(spec.shape) == 2:
                    tensors[name] = TensorSpec("F8_E4M3", spec.shape)
                    tensors[name + "_scale_inv"] = TensorSpec("F32", (1, 1))
                else:
                    tensors[name] = spec
        tensors["mtp.fc.weight"] = TensorSpec("BF16", (hidden, 2 * hidden))
        tensors["mtp.norm.weight"] = TensorSpec("BF16", (hidden,))
        tensors["model.norm.weight"] = TensorSpec("BF16", (hidden,))
        tensors["lm_head.weight"] = TensorSpec("BF16", (vocab, hidden))
        config.pop("_mtp_quantized", None)
    elif form == "medusa":
        for head in range(int(config.get("medusa_num_heads", 4))):
            tensors[f"medusa_head.{head}.0.linear.weight"] = TensorSpec("BF16", (hidden, hidden))
            tensors[f"medusa_head.{head}.1.weight"] = TensorSpec("BF16", (vocab, hidden))
    elif form == "mlp_speculator":
        for head in range(int(config.get("n_predict", 3))):
            tensors[f"emb.{head}.weight"] = TensorSpec("BF16", (vocab, hidden))
            tensors[f"head.{head}.weight"] = TensorSpec("BF16", (vocab, hidden))
    else:
        raise ValueError(f"unknown drafter form {form}")
    return tensors


def build_form_case(folder: Path, draft: dict[str, Any]) -> None:
    """Write the drafter of a case whose ``draft`` names a ``form``."""
    folder.mkdir(parents=True, exist_ok=True)
    config = preset(draft["preset"]) if "preset" in draft else dict(draft.get("config", {}))
    for key, value in draft.get("config_set", {}).items():
        config[key] = value
    for key in draft.get("config_remove", []):
        config.pop(key, None)
    tensors = form_tensors(draft["form"], config, draft.get("target_hidden"))
    config.pop("_mtp_quantized", None)
    config.pop("_fc_packed", None)
    for name in draft.get("tensors_remove", []):
        tensors.pop(name, None)
    for name, raw in draft.get("tensors_set", {}).items():
        tensors[name] = TensorSpec(raw.get("dtype", "BF16"), tuple(raw["shape"]))
    write_json(folder / "config.json", config)
    write_safetensors(folder / "model.safetensors", dict(tensors), metadata={"format": "pt"})


def target_preset(case_target: dict[str, Any]) -> dict[str, Any] | None:
    """A case target written from a published config (``{"preset": NAME, "config_set": {...}}``)."""
    if "preset" not in case_target:
        return None
    config = preset(case_target["preset"])
    config.update(case_target.get("config_set", {}))
    for key in case_target.get("config_remove", []):
        config.pop(key, None)
    return config
