"""Lint rules: a `vllm serve` / `sglang.launch_server` command line checked against the engine's schema snapshot."""

from __future__ import annotations

from dataclasses import replace

from specprobe.compat.engine_facts import answer, source_url, vllm_speculative_config_path
from specprobe.engines.versions import engine_first, parse_version
from specprobe.findings import Finding, Severity
from specprobe.rules import rule

_VLLM_SPECULATIVE = source_url("vllm", "0.33.0", "vllm/config/speculative.py")
_SGLANG_SERVER_ARGS = source_url("sglang", "0.5.23", "sglang/srt/server_args.py")
_SGLANG_SPEC_INFO = source_url("sglang", "0.5.23", "sglang/srt/speculative/spec_info.py")

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
    _SGLANG_SPEC_INFO,
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
    "With --speculative-eagle-topk 1 the draft is a chain: SGLang (>= 0.4.6) replaces the --speculative-num-draft-"
    "tokens written with num-steps + 1 (0.5.23 logs a warning saying so); older releases run with the value given.",
    _SGLANG_SERVER_ARGS,
    source_url("sglang", "0.5.23", "sglang/srt/arg_groups/speculative_hook.py"),
)
SGLANG_DRAFT_PATH = rule(
    "LINT-SGLANG-DRAFT-PATH",
    "lint",
    Severity.ERROR,
    "EAGLE/EAGLE3 without --speculative-draft-model-path loads the target as its own draft and crashes, except for "
    "targets with their own MTP layers, whose path SGLang fills in itself.",
    "https://github.com/sgl-project/sglang/issues/36528",
    source_url("sglang", "0.5.23", "sglang/srt/arg_groups/speculative_hook.py"),
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


def for_version(finding: Finding, engine: str, version: str) -> Finding:
    """The finding with the engine source it cites pinned to ``version``, the release being checked,
    and that engine's links first (the reporters show the first)."""
    evidence = list(finding.evidence)
    if parse_version(version) is not None:
        moved = {
            "vllm": {_VLLM_SPECULATIVE: source_url("vllm", version, vllm_speculative_config_path(version))},
            "sglang": {
                _SGLANG_SERVER_ARGS: source_url("sglang", version, "sglang/srt/server_args.py"),
                _SGLANG_SPEC_INFO: source_url("sglang", version, "sglang/srt/speculative/spec_info.py"),
            },
        }.get(engine, {})
        evidence = [moved.get(url, url) for url in evidence]
    return replace(finding, evidence=engine_first(evidence, engine))


def topk1_severity(version: str) -> Severity:
    """A warning in every release: one that adjusts num-draft-tokens to num-steps + 1 (fact
    topk1_num_draft_tokens: SGLang >= 0.4.6) overrides a value the user wrote, and logs a warning itself
    (speculative_hook.py in 0.5.23); one that runs with the value given drafts a chain of another length."""
    del version  # both behaviours are warnings; the message names which one the release has
    return Severity.WARNING


def topk1_adjusted(version: str) -> bool:
    """Whether ``sglang==version`` replaces num-draft-tokens under topk 1 (fact topk1_num_draft_tokens)."""
    found = answer("sglang", version, "topk1_num_draft_tokens")
    return found is not None and found.value == "adjusted"
