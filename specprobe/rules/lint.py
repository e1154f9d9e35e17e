"""Lint rules: a `vllm serve` / `sglang.launch_server` command line checked against the engine's schema snapshot."""

from __future__ import annotations

from specprobe.findings import Severity
from specprobe.rules import rule

_VLLM_SPECULATIVE = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/speculative.py"
_SGLANG_SERVER_ARGS = "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/server_args.py"

UNKNOWN_FLAG = rule(
    "LINT-UNKNOWN-FLAG",
    "lint",
    Severity.ERROR,
    "A speculative-decoding flag the engine version does not have (legacy --speculative-model, a typo...).",
    _VLLM_SPECULATIVE,
    _SGLANG_SERVER_ARGS,
)
SPEC_CONFIG_JSON = rule(
    "LINT-SPEC-CONFIG-JSON",
    "lint",
    Severity.ERROR,
    "--speculative-config is not a JSON object.",
    _VLLM_SPECULATIVE,
)
SPEC_CONFIG_KEY = rule(
    "LINT-SPEC-CONFIG-KEY",
    "lint",
    Severity.ERROR,
    "--speculative-config names a field SpeculativeConfig does not have, or one the engine sets itself.",
    _VLLM_SPECULATIVE,
)
SPEC_CONFIG_VALUE = rule(
    "LINT-SPEC-CONFIG-VALUE",
    "lint",
    Severity.ERROR,
    "A speculative-decoding value has the wrong type or breaks the engine's bounds (e.g. num_speculative_tokens > 0).",
    _VLLM_SPECULATIVE,
    _SGLANG_SERVER_ARGS,
)
METHOD = rule(
    "LINT-METHOD",
    "lint",
    Severity.ERROR,
    "The speculative method/algorithm is not one this engine version accepts.",
    _VLLM_SPECULATIVE,
    "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/speculative/spec_info.py",
)
SGLANG_STEPS = rule(
    "LINT-SGLANG-SPEC-STEPS",
    "lint",
    Severity.ERROR,
    "SGLang needs --speculative-num-steps, -eagle-topk and -num-draft-tokens all set or all unset.",
    _SGLANG_SERVER_ARGS,
)
SGLANG_TOPK1_TOKENS = rule(
    "LINT-SGLANG-TOPK1-TOKENS",
    "lint",
    Severity.WARNING,
    "With --speculative-eagle-topk 1 the draft is a chain: --speculative-num-draft-tokens should be num-steps + 1.",
    _SGLANG_SERVER_ARGS,
)
SGLANG_DRAFT_PATH = rule(
    "LINT-SGLANG-DRAFT-PATH",
    "lint",
    Severity.ERROR,
    "EAGLE/EAGLE3 without --speculative-draft-model-path loads the target as its own draft and crashes.",
    "https://github.com/sgl-project/sglang/issues/36528",
)
NO_SPECULATION = rule(
    "LINT-NO-SPECULATION",
    "lint",
    Severity.INFO,
    "The command does not turn speculative decoding on.",
    _VLLM_SPECULATIVE,
)
SNAPSHOT = rule(
    "LINT-SNAPSHOT",
    "lint",
    Severity.INFO,
    "No schema snapshot of the requested engine version ships; the nearest one was used.",
    _VLLM_SPECULATIVE,
    _SGLANG_SERVER_ARGS,
)
