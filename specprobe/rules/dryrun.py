"""Dry-run rules: what the engine's own configuration code said about a serve command (`lint --dry-run`)."""

from __future__ import annotations

from specprobe.findings import Severity
from specprobe.rules import rule

_VLLM_ENGINE_ARGS = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/engine/arg_utils.py"
_SGLANG_SERVER_ARGS = "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/server_args.py"
_VLLM_PLATFORMS = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/platforms/__init__.py"

DRY_RUN = rule(
    "LINT-DRY-RUN",
    "dry-run",
    Severity.ERROR,
    "The engine's own configuration code (vLLM: its serve parser, AsyncEngineArgs.create_engine_config; "
    "SGLang: ServerArgs and its resolution) refused the command; the message is the engine's.",
    _VLLM_ENGINE_ARGS,
    _SGLANG_SERVER_ARGS,
)
DRY_RUN_PASSED = rule(
    "LINT-DRY-RUN-PASSED",
    "dry-run",
    Severity.INFO,
    "The engine built its configuration from the command without an error (workers, weights and kernels "
    "were not started or loaded).",
    _VLLM_ENGINE_ARGS,
    _SGLANG_SERVER_ARGS,
)
DRY_RUN_PLATFORM = rule(
    "LINT-DRY-RUN-PLATFORM",
    "dry-run",
    Severity.INFO,
    "No accelerator on this machine: the engine's configuration was built for its CPU platform, so checks "
    "that only an accelerator platform makes (attention backend, memory) did not run.",
    _VLLM_PLATFORMS,
    "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/utils/common.py",
)
DRY_RUN_NOT_LOCAL = rule(
    "LINT-DRY-RUN-NOT-LOCAL",
    "dry-run",
    Severity.INFO,
    "A model the command names is a hub id that is not in the local Hugging Face cache; the dry run never "
    "downloads, so it did not run.",
    "https://huggingface.co/docs/huggingface_hub/v0.35.0/en/package_reference/environment_variables#hfhuboffline",
)
