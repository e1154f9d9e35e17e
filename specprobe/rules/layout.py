"""Layout family: the detected format, one decoder-layer namespace, the tensors the format needs,
whether the architecture resolves in the chosen engine version, and method/checkpoint agreement.

Engine facts come from the schema snapshots (``specprobe.schema.store``) and, for what a snapshot cannot
tell (the name rewrites each engine applies, which release borrows the target's head), from the engine
facts data (``specprobe.engines.facts``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from specprobe.checkpoint.forms import EAGLE, detect_form
from specprobe.checkpoint.layout import DRAFT_FORMATS
from specprobe.compat.engine_facts import (
    Answer,
    answer,
    draft_registry,
    known_model_classes,
    layer_prefixes,
    model_architectures,
    source_url,
)
from specprobe.engines.facts import beyond_newest, newest_read
from specprobe.findings import Finding, Severity, SpecprobeError
from specprobe.rules import rule
from specprobe.schema.store import load_snapshot

if TYPE_CHECKING:
    from specprobe.context import CheckContext
    from specprobe.schema.model import EngineSchema

FAMILY = "layout"
VLLM_EAGLE3_SRC = source_url("vllm", "0.33.0", "vllm/model_executor/models/llama_eagle3.py")
VLLM_MLA_SRC = source_url("vllm", "0.33.0", "vllm/model_executor/models/deepseek_eagle3.py")
VLLM_REGISTRY = source_url("vllm", "0.33.0", "vllm/model_executor/models/registry.py")
VLLM_SPEC_CONFIG = source_url("vllm", "0.33.0", "vllm/config/speculative.py")
SGLANG_EAGLE3_SRC = source_url("sglang", "0.5.23", "sglang/srt/models/llama_eagle3.py")
SGLANG_MODEL_CONFIG = source_url("sglang", "0.5.23", "sglang/srt/configs/model_config.py")
# EAGLE's reference drafter at a fixed commit of SafeAILab/EAGLE (the EAGLE-3 release line).
EAGLE_CNETS = "https://github.com/SafeAILab/EAGLE/blob/bfeb532e689a3db4e1a9081c7c83219c9385e84a/eagle/model/cnets.py"

FORMAT = rule(
    "LAYOUT-FORMAT",
    FAMILY,
    Severity.INFO,
    "the drafter format recognised from config.json and tensor names",
    EAGLE_CNETS,
)
NOT_EAGLE3 = rule(
    "LAYOUT-NOT-EAGLE3",
    FAMILY,
    Severity.INFO,
    "the checkpoint is not recognised as an EAGLE-3 drafter (no fc, no d2t, no Eagle3 architecture) nor as another "
    "drafter form specprobe models: EAGLE-3 rules were skipped",
    VLLM_EAGLE3_SRC,
)
NAMESPACES = rule(
    "LAYOUT-NAMESPACES",
    FAMILY,
    Severity.ERROR,
    "both midlayer.* and layers.* decoder-layer keys: engines map one onto the other and one copy is lost",
    VLLM_EAGLE3_SRC,
)
TENSOR_MISSING = rule(
    "LAYOUT-TENSOR-MISSING",
    FAMILY,
    Severity.ERROR,
    "a tensor the drafter format needs is absent (engines skip it and leave a random layer)",
    VLLM_EAGLE3_SRC,
)
LAYER_COUNT = rule(
    "LAYOUT-LAYER-COUNT",
    FAMILY,
    Severity.ERROR,
    "decoder layers in the checkpoint differ from num_hidden_layers in config.json",
    VLLM_EAGLE3_SRC,
)
LM_HEAD_MISSING = rule(
    "LAYOUT-LM-HEAD-MISSING",
    FAMILY,
    Severity.ERROR,
    "no lm_head although draft_vocab_size is set and embeddings are untied: the head stays random",
    "https://github.com/sgl-project/sglang/issues/27829",
)
CONFIG_FIELD = rule(
    "LAYOUT-CONFIG-FIELD",
    FAMILY,
    Severity.ERROR,
    "a size engines build the drafter from is missing or not a positive integer in config.json",
    VLLM_EAGLE3_SRC,
)
ENGINES = rule(
    "LAYOUT-ENGINES",
    FAMILY,
    Severity.INFO,
    "the engine versions the engine-specific rules were evaluated for",
    VLLM_REGISTRY,
)
ARCH_UNRESOLVED = rule(
    "LAYOUT-ARCH-UNRESOLVED",
    FAMILY,
    Severity.ERROR,
    "the draft architecture, after the engine's EAGLE-3 rewrite, is not an EAGLE-3 draft class of the engine version "
    "(a target class it registers, a name its known registry lacks with no auto_map, or on SGLang a config.json "
    "without model_type: error; otherwise: warning)",
    VLLM_REGISTRY,
    VLLM_SPEC_CONFIG,
    SGLANG_MODEL_CONFIG,
    source_url("sglang", "0.5.23", "sglang/srt/model_loader/utils.py"),
    source_url("sglang", "0.5.23", "sglang/srt/utils/hf_transformers/config.py"),
)
METHOD_MISMATCH = rule(
    "LAYOUT-METHOD-MISMATCH",
    FAMILY,
    Severity.ERROR,
    "the speculative method does not match the checkpoint (eagle vs eagle3)",
    "https://github.com/vllm-project/vllm/pull/21737",
)
SGLANG_NAMESPACE = rule(
    "LAYOUT-SGLANG-NAMESPACE",
    FAMILY,
    Severity.WARNING,
    "layers.0.* keys on an SGLang release whose Llama EAGLE-3 drafter names its layer midlayer and skips unknown "
    "names (SGLang < 0.5.12)",
    source_url("sglang", "0.5.11", "sglang/srt/models/llama_eagle3.py"),
    source_url("sglang", "0.5.12", "sglang/srt/models/llama_eagle3.py"),
)


@functools.lru_cache(maxsize=8)
def _schema(engine: str, version: str) -> EngineSchema | None:
    """The shipped snapshot, read once per run (rules only read it; load_snapshot copies it each call)."""
    try:
        return load_snapshot(engine, version)
    except SpecprobeError:
        return None


def _module_present(names: set[str], module: str) -> bool:
    prefix = module + "."
    return any(n.startswith(prefix) for n in names)


def required_modules(ctx: CheckContext, layer: int) -> list[str]:
    """Module prefixes the format needs for decoder layer ``layer`` (alternatives joined by '|')."""
    p = f"layers.{layer}"
    if ctx.layout.mla:
        attn = [
            f"{p}.self_attn.q_a_proj|{p}.self_attn.q_proj",
            f"{p}.self_attn.kv_a_proj_with_mqa",
            f"{p}.self_attn.kv_a_layernorm",
            f"{p}.self_attn.kv_b_proj",
            f"{p}.self_attn.o_proj",
        ]
    else:
        attn = [
            f"{p}.self_attn.q_proj|{p}.self_attn.qkv_proj",
            f"{p}.self_attn.k_proj|{p}.self_attn.qkv_proj",
            f"{p}.self_attn.v_proj|{p}.self_attn.qkv_proj",
            f"{p}.self_attn.o_proj",
        ]
    mlp = [f"{p}.mlp.gate_proj|{p}.mlp.gate_up_proj", f"{p}.mlp.up_proj|{p}.mlp.gate_up_proj", f"{p}.mlp.down_proj"]
    norms = [f"{p}.input_layernorm", f"{p}.post_attention_layernorm"] + ([f"{p}.hidden_norm"] if layer == 0 else [])
    return attn + mlp + norms


def uses_aux_hidden_states(ctx: CheckContext) -> bool:
    eagle_config = ctx.draft.get("eagle_config")
    return not (isinstance(eagle_config, dict) and eagle_config.get("use_aux_hidden_state") is False)


def _missing_tensors(ctx: CheckContext) -> list[str]:
    names = set(ctx.layout.tensors)
    wanted: list[str] = []
    layers = ctx.layout.layer_ids or [0]
    for layer in sorted(set(layers) | {0}):
        wanted.extend(required_modules(ctx, layer))
    wanted.append("norm")
    if uses_aux_hidden_states(ctx):
        wanted.append("fc")
        # EAGLE-3.1 (speculators): the config asks for norms over fc's inputs; vLLM builds them from
        # config.json and loads nothing into them when the checkpoint lacks them (llama_eagle3.py).
        eagle_config = ctx.draft.get("eagle_config")
        nested = eagle_config if isinstance(eagle_config, dict) else {}
        if ctx.draft.get("fc_norm") is True:
            wanted.append("fc_norm")
        if nested.get("norm_before_fc", ctx.draft.get("norm_before_fc")) is True:
            wanted.append("input_norm|norm_before_fc")
    missing = []
    for alternatives in wanted:
        options = alternatives.split("|")
        if not any(_module_present(names, option) for option in options):
            missing.append(options[0])
    return missing


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_REQUIRED_SIZES = ("hidden_size", "vocab_size", "num_hidden_layers", "num_attention_heads", "intermediate_size")


def _positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _config_fields(ctx: CheckContext) -> Iterator[Finding]:
    where = "config.json:transformer_layer_config" if ctx.draft_format == "speculators" else "config.json"
    for key in _REQUIRED_SIZES:
        value = ctx.draft.get(key)
        if _positive(value) is None:
            yield CONFIG_FIELD.finding(
                f"{key} is {json_repr(value)}; a positive integer is required",
                location=where,
                hint="copy the value the drafter was trained with into config.json",
            )
    raw_draft_vocab = ctx.draft.get("draft_vocab_size")
    draft_vocab, vocab = _positive(raw_draft_vocab), _positive(ctx.draft.get("vocab_size"))
    if raw_draft_vocab is not None and draft_vocab is None:
        yield CONFIG_FIELD.finding(
            f"draft_vocab_size is {json_repr(raw_draft_vocab)}; a positive integer is required",
            location="config.json:draft_vocab_size",
            key="config.json:draft_vocab_size",
        )
    elif draft_vocab is not None and vocab is not None and draft_vocab > vocab:
        yield CONFIG_FIELD.finding(
            f"draft_vocab_size {draft_vocab} exceeds vocab_size {vocab}: the draft vocabulary is a subset of the "
            "target's",
            location="config.json:draft_vocab_size",
            key="config.json:draft_vocab_size",
            hint="vocab_size is the target's vocabulary; draft_vocab_size the drafter's own, smaller one",
        )


def json_repr(value: object) -> str:
    return "missing" if value is None else repr(value)


def _layer_findings(ctx: CheckContext) -> Iterator[Finding]:
    layout = ctx.layout
    if len(layout.namespaces) > 1:
        yield NAMESPACES.finding(
            "decoder-layer keys under both midlayer.* and layers.*; vLLM renames midlayer. to layers.0. so one "
            "copy overwrites the other",
            hint="keep one naming: midlayer.* (EAGLE/SpecForge) or layers.0.* (vLLM/speculators)",
        )
    missing = _missing_tensors(ctx)
    if missing:
        shown = ", ".join(missing[:6]) + (f" and {len(missing) - 6} more" if len(missing) > 6 else "")
        yield TENSOR_MISSING.finding(
            f"the {ctx.draft_format} drafter lacks {shown}",
            hint="re-export the drafter; engines skip absent weights and run with random ones",
        )
    declared = _int(ctx.draft.get("num_hidden_layers"))
    if declared is not None and layout.layer_ids:
        present = set(layout.layer_ids)
        # Compared without building range(declared): a hostile config may declare 10**30 layers.
        inside = {i for i in present if i < declared}
        if len(inside) < declared:
            yield LAYER_COUNT.finding(
                f"config.json declares {declared} decoder layer(s); the checkpoint has layers {sorted(present)}",
                hint="set num_hidden_layers to the number of trained layers",
            )
        elif present - inside:
            yield LAYER_COUNT.finding(
                f"the checkpoint has layers {sorted(present)} but config.json declares {declared}; the extra ones "
                "are ignored",
                severity=Severity.WARNING,
                hint="set num_hidden_layers to the number of trained layers",
            )


def _fresh_head(engine: str, version: str) -> Answer | None:
    """The fact answer when ``engine==version`` gives a full-vocabulary drafter without lm_head a fresh
    (random) head; None when it borrows the target's (vLLM >= 0.12: has_own_lm_head)."""
    found = answer(engine, version, "eagle3_missing_lm_head")
    if found is not None and found.value == "target_head":
        return None
    return found or Answer("fresh_head", "", LM_HEAD_MISSING.evidence[0], version)


def _lm_head_findings(ctx: CheckContext) -> Iterator[Finding]:
    if _module_present(set(ctx.layout.tensors), "lm_head"):
        return
    draft_vocab = _int(ctx.draft.get("draft_vocab_size"))
    vocab = _int(ctx.draft.get("vocab_size"))
    tied = ctx.draft.get("tie_word_embeddings") is True
    if draft_vocab is None or tied:
        return
    hint = "export lm_head.weight [draft_vocab_size, hidden_size] with the drafter"
    if vocab is not None and draft_vocab < vocab:
        yield LM_HEAD_MISSING.finding(
            f"no lm_head in the checkpoint, yet draft_vocab_size={draft_vocab} < vocab_size={vocab}: a "
            "reduced-vocabulary head cannot be borrowed from the target",
            hint=hint,
        )
        return
    # A full-vocabulary drafter without lm_head: vLLM borrows the target's head, SGLang (draft_vocab_size
    # set) allocates a fresh one and leaves it random (accept length 1.00, sglang#27829).
    fresh = {f"{e}=={v}{a.judged_note}": a for e, v in ctx.engines if (a := _fresh_head(e, v)) is not None}
    if not fresh:
        return
    certain = ctx.engine_explicit or len(fresh) == len(ctx.engines)
    borrowing = answer("vllm", newest_read()["vllm"], "eagle3_missing_lm_head")
    cited = [borrowing.evidence] if borrowing is not None else []
    yield LM_HEAD_MISSING.finding(
        f"no lm_head in the checkpoint and draft_vocab_size={draft_vocab} is set: {', '.join(fresh)} "
        "allocate a fresh head and leave it random (accept length 1.00)"
        + (f"; vLLM {borrowing.versions} borrows the target's" if borrowing is not None else ""),
        severity=Severity.ERROR if certain else Severity.INFO,
        hint=hint + ", or drop draft_vocab_size so the engines borrow the target's head",
        evidence=tuple(dict.fromkeys([*(a.evidence for a in fresh.values()), *cited])),
    )


def _vllm_architecture(ctx: CheckContext, method: str) -> str | None:
    if ctx.draft_format == "speculators":
        # vLLM's speculators config path rewrites an Eagle3Speculator into its Llama EAGLE-3 drafter.
        return "Eagle3LlamaForCausalLM"
    arch = ctx.draft_architecture
    if arch is None:
        return None
    # transformers_utils/configs/eagle.py: eagle keeps names starting with Eagle; eagle3 keeps names
    # starting or ending with Eagle3; everything else gets the prefix.
    if method == "eagle3":
        return arch if arch.startswith("Eagle3") or arch.endswith("Eagle3") else "Eagle3" + arch
    return arch if arch.startswith("Eagle") else "Eagle" + arch


def _sglang_eagle3_classes(version: str) -> set[str]:
    """SGLang's EAGLE-3 draft classes: the snapshot's (the newest one past the newest release read) joined
    with the engine fact ``eagle3_draft_classes``."""
    registry = draft_registry("sglang", version)
    listed = {a for a in (registry.value if registry else ()) if "Eagle3" in a}
    found = answer("sglang", version, "eagle3_draft_classes")
    return listed | set(found.value if found else ())


def _has_auto_map(ctx: CheckContext) -> bool:
    """Whether config.json points transformers at remote classes (vLLM then tries them, with
    trust_remote_code): a class outside the registry might load that way."""
    auto_map = (ctx.draft_raw or ctx.draft).get("auto_map")
    return isinstance(auto_map, dict) and any(
        isinstance(key, str) and key.startswith(("AutoConfig", "AutoModel")) for key in auto_map
    )


def _unresolved(
    ctx: CheckContext, engine: str, version: str, *, declared: str, resolved: str, why: str, registry: Answer | None
) -> tuple[str, str]:
    """Why the architecture does not load, as ("error", why) or ("warning", why).

    An error when ``declared`` is a target class the release registers, or when the release's draft
    registry is known (``registry``), the name is no transformers class (an EAGLE-3 name never is) and no
    auto_map offers remote classes: the release refuses it at start ("Model architectures [...] are not
    supported for now"). A warning where the registry is not known, or remote code could supply it."""
    known = known_model_classes(engine, version)
    if known is not None and (declared in known.value or resolved in known.value):
        return "error", f"{why}; {declared} is a model class {engine}=={version} registers, and not an EAGLE-3 drafter"
    if registry is not None and engine == "vllm" and "Eagle3" in resolved and not _has_auto_map(ctx):
        return "error", (
            f"{why}{registry.judged_note}: no transformers class has that name and config.json has no auto_map, "
            f"so vLLM refuses it at start (\"Model architectures ['{resolved}'] are not supported for now\"); "
            "only an out-of-tree model plugin could register it"
        )
    return "warning", f"{why}; {engine}=={version} does not know {declared} (a plugin or remote code would have to)"


def _vllm_registry(version: str) -> tuple[Answer | None, frozenset[str]]:
    """The release's own draft registry (None when not known) and the classes taken as registered: the
    release's, else the nearest older snapshot's (a release between snapshots keeps what the older had)."""
    registry = draft_registry("vllm", version)
    if registry is not None:
        return registry, frozenset(registry.value)
    nearby = draft_registry("vllm", version, nearest=True)
    return None, frozenset(nearby.value) if nearby is not None else frozenset()


def _resolve(ctx: CheckContext, engine: str, version: str) -> tuple[str, str]:
    """("ok"|"error"|"warning", why): whether the drafter's architecture loads as an EAGLE-3 draft on
    ``engine==version``."""
    if engine == "vllm":
        resolved = _vllm_architecture(ctx, "eagle3")
        if resolved is None:
            return "error", "config.json declares no architectures"
        registry, registered = _vllm_registry(version)
        if not registered:
            return "warning", (
                f"no shipped snapshot says which draft classes {engine}=={version} registers; it would look up "
                f"{resolved}"
            )
        if resolved not in registered:
            declared = ctx.draft_architecture or resolved
            return _unresolved(
                ctx,
                engine,
                version,
                declared=declared,
                resolved=resolved,
                why=(
                    f"vLLM rewrites {declared} to {resolved}, which it does not register"
                    if resolved != declared
                    else f"vLLM keeps {declared} as named (it starts or ends with Eagle3) and does not register it"
                ),
                registry=registry,
            )
        mla = answer(engine, version, "eagle3_mla_drafter")
        if ctx.layout.mla and mla is not None and mla.value is False:
            since = answer(engine, newest_read()[engine], "eagle3_mla_drafter")
            return "error", f"MLA EAGLE-3 drafters ({resolved}) need vLLM {since.versions if since else 'newer'}"
        return "ok", resolved
    refused = _sglang_config_refused(ctx, version)
    if refused is not None:
        return "error", refused
    arch = ctx.draft_architecture
    if arch is None:
        return "error", "config.json declares no architectures"
    if arch in _sglang_eagle3_classes(version):
        return "ok", arch
    why = f"SGLang loads the drafter as {arch}, not an EAGLE-3 draft class"
    outside = _sglang_outside_registry(ctx, version, arch)
    if outside is not None:
        return "error", outside
    return _unresolved(ctx, engine, version, declared=arch, resolved=arch, why=why, registry=None)


def _auto_map_keys(ctx: CheckContext) -> set[str]:
    auto_map = (ctx.draft_raw or ctx.draft).get("auto_map")
    return {key for key in auto_map if isinstance(key, str)} if isinstance(auto_map, dict) else set()


def _sglang_config_refused(ctx: CheckContext, version: str) -> str | None:
    """Why SGLang refuses the draft config.json before any class is looked up: no top-level model_type
    (the speculators format), which transformers' AutoConfig rejects unless auto_map names a remote
    AutoConfig. None where the config gets past it or no fact covers the release."""
    raw = ctx.draft_raw or ctx.draft
    if "model_type" in raw or "AutoConfig" in _auto_map_keys(ctx):
        return None
    fact = answer("sglang", version, "config_model_type_required")
    if fact is None or fact.value != "refused":
        return None
    kind = " (the speculators format, which SGLang does not read)" if ctx.draft_format == "speculators" else ""
    return (
        f"config.json has no model_type{kind}: SGLang {fact.versions}{fact.judged_note} reads it with transformers' "
        "AutoConfig, which refuses it at start (\"Should have a `model_type` key in its config.json\")"
    )


def _sglang_outside_registry(ctx: CheckContext, version: str, arch: str) -> str | None:
    """Why SGLang refuses an EAGLE-3 draft class its own release's model registry lacks (no auto_map
    AutoModel to supply it): "Cannot find model module" where transformers has no such class, and a
    Transformers-backend model without the EAGLE-3 draft interface where it has. None where the release's
    registry or behaviour is not known."""
    registry = model_architectures("sglang", version)
    fact = answer("sglang", version, "draft_outside_registry")
    if registry is None or arch in registry or fact is None or fact.value != "refused":
        return None
    if "AutoModel" in _auto_map_keys(ctx):
        return None
    return (
        f"{arch} is not in sglang=={version}'s model registry and config.json has no auto_map, so SGLang "
        f"{fact.versions} refuses it at start (\"Cannot find model module. '{arch}' is not a registered model\"; "
        "a transformers class of that name would build the Transformers backend, which has no EAGLE-3 draft "
        "interface); only a package named by SGLANG_EXTERNAL_MODEL_PACKAGE could register it"
    )


def loadable_architectures(ctx: CheckContext, engine: str, version: str) -> list[str]:
    """The architectures this drafter could declare to load as an EAGLE-3 draft on ``engine==version``,
    read from the same registry ``_resolve`` judges by (vLLM: a registered class whose name vLLM keeps
    as written, starting or ending with Eagle3; SGLang: its EAGLE-3 draft classes), of the drafter's
    kind (MLA or not), never the name the drafter declares or vLLM rewrites it to."""
    registered = _vllm_registry(version)[1] if engine == "vllm" else _sglang_eagle3_classes(version)
    rejected = {ctx.draft_architecture, _vllm_architecture(ctx, "eagle3") if engine == "vllm" else None}
    return sorted(
        name
        for name in registered
        if (name.startswith("Eagle3") or name.endswith("Eagle3"))
        and ("Deepseek" in name) == ctx.layout.mla
        and name not in rejected
    )


def architecture_hint(ctx: CheckContext, engine: str, version: str) -> str:
    """LAYOUT-ARCH-UNRESOLVED's hint, derived from the registry its verdict reads: what to declare
    instead, or that this release registers nothing for this drafter."""
    names = loadable_architectures(ctx, engine, version)
    if not names:
        return f"{engine}=={version} registers no EAGLE-3 draft class for this drafter: serve with another release"
    offered = ", ".join(names)
    return f"declare an EAGLE-3 draft class {engine}=={version} registers in config.json architectures: {offered}"


def _engine_findings(ctx: CheckContext) -> Iterator[Finding]:
    pairs = ", ".join(f"{e}=={v}" for e, v in ctx.engines)
    # A release newer than every one read is judged by the newest facts; the report says which, once,
    # so a verdict for it is never mistaken for one read from that release.
    unread = [
        f"{engine}=={version} is newer than every release read, judged by the facts of {engine}=={read}"
        for engine, version in ctx.engines
        if (read := beyond_newest(engine, version)) is not None
    ]
    yield ENGINES.finding(
        f"engine-specific rules evaluated for {pairs}"
        + ("" if ctx.engine_explicit else " (newest known; use --engine)")
        + "".join(f"; {note}" for note in unread),
    )
    if ctx.draft_format is None:
        yield from _sglang_refuses_any_draft(ctx)
        return
    results = {(engine, version): _resolve(ctx, engine, version) for engine, version in ctx.engines}
    any_ok = any(verdict == "ok" for verdict, _ in results.values())
    for (engine, version), (verdict, why) in results.items():
        if verdict == "ok":
            continue
        # Without --engine a drafter that one engine loads is not failed because the other cannot: the
        # other engine's verdict is information about a deployment nobody asked about.
        if not ctx.engine_explicit and any_ok:
            severity = Severity.INFO
        else:
            severity = Severity.ERROR if verdict == "error" else Severity.WARNING
        yield ARCH_UNRESOLVED.finding(
            f"{engine}=={version}: {why}",
            location="config.json:architectures",
            key="config.json:architectures",
            severity=severity,
            hint=(
                "write config.json in the SpecForge layout SGLang reads (model_type llama, architectures "
                "LlamaForCausalLMEagle3, the aux layer ids in eagle_config), or serve with vLLM"
                if engine == "sglang" and _sglang_config_refused(ctx, version) is not None
                else architecture_hint(ctx, engine, version)
            ),
        )
    if not ctx.layout.mla and ctx.layout.namespaces == ["layers"]:
        for engine, version in ctx.engines:
            prefixes = layer_prefixes(engine, version)
            if engine != "sglang" or prefixes is None or "layers.0" in prefixes.value:
                continue
            yield SGLANG_NAMESPACE.finding(
                f"sglang=={version}: its Llama EAGLE-3 drafter's decoder layer is model.midlayer and unknown weight "
                "names are skipped silently, so the layers.0.* weights never load (SGLang >= 0.5.12 maps them)",
                severity=Severity.WARNING if ctx.engine_explicit or not any_ok else Severity.INFO,
                hint="store the decoder layer as midlayer.* for this SGLang release, or serve with SGLang >= 0.5.12",
                evidence=(prefixes.evidence,),
            )


def _sglang_refuses_any_draft(ctx: CheckContext) -> Iterator[Finding]:
    """A drafter that is not EAGLE-3 (EAGLE-1/2 heads, other forms) is still looked up in SGLang's model
    registry by the class its config.json names, whatever the speculative algorithm: a class the release
    lacks stops start-up there too."""
    arch = ctx.draft_architecture
    if not ctx.layout.tensors or arch is None:
        return
    for engine, version in ctx.engines:
        if engine != "sglang" or (outside := _sglang_outside_registry(ctx, version, arch)) is None:
            continue
        yield ARCH_UNRESOLVED.finding(
            f"sglang=={version}: {outside}",
            location="config.json:architectures",
            key="config.json:architectures",
            severity=Severity.ERROR if ctx.engine_explicit else Severity.INFO,
            hint=f"declare a draft class sglang=={version} registers for this drafter (LlamaForCausalLMEagle for a "
            "Llama EAGLE head), or serve it with another engine",
        )


def _method_findings(ctx: CheckContext) -> Iterator[Finding]:
    method = ctx.method
    if method is None:
        return
    if ctx.draft_format is not None and method != "eagle3":
        if method == "eagle":
            wrong = _vllm_architecture(ctx, "eagle") or "an Eagle* class"
            detail = (
                f"vLLM rewrites the architecture to {wrong}, which is not a registered model; SGLang's EAGLE "
                "runs it with accept length 1.00"
            )
        else:
            detail = "the engine will not load the EAGLE-3 head with this method"
        yield METHOD_MISMATCH.finding(
            f"method {method!r} with an EAGLE-3 checkpoint ({ctx.draft_format}): {detail}",
            hint="use method eagle3 (vLLM) / --speculative-algorithm EAGLE3 (SGLang)",
        )
    elif ctx.draft_format is None and method == "eagle3" and ctx.layout.tensors:
        yield METHOD_MISMATCH.finding(
            "method 'eagle3' but the checkpoint is not an EAGLE-3 drafter (no fc over auxiliary hidden states)",
            hint="use the method the drafter was trained for (eagle for EAGLE-1/2 heads)",
        )


def run(ctx: CheckContext) -> Iterator[Finding]:
    if not ctx.layout.tensors:
        return
    form = detect_form(ctx.layout, ctx.draft_raw).form
    if ctx.draft_format is None and form in (None, EAGLE):
        # Another form specprobe models (a draft model, a block drafter, ...) is named by METHOD-FORM.
        yield NOT_EAGLE3.finding(
            f"architecture {ctx.draft_architecture or '(none)'}, decoder keys {ctx.layout.namespaces or 'none'}: "
            "not an EAGLE-3 drafter; EAGLE-3 rules were skipped",
            hint="EAGLE-3 drafters have fc.weight over auxiliary hidden states and usually d2t/t2d",
        )
    elif ctx.draft_format is not None:
        yield FORMAT.finding(f"format {ctx.draft_format}: {DRAFT_FORMATS[ctx.draft_format]}")
        if ctx.draft_config is not None:
            yield from _config_fields(ctx)
            yield from _layer_findings(ctx)
            yield from _lm_head_findings(ctx)
    yield from _engine_findings(ctx)
    yield from _method_findings(ctx)
