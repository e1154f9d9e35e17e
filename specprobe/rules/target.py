"""Target family: the drafter against its target's config.json (hidden sizes, vocab, aux layers,
context length, rope), plus the target's attention kind and the auxiliary-layer defaults.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from specprobe.compat.engine_facts import (
    DEFAULT_AUX_EVIDENCE,
    answer,
    default_aux_layers,
    draft_positions,
    sglang_context_length,
    source_url,
    tied_head,
)
from specprobe.findings import Finding, Severity
from specprobe.hfconfig import AttentionKind, classify_attention
from specprobe.rules import rule
from specprobe.rules.layout import VLLM_EAGLE3_SRC, _schema
from specprobe.rules.shapes import aux_ids_problem, aux_layer_ids, aux_layer_sources, int_text, top_level_ignored
from specprobe.rules.tokenizer import UNKNOWN
from specprobe.rules.tokenizer import identity as tokenizer_identity

if TYPE_CHECKING:
    from specprobe.context import CheckContext

FAMILY = "target"

CONFIG_INVALID = rule(
    "TARGET-CONFIG-INVALID",
    FAMILY,
    Severity.ERROR,
    "the target's config.json is missing or not a JSON object",
    "https://huggingface.co/docs/transformers/v4.57.0/en/main_classes/configuration",
)
ATTENTION = rule(
    "TARGET-ATTENTION",
    FAMILY,
    Severity.INFO,
    "the target's attention kind (MHA/GQA/MQA/MLA/linear-hybrid/sliding), citing the drafter model the engine "
    "uses for that family",
    VLLM_EAGLE3_SRC,
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
    Severity.INFO,
    "no eagle_aux_hidden_state_layer_ids the engine reads: it captures its default layers (2, L//2, L-3); whether fc "
    "was trained on those the checkpoint cannot show (a warning where SGLang ignores top-level ids that differ)",
    DEFAULT_AUX_EVIDENCE["vllm"],
    DEFAULT_AUX_EVIDENCE["sglang"],
)
MAX_POSITION = rule(
    "TARGET-MAX-POSITION",
    FAMILY,
    Severity.WARNING,
    "draft max_position_embeddings below the target's context: vLLM < 0.27 reads past the draft's rotary cache "
    "(device assert, #48894); SGLang >= 0.5.1 refuses to start unless told to override it",
    "https://github.com/vllm-project/vllm/issues/48894",
    "https://github.com/vllm-project/vllm/pull/49343",
    source_url("sglang", "0.5.23", "sglang/srt/configs/model_config.py"),
)
ROPE_MISMATCH = rule(
    "TARGET-ROPE",
    FAMILY,
    Severity.INFO,
    "draft rope parameters differ from the target's: engines build the draft's rotary embedding from the draft's "
    "own config.json, as it was trained, so this is harmless unless that config was edited after training",
    VLLM_EAGLE3_SRC,
    source_url("sglang", "0.5.23", "sglang/srt/models/llama_eagle3.py"),
)
TIED_HEAD = rule(
    "TARGET-TIED-HEAD",
    FAMILY,
    Severity.ERROR,
    "tie_word_embeddings with a reduced draft vocabulary: SGLang uses embed_tokens [vocab_size, hidden] as the head "
    "while d2t maps draft-vocabulary logits",
    source_url("sglang", "0.5.23", "sglang/srt/models/llama_eagle3.py"),
)
EAGLE3_TARGET = rule(
    "TARGET-EAGLE3-UNSUPPORTED",
    FAMILY,
    Severity.ERROR,
    "the engine version gates EAGLE-3 by target model_type and this target's is not listed",
    source_url("vllm", "0.16.0", "vllm/config/speculative.py"),
)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ignored_top_level_ids(ctx: CheckContext, layers: int | None) -> Iterator[Finding]:
    """Well-formed top-level ids an SGLang-only check's releases never read (they read eagle_config's):
    with no eagle_config ids they capture the target's default layers, a warning where those differ."""
    top = ctx.draft.get("eagle_aux_hidden_state_layer_ids")
    ignored = top_level_ignored(ctx)
    if ignored is None or layers is None or not isinstance(top, list) or not top or aux_ids_problem(top):
        return
    if aux_layer_ids({k: v for k, v in ctx.draft.items() if k != "eagle_aux_hidden_state_layer_ids"}):
        return
    captured = default_aux_layers(layers)
    if captured == top:
        return
    pairs = ", ".join(f"{engine}=={version}" for engine, version in ctx.engines)
    yield AUX_MISSING.finding(
        f"{pairs} read the aux layer ids only from eagle_config and ignore the top-level "
        f"eagle_aux_hidden_state_layer_ids [{', '.join(int_text(i) for i in top)}]: the target's default layers "
        f"{captured} "
        "are captured, not the ones named",
        location="config.json:eagle_aux_hidden_state_layer_ids",
        key="config.json:eagle_aux_hidden_state_layer_ids",
        severity=Severity.WARNING,
        hint="copy the ids into eagle_config.eagle_aux_hidden_state_layer_ids (the SpecForge layout SGLang reads)",
        evidence=tuple(
            dict.fromkeys(
                e
                for _, version in ctx.engines
                if (read := answer("sglang", version, "eagle3_aux_ids_source")) is not None
                for e in (read.evidence, *read.also)
            )
        ),
    )


def _aux(ctx: CheckContext) -> Iterator[Finding]:
    layers = ctx.target_config.num_hidden_layers if ctx.target_config else None
    read = ctx.draft
    if "eagle_aux_hidden_state_layer_ids" in ctx.draft and top_level_ignored(ctx) is not None:
        # Every release checked ignores the top-level ids: judge the ids they read, and say what they
        # capture instead of the ignored value (SHAPES-AUX-IDS-INVALID names a malformed one).
        yield from _ignored_top_level_ids(ctx, layers)
        read = {k: v for k, v in ctx.draft.items() if k != "eagle_aux_hidden_state_layer_ids"}
        if aux_layer_ids(read) is None:
            return
    ids = aux_layer_ids(read)
    if ids is None:
        if aux_layer_sources(read):
            return  # present but malformed: SHAPES-AUX-IDS-INVALID names the value
        defaults = f" = {default_aux_layers(layers)} for this {layers}-layer target" if layers else ""
        engines = ", ".join(f"{engine}=={version}" for engine, version in ctx.engines)
        yield AUX_MISSING.finding(
            f"config.json names no eagle_aux_hidden_state_layer_ids; {engines} will capture the default layers "
            f"(2, L//2, L-3){defaults}. Right only if the drafter was trained on those layers, which the "
            "checkpoint cannot show",
            location="config.json",
            hint="write the layer ids the drafter was trained on into eagle_aux_hidden_state_layer_ids",
            evidence=tuple(DEFAULT_AUX_EVIDENCE[engine] for engine in dict.fromkeys(e for e, _ in ctx.engines)),
        )
        return
    if layers is None:
        return
    bad = [i for i in ids if i < 0 or i >= layers]
    if bad:
        yield AUX_RANGE.finding(
            f"aux layer ids {', '.join(int_text(i) for i in bad[:8])} do not exist in the {layers}-layer target "
            f"(valid: 0..{layers - 1})",
            location="config.json:eagle_aux_hidden_state_layer_ids",
            key="config.json:eagle_aux_hidden_state_layer_ids",
            hint="the drafter was trained for another target, or the ids are off by one",
        )


def _tied_head(ctx: CheckContext) -> Iterator[Finding]:
    draft = ctx.draft_config
    if draft is None or ctx.draft.get("tie_word_embeddings") is not True:
        return
    draft_vocab, vocab = _int(ctx.draft.get("draft_vocab_size")), draft.vocab_size
    if draft_vocab is None or vocab is None or draft_vocab >= vocab:
        return
    for engine, version in ctx.engines:
        head = tied_head(engine, version)
        if head is None or head.value != "embed_tokens":
            continue
        yield TIED_HEAD.finding(
            f"{engine}=={version}{head.judged_note}: tie_word_embeddings is true, so the draft head is embed_tokens "
            f"[{vocab}, hidden] while d2t maps {draft_vocab} draft-vocabulary logits: every draft token is wrong",
            location="config.json:tie_word_embeddings",
            key="config.json:tie_word_embeddings",
            severity=Severity.ERROR if ctx.engine_explicit or len(ctx.engines) == 1 else Severity.WARNING,
            hint="set tie_word_embeddings to false and ship lm_head.weight [draft_vocab_size, hidden_size]",
            evidence=(head.evidence,),
        )


def _max_position(ctx: CheckContext, draft_mpe: int, target_mpe: int) -> Iterator[Finding]:
    target_raw = ctx.target_config.raw if ctx.target_config is not None else {}
    for engine, version in ctx.engines:
        behaviour = draft_positions(engine, version)
        if behaviour is None or behaviour.value == "raised":
            continue
        shown_draft, shown_target = draft_mpe, target_mpe
        if engine == "sglang":
            # SGLang compares the contexts it derives (rope factor and other length keys included).
            draft_context, target_context = sglang_context_length(ctx.draft), sglang_context_length(target_raw)
            if draft_context is None or target_context is None or draft_context >= target_context:
                continue
            shown_draft, shown_target = draft_context, target_context
        if behaviour.value == "overflow":
            what = (
                f"the draft's rotary cache holds {shown_draft} positions while it runs at the target's positions: past "
                "them it reads out of bounds (a device-side assert under torch.compile, wrong drafts in eager mode)"
            )
            hint = "raise the draft's max_position_embeddings to the serving context, or cap max_model_len"
        else:
            what = (
                f"it refuses to start (\"Target model's context_length ({shown_target}) is greater than the derived "
                f'context_length ({shown_draft})") unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1, which raises '
                "the draft's max_position_embeddings"
            )
            hint = f"set SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1, or --context-length {shown_draft} or less"
        # vLLM's overflow is silent (wrong drafts) at its default max_model_len; SGLang's default launch
        # refuses to start (after the target has loaded) unless a launch setting lifts it. Both are a warning
        # for the engine checked; the deployment decides for SGLang (lint/gate: an error when the command
        # sets neither setting, nothing when it sets one: specprobe.pipeline.gate).
        yield MAX_POSITION.finding(
            f"{engine}=={version}{behaviour.judged_note}: draft max_position_embeddings {shown_draft} < target's "
            f"{shown_target}; {what}",
            location="config.json:max_position_embeddings",
            key="config.json:max_position_embeddings",
            severity=Severity.WARNING if ctx.engine_explicit or len(ctx.engines) == 1 else Severity.INFO,
            hint=hint,
            evidence=(behaviour.evidence,),
        )


_SGLANG_OVERRIDE = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"


def max_position_for_launch(
    finding: Finding, env: dict[str, str], context_length: str | None, draft_context: int | None
) -> Finding | None:
    """An SGLang TARGET-MAX-POSITION finding for a deployment whose launch settings are known (lint, gate): the
    refusal is lifted by SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN (SGLang's EnvBool: true/1/yes/y) or a
    --context-length at most the draft's context (None: nothing to report); otherwise the default launch
    fails and it is an error."""
    if env.get(_SGLANG_OVERRIDE, "").strip().lower() in ("true", "1", "yes", "y"):
        return None
    try:
        asked = int(context_length) if context_length is not None else None
    except ValueError:
        asked = None
    if asked is not None and draft_context is not None and asked <= draft_context:
        return None
    setting = f"--context-length {draft_context} or less" if draft_context is not None else "--context-length"
    finding.severity = Severity.ERROR
    finding.message += f"; this deployment sets neither {_SGLANG_OVERRIDE}=1 nor {setting}, so it fails to start"
    return finding


def _attention_evidence(target_kind: AttentionKind, engines: list[tuple[str, str]]) -> tuple[str, ...]:
    """The drafter model file each engine uses for a target of this attention family."""
    links: list[str] = []
    for engine, version in engines:
        # Each engine's MLA EAGLE-3 drafter (fact eagle3_mla_drafter): vLLM's deepseek_eagle3.py, SGLang's
        # kimi_k25_eagle3.py; an unparsable vLLM version is taken as current (the MLA file), SGLang's not.
        has_mla = answer(engine, version, "eagle3_mla_drafter")
        mla = target_kind is AttentionKind.MLA and (has_mla.value is True if has_mla else engine == "vllm")
        if engine == "vllm":
            path = "deepseek_eagle3.py" if mla else "llama_eagle3.py"
            links.append(source_url("vllm", version, f"vllm/model_executor/models/{path}"))
        else:
            path = "kimi_k25_eagle3.py" if mla else "llama_eagle3.py"
            links.append(source_url("sglang", version, f"sglang/srt/models/{path}"))
    return tuple(dict.fromkeys(links))


def _cross_check(ctx: CheckContext) -> Iterator[Finding]:
    target = ctx.target_config
    draft = ctx.draft_config
    if target is None or draft is None:
        return
    kind = classify_attention(target)
    yield ATTENTION.finding(
        f"target attention: {kind.value} (model_type {target.model_type or 'unknown'})",
        evidence=_attention_evidence(kind, ctx.engines),
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
        # The tokenizer family tells a padding of one tokenizer (TOKENIZER-PADDED) from another tokenizer
        # (TOKENIZER-MISMATCH); this size rule speaks only where those files say neither.
        told = tokenizer_identity(ctx)
        if told is None or told.verdict == UNKNOWN or larger:
            yield VOCAB_MISMATCH.finding(
                f"draft vocab_size {draft.vocab_size}, target vocab_size {target.vocab_size}"
                + (
                    ""
                    if larger
                    else " (a padded target vocabulary is only a risk: no tokenizer.json or bos_token_id on both "
                    "sides tells a padding of one tokenizer from another tokenizer)"
                ),
                location="config.json:vocab_size",
                key="config.json:vocab_size",
                severity=Severity.ERROR if larger else Severity.WARNING,
                hint="vocab_size of the drafter is the target's vocabulary; draft_vocab_size is its own",
            )
    draft_mpe, target_mpe = draft.max_position_embeddings, target.max_position_embeddings
    if draft_mpe is not None and target_mpe is not None and draft_mpe < target_mpe:
        yield from _max_position(ctx, draft_mpe, target_mpe)
    for key in ("rope_theta", "rope_scaling"):
        if key in draft.rope and key in target.rope and draft.rope[key] != target.rope[key]:
            yield ROPE_MISMATCH.finding(
                f"{key}: draft {draft.rope[key]!r}, target {target.rope[key]!r}",
                location=f"config.json:{key}",
                key=f"config.json:{key}",
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
    yield from _tied_head(ctx)
    yield from _cross_check(ctx)
