"""Quantization family: quantized and unquantized weights against the quantization each release builds.

Three classes, each silent at serving time (acceptance near zero, no error):
- MTP layers stored dense inside a quantized target whose ``quantization_config`` does not exclude them: the
  releases build the MTP layers with the target's quantization (engine fact ``mtp_quantization``), so the
  dense weights meet packed parameters (vllm#41789, vllm#37667, sglang#34622);
- a drafter folder with packed/low-precision tensors and no ``quantization_config``: the drafter is built
  dense (fact ``draft_quantization``) and the packed tensors match no parameter;
- a quantized DFlash ``fc`` on SGLang releases whose DFlash drafter builds ``fc`` dense whatever the config
  says (fact ``dflash_quantized_fc``, sglang#39087).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from specprobe.checkpoint.folder import TensorInfo
from specprobe.checkpoint.forms import DFLASH, DSPARK, EAGLE3, MTP, detect_form
from specprobe.checkpoint.quantized import (
    dense_linears,
    ignore_entries,
    ignored,
    quant_method,
    quantization_config,
    quantized_modules,
)
from specprobe.compat.engine_facts import answer, source_url
from specprobe.findings import Finding, Severity
from specprobe.rules import rule

if TYPE_CHECKING:
    from specprobe.context import CheckContext

FAMILY = "quant"

MTP_INHERITED = rule(
    "QUANT-MTP-INHERITED",
    FAMILY,
    Severity.ERROR,
    "MTP layers stored unquantized in a quantized target whose quantization_config does not exclude them: the "
    "engine builds them with the target's quantization (load failure, or random MTP layers and ~0% acceptance)",
    source_url("vllm", "0.33.0", "vllm/config/speculative.py"),
    "https://github.com/vllm-project/vllm/issues/41789",
    "https://github.com/vllm-project/vllm/pull/37667",
    source_url("sglang", "0.5.23", "sglang/srt/arg_groups/serving_hook.py"),
)
PACKED_UNREAD = rule(
    "QUANT-PACKED-UNREAD",
    FAMILY,
    Severity.ERROR,
    "a drafter with packed or low-precision weights but no quantization_config: the engine builds it dense and the "
    "packed tensors match no parameter (the layers keep their initialisation)",
    source_url("vllm", "0.33.0", "vllm/model_executor/models/utils.py"),
    source_url("sglang", "0.5.23", "sglang/srt/configs/model_config.py"),
)
DFLASH_FC_DENSE = rule(
    "QUANT-DFLASH-FC-DENSE",
    FAMILY,
    Severity.ERROR,
    "a quantized DFlash fc on an SGLang release whose DFlash drafter builds fc as a plain nn.Linear: "
    "fc.weight_packed and its scales are skipped and fc stays random (accept length ~1.0)",
    source_url("sglang", "0.5.23", "sglang/srt/models/dflash.py"),
    "https://github.com/sgl-project/sglang/issues/39087",
)

ROTATED_TARGET = rule(
    "QUANT-ROTATED-TARGET",
    FAMILY,
    Severity.WARNING,
    "a drafter reading the hidden states of a rotation-quantized target (QuaRot, SpinQuant, ModelSlim rotation) "
    "with no rotation of its own: releases that do not rotate the drafter serve it rotated hidden states "
    "(acceptance length 1.07 vs 3.09 measured)",
    "https://github.com/vllm-project/vllm-ascend/issues/5974",
    "https://github.com/vllm-project/vllm-ascend/pull/7038",
    "https://github.com/vllm-project/vllm/issues/36223",
)

_ROTATION = re.compile(r"quarot|spinquant|rotation|hadamard", re.IGNORECASE)
_MTP_MODULE = re.compile(r"(^|\.)(mtp|nextn)(\.|$)")
_LAYER = re.compile(r"^(?:model\.)?(?:language_model\.)?(?:model\.)?layers\.(\d+)\.")


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _mtp_modules(tensors: Mapping[str, TensorInfo], raw: Mapping[str, object]) -> list[str]:
    """Linear modules of the MTP layers: under ``mtp.``/``nextn``, or DeepSeek-style layers past the
    target's num_hidden_layers."""
    layers = _int(raw.get("num_hidden_layers"))
    text = raw.get("text_config")
    if layers is None and isinstance(text, dict):
        layers = _int(text.get("num_hidden_layers"))
    found = []
    for module in dense_linears(tensors):
        # Only the MTP decoder layers' own linears: the projection joining embedding and hidden state
        # (Qwen's mtp.fc, DeepSeek's eh_proj) is built dense by some releases on purpose (a plain nn.Linear,
        # or unquantized for NVFP4 checkpoints), so a dense copy of it proves nothing.
        if not (".self_attn." in module or ".mlp." in module or ".linear_attn." in module):
            continue
        match = _LAYER.match(module + ".")
        if _MTP_MODULE.search(module) or (match and layers is not None and int(match.group(1)) >= layers):
            found.append(module)
    return found


def _engines_with(engines: Iterable[tuple[str, str]], fact: str, value: str) -> dict[str, str]:
    found = {}
    for engine, version in engines:
        known = answer(engine, version, fact)
        if known is not None and known.value == value:
            found[f"{engine}=={version}{known.judged_note}"] = known.evidence
    return found


def mtp_inherited(
    tensors: Mapping[str, TensorInfo], raw: Mapping[str, object], engines: Iterable[tuple[str, str]]
) -> Iterator[Finding]:
    """QUANT-MTP-INHERITED for a target checkpoint (its tensors and config.json) served with MTP."""
    config = quantization_config(raw)
    if config is None:
        return
    entries = ignore_entries(config)
    exposed = [m for m in _mtp_modules(tensors, raw) if not ignored(m, entries)]
    serving = _engines_with(engines, "mtp_quantization", "target")
    if not exposed or not serving:
        return
    shown = ", ".join(exposed[:3]) + (f" and {len(exposed) - 3} more" if len(exposed) > 3 else "")
    yield MTP_INHERITED.finding(
        f"{len(exposed)} MTP linear(s) are stored dense ({shown}) while quantization_config ({quant_method(config)}) "
        f"does not list them in its ignore list: {', '.join(serving)} build the MTP layers with the target's "
        "quantization, so the dense weights meet quantized parameters (a shape assertion at load, or layers left "
        "random and ~0% acceptance)",
        location="config.json:quantization_config",
        hint="add the MTP modules to the quantization_config ignore list (e.g. \"re:.*mtp.*\"), or quantize them "
        "with the rest of the target",
        evidence=tuple(dict.fromkeys(serving.values())),
    )


def _packed_unread(ctx: CheckContext) -> Iterator[Finding]:
    packed = sorted(quantized_modules(ctx.checkpoint.tensors))
    if not packed:
        return
    shown = ", ".join(packed[:3]) + (f" and {len(packed) - 3} more" if len(packed) > 3 else "")
    yield PACKED_UNREAD.finding(
        f"{len(packed)} module(s) are stored quantized ({shown}) but config.json has no quantization_config: the "
        "engines build the drafter dense from its own config.json and the packed tensors load into nothing",
        location="config.json",
        hint="ship the quantization_config the drafter was quantized with (the quantizer writes it), or export the "
        "drafter unquantized",
    )


def _dflash_fc(ctx: CheckContext) -> Iterator[Finding]:
    if "fc" not in quantized_modules(ctx.checkpoint.tensors):
        return
    engines = _engines_with(ctx.engines, "dflash_quantized_fc", "dense")
    if not engines:
        return
    yield DFLASH_FC_DENSE.finding(
        f"fc is stored quantized; {', '.join(engines)} build the DFlash fc as a plain nn.Linear and skip "
        "fc.weight_packed and its scales, so fc keeps its initialisation (accept length ~1.0, no error)",
        location=ctx.layout.location("fc.weight_packed") if ctx.layout.get("fc.weight_packed") else "fc",
        hint="export fc unquantized (keep it in the quantizer's ignore list), or serve with vLLM, whose DFlash "
        "drafter builds fc with the drafter's quantization_config",
        evidence=tuple(dict.fromkeys(engines.values())),
    )


def _rotation_marks(value: object, depth: int = 0) -> list[str]:
    """Keys or string values naming a rotation, in a (bounded walk of a) quantization config."""
    if depth > 6:
        return []
    found: list[str] = []
    if isinstance(value, dict):
        for key, inner in list(value.items())[:200]:
            if isinstance(key, str) and _ROTATION.search(key) and inner not in (False, None, [], {}):
                found.append(key[:60])
            found.extend(_rotation_marks(inner, depth + 1))
    elif isinstance(value, list):
        for inner in value[:200]:
            found.extend(_rotation_marks(inner, depth + 1))
    elif isinstance(value, str) and _ROTATION.search(value):
        found.append(value[:60])
    return found


def _rotated_target(ctx: CheckContext) -> Iterator[Finding]:
    if ctx.target_config is None:
        return
    marks = _rotation_marks(quantization_config(ctx.target_config.raw) or {})
    if not marks or _rotation_marks(ctx.draft_raw or {}):
        return  # a drafter whose own config names the rotation was made for the rotated target
    engines = _engines_with(ctx.engines, "rotated_target_drafter", "unrotated")
    if not engines:
        return
    yield ROTATED_TARGET.finding(
        f"the target's quantization_config names a rotation ({', '.join(dict.fromkeys(marks))}) and the drafter's "
        f"config does not: {', '.join(engines)} apply no rotation to the drafter, which then reads rotated hidden "
        "states it was not trained on (acceptance collapses)",
        location="config.json",
        hint="train the drafter on the rotated target, or apply the rotation's transpose to fc (and embed_tokens) "
        "as vllm-ascend does; serving the unrotated target keeps the drafter's acceptance",
        evidence=tuple(dict.fromkeys(engines.values())),
    )


def run(ctx: CheckContext) -> Iterator[Finding]:
    if not ctx.checkpoint.tensors:
        return
    form = detect_form(ctx.layout, ctx.draft_raw).form
    config = quantization_config(ctx.draft_raw)
    if form == MTP:
        yield from mtp_inherited(ctx.checkpoint.tensors, ctx.draft_raw or {}, ctx.engines)
        return
    if config is None:
        yield from _packed_unread(ctx)
    if form == DFLASH:
        yield from _dflash_fc(ctx)
    if form in (EAGLE3, DFLASH, DSPARK):
        yield from _rotated_target(ctx)
