"""Shapes family: tensor shapes (from the headers) against config.json.

Layer 0 of an EAGLE-3 drafter attends over [embeds; hidden] so its q/k/v (or MLA q_a/kv_a) take
2*hidden inputs; ``fc`` fuses one hidden state per auxiliary layer of the target.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from specprobe.findings import Finding, Severity
from specprobe.rules import rule
from specprobe.rules.layout import EAGLE_CNETS, VLLM_EAGLE3_SRC, VLLM_MLA_SRC, uses_aux_hidden_states

if TYPE_CHECKING:
    from specprobe.context import CheckContext

FAMILY = "shapes"

QKV_INPUT = rule(
    "SHAPES-QKV-INPUT",
    FAMILY,
    Severity.ERROR,
    "layer-0 attention inputs must be 2*hidden_size ([embeds; hidden]); later layers take hidden_size",
    VLLM_EAGLE3_SRC,
    VLLM_MLA_SRC,
)
FC_SHAPE = rule(
    "SHAPES-FC",
    FAMILY,
    Severity.ERROR,
    "fc.weight must be [hidden_size, number of aux layers x target hidden size]",
    VLLM_EAGLE3_SRC,
    "https://github.com/vllm-project/vllm/pull/16937",
)
LM_HEAD_SHAPE = rule(
    "SHAPES-LM-HEAD", FAMILY, Severity.ERROR, "lm_head.weight must be [draft_vocab_size, hidden_size]", EAGLE_CNETS
)
EMBED_SHAPE = rule(
    "SHAPES-EMBED",
    FAMILY,
    Severity.ERROR,
    "embed_tokens.weight, when present, must be [vocab_size, hidden_size]",
    "https://github.com/vllm-project/vllm/pull/27732",
)
NORM_SHAPE = rule("SHAPES-NORM", FAMILY, Severity.ERROR, "RMSNorm weights must be [hidden_size]", EAGLE_CNETS)
LAYER_SHAPE = rule(
    "SHAPES-LAYER",
    FAMILY,
    Severity.ERROR,
    "attention output and MLP projections must match hidden_size and intermediate_size",
    VLLM_EAGLE3_SRC,
)
QUANTIZED = rule(
    "SHAPES-QUANTIZED",
    FAMILY,
    Severity.INFO,
    "the drafter is quantized: packed weight shapes are not compared with config.json",
    VLLM_EAGLE3_SRC,
)


def _int(value: object) -> int | None:
    """A positive integer setting, or None: sizes of 0 or below are as unusable as missing ones."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def aux_layer_ids(draft: dict[str, object]) -> list[int] | None:
    """eagle_aux_hidden_state_layer_ids from the top level (vLLM, speculators) or eagle_config (SpecForge)."""
    candidates: list[object] = [draft.get("eagle_aux_hidden_state_layer_ids")]
    eagle_config = draft.get("eagle_config")
    if isinstance(eagle_config, dict):
        candidates.append(eagle_config.get("eagle_aux_hidden_state_layer_ids"))
    for value in candidates:
        if isinstance(value, list) and all(_int(v) is not None for v in value):
            return [int(v) for v in value]
    return None


def draft_vocab_size(draft: dict[str, object]) -> int | None:
    return _int(draft.get("draft_vocab_size")) or _int(draft.get("vocab_size"))


def _shape_finding(ctx: CheckContext, name: str, expected: tuple[int, ...], why: str) -> Iterator[Finding]:
    info = ctx.layout.get(name)
    if info is None or info.shape == expected:
        return
    defined = {
        "lm_head.weight": LM_HEAD_SHAPE,
        "embed_tokens.weight": EMBED_SHAPE,
    }.get(name, NORM_SHAPE if len(expected) == 1 else LAYER_SHAPE)
    yield defined.finding(
        f"{name} is {list(info.shape)}, expected {list(expected)} ({why})",
        location=ctx.layout.location(name),
        hint="the checkpoint and config.json disagree: re-export one from the other",
    )


def _attention_inputs(ctx: CheckContext, hidden: int) -> Iterator[Finding]:
    projections = (
        ("q_a_proj", "q_proj", "kv_a_proj_with_mqa") if ctx.layout.mla else ("q_proj", "k_proj", "v_proj", "qkv_proj")
    )
    for layer in ctx.layout.layer_ids:
        expected = 2 * hidden if layer == 0 else hidden
        for projection in projections:
            name = f"layers.{layer}.self_attn.{projection}.weight"
            info = ctx.layout.get(name)
            if info is None or len(info.shape) != 2 or info.shape[1] == expected:
                continue
            yield QKV_INPUT.finding(
                f"{name} takes {info.shape[1]} inputs, expected {expected}"
                + (" (2 x hidden_size: [embeds; hidden])" if layer == 0 else " (hidden_size)"),
                location=ctx.layout.location(name),
                hint="an EAGLE-1 layer or a wrong hidden_size; EAGLE-3 layer 0 attends over [embeds; hidden]",
            )


def _fc(ctx: CheckContext, hidden: int) -> Iterator[Finding]:
    info = ctx.layout.get("fc.weight")
    if info is None or not uses_aux_hidden_states(ctx):
        return
    ids = aux_layer_ids(ctx.draft)
    n_aux = len(ids) if ids else 3
    target_hidden = _int(ctx.draft.get("target_hidden_size")) or hidden
    expected = (hidden, n_aux * target_hidden)
    if info.shape == expected:
        return
    detail = ""
    if len(info.shape) == 2 and info.shape[1] % target_hidden == 0 and info.shape[1] // target_hidden != n_aux:
        detail = (
            f"; fc fuses {info.shape[1] // target_hidden} hidden states but config.json names {n_aux} aux layer(s)"
            + ("" if ids else " (the default 3)")
        )
    elif len(info.shape) == 2 and info.shape[1] % n_aux == 0:
        detail = f"; fc expects target hidden {info.shape[1] // n_aux}, config gives {target_hidden}"
        if ctx.draft.get("target_hidden_size") is None:
            detail += " (set target_hidden_size)"
    yield FC_SHAPE.finding(
        f"fc.weight is {list(info.shape)}, expected {list(expected)} = [hidden, {n_aux} x {target_hidden}]{detail}",
        location=ctx.layout.location("fc.weight"),
        hint="eagle_aux_hidden_state_layer_ids and target_hidden_size must describe what fc was trained on",
    )


def _mlp_and_output(ctx: CheckContext, hidden: int) -> Iterator[Finding]:
    intermediate = _int(ctx.draft.get("intermediate_size"))
    for layer in ctx.layout.layer_ids:
        p = f"layers.{layer}"
        o_proj = ctx.layout.get(f"{p}.self_attn.o_proj.weight")
        if o_proj is not None and len(o_proj.shape) == 2 and o_proj.shape[0] != hidden:
            yield LAYER_SHAPE.finding(
                f"{p}.self_attn.o_proj.weight is {list(o_proj.shape)}, expected {hidden} outputs (hidden_size)",
                location=ctx.layout.location(f"{p}.self_attn.o_proj.weight"),
            )
        if intermediate is None:
            continue
        yield from _shape_finding(ctx, f"{p}.mlp.gate_proj.weight", (intermediate, hidden), "intermediate x hidden")
        yield from _shape_finding(ctx, f"{p}.mlp.up_proj.weight", (intermediate, hidden), "intermediate x hidden")
        yield from _shape_finding(ctx, f"{p}.mlp.down_proj.weight", (hidden, intermediate), "hidden x intermediate")


def _norms(ctx: CheckContext, hidden: int) -> Iterator[Finding]:
    names = ["norm.weight"]
    for layer in ctx.layout.layer_ids:
        names += [f"layers.{layer}.input_layernorm.weight", f"layers.{layer}.post_attention_layernorm.weight"]
        if layer == 0:
            names.append("layers.0.hidden_norm.weight")
    for name in names:
        yield from _shape_finding(ctx, name, (hidden,), "hidden_size")


def run(ctx: CheckContext) -> Iterator[Finding]:
    if ctx.draft_format is None or ctx.draft_config is None:
        return
    hidden = _int(ctx.draft_config.hidden_size)
    if hidden is None:
        return
    yield from _norms(ctx, hidden)
    if ctx.draft.get("quantization_config") is not None:
        yield QUANTIZED.finding("quantization_config is set: matrix shapes were not compared")
        return
    yield from _attention_inputs(ctx, hidden)
    yield from _fc(ctx, hidden)
    yield from _mlp_and_output(ctx, hidden)
    draft_vocab = draft_vocab_size(ctx.draft)
    if draft_vocab is not None:
        yield from _shape_finding(ctx, "lm_head.weight", (draft_vocab, hidden), "draft_vocab_size x hidden_size")
    vocab = _int(ctx.draft_config.vocab_size)
    if vocab is not None:
        yield from _shape_finding(ctx, "embed_tokens.weight", (vocab, hidden), "vocab_size x hidden_size")
