"""Which drafter format a checkpoint is, and its tensors under one canonical naming.

Canonical names follow vLLM's: ``midlayer.`` becomes ``layers.0.`` (vLLM's llama_eagle3 loader does
the same) and a leading ``model.`` is dropped, so shape and vocab rules are written once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from specprobe.checkpoint.folder import Checkpoint, TensorInfo

DRAFT_FORMATS: dict[str, str] = {
    "eagle3": "original EAGLE-3 (SafeAILab): architectures [LlamaForCausalLM], midlayer.* keys, d2t/t2d",
    "specforge": "SpecForge EAGLE-3: architectures [LlamaForCausalLMEagle3], midlayer.* keys, optional eagle_config",
    "speculators": "speculators Eagle3Speculator: speculators_config + transformer_layer_config, layers.0.* keys",
    "vllm-native": "EAGLE-3 with vLLM's own layers.0.* naming",
    "eagle3-mla": "EAGLE-3 with DeepSeek MLA attention (Eagle3DeepseekV2/V3ForCausalLM: q_a_proj, kv_a_proj_with_mqa)",
}

_LAYER = re.compile(r"^layers\.(\d+)\.")
_MLA_KEYS = ("kv_lora_rank", "q_lora_rank")


@dataclass
class Layout:
    """The drafter's shape as check reasons about it."""

    draft_format: str | None
    architecture: str | None
    namespaces: list[str]
    layer_ids: list[int]
    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    original_names: dict[str, str] = field(default_factory=dict)
    mla: bool = False

    def get(self, name: str) -> TensorInfo | None:
        return self.tensors.get(name)

    def location(self, name: str) -> str:
        info = self.tensors.get(name)
        original = self.original_names.get(name, name)
        return f"{info.file}:{original}" if info else original


def effective_draft_config(raw: dict[str, Any]) -> dict[str, Any]:
    """The draft's model settings: speculators nests them in ``transformer_layer_config``.

    Top-level keys of a speculators config (draft_vocab_size, target_hidden_size, aux layer ids,
    norm_before_residual) describe the drafter too and win over the nested ones.
    """
    nested = raw.get("transformer_layer_config")
    if isinstance(nested, dict):
        merged = {**nested}
        for key, value in raw.items():
            if key not in ("transformer_layer_config", "architectures"):
                merged[key] = value
        merged["architectures"] = raw.get("architectures")
        return merged
    return raw


def is_speculators(raw: dict[str, Any]) -> bool:
    archs = raw.get("architectures")
    return (
        "speculators_model_type" in raw
        or isinstance(raw.get("speculators_config"), dict)
        or (isinstance(archs, list) and "Eagle3Speculator" in archs)
    )


def _canonical(name: str) -> str:
    if name.startswith("model."):
        name = name[len("model.") :]
    if name.startswith("midlayer."):
        name = "layers.0." + name[len("midlayer.") :]
    return name


def _block_drafter(raw: dict[str, Any], archs: object) -> bool:
    """A DFlash/DSpark block drafter: its architecture or its ``dflash_config`` says so."""
    names = " ".join(a for a in archs if isinstance(a, str)).lower() if isinstance(archs, list) else ""
    return "dflash" in names or "dspark" in names or isinstance(raw.get("dflash_config"), dict) or (
        raw.get("dspark_block_size") is not None
    )


def detect_layout(ckpt: Checkpoint, config: dict[str, Any] | None) -> Layout:
    """Name the format from config.json and the tensor names (never from tensor data)."""
    raw = config or {}
    archs = raw.get("architectures")
    architecture = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    namespaces: list[str] = []
    stripped = [n[len("model.") :] if n.startswith("model.") else n for n in ckpt.tensors]
    if any(n.startswith("midlayer.") for n in stripped):
        namespaces.append("midlayer")
    if any(n.startswith("layers.") for n in stripped):
        namespaces.append("layers")

    tensors: dict[str, TensorInfo] = {}
    original: dict[str, str] = {}
    for name, info in ckpt.tensors.items():
        canon = _canonical(name)
        # With two namespaces the midlayer copy would shadow layers.0: keep the first seen, the
        # layout rule reports the conflict.
        if canon not in tensors:
            tensors[canon] = info
            original[canon] = name
    layer_ids = sorted({int(m.group(1)) for n in tensors if (m := _LAYER.match(n))})

    effective = effective_draft_config(raw)
    mla = any(effective.get(k) is not None for k in _MLA_KEYS) or any(
        n.startswith("layers.0.self_attn.") and ("kv_a_proj_with_mqa" in n or "q_a_proj" in n) for n in tensors
    )
    eagle3_like = (
        "fc.weight" in tensors
        or "d2t" in tensors
        or (architecture is not None and "eagle3" in architecture.lower())
        or is_speculators(raw)
        or "eagle_aux_hidden_state_layer_ids" in effective
    )
    draft_format: str | None = None
    if _block_drafter(raw, archs):
        draft_format = None  # DFlash/DSpark: fc over target layers too, but a block drafter (checkpoint.forms)
    elif architecture is not None and architecture.startswith("Eagle") and not architecture.startswith("Eagle3"):
        draft_format = None  # EAGLE-1/2 (EagleLlamaForCausalLM, ...): not an EAGLE-3 drafter
    elif is_speculators(raw):
        draft_format = "speculators"
    elif mla and eagle3_like:
        draft_format = "eagle3-mla"
    elif eagle3_like and "midlayer" in namespaces:
        specforge = (architecture or "").endswith("Eagle3") or isinstance(raw.get("eagle_config"), dict)
        draft_format = "specforge" if specforge else "eagle3"
    elif eagle3_like and "layers" in namespaces:
        draft_format = "vllm-native"
    return Layout(
        draft_format=draft_format,
        architecture=architecture,
        namespaces=namespaces,
        layer_ids=layer_ids,
        tensors=tensors,
        original_names=original,
        mla=mla,
    )
