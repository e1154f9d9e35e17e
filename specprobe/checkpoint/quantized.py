"""Which tensors of a checkpoint are stored quantized, read from safetensors header names and dtypes only,
and whether a ``quantization_config`` leaves a module unquantized (its ``ignore`` /
``modules_to_not_convert`` / ``exclude_modules`` lists).

A quantized linear is stored as packed or low-precision weights with scale (and zero-point) siblings:
compressed-tensors ``weight_packed``/``weight_scale``/``weight_shape``, GPTQ/AWQ ``qweight``/``qzeros``/
``scales``, FP8 ``weight`` (F8_E4M3) with ``weight_scale``/``weight_scale_inv``, int8 codes with ``*_scale``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from specprobe.checkpoint.folder import TensorInfo

# Suffixes of the tensors a quantized linear stores besides (or instead of) a dense `weight`.
QUANT_SUFFIXES = (
    "weight_packed", "weight_scale", "weight_scale_inv", "weight_shape", "weight_zero_point", "weight_global_scale",
    "input_scale", "qweight", "qzeros", "scales", "g_idx", "weight_scale_2",
)
LOW_PRECISION = frozenset({"F8_E4M3", "F8_E5M2", "I8", "U8", "I32", "F4", "F6_E2M3", "F6_E3M2", "F8_E8M0"})
FLOAT_DTYPES = frozenset({"BF16", "F16", "F32"})
_IGNORE_KEYS = ("ignore", "modules_to_not_convert", "exclude_modules", "ignored_layers")


def module_of(name: str) -> tuple[str, str]:
    """``a.b.weight_packed`` -> (``a.b``, ``weight_packed``)."""
    module, _, leaf = name.rpartition(".")
    return module, leaf


def quantized_modules(tensors: Mapping[str, TensorInfo]) -> set[str]:
    """Modules stored quantized: a quantization sibling, or a low-precision 2-D ``weight``."""
    found: set[str] = set()
    for name, info in tensors.items():
        module, leaf = module_of(name)
        if leaf in QUANT_SUFFIXES or (leaf == "weight" and info.entry.dtype in LOW_PRECISION and len(info.shape) == 2):
            found.add(module)
    return found


def dense_linears(tensors: Mapping[str, TensorInfo], modules: Iterable[str] | None = None) -> list[str]:
    """Modules whose ``weight`` is a 2-D float tensor with no quantization sibling (embeddings excluded)."""
    quantized = quantized_modules(tensors)
    wanted = set(modules) if modules is not None else None
    found = []
    for name, info in tensors.items():
        module, leaf = module_of(name)
        if leaf != "weight" or len(info.shape) != 2 or info.entry.dtype not in FLOAT_DTYPES:
            continue
        if module in quantized or "embed" in module or module.endswith(("lm_head", "shared_head.head")):
            continue
        if wanted is None or module in wanted:
            found.append(module)
    return sorted(found)


def quantization_config(raw: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """config.json's quantization_config (or compression_config), also under a multimodal text_config."""
    if not isinstance(raw, Mapping):
        return None
    for holder in (raw, raw.get("text_config")):
        if isinstance(holder, Mapping):
            for key in ("quantization_config", "compression_config"):
                value = holder.get(key)
                if isinstance(value, dict) and value:
                    return value
    return None


def quant_method(config: Mapping[str, Any]) -> str:
    method = config.get("quant_method") or config.get("format") or "quantized"
    return str(method)[:40]


def ignore_entries(config: Mapping[str, Any]) -> list[str]:
    entries: list[str] = []
    for key in _IGNORE_KEYS:
        value = config.get(key)
        if isinstance(value, list):
            entries.extend(v for v in value if isinstance(v, str))
    return entries


def ignored(module: str, entries: Iterable[str]) -> bool:
    """Whether an ignore entry covers ``module``: ``re:PATTERN`` (compressed-tensors) searched in the name, a
    plain entry as a substring of it (vLLM's fp8 ``is_layer_skipped`` matches prefixes the same way)."""
    bare = module.removeprefix("model.")
    for entry in entries:
        if entry.startswith("re:"):
            if len(entry) > 256:
                continue  # a pattern from an untrusted file: long ones are not run
            try:
                if re.search(entry[3:], module) or re.search(entry[3:], bare):
                    return True
            except re.error:
                continue
        elif entry and (entry in module or entry.removeprefix("model.") in bare):
            return True
    return False
