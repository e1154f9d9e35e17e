"""Smoke family: what a measured run of the drafter says (acceptance, losslessness, engine gap).

Measured figures follow vLLM's spec-decode metric definitions; no torch is imported here so that
`specprobe rules` lists these without loading a model.
"""

from __future__ import annotations

from specprobe.findings import Severity
from specprobe.rules import rule

FAMILY = "smoke"
VLLM_SPEC_METRICS = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/v1/spec_decode/metrics.py"
VLLM_EAGLE3_SRC = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/models/llama_eagle3.py"
SPECULATIVE_SAMPLING = "https://arxiv.org/abs/2211.17192"
VLLM_CPU_ATTN = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/v1/attention/backends/cpu_attn.py"
VLLM_CPU_PLATFORM = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/platforms/cpu.py"
# Floating-point sums depend on their order, so a batched verify pass can round differently.
FLOAT_ROUNDING = "https://docs.pytorch.org/docs/stable/notes/numerical_accuracy.html"
SGLANG_SPEC_METRICS = (
    "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/observability/metrics_collector.py"
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
    "the engine's acceptance leaves the reference backend's on the same prompts beyond rounding "
    "(integration, not the drafter)",
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
SERVE_START_FAILED = rule(
    "SMOKE-SERVE-START-FAILED",
    FAMILY,
    Severity.ERROR,
    "the engine started from the launch command exited or never became ready; the engine's own cause is quoted",
    VLLM_CPU_ATTN,
    VLLM_CPU_PLATFORM,
)
SERVE_FAILED = rule(
    "SMOKE-SERVE-FAILED",
    FAMILY,
    Severity.ERROR,
    "the engine failed while serving the smoke prompts; the engine's own cause is quoted, not the HTTP status",
    VLLM_CPU_ATTN,
)
ENGINE_REFERENCE = rule(
    "SMOKE-ENGINE-REFERENCE",
    FAMILY,
    Severity.INFO,
    "the served engine's acceptance beside the reference backend's on the same prompts, per position",
    VLLM_SPEC_METRICS,
)
NEAR_TIE = rule(
    "SMOKE-NEAR-TIE",
    FAMILY,
    Severity.INFO,
    "speculative and target-only greedy output part at a numerical near-tie of the target's top two logits",
    FLOAT_ROUNDING,
)
TIMING_NOISE = rule(
    "SMOKE-TIMING-NOISE",
    FAMILY,
    Severity.INFO,
    "a speed-up was measured although no draft token was accepted: the timing is noise, not a speed-up",
    VLLM_SPEC_METRICS,
)

SPECFORGE_DUMP = "https://github.com/sgl-project/SpecForge/blob/a6b6b0230009d15ec2a97a57384e6f53f0f96946/scripts/prepare_hidden_states.py"
SPECULATORS_DUMP = "https://github.com/vllm-project/speculators/blob/c05b95b303f7d4f21e8d7624e0ffa1c2d9b4d73b/src/speculators/train/data.py"
SPECULATORS_PREPROCESSING = (
    "https://github.com/vllm-project/speculators/blob/c05b95b303f7d4f21e8d7624e0ffa1c2d9b4d73b/src/speculators/"
    "data_generation/preprocessing.py"
)
EAGLE_GE_DATA = "https://github.com/SafeAILab/EAGLE/blob/79d6f7900be89d8d8cabe2d14be929d9b3861a21/eagle/ge_data/ge_data_all_llama2chat.py"
TORCH_WEIGHTS_ONLY = "https://docs.pytorch.org/docs/stable/notes/serialization.html#weights-only"
SGLANG_CAPTURE = (
    "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/models/llama.py"
)
DUMP_UNREADABLE = rule(
    "SMOKE-DUMP-UNREADABLE",
    FAMILY,
    Severity.ERROR,
    "a hidden-state dump (or one of its files) cannot be replayed: not a dump, empty, truncated, non-finite, "
    "a pickle that asks for code, EAGLE ge_data with the last layer only, or a speculators loss-mask dataset "
    "(Arrow) that cannot be read",
    SPECFORGE_DUMP,
    TORCH_WEIGHTS_ONLY,
    EAGLE_GE_DATA,
    SPECULATORS_PREPROCESSING,
)
DUMP_MISMATCH = rule(
    "SMOKE-DUMP-MISMATCH",
    FAMILY,
    Severity.ERROR,
    "the hidden-state dump does not fit the drafter (hidden size, number of aux layers or vocabulary): "
    "it comes from another target or captured other layers",
    SPECFORGE_DUMP,
    SPECULATORS_DUMP,
)
ENGINE_BELOW_DATA = rule(
    "SMOKE-ENGINE-BELOW-DATA",
    FAMILY,
    Severity.ERROR,
    "the engine's acceptance is clearly below what the drafter reaches on its own hidden-state data "
    "(beyond both 95% intervals): the engine is not feeding it the hidden states it was trained on",
    VLLM_EAGLE3_SRC,
    SGLANG_CAPTURE,
    VLLM_SPEC_METRICS,
)
