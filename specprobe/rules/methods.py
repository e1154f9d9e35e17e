"""Method family: the drafter form per speculative method, the method the user named against it, and the
rules of the forms that are not EAGLE-3 (independent draft models, DFlash/DSpark block drafters).

EAGLE-3 drafters keep their own families (layout, shapes, vocab, target). A form recognised here is said as
information with the rules that apply to it, so no EAGLE-3 rule (nor LAYOUT-NOT-EAGLE3) speaks about it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from specprobe.checkpoint.forms import (
    DFLASH,
    DRAFT_MODEL,
    DSPARK,
    EAGLE3,
    FORMS,
    MTP,
    block_config,
    detect_form,
    method_forms,
)
from specprobe.compat.engine_facts import answer, source_url
from specprobe.engines.facts import newest_read
from specprobe.findings import Finding, Severity
from specprobe.rules import rule
from specprobe.schema.families import family_of

if TYPE_CHECKING:
    from specprobe.context import CheckContext

FAMILY = "method"
VLLM_SPEC_CONFIG = source_url("vllm", "0.33.0", "vllm/config/speculative.py")
SGLANG_STANDALONE = source_url("sglang", "0.5.23", "sglang/srt/speculative/standalone_worker_v2.py")
SGLANG_DFLASH_UTILS = source_url("sglang", "0.5.23", "sglang/srt/speculative/dflash_utils.py")
VLLM_AUX_LAYERS = source_url("vllm", "0.33.0", "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py")

FORM = rule(
    "METHOD-FORM",
    FAMILY,
    Severity.INFO,
    "the drafter form recognised for a method other than EAGLE-3 (draft model, MTP, DFlash/DSpark, Medusa, MLP "
    "speculator, EAGLE-1/2) and the rules that apply to it",
    VLLM_SPEC_CONFIG,
)
FORM_MISMATCH = rule(
    "METHOD-FORM-MISMATCH",
    FAMILY,
    Severity.ERROR,
    "the speculative method named does not load this drafter form (e.g. draft_model with a DFlash drafter)",
    VLLM_SPEC_CONFIG,
)
DRAFT_MODEL_VOCAB = rule(
    "DRAFT-MODEL-VOCAB",
    FAMILY,
    Severity.ERROR,
    "an independent draft model whose vocab_size differs from the target's: vLLM (draft_model) and SGLang "
    "(STANDALONE) refuse it at start",
    VLLM_SPEC_CONFIG,
    SGLANG_STANDALONE,
)
BLOCK_LAYERS = rule(
    "BLOCK-TARGET-LAYERS",
    FAMILY,
    Severity.ERROR,
    "a DFlash/DSpark drafter's target_layer_ids: missing (SGLang guesses evenly spaced layers, silently), out of "
    "the target's range, repeated, or not matching fc's input width",
    SGLANG_DFLASH_UTILS,
    VLLM_AUX_LAYERS,
    "https://github.com/sgl-project/sglang/issues/37475",
)

BLOCK_SLIDING = rule(
    "BLOCK-SLIDING-WINDOW",
    FAMILY,
    Severity.WARNING,
    "a DFlash drafter trained with sliding-window layers on a release whose DFlash drafter gives every layer full "
    "attention: acceptance collapses once the context passes the window",
    source_url("vllm", "0.24.0", "vllm/model_executor/models/qwen3_dflash.py"),
    "https://github.com/z-lab/dflash/issues/126",
)

_APPLIES: dict[str, str] = {
    DRAFT_MODEL: "files, safety, tokenizer identity, draft-model vocabulary",
    DFLASH: "files, safety, tokenizer identity, target_layer_ids against the target and fc, quantized tensors",
    DSPARK: "files, safety, tokenizer identity, target_layer_ids against the target and fc, quantized tensors",
    MTP: "files, safety, the MTP layers against the target's quantization_config",
}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _method_findings(ctx: CheckContext, form: str | None) -> Iterator[Finding]:
    method = ctx.method
    wanted = method_forms(method)
    if method is None or wanted is None or form is None or form in wanted:
        return
    if form == EAGLE3 or family_of(method) == "eagle":
        return  # LAYOUT-METHOD-MISMATCH speaks for eagle/eagle3 and for EAGLE-3 checkpoints
    yield FORM_MISMATCH.finding(
        f"method {method!r} loads {', '.join(sorted(wanted))}, but the folder holds {FORMS[form]}",
        location="config.json:architectures",
        hint=f"serve it with the method of its form ({form})",
    )


def _draft_model_vocab(ctx: CheckContext) -> Iterator[Finding]:
    draft = ctx.draft_config.vocab_size if ctx.draft_config is not None else None
    target = ctx.target_config.vocab_size if ctx.target_config is not None else None
    if draft is None or target is None or draft == target:
        return
    refusing = {f"{e}=={v}{a.judged_note}": a for e, v in ctx.engines if (a := answer(e, v, "draft_model_vocab"))}
    if not refusing:
        return
    yield DRAFT_MODEL_VOCAB.finding(
        f"draft vocab_size {draft}, target vocab_size {target}: refused at start by {', '.join(refusing)} "
        '("Target and draft model should have the same vocabulary size" / "STANDALONE speculative decoding '
        'requires the draft model to share the same vocabulary")',
        location="config.json:vocab_size",
        key="config.json:vocab_size",
        hint="use a draft model of the target's family with the same vocab_size (e.g. the family's smallest model)",
        evidence=tuple(dict.fromkeys(a.evidence for a in refusing.values())),
    )


def _block_layers(ctx: CheckContext) -> Iterator[Finding]:
    settings = block_config(ctx.draft_raw or {})
    ids = settings.get("target_layer_ids")
    layers = ctx.target_config.num_hidden_layers if ctx.target_config is not None else None
    if layers is None:
        layers = _int(settings.get("num_target_layers"))
    where = "config.json:dflash_config.target_layer_ids"
    if ids is None:
        engines = {e for e, _ in ctx.engines}
        yield BLOCK_LAYERS.finding(
            "no dflash_config.target_layer_ids: SGLang builds evenly spaced layers from the target's depth and loads "
            "cleanly while the drafter may read layers it was not trained on (the list is a training-time choice)",
            location=where,
            severity=Severity.WARNING if "sglang" in engines else Severity.INFO,
            hint="write the target_layer_ids the drafter was trained with into dflash_config",
        )
        return
    if not isinstance(ids, list) or not ids or any(_int(i) is None for i in ids):
        yield BLOCK_LAYERS.finding(
            f"target_layer_ids is {ids!r}, not a non-empty list of layer indices", location=where
        )
        return
    if len(set(ids)) != len(ids):
        yield BLOCK_LAYERS.finding(f"target_layer_ids {ids} repeat a layer", location=where)
    if layers is not None and any(i < 0 or i >= layers for i in ids):
        bad = [i for i in ids if i < 0 or i >= layers]
        yield BLOCK_LAYERS.finding(
            f"target_layer_ids {bad} are not layers of the {layers}-layer target (SGLang refuses: \"DFLASH "
            'target_layer_ids contains an out-of-range layer id")',
            location=where,
            hint="the drafter was trained for another target, or the ids are off by one",
        )
    yield from _block_fc_width(ctx, ids)


def _block_sliding(ctx: CheckContext) -> Iterator[Finding]:
    layer_types = (ctx.draft_raw or {}).get("layer_types")
    if not isinstance(layer_types, list) or "sliding_attention" not in layer_types:
        return
    sliding = sum(1 for t in layer_types if t == "sliding_attention")
    for engine, version in ctx.engines:
        found = answer(engine, version, "dflash_sliding_window")
        if found is None or found.value != "full_attention":
            continue
        since = answer(engine, newest_read()[engine], "dflash_sliding_window")
        yield BLOCK_SLIDING.finding(
            f"{engine}=={version}{found.judged_note}: {sliding} of {len(layer_types)} draft layers were trained with "
            "sliding-window attention, and this release's DFlash drafter gives them full attention: per-position "
            "acceptance falls towards 0 once the context passes the window",
            location="config.json:layer_types",
            key="config.json:layer_types",
            hint=f"serve with {engine} {since.versions if since else 'newer'} (which applies the window), or a "
            "drafter trained with full attention",
            evidence=(found.evidence,),
        )


def _block_fc_width(ctx: CheckContext, ids: list[int]) -> Iterator[Finding]:
    fc = ctx.layout.get("fc.weight")
    hidden = ctx.target_config.hidden_size if ctx.target_config is not None else None
    if fc is not None and len(fc.shape) == 2 and hidden and fc.shape[1] != len(ids) * hidden:
        yield BLOCK_LAYERS.finding(
            f"fc.weight takes {fc.shape[1]} inputs, but {len(ids)} target layers of width {hidden} give "
            f"{len(ids) * hidden}",
            location=ctx.layout.location("fc.weight"),
            hint="target_layer_ids must list the layers fc was trained on",
        )


def run(ctx: CheckContext) -> Iterator[Finding]:
    if not ctx.layout.tensors:
        return
    form = detect_form(ctx.layout, ctx.draft_raw).form
    yield from _method_findings(ctx, form)
    if form is None or form == EAGLE3:
        return
    recognised = detect_form(ctx.layout, ctx.draft_raw)
    applies = _APPLIES.get(form, "files, safety, tokenizer identity; the form's own layout is not modelled")
    yield FORM.finding(f"{FORMS[form]} ({recognised.why}); rules that apply: {applies}")
    if form == DRAFT_MODEL:
        yield from _draft_model_vocab(ctx)
    elif form in (DFLASH, DSPARK):
        yield from _block_layers(ctx)
        if form == DFLASH:
            yield from _block_sliding(ctx)
