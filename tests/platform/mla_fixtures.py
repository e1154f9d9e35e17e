"""DeepSeek-V3-style MLA targets on disk (config.json and, optionally, header-true router weights)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from specprobe.checkpoint.writer import TensorSpec, write_safetensors
from specprobe.demo.fixtures import build_target

# DeepSeek-V3's own attention sizes (the CPU MLA kernel's): kv_lora_rank 512 + qk_rope_head_dim 64 = 576.
MLA = {
    "q_lora_rank": 64,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 32,
    "qk_rope_head_dim": 64,
    "v_head_dim": 32,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "n_group": 1,
    "topk_group": 1,
    "first_k_dense_replace": 1,
    "moe_intermediate_size": 32,
}


def mla_target(folder: Path, *, weights: bool = False, **extra: object) -> Path:
    """A DeepSeek-V3-style MLA target; with ``weights`` a header-only router bias as transformers saves it."""
    build_target(
        folder,
        hidden_size=128,
        num_hidden_layers=2,
        model_type="deepseek_v3",
        architecture="DeepseekV3ForCausalLM",
        extra={**MLA, **extra},
    )
    if weights:
        tensors: dict[str, np.ndarray | TensorSpec] = {
            "model.layers.1.mlp.gate.weight": np.zeros((4, 128), dtype=np.float32),
            "model.layers.1.mlp.gate.e_score_correction_bias": np.zeros(4, dtype=np.float32),
        }
        write_safetensors(folder / "model.safetensors", tensors, metadata={"format": "pt"})
    return folder
