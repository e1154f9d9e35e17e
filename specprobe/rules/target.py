"""Target family: the drafter against its target's config.json (hidden sizes, vocab, aux layers,
context length, rope), plus the target's attention kind and the auxiliary-layer defaults.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from specprobe.findings import Finding, Severity
from specprobe.hfconfig import classify_attention
from specprobe.rules import rule
from specprobe.rules.layout import VLLM_EAGLE3_SRC, _schema
from specprobe.rules.shapes import aux_layer_ids

if TYPE_CHECKING:
    from specprobe.context import CheckContext

FAMILY = "target"

CONFIG_INVALID = rule(
    "TARGET-CONFIG-INVALID",
    FAMILY,
    Severity.ERROR,
    "the target's config.json is missing or not a JSON object",
    "https://huggingface.co/docs/transformers/main/en/main_classes/configuration",
)
ATTENTION = rule(
    "TARGET-ATTENTION",
    FAMILY,
    Severity.INFO,
    "the target's attention kind (MHA/GQA/MQA/MLA/linear-hybrid/sliding)",
    "https://github.com/vllm-project/vllm/blob/main/vllm/model_executor/models/deepseek_eagle3.py",
)
HIDDEN_MISMATCH = rule(
    "TARGET-HIDDEN-MISMATCH",
    FAMILY,
    Severity.ERROR,
    "the target's hidden size must equal target_hidden_size (or the draft's hidden_size when unset)",
    VLLM_EAGLE3_SRC,
)
VOCAB_MISMATCH = rule(
    "TARGET-VOCAB-MISMATCH", FAMILY, Severity.ERROR, "the draft's vocab_size must match the target's", VLLM_EAGLE3_SRC
)
AUX_RANGE = rule(
    "TARGET-AUX-LAYER-RANGE",
    FAMILY,
    Severity.ERROR,
    "every eagle_aux_hidden_state_layer_id must be a layer of the target",
    "https://github.com/vllm-project/vllm/pull/50170",
)
AUX_MISSING = rule(
    "TARGET-AUX-IDS-MISSING",
    FAMILY,
    Severity.WARNING,
    "no eagle_aux_hidden_state_layer_ids: vLLM guesses (2, L//2, L-3), which must be the layers fc was trained on",
    "https://github.com/vllm-project/vllm/pull/50170",
)
MAX_POSITION = rule(
    "TARGET-MAX-POSITION",
    FAMILY,
    Severity.WARNING,
    "draft max_position_embeddings below the target's: past it some engine versions crash or slow down",
    "https://github.com/vllm-project/vllm/issues/48894",
    "https://github.com/sgl-project/sglang/issues/6783",
)
ROPE_MISMATCH = rule(
    "TARGET-ROPE",
    FAMILY,
    Severity.WARNING,
    "draft rope parameters differ from the target's",
    "https://github.com/vllm-project/vllm/issues/48894",
)
EAGLE3_TARGET = rule(
    "TARGET-EAGLE3-UNSUPPORTED",
    FAMILY,
    Severity.ERROR,
    "the engine version gates EAGLE-3 by target model_type and this target's is not listed",
    "https://github.com/vllm-project/vllm/blob/main/vllm/config/speculative.py",
)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def default_aux_layers(num_layers: int) -> list[int]:
    """vLLM's fallback when the draft names no auxiliary layers."""
    return [2, num_layers // 2, num_layers - 3]


def _aux(ctx: CheckContext) -> Iterator[Finding]:
    ids = aux_layer_ids(ctx.draft)
    layers = ctx.target_config.num_hidden_layers if ctx.target_config else None
    if ids is None:
        guess = f" ({default_aux_layers(layers)} for this {layers}-layer target)" if layers else ""
        yield AUX_MISSING.finding(
            f"config.json names no eagle_aux_hidden_state_layer_ids; vLLM will use (2, L//2, L-3){guess}",
            location="config.json",
            hint="write the layer ids the drafter was trained on into eagle_aux_hidden_state_layer_ids",
        )
        return
    if layers is None:
        return
    bad = [i for i in ids if i < 0 or i >= layers]
    if bad:
        yield AUX_RANGE.finding(
            f"aux layer ids {bad} do not exist in the {layers}-layer target (valid: 0..{layers - 1})",
            location="config.json:eagle_aux_hidden_state_layer_ids",
            hint="the drafter was trained for another target, or the ids are off by one",
        )


def _cross_check(ctx: CheckContext) -> Iterator[Finding]:
    target = ctx.target_config
    draft = ctx.draft_config
    if target is None or draft is None:
        return
    yield ATTENTION.finding(
        f"target attention: {classify_attention(target).value} (model_type {target.model_type or 'unknown'})"
    )
    expected_hidden = _int(ctx.draft.get("target_hidden_size")) or draft.hidden_size
    if expected_hidden is not None and target.hidden_size is not None and expected_hidden != target.hidden_size:
        if ctx.draft.get("target_hidden_size") is not None:
            message = f"target_hidden_size is {expected_hidden}, the target's hidden_size is {target.hidden_size}"
        else:
            message = (
                f"draft hidden_size {expected_hidden} differs from the target's {target.hidden_size} and "
                "config.json has no target_hidden_size"
            )
        yield HIDDEN_MISMATCH.finding(
            message, location="config.json", hint="set target_hidden_size to the target's hidden_size"
        )
    if draft.vocab_size is not None and target.vocab_size is not None and draft.vocab_size != target.vocab_size:
        larger = draft.vocab_size > target.vocab_size
        yield VOCAB_MISMATCH.finding(
            f"draft vocab_size {draft.vocab_size}, target vocab_size {target.vocab_size}"
            + ("" if larger else " (a padded target vocabulary is only a risk)"),
            location="config.json:vocab_size",
            severity=Severity.ERROR if larger else Severity.WARNING,
            hint="vocab_size of the drafter is the target's vocabulary; draft_vocab_size is its own",
        )
    draft_mpe, target_mpe = draft.max_position_embeddings, target.max_position_embeddings
    if draft_mpe is not None and target_mpe is not None and draft_mpe < target_mpe:
        yield MAX_POSITION.finding(
            f"draft max_position_embeddings {draft_mpe} < target's {target_mpe}",
            location="config.json:max_position_embeddings",
            hint="raise the draft's max_position_embeddings to the serving context length, or cap max_model_len",
        )
    for key in ("rope_theta", "rope_scaling"):
        if key in draft.rope and key in target.rope and draft.rope[key] != target.rope[key]:
            yield ROPE_MISMATCH.finding(
                f"{key}: draft {draft.rope[key]!r}, target {target.rope[key]!r}",
                location=f"config.json:{key}",
                hint="train and serve the drafter with the target's rope settings",
            )
    for engine, version in ctx.engines:
        schema = _schema(engine, version)
        supported = schema.eagle3_target_supported if schema else None
        if supported and target.model_type and not any(s in target.model_type for s in supported):
            yield EAGLE3_TARGET.finding(
                f"{engine}=={version} supports EAGLE-3 only for {supported}; "
                f"target model_type is {target.model_type!r}",
                severity=Severity.ERROR if ctx.engine_explicit else Severity.WARNING,
                hint="use a newer engine version or the other engine",
            )


def run(ctx: CheckContext) -> Iterator[Finding]:
    if ctx.target_error is not None:
        yield CONFIG_INVALID.finding(
            ctx.target_error,
            location=ctx.target_spec,
            hint="--target takes a folder with config.json, a config.json, or a hub id",
        )
    if ctx.draft_format is None or ctx.draft_config is None:
        return
    yield from _aux(ctx)
    yield from _cross_check(ctx)
