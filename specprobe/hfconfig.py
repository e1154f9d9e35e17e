"""Reading a Hugging Face config.json (drafter or target) and classifying the target's attention.

Only config.json is read: no model code, no tokenizer, no weights. Multimodal wrappers (Kimi-K2.5,
Gemma-3, Qwen-VL...) keep the language model under ``text_config``; that is what a drafter pairs with.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from specprobe.untrusted.files import (
    ParsedJson,
    UntrustedInputError,
    exists,
    expand_user,
    load_json_file,
    parse_json,
)

# A real config.json is a few kB; the largest we know of are image classifiers whose id2label and
# label2id name 21,841 ImageNet-22k classes (about 2 MB). Parsing costs ~15x the file size in memory
# (a 50 MB config.json peaked at 724 MB RSS), so anything above this is refused from its size.
MAX_CONFIG_BYTES = 8 * 1024 * 1024

# A hub id is "name" or "owner/name" made of the characters the hub allows.
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")


class ConfigError(Exception):
    """config.json is missing, unreadable or not a JSON object (a finding for a checkpoint)."""


class AttentionKind(StrEnum):
    """How the target's attention is built; decides which drafter/engine pairings work."""

    MHA = "MHA"
    GQA = "GQA"
    MQA = "MQA"
    MLA = "MLA"
    LINEAR_HYBRID = "linear-hybrid"
    SLIDING_WINDOW = "sliding-window"


@dataclass(frozen=True)
class ModelConfig:
    """The config.json fields specprobe reasons about, from the language-model part of the config."""

    raw: dict[str, Any]
    model_type: str | None
    architectures: tuple[str, ...]
    hidden_size: int | None
    vocab_size: int | None
    num_hidden_layers: int | None
    num_attention_heads: int | None
    num_key_value_heads: int | None
    max_position_embeddings: int | None
    tie_word_embeddings: bool | None
    rope: dict[str, Any] = field(default_factory=dict)
    text_config_used: bool = False
    wrapper_model_type: str | None = None  # a multimodal wrapper's own model_type (e.g. kimi_k25)

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)


def read_config_json(path: Path) -> ParsedJson:
    """Parse config.json within specprobe's bounds (size, nesting, integer width; see
    ``specprobe.untrusted.files``): a JSON object, or ConfigError with a one-line reason."""
    try:
        parsed = load_json_file(path, max_bytes=MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise ConfigError(f"{path.name} is missing") from None
    except OSError as exc:
        raise ConfigError(f"{path.name} cannot be read: {exc.strerror or exc}") from None
    except UntrustedInputError as exc:
        raise ConfigError(str(exc)) from None
    if not isinstance(parsed.value, dict):
        raise ConfigError(f"{path.name} is not a JSON object")
    return parsed


def parse_config_bytes(data: bytes, name: str = "config.json") -> ParsedJson:
    """``read_config_json`` for bytes already read (a hub file): the same bounds and the same reasons."""
    try:
        parsed = parse_json(data, what=name)
    except UntrustedInputError as exc:
        raise ConfigError(str(exc)) from None
    if not isinstance(parsed.value, dict):
        raise ConfigError(f"{name} is not a JSON object")
    return parsed


def load_config_json(path: Path) -> dict[str, Any]:
    """Parse config.json strictly: a JSON object or ConfigError with a one-line reason."""
    value: dict[str, Any] = read_config_json(path).value
    return value


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _first_int(cfg: dict[str, Any], *keys: str) -> int | None:
    """The first integer among ``keys``: GPT-2 style configs (Falcon, StarCoder) say ``n_head``,
    ``n_layer`` and ``n_embd`` where Llama-style ones say ``num_attention_heads`` and so on."""
    for key in keys:
        value = _int(cfg.get(key))
        if value is not None:
            return value
    return None


def language_model_part(raw: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The text model's config: ``text_config`` of multimodal wrappers, else the config itself."""
    text = raw.get("text_config")
    if isinstance(text, dict) and ("hidden_size" in text or "num_hidden_layers" in text):
        merged = {**text}
        # Wrappers keep architectures/model_type at the top; keep the text model's own when present.
        merged.setdefault("architectures", raw.get("architectures"))
        return merged, True
    return raw, False


def parse_model_config(raw: dict[str, Any]) -> ModelConfig:
    lm, nested = language_model_part(raw)
    architectures = lm.get("architectures") or raw.get("architectures") or []
    if not isinstance(architectures, list):
        architectures = []
    rope: dict[str, Any] = {}
    for key in ("rope_theta", "rope_scaling", "rope_parameters", "partial_rotary_factor"):
        if key in lm and lm[key] is not None:
            rope[key] = lm[key]
    heads = _first_int(lm, "num_attention_heads", "n_head", "num_heads")
    kv_heads = _first_int(lm, "num_key_value_heads", "num_kv_heads", "n_head_kv")
    tie = lm.get("tie_word_embeddings", raw.get("tie_word_embeddings"))
    return ModelConfig(
        raw=lm,
        model_type=_str(lm.get("model_type")) or _str(raw.get("model_type")),
        architectures=tuple(a for a in architectures if isinstance(a, str)),
        hidden_size=_first_int(lm, "hidden_size", "n_embd", "d_model"),
        vocab_size=_int(lm.get("vocab_size")),
        num_hidden_layers=_first_int(lm, "num_hidden_layers", "n_layer", "num_layers"),
        num_attention_heads=heads,
        num_key_value_heads=kv_heads if kv_heads is not None else heads,
        max_position_embeddings=_int(lm.get("max_position_embeddings")),
        tie_word_embeddings=tie if isinstance(tie, bool) else None,
        rope=rope,
        text_config_used=nested,
        wrapper_model_type=raw.get("model_type") if nested and isinstance(raw.get("model_type"), str) else None,
    )


def _layer_types(cfg: dict[str, Any]) -> list[str]:
    """Per-layer kinds: ``layer_types``/``layers_block_type`` lists, a Nemotron-H style pattern
    string where ``M`` is a Mamba layer and ``*`` an attention layer, or MiniMax's ``attn_type_list``
    where 0 is a linear (lightning) layer and 1 a softmax one."""
    for key in ("layer_types", "layers_block_type"):
        value = cfg.get(key)
        if isinstance(value, list):
            return [str(v).lower() for v in value]
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        return ["mamba" if c == "M" else "attention" if c == "*" else "mlp" for c in pattern]
    attn_types = cfg.get("attn_type_list")
    if isinstance(attn_types, list):
        return ["linear_attention" if v == 0 else "full_attention" for v in attn_types]
    return []


_LINEAR_LAYER_WORDS = ("linear", "mamba", "delta", "ssm", "recurrent", "conv")
_LINEAR_CONFIG_KEYS = (
    "linear_num_key_heads",
    "linear_key_head_dim",
    "full_attention_interval",
    "linear_attn_config",
    "attn_layer_period",  # Jamba: one attention layer every period, Mamba elsewhere
    "mamba_d_state",
    "mamba_d_ssm",  # Falcon-H1
    "ssm_cfg",
)
_MLA_CONFIG_KEYS = ("kv_lora_rank", "q_lora_rank")


def _is_mla(cfg: dict[str, Any]) -> bool:
    return any(cfg.get(k) is not None for k in _MLA_CONFIG_KEYS) or cfg.get("use_mla") is True


def _is_linear_hybrid(cfg: dict[str, Any], layer_types: list[str]) -> bool:
    if any(cfg.get(k) is not None for k in _LINEAR_CONFIG_KEYS):
        return True
    return any(word in t for t in layer_types for word in _LINEAR_LAYER_WORDS)


def _is_sliding_window(cfg: dict[str, Any], layer_types: list[str], max_positions: int | None) -> bool:
    """Sliding-window attention that is really on.

    Qwen2/Qwen3 ship ``sliding_window`` with ``use_sliding_window: false``; Mistral-7B-v0.2+ ship
    ``sliding_window: null``; a window at least as long as the context is full attention in effect.
    """
    if any("sliding" in t for t in layer_types):
        return True
    window = _int(cfg.get("sliding_window"))
    if window is None or window <= 0 or cfg.get("use_sliding_window") is False:
        return False
    if cfg.get("sliding_window_pattern") is not None:
        return True  # Gemma-3: windowed layers interleaved with global ones
    return not (max_positions is not None and window >= max_positions)


def _head_grouping(config: ModelConfig) -> AttentionKind | None:
    """MHA/GQA/MQA from the head counts; None when config.json does not say (the model class
    defaults apply, e.g. Gemma-3's nested text_config omits them)."""
    cfg = config.raw
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    if cfg.get("multi_query") is True or kv_heads == 1:
        return AttentionKind.MQA
    if heads is None or kv_heads is None:
        return None
    return AttentionKind.GQA if kv_heads < heads else AttentionKind.MHA


def attention_traits(config: ModelConfig) -> frozenset[AttentionKind]:
    """Every attention property of the model: a Gemma-3 target is both sliding-window and GQA, a
    gpt-oss one sliding-window and GQA, Qwen3-Next linear-hybrid and GQA. Matching a known pairing
    against all of them is what makes it general."""
    cfg = config.raw
    layer_types = _layer_types(cfg)
    traits: set[AttentionKind] = set()
    if _is_mla(cfg):
        traits.add(AttentionKind.MLA)
    if _is_linear_hybrid(cfg, layer_types):
        traits.add(AttentionKind.LINEAR_HYBRID)
    if _is_sliding_window(cfg, layer_types, config.max_position_embeddings):
        traits.add(AttentionKind.SLIDING_WINDOW)
    grouping = _head_grouping(config)
    # MLA declares num_key_value_heads == num_attention_heads although its cache is one latent.
    if grouping is not None and AttentionKind.MLA not in traits:
        traits.add(grouping)
    return frozenset(traits)


def classify_attention(config: ModelConfig) -> AttentionKind:
    """Attention kind from config.json alone (the most consequential of ``attention_traits``).

    Order matters: MLA and linear hybrids change the KV cache and the engine's attention backend,
    which matters more to a drafter pairing than the head grouping does.
    """
    traits = attention_traits(config)
    for kind in (AttentionKind.MLA, AttentionKind.LINEAR_HYBRID, AttentionKind.SLIDING_WINDOW):
        if kind in traits:
            return kind
    return _head_grouping(config) or AttentionKind.MHA


def looks_like_hub_id(spec: str) -> bool:
    return bool(_HUB_ID.match(spec)) and not exists(Path(spec))


def hub_cache_dir() -> Path:
    """The Hugging Face hub cache as the environment names it now: ``HF_HUB_CACHE``, else
    ``$HF_HOME/hub``, else ``$XDG_CACHE_HOME/huggingface/hub`` (``~/.cache`` by default).

    Read at each call, because huggingface_hub fixes its own constant when first imported, and a
    caller (a test, a CI step, a library user) may set HF_HOME after that."""
    if os.environ.get("HF_HUB_CACHE"):
        return expand_user(os.environ["HF_HUB_CACHE"])
    if os.environ.get("HF_HOME"):
        return expand_user(os.environ["HF_HOME"]) / "hub"
    cache_home = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return expand_user(cache_home) / "huggingface" / "hub"


def cached_file(repo_id: str, name: str) -> Path | None:
    """``name`` of hub repository ``repo_id`` in the local hub cache (``hub_cache_dir``), or None;
    nothing is downloaded. An id the hub library refuses is simply not cached."""
    # Imported here: a local target or a bare command never pays for huggingface_hub's import.
    from huggingface_hub import try_to_load_from_cache  # noqa: PLC0415

    try:
        found = try_to_load_from_cache(repo_id, name, cache_dir=hub_cache_dir())
    except Exception:  # an invalid id (HFValidationError) or an unreadable cache entry: not cached
        return None
    return Path(found) if isinstance(found, str) else None
