"""Shapes family: tensor shapes (from the headers) against config.json.

Layer 0 of an EAGLE-3 drafter attends over [embeds; hidden] so its q/k/v (or MLA q_a/kv_a) take
2*hidden inputs; ``fc`` fuses one hidden state per auxiliary layer of the target.
"""

from __future__ import annotations

import collections
import reprlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specprobe.compat.engine_facts import Answer, answer, fc_inputs
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
HEADS = rule(
    "SHAPES-HEADS",
    FAMILY,
    Severity.ERROR,
    "num_attention_heads, num_key_value_heads and head_dim must match the q/k/v/o projection shapes",
    VLLM_EAGLE3_SRC,
)
AUX_IDS_INVALID = rule(
    "SHAPES-AUX-IDS-INVALID",
    FAMILY,
    Severity.ERROR,
    "eagle_aux_hidden_state_layer_ids must be a list of distinct non-negative integers",
    VLLM_EAGLE3_SRC,
)
FC_ENGINE = rule(
    "SHAPES-FC-ENGINE",
    FAMILY,
    Severity.ERROR,
    "fc fuses a number of aux hidden states the engine version does not build fc for, read where that release reads "
    "it for the config layout (older releases: exactly 3; newer: num_aux_hidden_states or "
    "len(eagle_config.eagle_aux_hidden_state_layer_ids), for a speculators config both under "
    "transformer_layer_config, never the top-level ids)",
    "https://github.com/vllm-project/vllm/blob/v0.21.0/vllm/model_executor/models/llama_eagle3.py",
    "https://github.com/vllm-project/vllm/blob/v0.22.0/vllm/model_executor/models/llama_eagle3.py",
    "https://github.com/sgl-project/sglang/blob/v0.5.12/python/sglang/srt/models/llama_eagle3.py",
    "https://github.com/vllm-project/vllm/issues/54526",
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


_AUX_KEY = "eagle_aux_hidden_state_layer_ids"


def aux_layer_sources(draft: dict[str, object]) -> list[tuple[str, object]]:
    """(location, raw value) of every aux-layer-id setting present: top level first (vLLM reads it
    first), then SpecForge's eagle_config."""
    found: list[tuple[str, object]] = []
    if draft.get(_AUX_KEY) is not None:
        found.append((f"config.json:{_AUX_KEY}", draft.get(_AUX_KEY)))
    eagle_config = draft.get("eagle_config")
    if isinstance(eagle_config, dict) and eagle_config.get(_AUX_KEY) is not None:
        found.append((f"config.json:eagle_config.{_AUX_KEY}", eagle_config.get(_AUX_KEY)))
    return found


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxlist, _SHORT.maxstring, _SHORT.maxother = 2, 4, 40, 40


def int_text(value: int) -> str:
    """An integer from config.json as text; one too long to print (Python refuses past 4300 digits) is
    described instead."""
    return str(value) if value.bit_length() <= 64 else f"<a {value.bit_length()}-bit integer>"


def aux_ids_problem(value: object) -> str | None:
    """Why ``value`` is not a usable list of aux layer ids, naming the offending element; None if it is.

    reprlib keeps the quoted value short and shallow whatever config.json holds."""
    if not isinstance(value, list):
        shown = int_text(value) if isinstance(value, int) and not isinstance(value, bool) else _SHORT.repr(value)
        return f"is {type(value).__name__} {shown}, not a list of layer ids"
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int):
            shown = _SHORT.repr(item) if not isinstance(item, int) else str(item)
            return f"holds {shown} ({type(item).__name__}), not an integer layer id"
        if item < 0:
            return f"holds the negative id {int_text(item)}"
    duplicates = sorted(i for i, n in collections.Counter(value).items() if n > 1)
    if duplicates:
        return f"repeats {', '.join(int_text(i) for i in duplicates[:4])}"
    return None


def aux_layer_ids(draft: dict[str, object]) -> list[int] | None:
    """eagle_aux_hidden_state_layer_ids from the top level (vLLM, speculators) or eagle_config (SpecForge);
    None when absent or malformed (malformed ones are reported by SHAPES-AUX-IDS-INVALID)."""
    for _, value in aux_layer_sources(draft):
        if isinstance(value, list) and value and aux_ids_problem(value) is None:
            return [int(v) for v in value]  # type: ignore[call-overload,unused-ignore]
    return None


def top_level_ignored(ctx: CheckContext) -> list[FcBuild] | None:
    """Where every engine checked is an SGLang release that never reads the top-level
    eagle_aux_hidden_state_layer_ids (facts eagle3_aux_ids_source for the captured layers, eagle3_fc_inputs
    for fc), what each builds fc for; None where any engine checked reads them or is not covered. Such a
    release captures its default layers and sizes fc without the top-level value, so that value cannot make
    the config invalid for it: it is a value the release ignores."""
    if not ctx.engines or any(engine != "sglang" for engine, _ in ctx.engines) or ctx.layout.mla:
        return None  # the MLA drafter (kimi_k25_eagle3.py) is not what eagle3_fc_inputs describes
    for _, version in ctx.engines:
        source = answer("sglang", version, "eagle3_aux_ids_source")
        if source is None or source.value != "eagle_config":
            return None
    builds = [engine_fc_inputs(ctx, engine, version) for engine, version in ctx.engines]
    if any(build is None or _AUX_KEY in build.reads for build in builds):
        return None
    return [build for build in builds if build is not None]


def _ignored_note(ctx: CheckContext, builds: list[FcBuild]) -> str:
    pairs = ", ".join(f"{e}=={v}{b.answer.judged_note}" for (e, v), b in zip(ctx.engines, builds, strict=True))
    reads = " or ".join(dict.fromkeys(r for b in builds for r in b.reads)) or "no aux-layer key"
    return f"{pairs} read {reads} and ignore the top-level {_AUX_KEY}"


def _aux_id_findings(ctx: CheckContext) -> Iterator[Finding]:
    ignored = top_level_ignored(ctx)
    for where, value in aux_layer_sources(ctx.draft):
        problem = aux_ids_problem(value)
        if problem is None and isinstance(value, list) and not value:
            problem = "is empty"
        if problem is None:
            continue
        if ignored is not None and where == f"config.json:{_AUX_KEY}":
            # The release never looks at this value: the config starts, with the target's default layers
            # captured instead of whatever the value meant (what the engine itself does, run in exact mode).
            yield AUX_IDS_INVALID.finding(
                f"{_AUX_KEY} {problem}; {_ignored_note(ctx, ignored)}: the target's default layers are captured "
                "instead, whichever layers the drafter was trained on",
                location=where,
                severity=Severity.WARNING,
                hint=f"write the layer ids fc was trained on into eagle_config.{_AUX_KEY} as a JSON list of "
                "integers, e.g. [2, 16, 29]",
                evidence=tuple(dict.fromkeys(e for b in ignored for e in (b.answer.evidence, *b.answer.also))),
            )
            continue
        yield AUX_IDS_INVALID.finding(
            f"{where.split(':', 1)[1]} {problem}; engines index the target's layers with these values",
            location=where,
            hint="write the target layer ids fc was trained on as a JSON list of integers, e.g. [2, 16, 29]",
        )


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
    ignored = top_level_ignored(ctx)
    # Releases that ignore the top-level ids size fc from eagle_config's (or their default).
    read = ctx.draft if ignored is None else {k: v for k, v in ctx.draft.items() if k != _AUX_KEY}
    ids = aux_layer_ids(read)
    n_aux = len(ids) if ids else 3
    target_hidden = _int(ctx.draft.get("target_hidden_size")) or hidden
    expected = (hidden, n_aux * target_hidden)
    if info.shape == expected:
        if ignored is not None:
            yield from _fctop_level_ignored(ctx, hidden, ignored)
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


def _fctop_level_ignored(ctx: CheckContext, hidden: int, builds: list[FcBuild]) -> Iterator[Finding]:
    """SHAPES-FC for releases that ignore the top-level ids, once fc fits what they build: top-level ids
    whose count disagrees with fc are a warning, since the release loads fc and captures its default
    layers, not the ones the value names."""
    info = ctx.layout.get("fc.weight")
    top = ctx.draft.get(_AUX_KEY)
    target_hidden = _int(ctx.draft.get("target_hidden_size")) or hidden
    if info is None or len(info.shape) != 2 or not isinstance(top, list) or not top or aux_ids_problem(top):
        return
    if info.shape[1] == len(top) * target_hidden:
        return
    yield FC_SHAPE.finding(
        f"fc.weight is {list(info.shape)}, which fuses {info.shape[1] / target_hidden:g} hidden states, but the "
        f"top-level {_AUX_KEY} names {len(top)}; {_ignored_note(ctx, builds)}: they capture their default layers, "
        "not the ones named",
        location=ctx.layout.location("fc.weight"),
        severity=Severity.WARNING,
        hint=f"write the layer ids fc was trained on into eagle_config.{_AUX_KEY}",
        evidence=tuple(dict.fromkeys(e for b in builds for e in (b.answer.evidence, *b.answer.also))),
    )


def _config_value(config: dict[str, object], path: str) -> object:
    """The value at dotted ``path`` of a config.json (None where any step is missing)."""
    node: object = config
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


@dataclass(frozen=True)
class FcBuild:
    """How many aux hidden states an engine release builds fc for with this config, and from where."""

    count: int
    key: str | None  # the config.json path the count came from; None for the release's default
    reads: tuple[str, ...]  # every path the release reads, in order
    answer: Answer


def engine_fc_inputs(ctx: CheckContext, engine: str, version: str) -> FcBuild | None:
    """What ``engine==version`` builds fc for with this drafter's config.json, read where that release
    reads it for this config layout (fact eagle3_fc_inputs); None when no fact covers the release or the
    release reads no config of this layout (SGLang and speculators configs)."""
    found = fc_inputs(engine, version)
    layout = "speculators" if ctx.draft_format == "speculators" else "raw"
    reading = found.value.get(layout) if found is not None and isinstance(found.value, dict) else None
    if found is None or not isinstance(reading, dict):
        return None
    # A speculators config is read whole (the layer settings sit under transformer_layer_config); any
    # other is the draft's own settings.
    config = (ctx.draft_raw or {}) if layout == "speculators" else ctx.draft
    reads = tuple(str(path) for path in reading.get("read", ()))
    for path in reads:
        value = _config_value(config, path)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return FcBuild(value, path, reads, found)
        if isinstance(value, list) and value:
            return FcBuild(len(value), path, reads, found)
    return FcBuild(int(reading.get("default", 3)), None, reads, found)


def _fc_engine_hint(ctx: CheckContext, build: FcBuild, stored: int) -> str:
    if not build.reads:
        return "this release builds fc for exactly that many aux layers: retrain for it, or use a release that " \
            "sizes fc from the config"
    return f"set {build.reads[0]} to {stored} (this release reads {' or '.join(build.reads)})" + (
        ", or serve with a release that reads the top-level eagle_aux_hidden_state_layer_ids"
        if ctx.draft_format == "speculators"
        else ""
    )


def _fc_engine(ctx: CheckContext, hidden: int) -> Iterator[Finding]:
    """fc's width against what each engine version builds: a mismatch fails weight loading."""
    info = ctx.layout.get("fc.weight")
    if info is None or len(info.shape) != 2 or not uses_aux_hidden_states(ctx):
        return
    target_hidden = _int(ctx.draft.get("target_hidden_size")) or hidden
    if info.shape[1] % target_hidden:
        return  # SHAPES-FC already says the width is not a multiple of the target hidden size
    stored = info.shape[1] // target_hidden
    for engine, version in ctx.engines:
        if engine == "sglang" and ctx.layout.mla:
            continue  # SGLang's MLA drafter sizes fc its own way (kimi_k25_eagle3.py)
        build = engine_fc_inputs(ctx, engine, version)
        if build is None or build.count == stored:
            continue
        count = build.count
        if build.key is not None:
            source = f"from {build.key}"
        elif build.reads:
            source = f"by default: none of {', '.join(build.reads)} is set"
        else:
            source = "always"
        read_whole = ctx.draft_raw or {} if ctx.draft_format == "speculators" else ctx.draft
        ignored = [where for where, _ in aux_layer_sources(read_whole) if where.split(":", 1)[1] not in build.reads]
        if ignored and build.key is None:
            source += f"; {ignored[0].split(':', 1)[1]} is not read for it"
        yield FC_ENGINE.finding(
            f"{engine}=={version}{build.answer.judged_note} builds fc for {count} aux hidden states ({source}; "
            f"{count} x {target_hidden} inputs) but fc.weight holds {stored}: loading the drafter fails on the "
            f"shape mismatch (\"Tried to load weights of size {list(info.shape)} to a parameter of size "
            f"[{info.shape[0]}, {count * target_hidden}]\")",
            location=ctx.layout.location("fc.weight"),
            severity=Severity.ERROR if ctx.engine_explicit or len(ctx.engines) == 1 else Severity.WARNING,
            hint=_fc_engine_hint(ctx, build, stored),
            evidence=(build.answer.evidence, *build.answer.also),
        )


def _heads(ctx: CheckContext, hidden: int) -> Iterator[Finding]:
    """Head counts and head_dim against q/k/v/o: engines build attention from config.json and the
    weight loader refuses (or silently mis-slices) projections of another size."""
    if ctx.layout.mla:
        return
    heads = _int(ctx.draft.get("num_attention_heads"))
    if heads is None:
        return
    kv_heads = _int(ctx.draft.get("num_key_value_heads")) or heads
    head_dim = _int(ctx.draft.get("head_dim")) or (hidden // heads if hidden % heads == 0 else None)
    if head_dim is None or max(heads, kv_heads, head_dim).bit_length() > 32:
        return  # LAYOUT-CONFIG-FIELD territory: no engine builds attention of that size
    declared = f"num_attention_heads={heads}, num_key_value_heads={kv_heads}, head_dim={head_dim}"
    for layer in ctx.layout.layer_ids:
        p = f"layers.{layer}.self_attn"
        expected = {
            f"{p}.q_proj.weight": (0, heads * head_dim),
            f"{p}.k_proj.weight": (0, kv_heads * head_dim),
            f"{p}.v_proj.weight": (0, kv_heads * head_dim),
            f"{p}.o_proj.weight": (1, heads * head_dim),
        }
        for name, (axis, size) in expected.items():
            info = ctx.layout.get(name)
            if info is None or len(info.shape) != 2 or info.shape[axis] == size:
                continue
            yield HEADS.finding(
                f"{name} is {list(info.shape)}; {declared} gives {size} " + ("outputs" if axis == 0 else "inputs"),
                location=ctx.layout.location(name),
                hint="set num_attention_heads, num_key_value_heads and head_dim to the values the drafter was "
                "trained with",
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
    yield from _aux_id_findings(ctx)
    hidden = _int(ctx.draft_config.hidden_size)
    if hidden is None:
        return
    yield from _norms(ctx, hidden)
    if ctx.draft.get("quantization_config") is not None:
        yield QUANTIZED.finding("quantization_config is set: matrix shapes were not compared")
        return
    yield from _attention_inputs(ctx, hidden)
    yield from _heads(ctx, hidden)
    yield from _fc(ctx, hidden)
    yield from _fc_engine(ctx, hidden)
    yield from _mlp_and_output(ctx, hidden)
    draft_vocab = draft_vocab_size(ctx.draft)
    if draft_vocab is not None:
        yield from _shape_finding(ctx, "lm_head.weight", (draft_vocab, hidden), "draft_vocab_size x hidden_size")
    vocab = _int(ctx.draft_config.vocab_size)
    if vocab is not None:
        yield from _shape_finding(ctx, "embed_tokens.weight", (vocab, hidden), "vocab_size x hidden_size")
