"""Turning what the user names (engine spec, target, drafter folder) into the facets of a Pairing.

The target is classified from config.json alone; the drafter through ``classify_draft``, the one
place that decides which detection (the check pipeline's, or config.json) is used.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import Version

from specprobe.checkpoint import detect_layout, load_checkpoint
from specprobe.compat.model import FEATURES, Pairing
from specprobe.engines.spec import parse_engine_spec
from specprobe.findings import SpecprobeError
from specprobe.hfconfig import (
    AttentionKind,
    ConfigError,
    ModelConfig,
    attention_traits,
    classify_attention,
    load_config_json,
    parse_model_config,
)
from specprobe.modelfiles import ModelFiles, hub_ref, locate, resolve_config_path
from specprobe.untrusted.files import expand_user, is_dir


def parse_engine(spec: str) -> tuple[str, Version | None]:
    """``vllm``, ``sglang==0.5.23`` -> (engine, version), through the one engine-spec parser.

    A pairing is evaluated at one version; ranges are expanded by the caller (``pipeline.check.engine_versions``).
    """
    parsed = parse_engine_spec(spec, allow_range=False)
    return parsed.engine, Version(parsed.version) if parsed.version is not None else None


def normalize_method(method: str) -> str:
    """Engines spell methods differently (vLLM ``eagle3``, SGLang ``EAGLE3``); the matrix uses lower case."""
    return method.strip().lower()


def parse_features(features: list[str] | None) -> frozenset[str] | None:
    if not features:
        return None
    unknown = [f for f in features if f not in FEATURES]
    if unknown:
        raise SpecprobeError(f"unknown feature {unknown[0]!r}; choose from: {', '.join(FEATURES)}")
    return frozenset(features)


@dataclass(frozen=True)
class TargetInfo:
    """A target as the matrix sees it."""

    label: str
    config: ModelConfig
    model_types: tuple[str, ...]
    attention: AttentionKind
    traits: frozenset[AttentionKind]


def target_model_types(config: ModelConfig) -> tuple[str, ...]:
    """The text model's model_type first (what vLLM's ``hf_text_config`` gates on), then a
    multimodal wrapper's own (Kimi-K2.5 is ``kimi_k25`` around a ``kimi_k2``/``deepseek_v3`` text model)."""
    types: list[str] = []
    if config.model_type:
        types.append(config.model_type)
    if config.wrapper_model_type and config.wrapper_model_type not in types:
        types.append(config.wrapper_model_type)
    return tuple(types)


def target_from_config(raw: dict[str, Any], label: str) -> TargetInfo:
    return target_from_model_config(parse_model_config(raw), label)


def target_from_model_config(config: ModelConfig, label: str) -> TargetInfo:
    return TargetInfo(
        label=label,
        config=config,
        model_types=target_model_types(config),
        attention=classify_attention(config),
        traits=attention_traits(config),
    )


def classify_target(spec: str, *, hub: Any = None) -> TargetInfo:
    """A target folder, config.json or hub id -> its model_type(s) and attention; unreadable is exit 2.
    ``hub`` is the run's ``specprobe.modelfiles.HubSession`` (a hub target is read once per run)."""
    path = resolve_config_path(spec, hub=hub)
    try:
        raw = load_config_json(path)
    except ConfigError as exc:
        raise SpecprobeError(f"target {spec!r}: {exc}") from None
    return target_from_config(raw, spec)


@dataclass(frozen=True)
class DraftInfo:
    """A drafter as the matrix sees it."""

    label: str
    format: str | None
    architecture: str | None


def draft_format_from_config(raw: dict[str, Any]) -> str | None:
    """The drafter format that config.json alone reveals (weight names would tell more)."""
    architectures = [a for a in raw.get("architectures") or [] if isinstance(a, str)]
    joined = " ".join(architectures)
    if "speculators_config" in raw or "speculators_model_type" in raw or "Eagle3Speculator" in joined:
        return "speculators"
    if ("Deepseek" in joined and "Eagle3" in joined) or raw.get("kv_lora_rank") is not None:
        return "eagle3-mla"
    if "LlamaForCausalLMEagle3" in architectures:
        return "specforge"
    if any(a.startswith("Eagle3") for a in architectures):
        return "vllm-native"
    if "draft_vocab_size" in raw or "eagle_config" in raw:
        return "eagle3"
    return None


def _check_detection(files: Path | ModelFiles) -> tuple[str | None, str | None, dict[str, Any] | None]:
    """check's own detection (config.json plus safetensors tensor names, headers only), so that
    check and matrix name a drafter the same way; with the config.json it read."""
    checkpoint = load_checkpoint(files)
    layout = detect_layout(checkpoint, checkpoint.config_raw)
    return layout.draft_format, layout.architecture, checkpoint.config_raw


def classify_draft(spec: str, *, hub: Any = None) -> DraftInfo:
    """A drafter folder or hub id ``OWNER/NAME[@REVISION]`` -> its format and architecture; a missing folder
    or a repository the hub cannot give is exit 2, an unreadable config.json leaves both unknown (check
    reports checkpoint problems, matrix only pairs). A hub drafter is read through ``specprobe.modelfiles``
    (config.json and safetensors headers by byte range; ``hub`` is the run's HubSession)."""
    path = expand_user(spec)
    if is_dir(path):
        draft_format, architecture, _ = _check_detection(path)
    else:
        if hub_ref(spec) is None or "/" not in spec:
            raise SpecprobeError(f"draft {spec!r} is not a folder (nor a hub id OWNER/NAME[@REVISION])")
        draft_format, architecture, hub_raw = _check_detection(locate(spec, role="draft", hub=hub))
    if draft_format is not None:
        return DraftInfo(label=spec, format=draft_format, architecture=architecture)
    # Without weights to read (a config-only folder) the tensor names cannot decide; config.json can.
    if is_dir(path):
        try:
            raw = load_config_json(path / "config.json")
        except ConfigError:
            return DraftInfo(label=spec, format=None, architecture=architecture)
    elif hub_raw is None:
        return DraftInfo(label=spec, format=None, architecture=architecture)
    else:
        raw = hub_raw
    architectures = [a for a in raw.get("architectures") or [] if isinstance(a, str)]
    return DraftInfo(
        label=spec,
        format=draft_format_from_config(raw),
        architecture=architecture or (architectures[0] if architectures else None),
    )


def build_pairing(
    *,
    engine: str | None = None,
    method: str | None = None,
    target: TargetInfo | None = None,
    draft: DraftInfo | None = None,
    features: frozenset[str] | None = None,
) -> Pairing:
    engine_name, version = parse_engine(engine) if engine else (None, None)
    return Pairing(
        engine=engine_name,
        version=version,
        method=normalize_method(method) if method else None,
        draft_format=draft.format if draft else None,
        draft_architecture=draft.architecture if draft else None,
        target_model_types=target.model_types if target else (),
        target_attention=target.traits if target else frozenset(),
        target_config=target.config.raw if target else None,
        features=features,
        target_label=target.label if target else None,
        draft_label=draft.label if draft else None,
    )
