"""Smoke family: what a measured run of the drafter says (acceptance, losslessness, engine gap).

Measured figures follow vLLM's spec-decode metric definitions; no torch is imported here so that
`specprobe rules` lists these without loading a model.
"""

from __future__ import annotations

from specprobe.findings import Severity
from specprobe.rules import rule

FAMILY = "smoke"
VLLM_SPEC_METRICS = "https://github.com/vllm-project/vllm/blob/main/vllm/v1/spec_decode/metrics.py"
VLLM_EAGLE3_SRC = "https://github.com/vllm-project/vllm/blob/main/vllm/model_executor/models/llama_eagle3.py"
SPECULATIVE_SAMPLING = "https://arxiv.org/abs/2211.17192"
SGLANG_SPEC_METRICS = (
    "https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/managers/scheduler_metrics_mixin.py"
)

ACCEPTANCE_LOW = rule(
    "SMOKE-ACCEPTANCE-LOW",
    FAMILY,
    Severity.ERROR,
    "measured mean acceptance length is below the required --min-acceptance-length",
    VLLM_SPEC_METRICS,
)
NOT_LOSSLESS = rule(
    "SMOKE-NOT-LOSSLESS",
    FAMILY,
    Severity.ERROR,
    "greedy speculative output differs from the target's own greedy output (verification is broken)",
    SPECULATIVE_SAMPLING,
)
ENGINE_GAP = rule(
    "SMOKE-ENGINE-GAP",
    FAMILY,
    Severity.ERROR,
    "the engine's acceptance is far below the reference backend's on the same prompts (integration, not the drafter)",
    "https://github.com/vllm-project/vllm/issues/26191",
    "https://github.com/sgl-project/sglang/issues/8228",
    VLLM_SPEC_METRICS,
)
DRAFT_UNREADABLE = rule(
    "SMOKE-DRAFT-UNREADABLE",
    FAMILY,
    Severity.ERROR,
    "the reference EAGLE-3 drafter cannot be built from the checkpoint (missing or mis-shaped tensors)",
    VLLM_EAGLE3_SRC,
)
NO_METRICS = rule(
    "SMOKE-NO-METRICS",
    FAMILY,
    Severity.ERROR,
    "the server reported no speculative-decoding counters: speculation is off or metrics are disabled",
    VLLM_SPEC_METRICS,
    SGLANG_SPEC_METRICS,
)
MEASURED = rule(
    "SMOKE-MEASURED",
    FAMILY,
    Severity.INFO,
    "summary of the measured acceptance, throughput and speed-up",
    VLLM_SPEC_METRICS,
)
CHECK_SKIPPED = rule(
    "SMOKE-CHECK-SKIPPED",
    FAMILY,
    Severity.WARNING,
    "the drafter was measured although its static check reported errors (--force)",
    VLLM_EAGLE3_SRC,
)
