"""Drafter formats as a release reads them: its EAGLE-3 draft classes (from the schema snapshot), the
architecture the copy declares, tensor naming per format, and config.json rendered in each format's
own layout from format-free settings.
"""

from __future__ import annotations

import copy
from typing import Any

from specprobe.checkpoint.layout import is_speculators
from specprobe.compat.engine_facts import draft_registry
from specprobe.engines.facts import answer
from specprobe.fix.model import TargetFiles

AUX_KEY = "eagle_aux_hidden_state_layer_ids"


def draft_classes(engine: str, version: str) -> set[str]:
    """The EAGLE-3 draft classes ``engine==version`` registers: its snapshot's registry (between snapshots,
    the nearest older one's), and for SGLang the engine fact ``eagle3_draft_classes`` beside it."""
    registry = draft_registry(engine, version, nearest=True)
    listed = set(registry.value) if registry is not None else set()
    if engine == "vllm":
        return listed
    found = answer("sglang", version, "eagle3_draft_classes")
    return {a for a in listed if "Eagle3" in a} | set(found.value if found else ())


def vllm_rewrite(architecture: str) -> str:
    """vLLM's eagle3 rewrite: names starting or ending with Eagle3 are kept, others get the prefix."""
    if architecture.startswith("Eagle3") or architecture.endswith("Eagle3"):
        return architecture
    return "Eagle3" + architecture


def loads_as(engine: str, version: str, architecture: str | None, out_format: str) -> bool:
    """Whether ``architecture`` in ``out_format`` resolves to an EAGLE-3 draft class of the release."""
    if architecture is None:
        return False
    classes = draft_classes(engine, version)
    if engine == "vllm":
        return out_format == "speculators" or vllm_rewrite(architecture) in classes
    return architecture in classes


def choose_architecture(engine: str, version: str, current: str | None, out_format: str, mla: bool) -> str | None:
    """The architecture the copy declares: the current one when the release loads it, else the class
    that release registers for this kind of drafter (None when it registers none)."""
    if out_format == "speculators":
        return "Eagle3Speculator"
    if out_format == "eagle3":
        return "LlamaForCausalLM"
    if (
        current is not None
        and current != "Eagle3Speculator"
        and loads_as(engine, version, current, out_format)
        and mla == ("Deepseek" in current)
    ):
        return current
    classes = draft_classes(engine, version)
    wanted = (
        ("Eagle3DeepseekV3ForCausalLM", "Eagle3DeepseekV2ForCausalLM")
        if mla
        else ("LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM")
    )
    for name in wanted:
        if name in classes:
            return name
    return None


def canonical_name(name: str) -> str:
    if name.startswith("model."):
        name = name[len("model."):]
    if name.startswith("midlayer."):
        name = "layers.0." + name[len("midlayer."):]
    return name


def stored_name(canonical: str, midlayer: bool, mla: bool, original: str) -> str:
    if mla:
        return original[len("model."):] if original.startswith("model.") else original
    if midlayer and canonical.startswith("layers.0."):
        return "midlayer." + canonical[len("layers.0."):]
    return canonical


def registry_path(engine: str) -> str:
    return "vllm/model_executor/models/registry.py" if engine == "vllm" else "sglang/srt/models/registry.py"


def loader_path(engine: str) -> str:
    return (
        "vllm/model_executor/models/llama_eagle3.py" if engine == "vllm" else "sglang/srt/models/llama_eagle3.py"
    )


def render_config(  # noqa: PLR0917 - the format-free settings and everything a format adds to them
    semantic: dict[str, Any],
    out_format: str,
    architecture: str,
    ids: list[int] | None,
    raw: dict[str, Any],
    target: TargetFiles,
) -> dict[str, Any]:
    """config.json of the copy in ``out_format``'s own layout, from the format-free settings."""
    base = {k: v for k, v in semantic.items() if not k.startswith("_")}
    eagle_rest = dict(semantic.get("_eagle_config_rest") or {})
    if out_format == "speculators":
        layer_keys = {k: v for k, v in base.items()
                      if k not in ("draft_vocab_size", "target_hidden_size", "norm_before_residual")}
        layer_keys["architectures"] = ["LlamaForCausalLM"]
        speculators_config = raw.get("speculators_config") if is_speculators(raw) else None
        if not isinstance(speculators_config, dict):
            speculators_config = {
                "algorithm": "eagle3",
                "default_proposal_method": "greedy",
                "proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 3}],
                "verifier": {"name_or_path": target.spec, "architectures": list(target.config.architectures)},
            }
        config: dict[str, Any] = {
            "architectures": ["Eagle3Speculator"],
            "speculators_model_type": "eagle3",
            "speculators_version": raw.get("speculators_version", "0.2.0"),
            "speculators_config": copy.deepcopy(speculators_config),
            "transformer_layer_config": layer_keys,
            "draft_vocab_size": base.get("draft_vocab_size"),
            "target_hidden_size": base.get("target_hidden_size"),
            # The raw (non-speculators) path's default is False: keep what the drafter was trained with.
            "norm_before_residual": base.get("norm_before_residual", False),
        }
        if ids is not None:
            # vLLM's speculators loader copies the top-level ids where the runner captures them, but sizes fc
            # from transformer_layer_config (engine fact eagle3_fc_inputs, layout "speculators"): the count
            # goes there too, or a drafter with other than three aux layers is refused at load.
            config[AUX_KEY] = list(ids)
            layer_keys["num_aux_hidden_states"] = len(ids)
        return config
    config = {"architectures": [architecture], **base}
    if ids is not None:
        # vLLM captures the ids at the top level and sizes fc from eagle_config; SGLang captures and sizes
        # from eagle_config: the same ids in both places serve every release.
        config[AUX_KEY] = list(ids)
        if out_format != "eagle3":
            config["eagle_config"] = {"use_aux_hidden_state": True, **eagle_rest, AUX_KEY: list(ids)}
        if "num_aux_hidden_states" in raw or "num_aux_hidden_states" in semantic:
            config["num_aux_hidden_states"] = len(ids)
    elif eagle_rest and out_format != "eagle3":
        config["eagle_config"] = eagle_rest
    return config
